"""The array frameworks the binding is tested on: numpy (CPU context) always, torch on the CPU
where installed, and torch and cupy on the GPU where there is one. EVS_TEST_DEVICE=cuda (the GPU
check) makes a missing GPU framework an error instead of a skip."""
import os

import numpy as np
import pytest

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # JAX, if imported, shares the GPU


class Backend:
    """Makes arrays of one framework on one device from numpy arrays, and reads them back."""

    def __init__(self, name, device, dtypes):
        self.name, self.device, self.dtypes = name, device, dtypes

    def __repr__(self):
        return self.name

    def to(self, a, dtype=None):
        raise NotImplementedError

    def host(self, a):
        """float64 (or the integer/bool dtype) numpy copy."""
        raise NotImplementedError

    def zeros(self, shape, dtype):
        return self.to(np.zeros(shape, dtype=np.float32 if dtype == "bfloat16" else dtype), dtype)


class NumpyBackend(Backend):
    def to(self, a, dtype=None):
        return np.ascontiguousarray(a, dtype=dtype or a.dtype)

    def host(self, a):
        return np.asarray(a)


class TorchBackend(Backend):
    def __init__(self, device):
        import torch
        self.torch = torch
        super().__init__(f"torch-{device}", device, ["float16", "bfloat16", "float32", "float64"])

    def to(self, a, dtype=None):
        t = self.torch.from_numpy(np.ascontiguousarray(a if dtype != "bfloat16" else a.astype(np.float32)))
        if dtype:
            t = t.to(getattr(self.torch, dtype))
        return t.to(self.device)

    def host(self, a):
        a = a.detach().cpu()
        return (a.float() if a.dtype == self.torch.bfloat16 else a).numpy()


class CupyBackend(Backend):
    def __init__(self):
        import cupy
        self.cupy = cupy
        super().__init__("cupy", "cuda", ["float16", "float32", "float64"])

    def to(self, a, dtype=None):
        return self.cupy.asarray(np.ascontiguousarray(a, dtype=dtype or a.dtype))

    def host(self, a):
        return self.cupy.asnumpy(a)


def backends():
    found = [NumpyBackend("numpy", "cpu", ["float16", "float32", "float64"])]
    gpu_required = os.environ.get("EVS_TEST_DEVICE") == "cuda"
    try:
        import torch
        found.append(TorchBackend("cpu"))
        if torch.cuda.is_available():
            found.append(TorchBackend("cuda"))
        elif gpu_required:
            raise RuntimeError("EVS_TEST_DEVICE=cuda but torch sees no GPU")
    except ImportError:
        if gpu_required:
            raise
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() > 0:
            found.append(CupyBackend())
    except Exception:  # noqa: BLE001 (no cupy, or no driver)
        if gpu_required:
            raise
    return found


BACKENDS = backends()


@pytest.fixture(params=BACKENDS, ids=str)
def xp(request):
    return request.param
