#!/usr/bin/env python3
"""Runs Seedance's CUDA kernels (src/kernels) on a GPU against PyTorch; tools/gpu/kernels_check.sh
calls it. The kernels come from the shared library that script builds, called through ctypes on
torch tensors' data pointers (src/kernels/kernels_c_api.h).

  attention   first small correctness cases (head dim 64 and 128, padding, q_len != kv_len,
              causal), then the serving shapes: Seedance's kernel, PyTorch's
              scaled_dot_product_attention on its flash backend only, and an unfused PyTorch
              reference (matmul, softmax, matmul); max abs error of each against FP32 attention.
              CSVs: attention_check.csv, attention.csv.
  gemm        the 2:4 sparse GEMM (cuSPARSELt) against dense cuBLAS on Llama-3-8B's projections
              and the 10,240 x 3,072 Linear at 3,072 tokens. CSV: sparse24_gemm.csv.

Every CSV row is written as soon as it is measured, so a part that dies leaves what it had.
Semantics (src/kernels/attention.h): Q, K, V, O are [batch, heads, seq, head_dim]; causal is
bottom-right aligned (query i sees key j <= i + kv_len - q_len; the serving shapes have
q_len == kv_len, where PyTorch's is_causal agrees); a row that sees no key is 0.
"""
import argparse
import contextlib
import csv
import ctypes
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

FP16, BF16 = 0, 1
TOLERANCE = {FP16: 2e-3, BF16: 1e-2}  # the limits against FP32 attention
DTYPES = {FP16: torch.float16, BF16: torch.bfloat16}
NAMES = {FP16: "fp16", BF16: "bf16"}


class Sparse24Result(ctypes.Structure):
    _fields_ = [("sparse_ms", ctypes.c_double), ("dense_ms", ctypes.c_double),
                ("max_abs_diff", ctypes.c_double), ("n_padded", ctypes.c_int64),
                ("cusparselt_version", ctypes.c_int), ("message", ctypes.c_char * 512)]


def load(path):
    lib = ctypes.CDLL(path)
    lib.seedance_attention_forward.restype = ctypes.c_int
    lib.seedance_attention_forward.argtypes = (
        [ctypes.c_int] * 7 + [ctypes.c_float] + [ctypes.c_void_p] * 6)
    lib.seedance_cuda_error_string.restype = ctypes.c_char_p
    lib.seedance_cuda_error_string.argtypes = [ctypes.c_int]
    lib.seedance_sparse24_gemm_bench.restype = ctypes.c_int
    lib.seedance_sparse24_gemm_bench.argtypes = [
        ctypes.c_int, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int,
        ctypes.POINTER(Sparse24Result)]
    return lib


class CsvOut:
    """A CSV file whose rows are flushed one by one."""

    def __init__(self, path, fields):
        self.file = open(path, "w", newline="")
        self.writer = csv.DictWriter(self.file, fieldnames=fields)
        self.writer.writeheader()
        self.file.flush()

    def row(self, values):
        self.writer.writerow(values)
        self.file.flush()
        print(", ".join(f"{k}={v}" for k, v in values.items()), flush=True)


def seedance_attention(lib, q, k, v, causal, kv_lengths=None):
    b, h, lq, d = q.shape
    out = torch.empty_like(q)
    element = FP16 if q.dtype == torch.float16 else BF16
    lengths = 0 if kv_lengths is None else kv_lengths.data_ptr()
    code = lib.seedance_attention_forward(
        element, b, h, lq, k.shape[2], d, int(causal), 1.0 / math.sqrt(d), q.data_ptr(),
        k.data_ptr(), v.data_ptr(), out.data_ptr(), lengths,
        torch.cuda.current_stream().cuda_stream)
    if code != 0:
        raise RuntimeError("seedance_attention_forward: " +
                           lib.seedance_cuda_error_string(code).decode())
    return out


def flash_context():
    """PyTorch's SDPA restricted to its flash backend, on old and new torch."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        return sdpa_kernel(SDPBackend.FLASH_ATTENTION)
    except ImportError:
        return torch.backends.cuda.sdp_kernel(enable_flash=True, enable_math=False,
                                              enable_mem_efficient=False)


def sdpa_flash(q, k, v, causal):
    with flash_context():
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)


def visible_mask(lq, lk, causal, kv_lengths, device):
    """[batch or 1, 1, lq, lk] booleans: which keys each query row sees (attention.h)."""
    cols = torch.arange(lk, device=device)
    mask = torch.ones(1, 1, lq, lk, dtype=torch.bool, device=device)
    if causal:
        rows = torch.arange(lq, device=device)
        mask = mask & (cols[None, :] <= rows[:, None] + (lk - lq))[None, None]
    if kv_lengths is not None:
        mask = mask & (cols[None, :] < kv_lengths.long()[:, None])[:, None, None, :]
    return mask


def unfused(q, k, v, causal):
    """matmul, softmax, matmul in the inputs' type: the N x N matrix in global memory."""
    scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
    if causal:
        scores.masked_fill_(~visible_mask(q.shape[2], k.shape[2], True, None, q.device),
                            float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def fp32_attention(q, k, v, causal, kv_lengths=None, chunk_bytes=2 << 30):
    """FP32 attention (TF32 off) on the 16-bit inputs, in chunks of query rows."""
    b, h, lq, d = q.shape
    lk = k.shape[2]
    k32, v32 = k.float(), v.float()
    out = torch.empty(b, h, lq, d, dtype=torch.float32, device=q.device)
    rows = max(1, chunk_bytes // (b * h * lk * 4))
    mask = visible_mask(lq, lk, causal, kv_lengths, q.device)
    for i0 in range(0, lq, rows):
        i1 = min(lq, i0 + rows)
        s = (q[:, :, i0:i1].float() @ k32.transpose(-2, -1)) / math.sqrt(d)
        s.masked_fill_(~mask[:, :, i0:i1], float("-inf"))
        p = torch.nan_to_num(torch.softmax(s, dim=-1), nan=0.0)  # rows that see no key: 0
        out[:, :, i0:i1] = p @ v32
        del s, p
    return out


def max_err(got, want):
    return float((got.float() - want).abs().max())


def time_ms(fn, min_s=0.2, max_iters=50):
    """Mean wall time per call, the device synchronised around the loop (the kernel runs under
    its own CUDA runtime; a device-wide synchronise covers both)."""
    fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    once = time.perf_counter() - start
    iters = max(3, min(max_iters, int(min_s / max(once, 1e-6))))
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) * 1e3 / iters


def inputs(b, h, lq, lk, d, element, seed):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    dtype = DTYPES[element]
    return [torch.randn(b, h, n, d, device="cuda", dtype=dtype, generator=gen)
            for n in (lq, lk, lk)]


# Small cases that reach every path of the kernel: ragged tiles, both head dims, padding (to 0
# keys, inside a tile, on a tile edge), q_len above and below kv_len with the causal mask.
CHECK_CASES = [
    # name, batch, heads, q_len, kv_len, head_dim, causal, kv_lengths
    ("single_key", 1, 1, 1, 1, 64, False, None),
    ("ragged_tiles", 2, 3, 100, 130, 64, False, None),
    ("square_causal", 2, 2, 257, 257, 128, True, None),
    ("decode_row", 3, 4, 1, 1000, 128, True, None),
    ("prefill_over_cache", 1, 2, 70, 300, 128, True, None),
    ("more_queries_than_keys", 1, 2, 150, 40, 64, True, None),
    ("padding", 3, 2, 50, 192, 128, False, [0, 64, 150]),
    ("padding_causal", 2, 2, 96, 96, 64, True, [70, 1]),
]


def run_checks(lib, out_dir):
    out = CsvOut(os.path.join(out_dir, "attention_check.csv"),
                 ["case", "dtype", "max_abs_err_vs_fp32", "tolerance", "pass", "error"])
    failures = 0
    for element in (FP16, BF16):
        for n, (name, b, h, lq, lk, d, causal, lengths) in enumerate(CHECK_CASES):
            q, k, v = inputs(b, h, lq, lk, d, element, 1000 + n)
            kv = None if lengths is None else torch.tensor(lengths, dtype=torch.int32,
                                                           device="cuda")
            row = {"case": name, "dtype": NAMES[element], "tolerance": TOLERANCE[element],
                   "max_abs_err_vs_fp32": "", "pass": False, "error": ""}
            try:
                got = seedance_attention(lib, q, k, v, causal, kv)
                torch.cuda.synchronize()
                err = max_err(got, fp32_attention(q, k, v, causal, kv))
                row.update(max_abs_err_vs_fp32=f"{err:.3g}", **{"pass": err <= TOLERANCE[element]})
            except Exception as e:  # a failed case is a row, the next case still runs
                row["error"] = str(e)[:200]
            failures += not row["pass"]
            out.row(row)
    return failures


# Serving shapes: heads 32, head dim 128; (batch, context) from one long prompt to many short.
SERVING = [(1, 512), (64, 512), (16, 2048), (1, 4096), (8, 4096), (4, 8192), (1, 16384),
           (1, 32768)]

ATTENTION_FIELDS = [
    "dtype", "batch", "context", "heads", "head_dim", "causal", "seedance_ms", "flash_ms",
    "unfused_ms", "seedance_vs_flash", "unfused_vs_seedance", "seedance_err", "flash_err",
    "unfused_err", "tolerance", "note"]


def serving_case(lib, element, b, ctx, causal, seed):
    h, d = 32, 128
    q, k, v = inputs(b, h, ctx, ctx, d, element, seed)
    row = {"dtype": NAMES[element], "batch": b, "context": ctx, "heads": h, "head_dim": d,
           "causal": causal, "tolerance": TOLERANCE[element], "note": ""}
    ref = fp32_attention(q, k, v, causal)
    row["seedance_err"] = f"{max_err(seedance_attention(lib, q, k, v, causal), ref):.3g}"
    row["seedance_ms"] = time_ms(lambda: seedance_attention(lib, q, k, v, causal))
    try:
        row["flash_err"] = f"{max_err(sdpa_flash(q, k, v, causal), ref):.3g}"
        row["flash_ms"] = time_ms(lambda: sdpa_flash(q, k, v, causal))
        row["seedance_vs_flash"] = f"{row['seedance_ms'] / row['flash_ms']:.3f}"
    except Exception as e:  # the flash backend refused the shape, or this torch has none
        row["note"] = f"flash: {str(e)[:150]}; "
    need = b * h * ctx * ctx * 2 * 3  # scores, probabilities, one temporary, 2 bytes each
    free = torch.cuda.mem_get_info()[0]
    if need > 0.8 * free:
        row["note"] += f"unfused skipped: needs {need / 2**30:.0f} GiB, {free / 2**30:.0f} free"
    else:
        row["unfused_err"] = f"{max_err(unfused(q, k, v, causal), ref):.3g}"
        row["unfused_ms"] = time_ms(lambda: unfused(q, k, v, causal), max_iters=10)
        row["unfused_vs_seedance"] = f"{row['unfused_ms'] / row['seedance_ms']:.3f}"
    for key in ("seedance_ms", "flash_ms", "unfused_ms"):
        if key in row:
            row[key] = f"{row[key]:.4g}"
    return row


def run_serving(lib, out_dir, deadline):
    out = CsvOut(os.path.join(out_dir, "attention.csv"), ATTENTION_FIELDS)
    seed = 2000
    for element in (FP16, BF16):
        for b, ctx in SERVING:
            for causal in (False, True):
                seed += 1
                if time.monotonic() > deadline:
                    out.row({"dtype": NAMES[element], "batch": b, "context": ctx,
                             "causal": causal, "note": "skipped: time budget spent"})
                    continue
                try:
                    out.row(serving_case(lib, element, b, ctx, causal, seed))
                except Exception as e:  # noted, and the next shape runs
                    out.row({"dtype": NAMES[element], "batch": b, "context": ctx,
                             "causal": causal, "note": f"error: {str(e)[:200]}"})
                torch.cuda.empty_cache()


# Llama-3-8B (hidden 4096, intermediate 14336, 32 query heads and 8 KV heads of 128): a Linear
# of `in_features` -> `out_features` is C[out x tokens] = W[out x in] X[in x tokens].
GEMMS = [("q_proj", 4096, 4096), ("kv_proj", 1024, 4096), ("o_proj", 4096, 4096),
         ("gate_up_proj", 14336, 4096), ("down_proj", 4096, 14336)]
TOKENS = [1, 128, 3072]


def run_gemm(lib, out_dir):
    out = CsvOut(os.path.join(out_dir, "sparse24_gemm.csv"),
                 ["shape", "dtype", "out_features", "in_features", "tokens", "tokens_padded",
                  "status", "sparse_ms", "dense_ms", "speedup", "max_abs_diff",
                  "cusparselt_version", "message"])
    cases = [(name, FP16, m, k, n) for name, m, k in GEMMS for n in TOKENS]
    cases += [("linear_10240x3072", e, 3072, 10240, 3072) for e in (FP16, BF16)]
    for name, element, m, k, n in cases:
        r = Sparse24Result()
        status = lib.seedance_sparse24_gemm_bench(element, m, n, k, 20, ctypes.byref(r))
        row = {"shape": name, "dtype": NAMES[element], "out_features": m, "in_features": k,
               "tokens": n, "tokens_padded": r.n_padded,
               "status": {0: "measured", 1: "not available"}.get(status, "error"),
               "cusparselt_version": r.cusparselt_version, "message": r.message.decode()}
        if status == 0:
            row.update(sparse_ms=f"{r.sparse_ms:.4g}", dense_ms=f"{r.dense_ms:.4g}",
                       speedup=f"{r.dense_ms / r.sparse_ms:.3f}",
                       max_abs_diff=f"{r.max_abs_diff:.3g}")
        out.row(row)
        if status == 1:  # not available: the same answer for every shape
            break


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("part", choices=["attention", "gemm"])
    ap.add_argument("--lib", required=True, help="libseedance_kernels_cuda.so")
    ap.add_argument("--out", default="gpu-out")
    ap.add_argument("--budget-s", type=float, default=240,
                    help="attention: start no serving shape after this many seconds")
    args = ap.parse_args()
    deadline = time.monotonic() + args.budget_s
    os.makedirs(args.out, exist_ok=True)
    torch.backends.cuda.matmul.allow_tf32 = False  # FP32 references in FP32
    print(f"torch {torch.__version__} cuda {torch.version.cuda} "
          f"{torch.cuda.get_device_name()}", flush=True)
    lib = load(args.lib)
    if args.part == "gemm":
        run_gemm(lib, args.out)
        return 0
    failures = run_checks(lib, args.out)
    print(f"correctness cases failed: {failures}", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        run_serving(lib, args.out, deadline)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
