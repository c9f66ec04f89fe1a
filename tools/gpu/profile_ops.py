#!/usr/bin/env python3
"""Measures one transformer layer's operators on the local GPU with PyTorch and writes a CSV in
the schema of Vidur's operator profiles (data/profiling/compute/*/MODEL_mlp.csv: columns
time_stats.<op>.{min,max,mean,median,std} in milliseconds, then n_head, n_kv_head, n_embd,
n_expanded_embd, vocab_size, use_gated_mlp, num_tokens, num_tensor_parallel_workers).

It exists to test Seedance's GPU cost model on profiles it was not fitted on: other model shapes
and another GPU than the public A100/H100 profiles (`seedance costmodel check --profile OUT.csv
--gpu NAME`). Each operator runs on one GPU with the per-worker shapes of tensor parallelism N
(heads and MLP width divided by N), as Vidur profiles them.

Usage: profile_ops.py --model llama-3-8b --out DIR [--reps 20] [--dtype fp16]
"""
import argparse
import csv
import os
import statistics
import sys

# name: (n_head, n_kv_head, n_embd, n_expanded_embd, vocab_size) of public model configs.
MODELS = {
    "llama-2-7b": (32, 32, 4096, 11008, 32000),
    "llama-2-13b": (40, 40, 5120, 13824, 32000),
    "llama-3-8b": (32, 8, 4096, 14336, 128256),
    "llama-3-70b": (64, 8, 8192, 28672, 128256),
    "qwen2-7b": (28, 4, 3584, 18944, 152064),
}
TOKENS = [1, 2, 4, 8, 16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072,
          4096]
OPS = ["emb", "input_layernorm", "attn_pre_proj", "attn_rope", "attn_post_proj",
       "post_attention_layernorm", "mlp_up_proj", "mlp_act", "mlp_down_proj", "add"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--model", action="append", required=True, choices=sorted(MODELS))
    ap.add_argument("--out", required=True)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--tp", default="1,2,4,8")
    args = ap.parse_args()

    import torch
    if not torch.cuda.is_available():
        sys.exit("profile_ops.py: no CUDA device")
    dev = torch.device("cuda")
    dt = torch.float16
    os.makedirs(args.out, exist_ok=True)

    def timed(fn):
        for _ in range(3):
            fn()
        times = []
        for _ in range(args.reps):
            a = torch.cuda.Event(enable_timing=True)
            b = torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b))  # ms
        return times

    def rmsnorm(x, w):
        return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(x.dtype) * w

    for model in args.model:
        n_head, n_kv, e, f, vocab = MODELS[model]
        hd = e // n_head
        path = os.path.join(args.out, f"{model}_mlp.csv")
        header = [f"time_stats.{op}.{s}" for op in OPS for s in ("min", "max", "mean", "median", "std")]
        header += ["n_head", "n_kv_head", "n_embd", "n_expanded_embd", "vocab_size", "use_gated_mlp",
                   "num_tokens", "num_tensor_parallel_workers"]
        with open(path, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(header)
            for tp in (int(x) for x in args.tp.split(",")):
                if n_head % tp or n_kv % tp or f % tp or vocab % tp:
                    continue
                h, kv, ff = n_head // tp, n_kv // tp, f // tp
                emb = torch.randn(vocab // tp, e, device=dev, dtype=dt)
                w_qkv = torch.randn(e, (h + 2 * kv) * hd, device=dev, dtype=dt) * 0.02
                w_o = torch.randn(h * hd, e, device=dev, dtype=dt) * 0.02
                w_up = torch.randn(e, 2 * ff, device=dev, dtype=dt) * 0.02
                w_down = torch.randn(ff, e, device=dev, dtype=dt) * 0.02
                norm_w = torch.ones(e, device=dev, dtype=dt)
                for t in TOKENS:
                    ids = torch.randint(0, vocab // tp, (t,), device=dev)
                    x = torch.randn(t, e, device=dev, dtype=dt)
                    attn = torch.randn(t, h * hd, device=dev, dtype=dt)
                    act_in = torch.randn(t, 2 * ff, device=dev, dtype=dt)
                    mlp_mid = torch.randn(t, ff, device=dev, dtype=dt)
                    q = torch.randn(t, h + kv, hd, device=dev, dtype=dt)
                    pos = torch.arange(t, device=dev).float()
                    inv = 1.0 / (10000 ** (torch.arange(0, hd, 2, device=dev).float() / hd))
                    ang = torch.outer(pos, inv)
                    cos, sin = ang.cos().to(dt)[:, None, :], ang.sin().to(dt)[:, None, :]

                    def rope():
                        q1, q2 = q[..., 0::2], q[..., 1::2]
                        return torch.cat((q1 * cos - q2 * sin, q1 * sin + q2 * cos), -1)

                    fns = {
                        "emb": lambda: torch.nn.functional.embedding(ids, emb),
                        "input_layernorm": lambda: rmsnorm(x, norm_w),
                        "attn_pre_proj": lambda: x @ w_qkv,
                        "attn_rope": rope,
                        "attn_post_proj": lambda: attn @ w_o,
                        "post_attention_layernorm": lambda: rmsnorm(x, norm_w),
                        "mlp_up_proj": lambda: x @ w_up,
                        "mlp_act": lambda: torch.nn.functional.silu(act_in[:, :ff]) * act_in[:, ff:],
                        "mlp_down_proj": lambda: mlp_mid @ w_down,
                        "add": lambda: x + x,
                    }
                    row = []
                    for op in OPS:
                        ts = timed(fns[op])
                        row += [min(ts), max(ts), statistics.mean(ts), statistics.median(ts),
                                statistics.pstdev(ts)]
                    row += [n_head, n_kv, e, f, vocab, True, t, tp]
                    w.writerow(row)
                del emb, w_qkv, w_o, w_up, w_down
                torch.cuda.empty_cache()
        print(f"profile_ops.py: wrote {path}", flush=True)


if __name__ == "__main__":
    main()
