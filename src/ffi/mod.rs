//! The C ABI: a thin layer of argument checks, handles and status codes over [`crate::core`].
//!
//! Every entry point runs inside [`guard`], which turns errors into status codes, records
//! the message for `evs_last_error`, and stops panics at the boundary.
//!
//! Safety contract of every `unsafe extern "C"` function here (stated once instead of on each):
//! handle arguments are NULL or pointers evsparse returned (a destroyed one is refused with
//! `EVS_ERROR_INVALID_HANDLE` until its slot is reused, see `handles`); data pointers are NULL
//! or valid for the element counts the arguments describe.
#![allow(clippy::missing_safety_doc)]

mod handles;
mod ops;

pub use handles::*;
pub use ops::*;

use crate::error::{evs_status, status_name, Error, Result, EVS_ERROR_INTERNAL, EVS_SUCCESS};
use std::cell::RefCell;
use std::ffi::{c_char, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_last_error(message: &str) {
    let message = CString::new(message.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = message);
}

/// Runs an entry point: `Ok` is `EVS_SUCCESS`; an error or a panic sets the thread's last
/// error and returns its status.
pub(crate) fn guard(body: impl FnOnce() -> Result<()>) -> evs_status {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => EVS_SUCCESS,
        Ok(Err(e)) => {
            set_last_error(&e.message);
            e.status
        }
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            set_last_error(&format!("internal error (please report): {what}"));
            EVS_ERROR_INTERNAL
        }
    }
}

/// Writes `value` through a required output pointer.
///
/// # Safety
/// `out` must be NULL or valid for writes.
pub(crate) unsafe fn write_out<T>(arg: &str, out: *mut T, value: T) -> Result<()> {
    if out.is_null() {
        return Err(Error::null(format!("{arg} is NULL")));
    }
    out.write(value);
    Ok(())
}

/// Fails when a required pointer is NULL.
pub(crate) fn non_null<T>(arg: &str, p: *const T) -> Result<()> {
    if p.is_null() {
        Err(Error::null(format!("{arg} is NULL")))
    } else {
        Ok(())
    }
}

/// Static name of a status code ("EVS_ERROR_SHAPE_MISMATCH"); "EVS_UNKNOWN_STATUS" for a
/// value evsparse never returns. Never NULL.
///
/// @param status any status value
/// @return the name, a static string
/// @ingroup library
#[no_mangle]
pub extern "C" fn evs_status_string(status: evs_status) -> *const c_char {
    status_name(status).as_ptr()
}

/// Human-readable message for the last failed call on this thread, naming the argument and
/// the value ("csr: indices[17] = 5003 out of range for 5000 columns"); "" if no call has
/// failed. Valid until the next failing call on the same thread. Never NULL.
///
/// @return the message, valid until the next failing call on this thread
/// @ingroup library
#[no_mangle]
pub extern "C" fn evs_last_error() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

/// The algorithm the last operation on this thread ran, as "family:algorithm"
/// ("spmm_n:length_classes", "spmm_t:scatter"; see `evs_context_set_algorithm`
/// for the names), recorded when the call is dispatched; "" before the first. A static
/// string. Never NULL.
///
/// @return "family:algorithm", a static string
/// @ingroup library
#[no_mangle]
pub extern "C" fn evs_last_plan() -> *const c_char {
    crate::core::plan::last().as_ptr() as *const c_char
}

/// The library version as "MAJOR.MINOR.PATCH". Compare with `EVS_VERSION_MAJOR` etc. to
/// detect a header/library mismatch. Never NULL.
///
/// @return "MAJOR.MINOR.PATCH", a static string
/// @ingroup library
#[no_mangle]
pub extern "C" fn evs_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr() as *const c_char
}
