"""Reading an array's DLPack export (the `__dlpack__` protocol) without copying: where its data
is, its device, dtype, shape and strides. Torch, CuPy, JAX and NumPy arrays all export it."""
import ctypes

# DLDeviceType values that evsparse can use.
CPU, CUDA, CUDA_HOST, CUDA_MANAGED = 1, 2, 3, 13
DEVICE_NAMES = {CPU: "cpu", CUDA: "cuda", CUDA_HOST: "cuda_host", CUDA_MANAGED: "cuda_managed"}
# DLDataTypeCode values.
INT, UINT, FLOAT, BFLOAT, BOOL = 0, 1, 2, 4, 6
READ_ONLY = 1  # DLPACK_FLAG_BITMASK_READ_ONLY (versioned exports only)


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p), ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.argtypes, _get_pointer.restype = [ctypes.py_object, ctypes.c_char_p], ctypes.c_void_p
_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_is_valid.argtypes, _is_valid.restype = [ctypes.py_object, ctypes.c_char_p], ctypes.c_int


class View:
    """What evsparse needs of an exported array. `capsule` keeps the export (and so the
    producer's memory) alive; it is never marked consumed, so the producer's capsule destructor
    releases the export when the view goes."""

    __slots__ = ("capsule", "data", "device_type", "device_id", "code", "bits", "shape", "strides",
                 "read_only")

    def __init__(self, capsule, tensor, read_only):
        self.capsule, self.read_only = capsule, read_only
        self.data = (tensor.data or 0) + tensor.byte_offset
        self.device_type, self.device_id = tensor.device.device_type, tensor.device.device_id
        if tensor.dtype.lanes != 1:
            raise TypeError(f"arrays of {tensor.dtype.lanes}-lane vectors are not supported")
        self.code, self.bits = tensor.dtype.code, tensor.dtype.bits
        self.shape = tuple(tensor.shape[i] for i in range(tensor.ndim))
        self.strides = tuple(tensor.strides[i] for i in range(tensor.ndim)) if tensor.strides else None

    @property
    def device(self):
        return f"{DEVICE_NAMES.get(self.device_type, f'dlpack device {self.device_type}')}:{self.device_id}"


def export(array, stream=None):
    """The DLPack view of `array`. `stream` (CUDA arrays only) is the consumer's stream as the
    protocol passes it: the producer makes the data ready for work queued there."""
    require_dlpack(array)
    kwargs = {} if stream is None else {"stream": stream}
    try:
        capsule = array.__dlpack__(max_version=(1, 0), **kwargs)
    except TypeError:  # a producer older than DLPack 1.0
        capsule = array.__dlpack__(**kwargs)
    if _is_valid(capsule, b"dltensor_versioned"):
        managed = DLManagedTensorVersioned.from_address(_get_pointer(capsule, b"dltensor_versioned"))
        return View(capsule, managed.dl_tensor, bool(managed.flags & READ_ONLY))
    if _is_valid(capsule, b"dltensor"):
        return View(capsule, DLManagedTensor.from_address(_get_pointer(capsule, b"dltensor")).dl_tensor, False)
    raise TypeError(f"{type(array).__name__}.__dlpack__ returned no usable DLPack capsule")


def device_of(array):
    """(DLDeviceType, device id) of an array, without exporting it."""
    require_dlpack(array)
    device_type, device_id = array.__dlpack_device__()
    return int(device_type), int(device_id)


def require_dlpack(array):
    if not hasattr(array, "__dlpack__"):
        raise TypeError(f"expected an array supporting DLPack (torch, cupy, jax, numpy), got {type(array).__name__}")
