#!/usr/bin/env bash
# The GPU checks of issue 43 (docs/kernels.md), one prepared script for a lent machine with an
# NVIDIA GPU (an H200 in the plan), the CUDA toolkit at /usr/local/cuda (or $NVCC) and PyTorch
# with CUDA in python3; no network. Run from the repository root:
#
#   OUT=gpu-out bash tools/gpu/kernels_check.sh
#
# It builds src/kernels/attention.cu and sparse24_gemm.cu with nvcc into one shared library
# (their C entry points: src/kernels/kernels_c_api.h) and runs tools/gpu/kernels_bench.py on it:
#   $OUT/kernels_check.log     everything printed, the machine, the versions, each part's exit
#   $OUT/attention_check.csv   small correctness cases against FP32 attention (pass/fail each)
#   $OUT/attention.csv         serving shapes: Seedance's kernel, SDPA's flash backend, unfused
#                              PyTorch; times and max abs error against FP32 attention
#   $OUT/sparse24_gemm.csv     2:4 cuSPARSELt against dense cuBLAS on Llama-3-8B shapes, or a
#                              row saying why it is not available
# Each part runs under its own timeout and a failing part does not stop the next; the whole
# stays under about 6 minutes (build under 1, attention 4, GEMM 1). Exit status 0 when every part ran
# and every correctness case passed. Worst case, every part running into its timeout: 9.5 min.
set -uo pipefail
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
root=$(cd "$(dirname "$0")/../.." && pwd)
NVCC=${NVCC:-/usr/local/cuda/bin/nvcc}
cuda_home=$(cd "$(dirname "$NVCC")/.." 2>/dev/null && pwd)
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
lib="$build/libseedance_kernels_cuda.so"
exec > >(tee "$OUT/kernels_check.log") 2>&1
status=0

echo "== machine"
timeout 30 nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv
timeout 30 "$NVCC" --version | tail -n 2
timeout 30 python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
  torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU visible to torch")'

# The GPU's own architecture (sm_90 on an H100/H200), sm_90 when nvidia-smi cannot say.
cap=$(timeout 30 nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null |
      head -n 1 | tr -d ' .')
[[ "$cap" =~ ^[0-9]+$ ]] || cap=90

echo "== build (sm_$cap)"
start=$SECONDS
timeout 150 "$NVCC" -std=c++17 -O3 -gencode "arch=compute_$cap,code=sm_$cap" \
  -Werror all-warnings -Xcompiler "-Wall,-Wextra,-Werror,-fPIC" -shared \
  -o "$lib" "$root/src/kernels/attention.cu" "$root/src/kernels/sparse24_gemm.cu" \
  -L"$cuda_home/lib64" -Xlinker "-rpath=$cuda_home/lib64" -lcublas -ldl
build_status=$?
echo "build exit: $build_status ($((SECONDS - start)) s)"
if [[ $build_status -ne 0 ]]; then
  echo "the kernels did not build: nothing to run"
  exit 1
fi

# cuSPARSELt ships in PyTorch's pip wheels (nvidia-cusparselt-cu12); tell the loader where.
if [[ -z "${SEEDANCE_CUSPARSELT:-}" ]]; then
  SEEDANCE_CUSPARSELT=$(timeout 60 python3 - <<'PY' 2>/dev/null
import glob, os, site, sys
roots = site.getsitepackages() + [site.getusersitepackages()] + sys.path
for root in roots:
    for pattern in ("nvidia/cusparselt/lib/libcusparseLt.so*", "torch/lib/libcusparseLt*.so*"):
        found = sorted(glob.glob(os.path.join(root, pattern)))
        if found:
            print(found[0])
            sys.exit(0)
PY
  )
fi
export SEEDANCE_CUSPARSELT
echo "cuSPARSELt: ${SEEDANCE_CUSPARSELT:-not found by python; the library searches itself}"

echo "== attention"
timeout 270 python3 "$root/tools/gpu/kernels_bench.py" attention --lib "$lib" --out "$OUT" \
  --budget-s 180
part=$?
echo "attention exit: $part"
[[ $part -eq 0 ]] || status=1

echo "== sparse 2:4 GEMM"
timeout 120 python3 "$root/tools/gpu/kernels_bench.py" gemm --lib "$lib" --out "$OUT"
part=$?
echo "gemm exit: $part"
[[ $part -eq 0 ]] || status=1

echo "== done: exit $status; CSVs in $OUT"
exit $status
