// 2:4 structured sparsity, NVIDIA's Automatic SParsity (ASP, apex.contrib.sparsity) pattern
// "m4n2_1d": in every group of 4 consecutive weights along a layer's reduction axis (the axis the
// layer sums over), the 2 of largest magnitude are kept and the other 2 set to zero, which is the
// pattern Ampere's and Hopper's sparse tensor cores skip (half the multiplications, about half
// the weight bytes).
//
// Which axis (ReductionAxis):
//   MatMul  weight [..., K, N]: axis rank - 2 (K; axis 0 of a vector [K])
//   Gemm    B [K, N]: axis 0; with transB, B [N, K]: axis 1
//   Conv    W [Cout, Cin/group, k...]: axis 1 (Cin). ASP permutes a convolution's weight to
//           [kh, kw, Cout, Cin] and prunes groups of 4 input channels at each kernel position and
//           output channel; the sparse tensor cores run a convolution as an implicit GEMM whose
//           reduction runs over Cin fastest, so that is the axis a group must lie along.
// A layer is eligible when its reduction length is a multiple of 4 (ASP skips the others; it
// also asks for multiples of 8 and 16 of the two GEMM dimensions, which only its CUDA kernels
// need). Ties in magnitude keep the lower index; the result is deterministic.
//
// Storage (Compressed24): per row (one line along the reduction axis; rows in row-major order of
// the other axes), the 2 kept values of each group, in ascending position, as FP32, plus each
// kept value's position in its group (0..3) as a 2-bit index, packed 4 indices a byte, low bits
// first, over the whole tensor: n/2 * 4 + ceil(n/8) bytes for n weights (53.1% of FP32).
// This is cuSPARSELt's layout of a structured operand up to the order of the metadata bits.
//
// MatMul24 multiplies a dense FP32 activation by a compressed weight on the CPU: each output sums
// only the kept products, in ascending k, in FP32; for finite activations it equals bit for bit a
// dense loop over the pruned matrix in the same order (a product with a pruned zero is +-0, and
// adding +-0 leaves a sum that started at +0 unchanged).
//
// AnalyzeSparsity reports, for each layer, that layer alone pruned (the rest dense; the pruned
// weight is substituted as the layer reads it, RunOptions::before_node, with no copy of the model):
// the model's first output against dense FP32 (SQNR, top-1 agreement), the error the
// error-propagation graph predicts (error_graph.h: the layer's output gain g_i times its local
// noise ||x_i (W'_i - W_i)||, as the planner predicts a format's error), eligibility and bytes;
// then every pruned layer at once. Sparsify returns the model with the chosen layers pruned.
//
// Thread-safety: thread-safe (pure functions; a Compressed24 is a value).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "seedance/model/emulation.h"
#include "seedance/model/executor.h"
#include "seedance/model/graph.h"
#include "seedance/model/tensor.h"

namespace seedance::model {

inline constexpr int64_t kSparseGroup = 4;  // M of ASP's m4n2: the group length
inline constexpr int64_t kSparseKept = 2;   // N: the weights a group keeps

// The axis `layer` sums its weight over (the table above).
int ReductionAxis(const Layer& layer);

// OK when a weight of `shape` can be pruned 2:4 along `axis`; InvalidArgument saying why not
// (an axis outside the shape, a reduction length that is not a multiple of 4).
absl::Status CheckEligible24(const std::vector<int64_t>& shape, int axis);

// `w` (float) with the 2 smallest-magnitude weights of each group of 4 along `axis` set to +0.
// InvalidArgument for another element type, an ineligible shape (CheckEligible24) or a NaN.
absl::StatusOr<Tensor> Prune24(const Tensor& w, int axis);

// The number of groups of 4 along `axis` holding fewer than 2 zeros (0: `w` is 2:4 sparse).
// InvalidArgument for a non-float tensor or an ineligible shape.
absl::StatusOr<int64_t> Count24Violations(const Tensor& w, int axis);

// A 2:4-sparse FP32 tensor as sparse tensor cores store it (the header's Storage paragraph).
struct Compressed24 {
  std::vector<int64_t> shape;    // the dense tensor's
  int axis = 0;                  // the reduction axis the groups lie along
  std::vector<float> values;     // the kept values: half the elements
  std::vector<uint8_t> indices;  // each kept value's position in its group, 2 bits, 4 a byte
  int64_t bytes() const {
    return static_cast<int64_t>(values.size() * sizeof(float) + indices.size());
  }
};

// Bytes of a `shape` weight stored dense in FP32 and compressed 2:4.
int64_t DenseBytes(const std::vector<int64_t>& shape);
int64_t Compressed24Bytes(const std::vector<int64_t>& shape);

// `w` compressed. Each group stores its nonzero elements; a group with fewer than 2 stores zeros
// in its lowest free positions too (a -0 before a +0). InvalidArgument for a non-float tensor, an
// ineligible shape, or a group with more than 2 nonzero elements (prune it first).
absl::StatusOr<Compressed24> Compress24(const Tensor& w, int axis);
// The dense tensor back: Decompress24(Compress24(w)) equals `w` bit for bit, except a -0 that did
// not fit in its group's 2 slots, which comes back +0. REQUIRES: `c` as Compress24 makes one (the
// sizes agree with the shape; aborts otherwise).
Tensor Decompress24(const Compressed24& c);

// y [M, N] = x [M, K] times the 2-D weight `w` holds: [K, N] with axis 0 (MatMul, Gemm) or
// [N, K] with axis 1 (Gemm with transB). Sums the kept products in ascending k, in FP32.
// InvalidArgument when x is not a float [M, K] or `w` not a 2-D weight of that K.
// REQUIRES: `w` as Compress24 makes one.
absl::StatusOr<Tensor> MatMul24(const Tensor& x, const Compressed24& w);

struct SparsityOptions {
  // The layers (node names) to prune; empty: every eligible layer. Naming a node that is not a
  // layer, or a layer that is not eligible, is InvalidArgument.
  std::vector<std::string> layers;
  // Predict each layer's output error from the error graph (one FP64 run and one tangent pass
  // per layer and sample); false leaves the predictions 0.
  bool predict = true;
};

struct LayerSparsity {
  Layer layer;
  int reduction_axis = 0;
  bool eligible = false;
  bool pruned = false;            // eligible and chosen (SparsityOptions::layers)
  std::string reason;             // why not pruned, when not
  int64_t dense_bytes = 0;        // the weight in FP32
  int64_t compressed_bytes = 0;   // 2:4 compressed (0 unless eligible)
  double weight_energy_kept = 0;  // ||W'||^2 / ||W||^2
  OutputError output;             // this layer alone pruned, the model's output against dense
  double noise = 0;               // ||x_i (W'_i - W_i)|| over the samples (FP64)
  double gain = 0;                // g_i: the error graph's output gain of the layer
  double predicted_error = 0;     // g_i * noise: the predicted ||f(W') - f(W)||
  double predicted_sqnr_db = 0;   // of the model's output, from predicted_error
};

struct SparsityReport {
  std::vector<LayerSparsity> layers;  // every layer (FindLayers), in graph order
  OutputError all_pruned;             // every pruned layer at once
  int64_t dense_bytes = 0;            // the pruned layers' weights in FP32
  int64_t compressed_bytes = 0;       // the same weights compressed 2:4
  size_t samples = 0;
};

// The report (header comment). InvalidArgument for a bad selection, a model with no layer, no
// samples, and what running the model returns.
absl::StatusOr<SparsityReport> AnalyzeSparsity(const Graph& graph,
                                               const std::vector<TensorMap>& samples,
                                               const SparsityOptions& options);

// `graph` with the chosen layers' weights pruned 2:4 (a weight several layers read is pruned
// once). InvalidArgument for a bad selection, or a weight two chosen layers sum over different
// axes.
absl::StatusOr<Graph> Sparsify(const Graph& graph, const SparsityOptions& options);

}  // namespace seedance::model
