#!/usr/bin/python3
"""Compares seedance_train's mixed-precision gradient clipping (clip.h, through the C API of
libseedance_train_c.so, c_api.h) with torch 1.13's torch.nn.utils.clip_grad_norm_ and
torch.cuda.amp.GradScaler.

Usage: mpgc_torch_test.py [PATH_TO_libseedance_train_c.so]   (or env SEEDANCE_TRAIN_C_LIB)
Exit status: 0 all cases agree; 1 a mismatch; 77 torch (or numpy) is not importable, unless
SEEDANCE_REQUIRE_DATA=1, when that is a failure (1).

1. clip_grad_norm_ on random cases (fixed seeds): 1-6 tensors of random shapes, all FP32, all
   FP16, all BF16 or mixed; norm_type 2 and inf; max_norm below the norm (clipping) and above it
   (not); some cases with an inf or a NaN in one gradient; some FP16 cases whose norm overflows
   FP16. Same inputs go to both; torch runs on the CPU, so the library is called with
   SEEDANCE_TRAIN_ACC_TORCH_CPU: torch 1.13's CPU Half norm sums squares in FP16 (c10::Half
   arithmetic, measured: sqrt of 5000 ones is 45.25), BF16 and FP32 sum in FP32. (torch's
   all-FP16 case needs one shim on the CPU: see torch_clip_grad_norm.) Tensors stay under
   32,768 elements, below which torch's CPU reduction is one sequential pass.
   - Total norm: within NORM_ULPS ulps of the dtype it is returned in: 4 for FP32, 1 for FP16
     and BF16. Why not bitwise: torch sums an FP32 tensor's squares in its vectorised order
     and we in 8 lanes; the two FP32 sums differ by a few roundings, up to 2 ulps of the norm
     in 600 cases. Sums that end in FP16 or BF16 nearly always round to the same value, but a
     sum next to a rounding boundary may go either way: 1 ulp. Non-finite norms must match
     exactly (inf vs inf, NaN vs NaN).
   - Clipped gradients, bitwise (NaN matching NaN), two ways: (a) against the rest of torch's
     clip_grad_norm_ (coefficient, clamp, mul_) run by torch from our total norm: this isolates
     the coefficient and per-dtype rounding, which must be exact; (b) end to end against
     torch's gradients whenever the two norms are equal. At least 90% of the cases must be
     bitwise equal end to end, so the norm tolerance cannot hide a systematic difference.
2. The GradScaler sequence on scripted loss-scale traces (GradScaler's defaults over 4,500 steps,
   and small custom factors over 40), with inf or NaN gradients at scripted steps. GradScaler is
   CUDA-only in 1.13: `scale()` asserts CUDA, and `_amp_update_scale_` and
   `_amp_foreach_non_finite_check_and_unscale_` have no CPU kernel (checked). So the test runs
   GradScaler's own Python (unscale_'s inv_scale, step's skip decision, update's found-inf
   aggregation) on CPU tensors with those two kernels replaced by line-for-line transcriptions
   of aten/src/ATen/native/cuda/AmpKernels.cu (_amp_update_scale_cuda_kernel and
   _amp_non_finite_check_and_unscale_cuda_), and compares per step: found inf, step skipped
   (whether optimizer.step() ran), the new scale, the growth tracker, the unscaled gradients
   (bitwise) and the clipped ones (as in 1).
"""
import ctypes
import math
import os
import sys


def load_torch():
    try:
        import numpy  # noqa: F401
        import torch  # noqa: F401
    except ImportError as e:
        if os.environ.get("SEEDANCE_REQUIRE_DATA") == "1":
            print(f"FAIL: torch is required (SEEDANCE_REQUIRE_DATA=1) but not importable: {e}")
            sys.exit(1)
        print(f"SKIP: torch not importable: {e}")
        sys.exit(77)


load_torch()
import numpy as np  # noqa: E402
import torch  # noqa: E402

F32, F16, BF16, INT8 = 0, 1, 2, 3
ACC_TORCH_CPU = 2  # SEEDANCE_TRAIN_ACC_TORCH_CPU: torch 1.13's CPU FP16 norm sums in FP16
CODE = {torch.float32: F32, torch.float16: F16, torch.bfloat16: BF16}
BITS = {torch.float32: (torch.int32, 32), torch.float16: (torch.int16, 16),
        torch.bfloat16: (torch.int16, 16)}
# Allowed distance of the total norm from torch's, in ulps of the dtype it is returned in (see
# the module docstring): FP32 sums of squares in a different order differ by a few FP32 roundings.
NORM_ULPS = {torch.float32: 4, torch.float16: 1, torch.bfloat16: 1}
DT = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}


class Lib:
    def __init__(self, path):
        self.lib = ctypes.CDLL(path)
        p, sz, dbl, i = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_double, ctypes.c_int
        self.lib.seedance_train_clip_grad_norm.argtypes = [
            sz, p, p, p, p, dbl, dbl, i, i, i, p, p, ctypes.c_char_p, sz]
        self.lib.seedance_train_unscale_grads.argtypes = [
            sz, p, p, p, p, ctypes.c_float, p, ctypes.c_char_p, sz]
        self.lib.seedance_train_loss_scaler_new.argtypes = [
            ctypes.c_float, dbl, dbl, i, p, ctypes.c_char_p, sz]
        self.lib.seedance_train_loss_scaler_update.argtypes = [p, i, p, p]
        self.lib.seedance_train_loss_scaler_free.argtypes = [p]
        self.lib.seedance_train_loss_scaler_growth_tracker.argtypes = [p]

    @staticmethod
    def _arrays(tensors):
        """numpy views of the tensors' bits (shared with the tensors) and the C arrays."""
        views = [t.view(BITS[t.dtype][0]).numpy() for t in tensors]
        n = len(tensors)
        dtypes = (ctypes.c_int * n)(*[CODE[t.dtype] for t in tensors])
        data = (ctypes.c_void_p * n)(*[v.ctypes.data for v in views])
        sizes = (ctypes.c_size_t * n)(*[v.size for v in views])
        return views, dtypes, data, sizes

    def clip(self, tensors, max_norm, norm_type):
        """Clips the (contiguous, CPU) tensors in place; returns (total_norm, clip_coef)."""
        views, dtypes, data, sizes = self._arrays(tensors)
        total, coef = ctypes.c_double(), ctypes.c_double()
        err = ctypes.create_string_buffer(256)
        rc = self.lib.seedance_train_clip_grad_norm(
            len(tensors), dtypes, data, sizes, None, max_norm, norm_type, ACC_TORCH_CPU, 1, 0,
            ctypes.byref(total), ctypes.byref(coef), err, 256)
        if rc != 0:
            raise RuntimeError(f"seedance_train_clip_grad_norm: {rc}: {err.value.decode()}")
        del views
        return total.value, coef.value

    def unscale(self, tensors, scale):
        views, dtypes, data, sizes = self._arrays(tensors)
        found = ctypes.c_int()
        err = ctypes.create_string_buffer(256)
        rc = self.lib.seedance_train_unscale_grads(len(tensors), dtypes, data, sizes, None, scale,
                                                   ctypes.byref(found), err, 256)
        if rc != 0:
            raise RuntimeError(f"seedance_train_unscale_grads: {rc}: {err.value.decode()}")
        del views
        return bool(found.value)


def ulp_distance(a, b):
    """Per-element distance in ulps of a's dtype; 0 for NaN vs NaN, huge for NaN vs number."""
    int_type, width = BITS[a.dtype]
    ia = a.contiguous().view(int_type).to(torch.int64)
    ib = b.contiguous().view(int_type).to(torch.int64)
    mask = (1 << (width - 1)) - 1
    # Two's-complement bits to an ordered integer line: negatives mirrored below +0.
    oa = torch.where(ia < 0, -(ia & mask), ia)
    ob = torch.where(ib < 0, -(ib & mask), ib)
    dist = (oa - ob).abs()
    na, nb = torch.isnan(a.float()), torch.isnan(b.float())
    dist = torch.where(na & nb, torch.zeros_like(dist), dist)
    return torch.where(na ^ nb, torch.full_like(dist, 1 << 40), dist)


def norm_ulps(ours, theirs, dtype):
    """|ours - theirs| in ulps of `dtype` (both are values of it); 0 for equal non-finites."""
    if math.isnan(ours) or math.isnan(theirs):
        return 0 if math.isnan(ours) and math.isnan(theirs) else 1 << 40
    a = torch.tensor([ours], dtype=torch.float64).to(dtype)
    b = torch.tensor([theirs], dtype=torch.float64).to(dtype)
    if a.item() != ours:
        return 1 << 40  # ours is not even a value of the dtype
    return int(ulp_distance(a, b).max())


def promoted(dtypes):
    return dtypes[0] if all(d == dtypes[0] for d in dtypes) else torch.float32


def random_case(rng, case):
    """A list of gradient tensors and (max_norm, norm_type) for case number `case`."""
    mode = case % 4
    n = int(rng.integers(1, 7))
    dtypes = {0: [torch.float32] * n, 1: [torch.float16] * n, 2: [torch.bfloat16] * n,
              3: [[torch.float32, torch.float16, torch.bfloat16][int(k)]
                  for k in rng.integers(0, 3, n)]}[mode]
    tensors = []
    for dtype in dtypes:
        shape = [int(s) for s in rng.integers(1, 40, int(rng.integers(1, 4)))]
        magnitude = 10.0 ** rng.uniform(-4, 2)
        values = rng.standard_normal(shape) * magnitude
        if case % 23 == 5 and dtype == torch.float16:
            values = values / magnitude * 3000.0  # an FP16 norm past 65504: torch's is inf
        tensors.append(torch.from_numpy(values).to(dtype).contiguous())
    if case % 7 == 3:
        t = tensors[int(rng.integers(0, n))].view(-1)
        t[int(rng.integers(0, t.numel()))] = [math.inf, -math.inf, math.nan][case % 3]
    norm_type = math.inf if case % 3 == 2 else 2.0
    # Near the true norm: factors below 1 clip, above 1 do not.
    true_norm = torch.norm(torch.stack([torch.norm(t.double(), norm_type) for t in tensors]),
                           norm_type).item()
    factor = [0.01, 0.3, 0.9, 1.5, 10.0][int(rng.integers(0, 5))]
    max_norm = float(true_norm * factor) if math.isfinite(true_norm) and true_norm > 0 else 1.0
    return tensors, max_norm, norm_type


def torch_clip_grad_norm(params, max_norm, norm_type):
    """torch.nn.utils.clip_grad_norm_ itself. On the CPU, torch 1.13 has no Half kernel for
    clamp ("clamp_max_scalar_cpu" not implemented for 'Half'), which its all-FP16 case calls on
    the FP16 coefficient; for that call only, the clamp runs in FP32 and is cast back, which is
    exact (clamping to 1.0 returns either the value or 1.0; NaN stays NaN), i.e. what the CUDA
    Half kernel returns."""
    saved = torch.clamp

    def clamp(t, *args, **kwargs):
        if t.dtype == torch.float16:
            return saved(t.float(), *args, **kwargs).to(torch.float16)
        return saved(t, *args, **kwargs)

    torch.clamp = clamp
    try:
        return torch.nn.utils.clip_grad_norm_(params, max_norm, norm_type).item()
    finally:
        torch.clamp = saved


def torch_scale_by_norm(tensors, total, dtype, max_norm):
    """The rest of clip_grad_norm_ (torch 1.13, verbatim) from a given total norm of `dtype`."""
    total_norm = torch.tensor(total, dtype=torch.float64).to(dtype)
    clip_coef = max_norm / (total_norm + 1e-6)
    if clip_coef.dtype == torch.float16:  # see torch_clip_grad_norm
        clip_coef_clamped = torch.clamp(clip_coef.float(), max=1.0).to(torch.float16)
    else:
        clip_coef_clamped = torch.clamp(clip_coef, max=1.0)
    out = [t.clone() for t in tensors]
    for g in out:
        g.detach().mul_(clip_coef_clamped.to(g.device))
    return out


def check_clip(originals, ours, params, total, torch_total, max_norm, norm_type):
    """Problems (strings) comparing our clip with torch's; and whether all is bitwise equal."""
    dtype = promoted([t.dtype for t in originals])
    norm_diff = norm_ulps(total, torch_total, dtype)
    allowed = NORM_ULPS[dtype]
    if norm_diff > allowed:
        return [f"total norm {total!r} vs torch {torch_total!r} ({norm_diff} ulps of "
                f"{DT[dtype]}, allowed {allowed})"], False
    # torch's own coefficient and multiplication applied from our norm: must be bitwise ours.
    want = torch_scale_by_norm(originals, total, dtype, max_norm)
    worst = max(int(ulp_distance(o, w).max()) for o, w in zip(ours, want))
    if worst != 0:
        return [f"gradients differ by {worst} ulps from torch's scaling by our norm {total!r}"], \
            False
    end_to_end = max(int(ulp_distance(o, p.grad).max()) for o, p in zip(ours, params))
    if norm_diff == 0 and end_to_end != 0:
        return [f"same norm {total!r} but gradients differ by {end_to_end} ulps"], False
    return [], end_to_end == 0


def compare_clip(lib, num_cases):
    rng = np.random.default_rng(20240601)
    failures, bitwise, clipped = [], 0, 0
    for case in range(num_cases):
        tensors, max_norm, norm_type = random_case(rng, case)
        ours = [t.clone() for t in tensors]
        params = [torch.nn.Parameter(torch.zeros_like(t)) for t in tensors]
        for p, t in zip(params, tensors):
            p.grad = t.clone()
        torch_total = torch_clip_grad_norm(params, max_norm, norm_type)
        total, coef = lib.clip(ours, max_norm, norm_type)
        clipped += coef < 1
        dtype = promoted([t.dtype for t in tensors])
        what = (f"case {case}: {[DT[t.dtype] for t in tensors]} sizes "
                f"{[t.numel() for t in tensors]} norm_type {norm_type} max_norm {max_norm:.6g}")
        problems, same = check_clip(tensors, ours, params, total, torch_total, max_norm,
                                    norm_type)
        failures += [f"{what}: {p}" for p in problems]
        bitwise += same
    print(f"clip_grad_norm_: {num_cases} cases ({clipped} clipped), {bitwise} bitwise equal, "
          f"{len(failures)} mismatches")
    if bitwise < 0.9 * num_cases:
        failures.append(f"only {bitwise} of {num_cases} cases bitwise equal (want >= 90%)")
    return failures


# --- GradScaler on the CPU -------------------------------------------------------------------

def amp_update_scale_(scale, growth_tracker, found_inf, growth_factor, backoff_factor,
                      growth_interval):
    """_amp_update_scale_cuda_kernel (AmpKernels.cu, torch 1.13), transcribed. The scale is an
    FP32 tensor; `scale * factor` is float times double, stored back as FP32."""
    if found_inf.item():
        scale.fill_(float(np.float32(scale.item() * backoff_factor)))
        growth_tracker.fill_(0)
    else:
        successful = growth_tracker.item() + 1
        if successful == growth_interval:
            new_scale = float(np.float32(scale.item() * growth_factor))
            if math.isfinite(new_scale):
                scale.fill_(new_scale)
            growth_tracker.fill_(0)
        else:
            growth_tracker.fill_(successful)
    return scale


def unscale_grads_cpu(scaler, optimizer, inv_scale, found_inf, allow_fp16):
    """GradScaler._unscale_grads_ with _amp_non_finite_check_and_unscale_cuda_ transcribed:
    found_inf if an input value is not finite; value = (opmath) value * inv_scale (skipped when
    inv_scale is 1), rounded to the gradient's dtype."""
    inv = inv_scale.item()
    for group in optimizer.param_groups:
        for p in group["params"]:
            if p.grad is None:
                continue
            if not allow_fp16 and p.grad.dtype == torch.float16:
                raise ValueError("Attempting to unscale FP16 gradients.")
            g = p.grad
            if not torch.isfinite(g).all():
                found_inf.fill_(1.0)
            if inv != 1.0:
                g.copy_((g.float() * torch.tensor(inv, dtype=torch.float32)).to(g.dtype))
    return {torch.device("cpu"): found_inf}


class CountingSGD(torch.optim.SGD):
    def __init__(self, params):
        super().__init__(params, lr=0.0)
        self.steps = 0

    def step(self, *args, **kwargs):
        self.steps += 1
        return super().step(*args, **kwargs)


def compare_scaler(lib, name, options, num_steps, bad_steps, max_norm):
    """Runs the AMP recipe for num_steps steps through GradScaler and through the C++ pieces."""
    failures = []
    torch.manual_seed(7)
    init_scale, growth, backoff, interval = options
    shapes = [(17,), (4, 5), (3,)]
    params = [torch.nn.Parameter(torch.zeros(s)) for s in shapes]
    opt = CountingSGD(params)
    # GradScaler disables itself without CUDA; its Python logic is device-independent, so it is
    # built as if CUDA were there.
    saved_available = torch.cuda.is_available
    torch.cuda.is_available = lambda: True
    try:
        scaler = torch.cuda.amp.GradScaler(init_scale=init_scale, growth_factor=growth,
                                           backoff_factor=backoff, growth_interval=interval)
    finally:
        torch.cuda.is_available = saved_available
    scaler._lazy_init_scale_growth_tracker(torch.device("cpu"))
    scaler._unscale_grads_ = lambda o, i, f, a: unscale_grads_cpu(scaler, o, i, f, a)
    handle = ctypes.c_void_p()
    err = ctypes.create_string_buffer(256)
    rc = lib.lib.seedance_train_loss_scaler_new(init_scale, growth, backoff, interval,
                                                ctypes.byref(handle), err, 256)
    if rc != 0:
        return [f"{name}: loss_scaler_new: {rc}: {err.value.decode()}"]
    saved_update = torch._amp_update_scale_
    torch._amp_update_scale_ = amp_update_scale_
    scales_seen, skips = set(), 0
    try:
        for step in range(num_steps):
            scale = scaler.get_scale()
            ours_scale = lib.lib.seedance_train_loss_scaler_scale(handle)
            # scaled gradients, as scaler.scale(loss).backward() would leave them
            grads = [torch.randn(s) * scale for s in shapes]
            if step in bad_steps:
                grads[step % 3].view(-1)[step % 3] = [math.inf, math.nan, -math.inf][step % 3]
            for p, g in zip(params, grads):
                p.grad = g.clone()
            ours = [g.clone() for g in grads]
            steps_before = opt.steps
            scaler.unscale_(opt)
            state = scaler._per_optimizer_states[id(opt)]
            torch_found = bool(sum(v.item() for v in state["found_inf_per_device"].values()))
            unscaled = [p.grad.clone() for p in params]
            torch_total = torch.nn.utils.clip_grad_norm_(params, max_norm).item()
            scaler.step(opt)
            scaler.update()
            torch_skipped = opt.steps == steps_before

            found = lib.unscale(ours, ours_scale)
            worst = max(int(ulp_distance(o, g).max()) for o, g in zip(ours, unscaled))
            if worst != 0:
                failures.append(f"{name} step {step}: unscaled grads differ by {worst} ulps")
            before_clip = [o.clone() for o in ours]
            total, _ = lib.clip(ours, max_norm, 2.0)
            problems, _ = check_clip(before_clip, ours, params, total, torch_total, max_norm, 2.0)
            failures += [f"{name} step {step}: {p}" for p in problems]
            skipped, new_scale = ctypes.c_int(), ctypes.c_float()
            lib.lib.seedance_train_loss_scaler_update(handle, int(found), ctypes.byref(skipped),
                                                      ctypes.byref(new_scale))
            tracker = lib.lib.seedance_train_loss_scaler_growth_tracker(handle)
            want = (torch_found, torch_skipped, scaler.get_scale(),
                    int(scaler._growth_tracker.item()))
            got = (found, bool(skipped.value), new_scale.value, tracker)
            if ours_scale != scale or got != want:
                failures.append(f"{name} step {step}: scale in {ours_scale} vs {scale}; "
                                f"(found_inf, skipped, scale, tracker) {got} vs torch {want}")
            scales_seen.add(new_scale.value)
            skips += bool(skipped.value)
            if len(failures) > 10:
                break
    finally:
        torch._amp_update_scale_ = saved_update
        lib.lib.seedance_train_loss_scaler_free(handle)
    print(f"GradScaler trace {name}: {num_steps} steps, {skips} skipped, scales "
          f"{sorted(scales_seen)}, {len(failures)} mismatches")
    if skips != len(bad_steps):
        failures.append(f"{name}: {skips} skipped steps, the script has {len(bad_steps)}")
    return failures


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("SEEDANCE_TRAIN_C_LIB")
    if not path:
        print("usage: mpgc_torch_test.py PATH_TO_libseedance_train_c.so")
        return 1
    lib = Lib(path)
    lib.lib.seedance_train_loss_scaler_scale.restype = ctypes.c_float
    lib.lib.seedance_train_loss_scaler_scale.argtypes = [ctypes.c_void_p]
    failures = compare_clip(lib, 600)
    # GradScaler's defaults: growth at steps 2000 and 4001-ish, backoffs at scripted steps.
    failures += compare_scaler(lib, "defaults", (65536.0, 2.0, 0.5, 2000), 4500,
                               {10, 11, 2500, 4400}, 1e6)
    # Small factors and interval: many growths and backoffs, and clipping on every step.
    failures += compare_scaler(lib, "custom", (8.0, 4.0, 0.25, 3), 40,
                               {0, 4, 5, 6, 13, 20, 21, 33}, 0.5)
    for f in failures[:int(os.environ.get("MPGC_SHOW", "30"))]:
        print("MISMATCH", f)
    print("FAIL" if failures else "PASS", f"({len(failures)} mismatches)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
