//! Fault injection for tests (issue #13): the allocations evsparse makes for its own buffers
//! (host memory on a CPU context, device memory on a CUDA one), and the CUDA driver calls it
//! checks, can be made to fail, one chosen allocation or call at a time, and the bytes those
//! buffers hold are counted, so that a test can walk a program through every allocation or
//! driver call failing in turn and check the status, the message and that nothing leaked.
//! Compiled in but inert until a test arms it: one relaxed load per allocation or driver call.
//! Rust's own collections (host analysis, staging copies) abort on exhaustion as Rust does; they
//! are not counted here.

use crate::error::{Error, Result};
use std::sync::atomic::{AtomicI64, Ordering};

/// Allocations (driver calls) that still succeed before the injected failure; negative: disarmed.
static ALLOCATIONS_LEFT: AtomicI64 = AtomicI64::new(-1);
static DRIVER_CALLS_LEFT: AtomicI64 = AtomicI64::new(-1);
/// Bytes of evsparse's own buffers alive now, host and device.
static LIVE_BYTES: AtomicI64 = AtomicI64::new(0);

/// Makes the allocation after the next `n` fail, once (`None`: no failure).
pub fn fail_allocation_after(n: Option<u64>) {
    arm(&ALLOCATIONS_LEFT, n);
}

/// Makes the checked CUDA driver call after the next `n` fail, once, without calling the
/// driver (`None`: no failure).
pub fn fail_driver_call_after(n: Option<u64>) {
    arm(&DRIVER_CALLS_LEFT, n);
}

fn arm(left: &AtomicI64, n: Option<u64>) {
    left.store(n.map_or(-1, |n| n.min(i64::MAX as u64) as i64), Ordering::SeqCst);
}

/// Whether this is the event chosen to fail (counting it down otherwise).
fn chosen(left: &AtomicI64) -> bool {
    left.load(Ordering::Relaxed) >= 0 && left.fetch_sub(1, Ordering::SeqCst) == 0
}

/// Bytes of evsparse's own buffers alive now.
pub fn live_bytes() -> i64 {
    LIVE_BYTES.load(Ordering::SeqCst)
}

/// Called before each allocation: the out-of-memory error when it is the one chosen to fail.
pub(crate) fn before_allocation(what: &str, bytes: usize) -> Result<()> {
    if chosen(&ALLOCATIONS_LEFT) {
        return Err(Error::out_of_memory(format!("{what}: cannot allocate {bytes} bytes (injected failure)")));
    }
    Ok(())
}

/// Called before each checked driver call: a device error when it is the one chosen to fail.
pub(crate) fn before_driver_call(what: &str) -> Result<()> {
    if chosen(&DRIVER_CALLS_LEFT) {
        return Err(Error::device(format!("{what}: the driver call failed (injected failure)")));
    }
    Ok(())
}

/// Counts `bytes` allocated (positive) or freed (negative).
pub(crate) fn count_live(bytes: i64) {
    LIVE_BYTES.fetch_add(bytes, Ordering::Relaxed);
}
