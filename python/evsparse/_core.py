"""Handles: contexts, streams, dense arrays, CSR and BSR matrices, spike lists. Arrays come in
through DLPack and are wrapped, never copied, except where a constructor says it copies."""
import ctypes
import math
import sys
import threading

from . import _dlpack, _lib
from .errors import raise_for

C = _lib.CONSTANTS
DTYPES = {"float16": C["DTYPE_F16"], "bfloat16": C["DTYPE_BF16"], "float32": C["DTYPE_F32"],
          "float64": C["DTYPE_F64"], "bool": C["DTYPE_BOOL"], "int32": C["DTYPE_I32"], "int64": C["DTYPE_I64"]}
DTYPE_NAMES = {code: name for name, code in DTYPES.items()}
ALIASES = {"f16": "float16", "half": "float16", "bf16": "bfloat16", "f32": "float32", "float": "float32",
           "f64": "float64", "double": "float64", "i32": "int32", "i64": "int64", "bool_": "bool"}
# DLPack (type code, bits) -> evsparse dtype; uint8 counts as bool (a byte, active iff non-zero).
DLPACK_DTYPES = {(_dlpack.FLOAT, 16): "float16", (_dlpack.BFLOAT, 16): "bfloat16", (_dlpack.FLOAT, 32): "float32",
                 (_dlpack.FLOAT, 64): "float64", (_dlpack.BOOL, 8): "bool", (_dlpack.UINT, 8): "bool",
                 (_dlpack.INT, 32): "int32", (_dlpack.INT, 64): "int64"}
LEGACY_DEFAULT_STREAM = 1  # how DLPack names the CUDA legacy default stream


_FUNCTIONS = {}  # name -> the library's function, looked up once


def call(name, *args):
    """Calls a library function, raising the status's exception if it fails."""
    fn = _FUNCTIONS.get(name) or _FUNCTIONS.setdefault(name, getattr(_lib.get(), name))
    try:
        status = fn(*args)
    except ctypes.ArgumentError as e:  # a closed handle, a value out of its C type's range
        raise ValueError(f"{name}: {e}") from None
    if status:
        raise_for(_lib.get(), status, name)


def created(name, *args):
    """Calls a constructor whose last argument is the new handle's address; returns the handle."""
    handle = ctypes.c_void_p()
    call(name, *args, ctypes.byref(handle))
    return handle


def dtype_code(dtype):
    """evsparse's code for a dtype given as a name ("float32", "bf16"), or as a numpy, torch,
    cupy or jax dtype."""
    name = ALIASES.get(str(dtype).rsplit(".", 1)[-1], str(dtype).rsplit(".", 1)[-1])
    if name not in DTYPES:
        raise TypeError(f"dtype {dtype} is not one of evsparse's: {', '.join(DTYPES)}")
    return DTYPES[name]


def outputs(fn, *types):
    """Runs a query function with one output of each ctypes type; returns their values."""
    values = [t() for t in types]
    fn(*[ctypes.byref(v) for v in values])
    return [v.value for v in values]


class Handle:
    """An owned evsparse handle, destroyed by close(), by leaving a `with` block, or when
    collected. Objects it depends on (its context, the arrays it borrows) are kept alive."""

    _destroy = None

    def __init__(self, handle, keep=()):
        self._handle, self._keep = handle, keep

    @property
    def _as_parameter_(self):
        if not self._handle:
            raise ValueError(f"{type(self).__name__} is closed")
        return self._handle

    def close(self):
        if getattr(self, "_handle", None):
            handle, self._handle = self._handle, None
            call(self._destroy, handle)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 (interpreter shutdown, or a status nobody can catch here)
            pass


class Context(Handle):
    """A device (the CPU, or one GPU) with its loaded kernels and memory pool.

    device: "default" (the first usable GPU, else the CPU), "cpu", "cuda" or "cuda:N"."""

    _destroy = "evs_context_destroy"
    _defaults, _defaults_lock = {}, threading.Lock()

    def __init__(self, device="default", ordinal=0):
        kind, _, number = str(device).partition(":")
        kinds = {"default": C["DEVICE_DEFAULT"], "cpu": C["DEVICE_CPU"], "cuda": C["DEVICE_CUDA"]}
        if kind not in kinds:
            raise ValueError(f"device {device!r}: expected 'default', 'cpu', 'cuda' or 'cuda:N'")
        super().__init__(created("evs_context_create", kinds[kind], int(number or ordinal)))
        kind_code, ordinal = outputs(lambda *o: call("evs_context_device", self, *o), ctypes.c_int32, ctypes.c_int32)
        self.device, self.ordinal = ("cuda" if kind_code == C["DEVICE_CUDA"] else "cpu"), ordinal
        self._streams, self._default_stream = {}, None

    def __repr__(self):
        return f"evsparse.Context('{self.device}:{self.ordinal}')"

    @classmethod
    def for_device(cls, device_type, device_id):
        """The shared context of a DLPack device (one per device, made at first use)."""
        device = "cuda" if device_type in (_dlpack.CUDA, _dlpack.CUDA_MANAGED) else "cpu"
        key = (device, device_id if device == "cuda" else 0)
        with cls._defaults_lock:
            if key not in cls._defaults:
                cls._defaults[key] = cls(*key)
            return cls._defaults[key]

    def set_algorithm(self, spec):
        """Forces kernel algorithms ("spmm_n:length_classes,bsrmm:simt"; "family:auto" gives a
        family back to its chooser): see evs_context_set_algorithm."""
        call("evs_context_set_algorithm", self, spec.encode())

    def stream(self):
        """A new stream owned by evsparse (a blocking CUDA stream; synchronous on the CPU)."""
        return Stream(created("evs_stream_create", self), self)

    def wrap_stream(self, native):
        """A stream of the caller's (a cudaStream_t as int, 0 for the legacy default stream, or
        a torch/cupy stream object); the same native stream gives the same Stream."""
        native = native_stream(native)
        if native not in self._streams:
            self._streams[native] = Stream(created("evs_stream_wrap", self, native or None), self, native)
        return self._streams[native]

    def default_stream(self):
        """The stream calls use when given none and their arrays name none: the legacy default
        stream on CUDA, an owned one on the CPU."""
        if self._default_stream is None:
            self._default_stream = self.wrap_stream(0) if self.device == "cuda" else self.stream()
        return self._default_stream

    def wrap(self, array, stream=None, writable=False):
        """A Dense view of `array` (zero-copy), for calls in a loop: wrapping once saves the
        per-call export."""
        return Dense.wrap(self, array, stream, writable)

    def dense(self, shape, dtype):
        """A new zero-filled array owned by evsparse (1-D for an int shape or a 1-tuple)."""
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        code = dtype_code(dtype)
        if len(shape) == 1:
            return Dense(created("evs_dense_create_vector", self, code, shape[0]), self)
        return Dense(created("evs_dense_create_matrix", self, code, *shape), self)


def native_stream(stream):
    """A native CUDA stream handle as an int, from an int or a torch/cupy stream object."""
    for attribute in ("cuda_stream", "ptr"):  # torch.cuda.Stream, cupy.cuda.Stream
        if hasattr(stream, attribute):
            return int(getattr(stream, attribute))
    return int(stream or 0)


def framework_stream(array):
    """The current CUDA stream of the framework that owns `array`, where it exposes one."""
    module = type(array).__module__.split(".")[0]
    if module == "torch":
        return sys.modules["torch"].cuda.current_stream(array.device).cuda_stream
    if module == "cupy":
        return sys.modules["cupy"].cuda.get_current_stream().ptr
    if isinstance(array, Dense):
        return array._native_stream
    return None


class Stream(Handle):
    """An ordered queue of work on a context's device."""

    _destroy = "evs_stream_destroy"

    def __init__(self, handle, ctx, native=None):
        super().__init__(handle, (ctx,))
        self.ctx, self.native = ctx, native

    def synchronize(self):
        """Waits until all work queued on the stream has finished."""
        call("evs_stream_synchronize", self)

    @property
    def dlpack_stream(self):
        """This stream as the DLPack protocol names it (None on the CPU)."""
        return (self.native or LEGACY_DEFAULT_STREAM) if self.ctx.device == "cuda" else None


def resolve_stream(ctx, stream, arrays):
    """The Stream a call runs on: `stream` if given (a Stream, a native handle, a torch/cupy
    stream), else on CUDA the current stream of the framework owning the first array that has
    one (torch, cupy), else the context's default stream."""
    if isinstance(stream, Stream):
        return stream
    if stream is not None:
        return ctx.wrap_stream(stream)
    if ctx.device == "cuda":
        for array in arrays:
            native = framework_stream(array)
            if native is not None:
                return ctx.wrap_stream(native)
    return ctx.default_stream()


class Dense(Handle):
    """A 1-D or 2-D row-major array on a context's device: a zero-copy view of a caller's array
    (`Context.wrap`), or memory evsparse owns (`Context.dense`)."""

    _destroy = "evs_dense_destroy"

    def __init__(self, handle, ctx, keep=(), native_stream=None):
        super().__init__(handle, (ctx, *keep))
        self.ctx, self._native_stream = ctx, native_stream

    @classmethod
    def wrap(cls, ctx, array, stream=None, writable=False):
        if isinstance(array, Dense):
            return array
        stream = resolve_stream(ctx, stream, (array,))
        view = _dlpack.export(array, stream.dlpack_stream if on_gpu(array) else None)
        check_device(ctx, view)
        if writable and view.read_only:
            raise ValueError("the output array is read-only")
        code = dtype_code(dlpack_dtype(view))
        if len(view.shape) == 1:
            check_unit_stride(view, 0)
            handle = created("evs_dense_wrap_vector", ctx, code, view.shape[0], view.data or None)
        elif len(view.shape) == 2:
            check_unit_stride(view, 1)
            rows, cols = view.shape
            ld = view.strides[0] if view.strides and rows > 1 else max(cols, 1)
            handle = created("evs_dense_wrap_matrix", ctx, code, rows, cols, ld, view.data or None)
        else:
            raise ValueError(f"evsparse arrays are 1-D or 2-D; got shape {view.shape}")
        return cls(handle, ctx, (view,), stream.native)

    @property
    def shape(self):
        ndim, rows, cols, _ = outputs(lambda *o: call("evs_dense_shape", self, *o),
                                      ctypes.c_int32, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)
        return (rows,) if ndim == 1 else (rows, cols)

    @property
    def dtype(self):
        (code,) = outputs(lambda o: call("evs_dense_dtype", self, o), ctypes.c_int32)
        return DTYPE_NAMES[code]

    @property
    def data_ptr(self):
        (ptr,) = outputs(lambda o: call("evs_dense_data", self, o), ctypes.c_void_p)
        return ptr or 0

    def fill(self, value, stream=None):
        """Sets every element to `value`, in stream order."""
        call("evs_dense_fill", resolve_stream(self.ctx, stream, (self,)), self, float(value))

    def copy_from_host(self, src, stream=None):
        """Copies a host array (contiguous, same dtype, as many elements) in, in stream order;
        `src` must stay alive until the stream is synchronized."""
        view = host_buffer(src, self.dtype)
        call("evs_dense_copy_from_host", resolve_stream(self.ctx, stream, (self,)), self, view.data or None, count(view))

    def copy_to_host(self, dst, stream=None):
        """Copies the elements, packed row-major, into a host array; they are there once the
        stream is synchronized."""
        view = host_buffer(dst, self.dtype, writable=True)
        call("evs_dense_copy_to_host", resolve_stream(self.ctx, stream, (self,)), self, view.data or None, count(view))


def on_gpu(array):
    return _dlpack.device_of(array)[0] in (_dlpack.CUDA, _dlpack.CUDA_MANAGED)


def dlpack_dtype(view):
    try:
        return DLPACK_DTYPES[(view.code, view.bits)]
    except KeyError:
        raise TypeError(f"DLPack dtype (code {view.code}, {view.bits} bits) is not one of evsparse's: "
                        f"{', '.join(DTYPES)}") from None


def on_host(view):
    return view.device_type in (_dlpack.CPU, _dlpack.CUDA_HOST)


def on_context_device(ctx, view):
    """Whether an array lives where the context computes: GPU memory of its device on CUDA,
    host memory on the CPU."""
    if ctx.device == "cuda":
        return view.device_type == _dlpack.CUDA_MANAGED or (view.device_type == _dlpack.CUDA and view.device_id == ctx.ordinal)
    return on_host(view) or view.device_type == _dlpack.CUDA_MANAGED


def check_device(ctx, view):
    if not on_context_device(ctx, view):
        raise ValueError(f"array on {view.device}, but the context computes on {ctx.device}:{ctx.ordinal}; "
                         "move the array there first")


def check_unit_stride(view, axis):
    """Rows must be contiguous (unit stride along the last axis): evsparse never copies behind
    the caller's back."""
    if view.strides and view.shape[axis] > 1 and view.strides[axis] != 1:
        raise ValueError(f"array of shape {view.shape} with strides {view.strides} (in elements): evsparse "
                         "needs unit stride along the last axis; pass a contiguous copy")
    if len(view.shape) == 2 and view.strides and view.shape[0] > 1 and view.strides[0] < view.shape[1]:
        raise ValueError(f"array of shape {view.shape} with strides {view.strides}: rows overlap")


def is_contiguous(view):
    expected, step = [], 1
    for extent in reversed(view.shape):
        expected.insert(0, step)
        step *= extent
    return view.strides is None or all(s == e for s, e, n in zip(view.strides, expected, view.shape) if n > 1)


def count(view):
    return math.prod(view.shape)


def buffer(array, dtype=None, writable=False, what="array"):
    """The DLPack view of a contiguous array, checked for dtype and writability."""
    view = _dlpack.export(array)
    if not is_contiguous(view):
        raise ValueError(f"{what} must be contiguous; got strides {view.strides} for shape {view.shape}")
    if dtype is not None and dlpack_dtype(view) != dtype:
        raise TypeError(f"{what} has dtype {dlpack_dtype(view)}, expected {dtype}")
    if writable and view.read_only:
        raise ValueError(f"{what} is read-only")
    return view


def host_buffer(array, dtype, writable=False):
    view = buffer(array, dtype, writable, "host array")
    if not on_host(view):
        raise ValueError(f"host array expected, got one on {view.device}")
    return view


class SpikeList:
    """Active neurons as a list: `indices` (int32, the first `count[0]` are active) and `count`
    (int32, length 1, read on the device), as `compact_events` writes them. Pass it where an
    operation takes events."""

    __slots__ = ("indices", "count")

    def __init__(self, indices, count):
        self.indices, self.count = indices, count

    def __iter__(self):
        return iter((self.indices, self.count))


class Sparse(Handle):
    """What CSR and BSR share: wrapping the caller's structure when it already lives on the
    context's device, else copying it there from the host."""

    def _structure(self, ctx, arrays, names):
        """DLPack views of the structure arrays (contiguous, block indices int32) and whether they
        are on the context's device (zero-copy) or on the host (copied)."""
        views = [buffer(a, what=n) for a, n in zip(arrays, names)]
        if dlpack_dtype(views[1]) != "int32":
            raise TypeError(f"indices must be int32, not {dlpack_dtype(views[1])}")
        places = {on_context_device(ctx, v) for v in views}
        if len(places) != 1:
            raise ValueError(f"{', '.join(names)} must all be on one device: {[v.device for v in views]}")
        on_device = places.pop()
        if not on_device and not all(on_host(v) for v in views):
            raise ValueError(f"arrays on {views[0].device} cannot be used by a context on {ctx.device}:{ctx.ordinal}")
        return views, on_device


class CSR(Sparse):
    """A CSR matrix of shape (m, k): `indptr` (m + 1, int32 or int64), `indices` (nnz int32
    column indices; unsorted and duplicates allowed, duplicates add up) and `weights` (nnz
    values), or no weights and `homo_weight` for a homogeneous matrix of `dtype`.

    Arrays on the context's device are wrapped without copying and, unless validate=False,
    checked (on CUDA that waits for the stream); the caller keeps them unchanged (weights may
    change) while the matrix lives. Host arrays given to a CUDA context, or to a CPU context with
    copy=True, are copied into the matrix and checked (on the CPU, T products then read its
    weights from a column-order copy instead of through the transpose's permutation). `ctx`
    defaults to the shared context of the arrays' device."""

    _destroy = "evs_csr_destroy"

    def __init__(self, indptr, indices, weights=None, *, shape, homo_weight=1.0, dtype=None, ctx=None,
                 validate=True, stream=None, copy=False):
        arrays = [indptr, indices] + ([weights] if weights is not None else [])
        ctx = ctx or Context.for_device(*_dlpack.device_of(indptr))
        views, on_device = self._structure(ctx, arrays, ["indptr", "indices", "weights"][:len(arrays)])
        index_dtype = dlpack_dtype(views[0])
        if index_dtype not in ("int32", "int64"):
            raise TypeError(f"indptr must be int32 or int64, not {index_dtype}")
        weight_dtype = dlpack_dtype(views[2]) if weights is not None else str(dtype or "float32")
        m, k = shape
        if count(views[0]) != m + 1:
            raise ValueError(f"indptr has {count(views[0])} entries; a matrix of {m} rows needs {m + 1}")
        args = (ctx, m, k, count(views[1]), DTYPES[index_dtype], views[0].data or None, views[1].data or None,
                dtype_code(weight_dtype), views[2].data or None if weights is not None else None, float(homo_weight))
        wrapped = on_device and not (copy and on_host(views[0]))
        super().__init__(created("evs_csr_wrap" if wrapped else "evs_csr_create", *args),
                         (ctx, *(views if wrapped else ())))
        self.ctx = ctx
        if wrapped and validate:
            call("evs_csr_validate", resolve_stream(ctx, stream, arrays), self)

    @classmethod
    def from_scipy(cls, matrix, **kwargs):
        """From a scipy.sparse matrix (copied; indices converted to int32)."""
        import numpy as np
        matrix = matrix.tocsr()
        return cls(np.ascontiguousarray(matrix.indptr), np.ascontiguousarray(matrix.indices, dtype=np.int32),
                   np.ascontiguousarray(matrix.data), shape=matrix.shape, **kwargs)

    def validate(self, stream=None):
        """Checks the structure (indptr from 0, non-decreasing, ending at nnz; indices in range);
        raises InvalidStructureError. On CUDA it waits for the stream."""
        call("evs_csr_validate", resolve_stream(self.ctx, stream, ()), self)

    def analyse(self, stream=None):
        """Builds the cached CSC mirror now, so that later calls allocate nothing and never wait
        (needed before capturing a CUDA graph). Waits for the stream."""
        call("evs_csr_analyse", resolve_stream(self.ctx, stream, ()), self)

    @property
    def shape(self):
        m, k, _ = outputs(lambda *o: call("evs_csr_shape", self, *o), ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)
        return (m, k)

    @property
    def nnz(self):
        return outputs(lambda *o: call("evs_csr_shape", self, *o), ctypes.c_int64, ctypes.c_int64, ctypes.c_int64)[2]

    def _types(self):
        return outputs(lambda *o: call("evs_csr_types", self, *o), ctypes.c_int32, ctypes.c_int32, ctypes.c_int32)

    @property
    def dtype(self):
        return DTYPE_NAMES[self._types()[0]]

    @property
    def index_dtype(self):
        return DTYPE_NAMES[self._types()[1]]

    @property
    def homogeneous(self):
        return bool(self._types()[2])

    def weights(self):
        """The heterogeneous weights as a Dense view (nnz elements), to read them after
        plasticity with `copy_to_host`."""
        return Dense(created("evs_csr_weights", self), self.ctx, (self,))


class BSR(Sparse):
    """A block-sparse matrix, as scipy.sparse.bsr_matrix: `values` (nnzb x bm x bk, f16, bf16
    or f32; or flat with `blocksize`), `indices` (nnzb int32 block columns), `indptr` (block
    rows + 1, int32), `shape` in elements. Wrapped or copied as for CSR."""

    _destroy = "evs_bsr_destroy"

    def __init__(self, values, indices, indptr, *, shape, blocksize=None, ctx=None, validate=True, stream=None):
        ctx = ctx or Context.for_device(*_dlpack.device_of(values))
        views, on_device = self._structure(ctx, [indptr, indices, values], ["indptr", "indices", "values"])
        if dlpack_dtype(views[0]) != "int32":
            raise TypeError(f"indptr must be int32, not {dlpack_dtype(views[0])}")
        bm, bk = blocksize or views[2].shape[1:]
        rows, cols = shape
        if rows % bm or cols % bk:
            raise ValueError(f"shape {shape} is not a whole number of {bm} x {bk} blocks")
        args = (ctx, rows // bm, cols // bk, bm, bk, count(views[1]), views[0].data or None, views[1].data or None,
                dtype_code(dlpack_dtype(views[2])), views[2].data or None)
        super().__init__(created("evs_bsr_wrap" if on_device else "evs_bsr_create", *args),
                         (ctx, *(views if on_device else ())))
        self.ctx = ctx
        if on_device and validate:
            call("evs_bsr_validate", resolve_stream(ctx, stream, (values,)), self)

    def validate(self, stream=None):
        """Checks the block structure as CSR.validate does."""
        call("evs_bsr_validate", resolve_stream(self.ctx, stream, ()), self)

    def _shape(self):
        return outputs(lambda *o: call("evs_bsr_shape", self, *o), *[ctypes.c_int64] * 5, ctypes.c_int32)

    @property
    def shape(self):
        return tuple(self._shape()[:2])

    @property
    def blocksize(self):
        return tuple(self._shape()[2:4])

    @property
    def nnzb(self):
        return self._shape()[4]

    @property
    def dtype(self):
        return DTYPE_NAMES[self._shape()[5]]
