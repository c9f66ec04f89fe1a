"""A PyTorch DDP communication hook that all-reduces gradients in 1 bit per element.

    state = OneBitState(process_group=None, error_feedback=True, scale="l2")
    ddp_model.register_comm_hook(state, onebit_hook)

Shape: DeepSpeed's two-phase compressed all-reduce (1-bit Adam, Tang et al., ICML'21;
deepspeed/runtime/comm/nccl.py, compressed_allreduce), the same as seedance_train's MPI
OneBitAllreduce (include/seedance/train/collective.h), here over any torch.distributed process
group that has all_to_all_single and all_gather (gloo on CPU in torch 1.13 has both; it lacks
all_to_all of tensor lists, which is why the single-tensor form is used). For a bucket of d
gradients on N ranks:
  1. each rank compresses p = g + e_worker to one scale and d sign bits (LSB first), keeping
     e_worker = p - C(p). The B = ceil(d/8) packed bytes are cut into N chunks of whole bytes
     (the first B % N ranks get one byte more, as collective.h's ChunkOf); chunk j, with the scale
     in front as 4 bytes, goes to rank j (all_to_all_single with uneven splits);
  2. rank j averages the N decompressed chunks it received, adds its server error e_server,
     compresses that again (keeping e_server) and sends it, scale in front, to every rank
     (all_gather); every rank decompresses the N chunks into the result.
Each rank sends about 2 (N-1)/N * d/8 bytes plus 8 N bytes of scales per bucket and step, against
4 d for an FP32 ring all-reduce. The result is the MEAN of the ranks' gradients, as DDP's default
hook (fp32_allreduce_hook) returns; a scale covers only real elements (no padding enters it).

Why an all-gather of all ranks' packed bits was not built instead: it is simpler but each rank
receives (N-1) d/8 bytes, which grows with N, where the two phases stay under d/4.

The hook runs its collectives synchronously and returns a completed Future. DDP calls the hook of
each bucket as the bucket becomes ready; chaining phase 2 in a Future callback would issue it on a
communication thread, in an order that may differ between ranks when buckets finish out of
order, and collectives issued in different orders on different ranks hang or mix up. So
communication does not overlap the rest of the backward pass; for the CPU models this hook is for
that costs little.

Error feedback: one worker buffer (d floats) and one server buffer (about d/N floats) per bucket,
keyed by bucket.index() and kept in the state; both are reset to zeros when a bucket's length
changes (DDP rebuilds its buckets once after the first step). Without error feedback the same two
compressions run with no buffers (plain scaled sign, which does not converge as well).

Non-finite gradients: a rank whose p holds an inf or NaN sends a NaN scale instead of stopping on
its own, so every rank learns it after phase 1 and raises the same RuntimeError naming that rank,
with every error buffer restored as it was before the step (skip the step, e.g. lower the loss
scale, and retry). The same holds if a server average overflows in phase 2.

Requirements: CPU tensors (the compressor reads host memory); gradients of any floating dtype
(compressed in FP32). Thread-safety: a state belongs to one DDP model in one process.
"""
import ctypes
import math
import os

import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

# DDP's default: allreduce of the bucket divided by the world size. State: the process group (or
# None for the default group). The FP32 baseline to compare onebit_hook with.
fp32_allreduce_hook = default_hooks.allreduce_hook

LIBRARY_ENV = "SEEDANCE_TRAIN_LIB"
LIBRARY_NAME = "libseedance_train_c.so"

# c_api.h's constants.
_SCALE_KINDS = {"l1": 0, "l2": 1}  # SEEDANCE_TRAIN_SCALE_L1_MEAN, SEEDANCE_TRAIN_SCALE_L2_RMS
_OK, _NON_FINITE = 0, 1

_library = None


def _candidate_paths():
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.dirname(os.path.dirname(here))
    paths = [os.path.join(here, LIBRARY_NAME)]
    for build in ("build", "build-release", "build-debug"):
        for sub in (os.path.join("src", "train"), "lib", ""):
            paths.append(os.path.join(repo, build, sub, LIBRARY_NAME))
    return paths


def load_library(path=None):
    """Loads (once) and returns the seedance_train_c shared library.

    Looked for at `path`, else at $SEEDANCE_TRAIN_LIB, else beside this package and in the
    repository's build folders (build/src/train, build/lib, build, and the same under
    build-release and build-debug). Raises OSError naming every place looked at.
    """
    global _library
    if _library is not None and path is None:
        return _library
    if path is None:
        path = os.environ.get(LIBRARY_ENV)
    if path:
        if not os.path.isfile(path):
            where = "the path given" if path != os.environ.get(LIBRARY_ENV) else f"${LIBRARY_ENV}"
            raise OSError(f"seedance_train: {path} ({where}) is not a file; build the CMake "
                          f"target seedance_train_c")
        candidates = [path]
    else:
        candidates = _candidate_paths()
    found = next((p for p in candidates if os.path.isfile(p)), None)
    if found is None:
        raise OSError(f"seedance_train: {LIBRARY_NAME} not found; set ${LIBRARY_ENV} to it (CMake "
                      f"target seedance_train_c). Looked at: " + ", ".join(candidates))
    lib = ctypes.CDLL(found)
    size_t, ptr, c_float = ctypes.c_size_t, ctypes.c_void_p, ctypes.c_float
    lib.seedance_train_packed_bytes.argtypes = [size_t]
    lib.seedance_train_packed_bytes.restype = size_t
    lib.seedance_train_compress_sign.argtypes = [ptr, size_t, ctypes.c_int, ptr, ptr,
                                                 ctypes.POINTER(c_float)]
    lib.seedance_train_compress_sign.restype = ctypes.c_int
    for name in ("seedance_train_add_unpacked_signs", "seedance_train_unpack_signs"):
        getattr(lib, name).argtypes = [ptr, size_t, c_float, ptr]
        getattr(lib, name).restype = ctypes.c_int
    _library = lib
    return lib


def _chunk_of(total_bytes, ranks, j):
    """(byte offset, byte count) of rank j's chunk: collective.h's ChunkOf."""
    base, extra = divmod(total_bytes, ranks)
    return j * base + min(j, extra), base + (1 if j < extra else 0)


def _elements_of(d, offset, nbytes):
    """(first element, element count) that bytes [offset, offset + nbytes) hold of d."""
    first = 8 * offset
    return first, max(0, min(d, 8 * (offset + nbytes)) - first)


def _ptr(t):
    return ctypes.c_void_p(t.data_ptr())


class OneBitState:
    """The state of onebit_hook: process group, options and per-bucket error buffers.

    process_group: the group to all-reduce over (None: the default group).
    error_feedback: keep worker and server error buffers (EF-SGD); False is plain scaled sign.
    scale: "l2" (||p||_2 / sqrt(d), DeepSpeed's) or "l1" (||p||_1 / d, EF-SGD's).
    """

    def __init__(self, process_group=None, error_feedback=True, scale="l2"):
        if scale not in _SCALE_KINDS:
            raise ValueError(f"OneBitState: scale must be one of {sorted(_SCALE_KINDS)}, "
                             f"not {scale!r}")
        self.process_group = process_group
        self.error_feedback = bool(error_feedback)
        self.scale = scale
        self.worker_errors = {}  # bucket index -> FP32 tensor of the bucket's length
        self.server_errors = {}  # bucket index -> FP32 tensor of this rank's chunk length
        self._lib = load_library()

    def _buffer(self, buffers, index, n):
        if not self.error_feedback:
            return None
        buf = buffers.get(index)
        if buf is None or buf.numel() != n:
            buf = torch.zeros(n, dtype=torch.float32)
            buffers[index] = buf
        return buf


def _compress(state, v, error, bits):
    """Compresses v (FP32, contiguous) into bits with `error` (or None); returns the scale."""
    scale = ctypes.c_float()
    rc = state._lib.seedance_train_compress_sign(
        _ptr(v), v.numel(), _SCALE_KINDS[state.scale], None if error is None else _ptr(error),
        _ptr(bits), ctypes.byref(scale))
    if rc not in (_OK, _NON_FINITE):
        raise ValueError(f"seedance_train_compress_sign: bad argument (code {rc})")
    return scale.value if rc == _OK else math.nan


def _raise_if_non_finite(scales, phase, index, rank, restore):
    bad = [r for r, s in enumerate(scales) if not math.isfinite(s)]
    if not bad:
        return
    for buf, saved in restore:
        if buf is not None:
            buf.copy_(saved)
    what = ("a non-finite gradient (inf or NaN) from rank(s)" if phase == 1 else
            "a non-finite server average (overflow) on rank(s)")
    raise RuntimeError(f"seedance_train onebit_hook: {what} {bad} of the process group in bucket "
                       f"{index} (phase {phase}), seen by rank {rank}; error-feedback buffers "
                       f"are left as they were: skip this step (e.g. lower the loss scale) and "
                       f"retry")


def onebit_allreduce(state, index, tensor):
    """Replaces `tensor` (CPU, same length on every rank) by the 1-bit mean over the group.

    `index` names the error buffers to use (a bucket index). Every rank of the group must call it
    with the same indices and lengths in the same order. Returns `tensor`.
    """
    if tensor.device.type != "cpu":
        raise ValueError(f"seedance_train onebit_hook: the bucket is on {tensor.device}; the 1-bit "
                         f"hook runs on CPU tensors (gloo)")
    group = state.process_group
    ranks = dist.get_world_size(group)
    rank = dist.get_rank(group)
    lib = state._lib
    v = tensor.detach().reshape(-1).to(torch.float32).contiguous()
    d = v.numel()
    total_bytes = lib.seedance_train_packed_bytes(d)
    chunks = [_chunk_of(total_bytes, ranks, j) for j in range(ranks)]
    my_offset, my_bytes = chunks[rank]

    # Phase 1: worker compression; chunk j with the scale in front goes to rank j.
    worker_error = state._buffer(state.worker_errors, index, d)
    worker_saved = None if worker_error is None else worker_error.clone()
    bits = torch.zeros(total_bytes, dtype=torch.uint8)
    scale = _compress(state, v, worker_error, bits)
    scale_bytes = torch.tensor([scale], dtype=torch.float32).view(torch.uint8)
    send = torch.cat([t for off, n in chunks for t in (scale_bytes, bits[off:off + n])])
    recv = torch.empty(ranks * (4 + my_bytes), dtype=torch.uint8)
    dist.all_to_all_single(recv, send, output_split_sizes=[4 + my_bytes] * ranks,
                           input_split_sizes=[4 + n for _, n in chunks], group=group)
    recv = recv.view(ranks, 4 + my_bytes)
    scales = recv[:, :4].contiguous().view(torch.float32).reshape(-1).tolist()
    restore = [(worker_error, worker_saved)]
    _raise_if_non_finite(scales, 1, index, rank, restore)

    # Phase 2: this rank's chunk averaged, compressed again with the server error, all-gathered.
    _, my_count = _elements_of(d, my_offset, my_bytes)
    average = torch.zeros(my_count, dtype=torch.float32)
    for r in range(ranks):
        lib.seedance_train_add_unpacked_signs(_ptr(recv[r, 4:]), my_count, scales[r],
                                              _ptr(average))
    average /= ranks
    server_error = state._buffer(state.server_errors, index, my_count)
    server_saved = None if server_error is None else server_error.clone()
    max_bytes = chunks[0][1]
    send = torch.zeros(4 + max_bytes, dtype=torch.uint8)
    server_scale = _compress(state, average, server_error, send[4:])
    send[:4] = torch.tensor([server_scale], dtype=torch.float32).view(torch.uint8)
    gathered = [torch.empty(4 + max_bytes, dtype=torch.uint8) for _ in range(ranks)]
    dist.all_gather(gathered, send, group=group)
    server_scales = [g[:4].view(torch.float32).item() for g in gathered]
    restore.append((server_error, server_saved))
    _raise_if_non_finite(server_scales, 2, index, rank, restore)

    for r, (offset, nbytes) in enumerate(chunks):
        first, count = _elements_of(d, offset, nbytes)
        if count > 0:
            lib.seedance_train_unpack_signs(_ptr(gathered[r][4:]), count, server_scales[r],
                                            _ptr(v[first:]))
    if v.data_ptr() != tensor.data_ptr():
        tensor.copy_(v.view_as(tensor))
    return tensor


def onebit_hook(state, bucket):
    """DDP communication hook: the 1-bit mean of the bucket over state.process_group.

    Register with ddp_model.register_comm_hook(OneBitState(...), onebit_hook).
    """
    result = onebit_allreduce(state, bucket.index(), bucket.buffer())
    future = torch.futures.Future()
    future.set_result(result)
    return future
