// The one oneDNN CPU engine of seedance_model's kernels (internal): a primitive runs only on a
// stream of the engine it was made for, so every kernel file makes its primitives and streams on
// this one (ops_math.cc defines it).
//
// Thread-safety: oneDNN engines are thread-safe; made once, on first use.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

namespace seedance::model::ops {

dnnl::engine& CpuEngine();

}  // namespace seedance::model::ops
