//! Status codes of the C ABI and the crate's error type.
//!
//! Status values are stable: a value, once published, keeps its meaning and is never reused.

/// Result code of every evsparse function (0 = success). Stable values, never reused.
pub type evs_status = i32;

/// The call succeeded.
pub const EVS_SUCCESS: evs_status = 0;
/// A required pointer argument was NULL.
pub const EVS_ERROR_NULL_POINTER: evs_status = 1;
/// An enum argument (dtype, op, input kind, device kind, index type) had an unknown value.
pub const EVS_ERROR_INVALID_ENUM: evs_status = 2;
/// A handle argument is not a live handle of the expected kind.
pub const EVS_ERROR_INVALID_HANDLE: evs_status = 3;
/// Handles passed to one call belong to different contexts.
pub const EVS_ERROR_CONTEXT_MISMATCH: evs_status = 4;
/// Operand shapes do not fit the operation.
pub const EVS_ERROR_SHAPE_MISMATCH: evs_status = 5;
/// Operand dtypes do not fit the operation.
pub const EVS_ERROR_DTYPE_MISMATCH: evs_status = 6;
/// A scalar argument is out of its range (negative or overflowing size, NaN bound, ...).
pub const EVS_ERROR_INVALID_VALUE: evs_status = 7;
/// CSR/BSR structure is invalid (indptr not starting at 0, decreasing, index out of range, ...).
pub const EVS_ERROR_INVALID_STRUCTURE: evs_status = 8;
/// Memory could not be allocated; nothing was leaked.
pub const EVS_ERROR_OUT_OF_MEMORY: evs_status = 9;
/// The requested device cannot be used (no driver, no such ordinal, backend not built).
pub const EVS_ERROR_DEVICE_UNAVAILABLE: evs_status = 10;
/// The operation is valid but not supported for these arguments on this device.
pub const EVS_ERROR_NOT_SUPPORTED: evs_status = 11;
/// The device reported an error while running the operation.
pub const EVS_ERROR_DEVICE: evs_status = 12;
/// An internal error (a bug in evsparse); the message says what happened.
pub const EVS_ERROR_INTERNAL: evs_status = 13;

/// Static name of a status code, used by `evs_status_string`.
pub(crate) fn status_name(status: evs_status) -> &'static std::ffi::CStr {
    match status {
        EVS_SUCCESS => c"EVS_SUCCESS",
        EVS_ERROR_NULL_POINTER => c"EVS_ERROR_NULL_POINTER",
        EVS_ERROR_INVALID_ENUM => c"EVS_ERROR_INVALID_ENUM",
        EVS_ERROR_INVALID_HANDLE => c"EVS_ERROR_INVALID_HANDLE",
        EVS_ERROR_CONTEXT_MISMATCH => c"EVS_ERROR_CONTEXT_MISMATCH",
        EVS_ERROR_SHAPE_MISMATCH => c"EVS_ERROR_SHAPE_MISMATCH",
        EVS_ERROR_DTYPE_MISMATCH => c"EVS_ERROR_DTYPE_MISMATCH",
        EVS_ERROR_INVALID_VALUE => c"EVS_ERROR_INVALID_VALUE",
        EVS_ERROR_INVALID_STRUCTURE => c"EVS_ERROR_INVALID_STRUCTURE",
        EVS_ERROR_OUT_OF_MEMORY => c"EVS_ERROR_OUT_OF_MEMORY",
        EVS_ERROR_DEVICE_UNAVAILABLE => c"EVS_ERROR_DEVICE_UNAVAILABLE",
        EVS_ERROR_NOT_SUPPORTED => c"EVS_ERROR_NOT_SUPPORTED",
        EVS_ERROR_DEVICE => c"EVS_ERROR_DEVICE",
        EVS_ERROR_INTERNAL => c"EVS_ERROR_INTERNAL",
        _ => c"EVS_UNKNOWN_STATUS",
    }
}

/// An error with its C status and a message naming the argument and the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Error {
    pub status: evs_status,
    pub message: String,
}

pub type Result<T> = std::result::Result<T, Error>;

macro_rules! constructors {
    ($($fn_name:ident => $status:ident),* $(,)?) => {
        impl Error {
            $(pub fn $fn_name(message: impl Into<String>) -> Self {
                Error { status: $status, message: message.into() }
            })*
        }
    };
}

constructors! {
    null => EVS_ERROR_NULL_POINTER,
    invalid_enum => EVS_ERROR_INVALID_ENUM,
    invalid_handle => EVS_ERROR_INVALID_HANDLE,
    context_mismatch => EVS_ERROR_CONTEXT_MISMATCH,
    shape => EVS_ERROR_SHAPE_MISMATCH,
    dtype => EVS_ERROR_DTYPE_MISMATCH,
    value => EVS_ERROR_INVALID_VALUE,
    structure => EVS_ERROR_INVALID_STRUCTURE,
    out_of_memory => EVS_ERROR_OUT_OF_MEMORY,
    device_unavailable => EVS_ERROR_DEVICE_UNAVAILABLE,
    not_supported => EVS_ERROR_NOT_SUPPORTED,
    device => EVS_ERROR_DEVICE,
    internal => EVS_ERROR_INTERNAL,
}
