"""libevsparse.so through ctypes: finding it, and the prototype of every public function.

The tables here mirror include/evsparse.h; tests/test_header.py fails when they drift apart.
"""
import ctypes
import ctypes.util
import os

#: The major version this binding speaks (the library's SONAME carries it).
ABI_MAJOR = 0

# Every #define of the header that holds a number, by its name without the "EVS_" prefix.
CONSTANTS = {
    "VERSION_MAJOR": 0, "VERSION_MINOR": 1, "VERSION_PATCH": 0,
    "OP_N": 0, "OP_T": 1,
    "INPUT_FLOAT": 0, "INPUT_EVENTS": 1,
    "DEVICE_DEFAULT": 0, "DEVICE_CPU": 1, "DEVICE_CUDA": 2,
    "DTYPE_F16": 1, "DTYPE_BF16": 2, "DTYPE_F32": 3, "DTYPE_F64": 4, "DTYPE_BOOL": 5,
    "DTYPE_I32": 6, "DTYPE_I64": 7,
    "SUCCESS": 0, "ERROR_NULL_POINTER": 1, "ERROR_INVALID_ENUM": 2, "ERROR_INVALID_HANDLE": 3,
    "ERROR_CONTEXT_MISMATCH": 4, "ERROR_SHAPE_MISMATCH": 5, "ERROR_DTYPE_MISMATCH": 6,
    "ERROR_INVALID_VALUE": 7, "ERROR_INVALID_STRUCTURE": 8, "ERROR_OUT_OF_MEMORY": 9,
    "ERROR_DEVICE_UNAVAILABLE": 10, "ERROR_NOT_SUPPORTED": 11, "ERROR_DEVICE": 12,
    "ERROR_INTERNAL": 13,
}

# Every pointer is passed as void* (handles, arrays, outputs through byref); enums and statuses
# are int32_t, sizes int64_t, scalars double.
P, S, I32, I64, D = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int32, ctypes.c_int64, ctypes.c_double

#: {function: (argument types, result type)} for every function of the header.
SIGNATURES = {
    "evs_status_string": ([I32], S),
    "evs_last_error": ([], S),
    "evs_last_plan": ([], S),
    "evs_version": ([], S),
    "evs_context_create": ([I32, I32, P], I32),
    "evs_context_destroy": ([P], I32),
    "evs_context_device": ([P, P, P], I32),
    "evs_context_set_algorithm": ([P, S], I32),
    "evs_stream_create": ([P, P], I32),
    "evs_stream_wrap": ([P, P, P], I32),
    "evs_stream_synchronize": ([P], I32),
    "evs_stream_destroy": ([P], I32),
    "evs_dense_create_vector": ([P, I32, I64, P], I32),
    "evs_dense_create_matrix": ([P, I32, I64, I64, P], I32),
    "evs_dense_wrap_vector": ([P, I32, I64, P, P], I32),
    "evs_dense_wrap_matrix": ([P, I32, I64, I64, I64, P, P], I32),
    "evs_dense_destroy": ([P], I32),
    "evs_dense_copy_from_host": ([P, P, P, I64], I32),
    "evs_dense_copy_to_host": ([P, P, P, I64], I32),
    "evs_dense_fill": ([P, P, D], I32),
    "evs_dense_shape": ([P, P, P, P, P], I32),
    "evs_dense_dtype": ([P, P], I32),
    "evs_dense_data": ([P, P], I32),
    "evs_csr_create": ([P, I64, I64, I64, I32, P, P, I32, P, D, P], I32),
    "evs_csr_wrap": ([P, I64, I64, I64, I32, P, P, I32, P, D, P], I32),
    "evs_csr_destroy": ([P], I32),
    "evs_csr_validate": ([P, P], I32),
    "evs_csr_analyse": ([P, P], I32),
    "evs_csr_shape": ([P, P, P, P], I32),
    "evs_csr_types": ([P, P, P, P], I32),
    "evs_csr_weights": ([P, P], I32),
    "evs_bsr_create": ([P, I64, I64, I64, I64, I64, P, P, I32, P, P], I32),
    "evs_bsr_wrap": ([P, I64, I64, I64, I64, I64, P, P, I32, P, P], I32),
    "evs_bsr_destroy": ([P], I32),
    "evs_bsr_validate": ([P, P], I32),
    "evs_bsr_shape": ([P, P, P, P, P, P, P], I32),
    "evs_spmv": ([P, I32, I32, D, P, P, D, P], I32),
    "evs_spmm": ([P, I32, I32, D, P, P, D, P], I32),
    "evs_yw2y": ([P, I32, D, P, P, D, P], I32),
    "evs_yw2y_weighted": ([P, I32, D, P, P, P, D, P], I32),
    "evs_dense_mv": ([P, I32, I32, D, P, P, D, P], I32),
    "evs_dense_mm": ([P, I32, I32, D, P, P, D, P], I32),
    "evs_csr_plasticity_pre": ([P, P, P, P, D, D], I32),
    "evs_csr_plasticity_post": ([P, P, P, P, D, D], I32),
    "evs_dense_plasticity_pre": ([P, P, P, P, D, D], I32),
    "evs_dense_plasticity_post": ([P, P, P, P, D, D], I32),
    "evs_bsrmm": ([P, D, P, P, D, P], I32),
    "evs_compact_events": ([P, P, P, P], I32),
    "evs_csr_to_csc": ([P, P, P, P, P], I32),
    "evs_spmv_spikes": ([P, I32, D, P, P, P, D, P], I32),
    "evs_dense_mv_spikes": ([P, I32, D, P, P, P, D, P], I32),
    "evs_csr_plasticity_pre_spikes": ([P, P, P, P, P, D, D], I32),
    "evs_csr_plasticity_post_spikes": ([P, P, P, P, P, D, D], I32),
    "evs_dense_plasticity_pre_spikes": ([P, P, P, P, P, D, D], I32),
    "evs_dense_plasticity_post_spikes": ([P, P, P, P, P, D, D], I32),
}


def candidates():
    """Where the library is looked for, in order: $EVS_LIBRARY, a copy bundled in this package,
    then the system's dynamic loader (an installed package, `make install`, LD_LIBRARY_PATH)."""
    here = os.path.dirname(os.path.abspath(__file__))
    found = [os.environ.get("EVS_LIBRARY")]
    found += [os.path.join(here, name) for name in sorted(os.listdir(here)) if name.startswith("libevsparse.so")]
    found += [f"libevsparse.so.{ABI_MAJOR}", ctypes.util.find_library("evsparse")]
    return [c for c in found if c]


def load(path=None):
    """Opens the library (the first of `candidates()` that loads, or `path`) and sets the
    prototype of every function. Raises OSError naming every place tried."""
    tried = []
    for candidate in [path] if path else candidates():
        try:
            lib = ctypes.CDLL(candidate)
            break
        except OSError as e:
            tried.append(f"{candidate}: {e}")
    else:
        raise OSError("libevsparse.so not found; set EVS_LIBRARY to its path or install the library "
                      "(make install, or the libevsparse0 package). Tried:\n  " + "\n  ".join(tried))
    for name, (args, result) in SIGNATURES.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, result
    major = int(lib.evs_version().decode().split(".")[0])
    if major != ABI_MAJOR:
        raise OSError(f"{candidate} is evsparse {lib.evs_version().decode()}; this binding needs major version {ABI_MAJOR}")
    return lib


_LIB = None


def get():
    """The loaded library (loaded at the first call)."""
    global _LIB
    if _LIB is None:
        _LIB = load()
    return _LIB
