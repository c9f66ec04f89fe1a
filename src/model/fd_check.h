// Test helper (seedance_model's tests): a forward-mode JVP against central finite differences in
// FP64, the tangent seeded at one value (a graph input, an initializer or a node output).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "seedance/model/executor.h"
#include "seedance/model/jvp.h"

namespace seedance::model::testing {

inline Tensor Random(const std::vector<int64_t>& shape, uint64_t seed, double lo = -1,
                     double hi = 1) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  Tensor t(DataType::kDouble, shape);
  for (int64_t i = 0; i < t.size(); ++i) t.data<double>()[i] = u(rng);
  return t;
}

// Runs `g` with `h * v` added to value `at` (an input, an initializer or a node output).
inline Tensor Perturbed(const Graph& g, TensorMap feeds, const std::string& at, const Tensor& v,
                        double h) {
  Graph copy = g;
  auto add = [&](Tensor& t) {
    for (int64_t i = 0; i < t.size(); ++i) t.data<double>()[i] += h * v.data<double>()[i];
  };
  RunOptions options;
  if (feeds.count(at)) {
    add(feeds[at]);
  } else if (copy.initializers.count(at)) {
    add(copy.initializers[at]);
  } else {
    options.after_node = [&](const Node& node, std::vector<Tensor>& outputs) {
      for (size_t k = 0; k < node.outputs.size(); ++k) {
        if (node.outputs[k] == at) add(outputs[k]);
      }
      return absl::OkStatus();
    };
  }
  absl::StatusOr<TensorMap> out = Run(copy, feeds, options);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? out->at(g.outputs[0].name) : Tensor();
}

// || JVP - central difference || / || central difference ||, the tangent seeded at `at`.
inline double JvpError(const Graph& g64, const TensorMap& feeds64, const std::string& at,
                       uint64_t seed = 7) {
  absl::StatusOr<Jvp> jvp = Jvp::Create(g64, feeds64);
  EXPECT_TRUE(jvp.ok()) << jvp.status();
  if (!jvp.ok()) return 1;
  const Tensor v = Random(jvp->primal().at(at).shape(), seed);
  const std::string out = g64.outputs[0].name;
  absl::StatusOr<TensorMap> t = jvp->Propagate({{at, v}}, {out});
  EXPECT_TRUE(t.ok()) << t.status();
  if (!t.ok()) return 1;
  // A step of 1e-6 of the value's own size: small enough not to cross a ReLU kink, large
  // enough that FP64 rounding stays far below the 1e-3 asked.
  double vnorm = 0, xnorm = 0;
  for (int64_t i = 0; i < v.size(); ++i) vnorm += v.AsDouble(i) * v.AsDouble(i);
  const Tensor& x = jvp->primal().at(at);
  for (int64_t i = 0; i < x.size(); ++i) xnorm += x.AsDouble(i) * x.AsDouble(i);
  const double h = 1e-6 * std::sqrt(std::max(xnorm, 1e-12) / vnorm);
  const Tensor plus = Perturbed(g64, feeds64, at, v, h), minus = Perturbed(g64, feeds64, at, v, -h);
  double err = 0, norm = 0;
  for (int64_t i = 0; i < plus.size(); ++i) {
    const double fd = (plus.AsDouble(i) - minus.AsDouble(i)) / (2 * h);
    err += std::pow(t->at(out).AsDouble(i) - fd, 2);
    norm += fd * fd;
  }
  EXPECT_GT(norm, 0) << "the perturbation at " << at << " does not reach the output";
  return std::sqrt(err / norm);
}

}  // namespace seedance::model::testing
