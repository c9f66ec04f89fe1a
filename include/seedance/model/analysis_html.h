// The HTML page of `seedance model analyze --format html`: one self-contained document (inline
// CSS and inline SVG; no script, font, image or other file it loads) holding
//   - the model's name, the sample count and the settings the analysis ran with;
//   - the per-layer table of `Analyze` (emulation.h): each layer's model-output SQNR per format,
//     with its own output's SQNR in brackets, cells coloured by the output SQNR, then every
//     layer at once, and the error graph's predicted output SQNR and output gain per layer;
//   - the error-propagation graph of `BuildErrorGraph` (error_graph.h) drawn as SVG: the layers
//     as boxes top to bottom in the graph's (topological) order, the model's output last; each
//     kept edge as an arrow whose width grows with its gain (log scale) and whose label is the
//     gain; pruned edges are not drawn (their count is); the most sensitive path's boxes and
//     edges (class "on-path", and its last hop to the output) in a distinct colour.
// Every string that comes from the model or the command line (node, op and weight names, the
// model's path) is stripped of control characters (base::ForTerminal) and HTML-escaped
// (base::HtmlEscape), so a node named "<script>..." shows as text and runs nothing.
//
// Thread-safety: a pure function; thread-safe.
#pragma once

#include <string>

#include "seedance/model/emulation.h"
#include "seedance/model/error_graph.h"

namespace seedance::model {

// What the page says the analysis ran with (shown as given; nothing here changes the numbers).
struct AnalysisPageSettings {
  std::string model;                   // the model's path or name
  std::string samples_from = "drawn";  // "drawn" or "--inputs"
  bool weights_only = false;           // activations stayed FP32
  double percentile = 0;               // activation calibration: max |x| (<= 0) or this percentile
  bool entropy = false;                // ... or the entropy (KL) threshold
  ErrorGraphOptions error_graph;       // the options `graph` was built with
  // Why there is no error graph (BuildErrorGraph failed: an operator without a derivative
  // rule); when set, the page says so instead of drawing `graph`, which may be empty.
  std::string error_graph_unavailable;
  // Cell colours of the table: output SQNR >= good_sqnr_db green, below poor_sqnr_db red, the
  // rest amber.
  double good_sqnr_db = 40;
  double poor_sqnr_db = 20;
};

// REQUIRES: `analysis` holds a FormatError for every layer and format it lists, and an
// all_layers entry per format (as Analyze returns it); `graph`'s layers and edges name the
// analysis' layers (as BuildErrorGraph returns it for the same model). Starts with
// "<!DOCTYPE html>" and ends with "</html>\n".
std::string RenderAnalysisHtml(const Analysis& analysis, const ErrorGraph& graph,
                               const AnalysisPageSettings& settings);

}  // namespace seedance::model
