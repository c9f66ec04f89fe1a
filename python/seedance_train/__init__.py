"""seedance_train for PyTorch: Seedance's 1-bit sign compressor as a DDP communication hook.

    from seedance_train import OneBitState, onebit_hook
    ddp_model.register_comm_hook(OneBitState(), onebit_hook)

The compressor itself is C++ (src/train/compress.cc), loaded with ctypes from the shared library
seedance_train_c (see ddp_hook.load_library for where it is looked for). docs/training.md.
"""
from .ddp_hook import (OneBitState, fp32_allreduce_hook, load_library, onebit_allreduce,
                       onebit_hook)

__all__ = ["OneBitState", "fp32_allreduce_hook", "load_library", "onebit_allreduce",
           "onebit_hook"]
