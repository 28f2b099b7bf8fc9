"""evsparse from Python: the library's event-driven sparse kernels on the arrays you already
have (torch, cupy, JAX, numpy; anything that exports DLPack), zero-copy, on your CUDA stream.

    import evsparse, torch
    A = evsparse.CSR(indptr, indices, weights, shape=(m, k))   # torch CUDA tensors: wrapped
    evsparse.spmv(A, spikes, y, op="T", events=True)           # y += nothing: y = Aᵀ·e(spikes)

This package is a thin ctypes layer over libevsparse.so (found through $EVS_LIBRARY, a copy
bundled in the package, or the system's loader); failures raise `evsparse.EvsError`
subclasses carrying the library's message.
"""
from ._core import BSR, CSR, Context, Dense, SpikeList, Stream
from ._ops import (bsrmm, compact_events, csr_plasticity_post, csr_plasticity_pre, csr_to_csc, dense_mm, dense_mv,
                   dense_plasticity_post, dense_plasticity_pre, last_plan, spmm, spmv, version, yw2y)
from .errors import (ContextMismatchError, DeviceError, DeviceUnavailableError, DtypeMismatchError, EvsError,
                     InternalError, InvalidEnumError, InvalidHandleError, InvalidStructureError, InvalidValueError,
                     NotSupportedError, NullPointerError, OutOfMemoryError, ShapeMismatchError)

__all__ = [
    "BSR", "CSR", "Context", "Dense", "SpikeList", "Stream",
    "bsrmm", "compact_events", "csr_plasticity_post", "csr_plasticity_pre", "csr_to_csc", "dense_mm", "dense_mv",
    "dense_plasticity_post", "dense_plasticity_pre", "last_plan", "spmm", "spmv", "version", "yw2y",
    "ContextMismatchError", "DeviceError", "DeviceUnavailableError", "DtypeMismatchError", "EvsError",
    "InternalError", "InvalidEnumError", "InvalidHandleError", "InvalidStructureError", "InvalidValueError",
    "NotSupportedError", "NullPointerError", "OutOfMemoryError", "ShapeMismatchError",
]
__version__ = "0.1.0"
