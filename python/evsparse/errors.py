"""Exceptions: every failed call raises an `EvsError` subclass carrying the status and
`evs_last_error`'s message. Each also derives from the built-in exception a Python user would
catch for that kind of failure (ValueError for bad arguments, TypeError for dtypes, ...)."""


class EvsError(Exception):
    """A call into evsparse failed. `status` is the evs_status value, `status_name` its name
    ("EVS_ERROR_SHAPE_MISMATCH"), and str(error) the library's message."""

    def __init__(self, status, status_name, message):
        super().__init__(message)
        self.status, self.status_name, self.message = status, status_name, message


class NullPointerError(EvsError, ValueError):
    pass


class InvalidEnumError(EvsError, ValueError):
    pass


class InvalidHandleError(EvsError, ValueError):
    pass


class ContextMismatchError(EvsError, ValueError):
    pass


class ShapeMismatchError(EvsError, ValueError):
    pass


class DtypeMismatchError(EvsError, TypeError):
    pass


class InvalidValueError(EvsError, ValueError):
    pass


class InvalidStructureError(EvsError, ValueError):
    pass


class OutOfMemoryError(EvsError, MemoryError):
    pass


class DeviceUnavailableError(EvsError, RuntimeError):
    pass


class NotSupportedError(EvsError, NotImplementedError):
    pass


class DeviceError(EvsError, RuntimeError):
    pass


class InternalError(EvsError, RuntimeError):
    pass


# By status value (the header's EVS_ERROR_* constants, 1 to 13).
BY_STATUS = {
    1: NullPointerError, 2: InvalidEnumError, 3: InvalidHandleError, 4: ContextMismatchError,
    5: ShapeMismatchError, 6: DtypeMismatchError, 7: InvalidValueError, 8: InvalidStructureError,
    9: OutOfMemoryError, 10: DeviceUnavailableError, 11: NotSupportedError, 12: DeviceError,
    13: InternalError,
}


def raise_for(lib, status, function):
    """Raises the exception of a non-zero status, with the thread's last error message."""
    name = lib.evs_status_string(status).decode()
    message = lib.evs_last_error().decode() or name
    raise BY_STATUS.get(status, EvsError)(status, name, f"{function}: {message}")
