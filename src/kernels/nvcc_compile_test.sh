#!/usr/bin/env bash
# kernels_nvcc_compile_test: the CUDA sources of src/kernels compile with nvcc for sm_80 (A100)
# and sm_90 (H100/H200), warnings as errors, and the C++ launchers of a CUDA build compile with
# the host compiler. Compile only: nothing runs on a GPU (tools/gpu/kernels_check.sh does that).
# Exits 77 (CTest's skip) with "nvcc not found: skipped" where the CUDA toolkit is absent.
#
# Usage: nvcc_compile_test.sh SOURCE_DIR   ($NVCC or $CUDA_HOME/bin/nvcc or nvcc on PATH or
#        /usr/local/cuda/bin/nvcc; $CXX for the launchers, default c++)
set -euo pipefail
root=${1:?usage: nvcc_compile_test.sh SOURCE_DIR}
nvcc=${NVCC:-}
if [[ -z "$nvcc" ]]; then
  for candidate in "${CUDA_HOME:+$CUDA_HOME/bin/nvcc}" "$(command -v nvcc || true)" \
                   /usr/local/cuda/bin/nvcc; do
    if [[ -n "$candidate" && -x "$candidate" ]]; then nvcc=$candidate; break; fi
  done
fi
if [[ -z "$nvcc" ]]; then
  echo "nvcc not found: skipped"
  exit 77
fi
cuda_home=$(cd "$(dirname "$nvcc")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$nvcc" --version | tail -n 2
# The flags of tools/gpu/kernels_check.sh's build, so that what compiles here is what runs there.
flags=(-std=c++17 -O3 -gencode "arch=compute_80,code=sm_80" -gencode "arch=compute_90,code=sm_90"
       -Werror all-warnings -Xcompiler "-Wall,-Wextra,-Werror,-fPIC")
for source in attention.cu sparse24_gemm.cu; do
  start=$SECONDS
  "$nvcc" "${flags[@]}" -c "$root/src/kernels/$source" -o "$tmp/${source%.cu}.o"
  echo "nvcc $source: ok ($((SECONDS - start)) s)"
done
"${CXX:-c++}" -std=c++20 -Wall -Wextra -Werror -fsyntax-only -I "$root/include" \
  -I "$cuda_home/include" "$root/src/kernels/launchers_cuda.cc"
echo "launchers_cuda.cc: ok"
