#!/usr/bin/env bash
# The GPU checks of issues #4 and #5, run as one script on a machine with an NVIDIA GPU.
# Expects prebuilt binaries in .devbin/ (nvml_test, seedance, and their shared libraries in
# .devbin/lib) and writes everything to $OUT (default ./gpu-out):
#   nvml.log          nvml_test (NVML through dlopen) and nvidia-smi, for comparison
#   gpu_profile.json  `seedance profile` for 8 s while a PyTorch matmul loop keeps the GPU busy
#   analyze.txt       `seedance analyze` of that profile
#   MODEL_mlp.csv     one transformer layer's operators measured with PyTorch (tools/gpu/profile_ops.py)
set -uo pipefail
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/.devbin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
{
  echo "== nvidia-smi"; nvidia-smi; nvidia-smi topo -m
  echo "== nvml_test"; .devbin/nvml_test
} >"$OUT/nvml.log" 2>&1
echo "nvml_test exit: $?" | tee -a "$OUT/nvml.log"
# Load for the profile: 12 s of bf16 matrix products.
python3 - <<'PY' &
import time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
t = time.time()
while time.time() - t < 12:
    for _ in range(20):
        a @ a
    torch.cuda.synchronize()
PY
load=$!
sleep 2
.devbin/seedance profile --duration 8 --interval 1 --output "$OUT/gpu_profile.json" >"$OUT/analyze.txt" 2>&1
echo "profile exit: $?" >>"$OUT/analyze.txt"
wait $load
.devbin/seedance analyze --input "$OUT/gpu_profile.json" --report cost-savings >>"$OUT/analyze.txt" 2>&1
echo "analyze exit: $?" >>"$OUT/analyze.txt"
python3 tools/gpu/profile_ops.py --model llama-3-8b --model llama-2-13b --model qwen2-7b \
  --model llama-3-70b --model llama-2-7b --out "$OUT" 2>&1 | tail -n 20
