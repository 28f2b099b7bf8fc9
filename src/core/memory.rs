//! Raw memory regions: host or device, owned (allocated by evsparse) or borrowed (the caller's).

use super::faults;
use crate::cuda::DeviceMemory;
use crate::error::{Error, Result};
use std::alloc::Layout;
use std::ptr::NonNull;

const ALIGN: usize = 64;

/// Host regions from this size on are aligned to it and asked for in huge pages (Linux's
/// transparent huge pages, where the system grants them on request): a simulator's step reads a
/// few rows at random out of a large matrix, and with 4 KB pages each row costs a TLB walk
/// (400,000 x 80, 2,000 live rows: the rows' reads 360-397 -> 269-284 µs on an EPYC VM,
/// bench/probe_cpu_scatter.c).
const HUGE_PAGE: usize = 2 << 20;

pub struct Buffer {
    ptr: NonNull<u8>,
    bytes: usize,
    owner: Owner,
}

/// Who frees the memory.
enum Owner {
    Caller,
    Host(Layout),
    /// Held for its Drop, which returns the memory to the pool.
    Device(#[allow(dead_code)] DeviceMemory),
}

// SAFETY: a Buffer is a plain memory region; ops synchronise access as the API documents
// (the caller orders writes to one array, like with cuSPARSE).
unsafe impl Send for Buffer {}
unsafe impl Sync for Buffer {}

impl Buffer {
    /// Zero-filled host memory; `EVS_ERROR_OUT_OF_MEMORY` when the allocator refuses.
    pub fn alloc_host(what: &str, bytes: usize) -> Result<Buffer> {
        Buffer::host(what, bytes, |ptr| {
            // SAFETY: ptr holds `bytes` bytes.
            unsafe { std::ptr::write_bytes(ptr, 0, bytes) }
        })
    }

    /// Host memory initialised from `src`.
    pub fn from_host(what: &str, src: &[u8]) -> Result<Buffer> {
        Buffer::host(what, src.len(), |ptr| {
            // SAFETY: ptr holds src.len() bytes and is a fresh allocation.
            unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), ptr, src.len()) }
        })
    }

    /// `bytes` of host memory, written whole by `fill` (its first touch: a large region is
    /// advised into huge pages before).
    fn host(what: &str, bytes: usize, fill: impl FnOnce(*mut u8)) -> Result<Buffer> {
        if bytes == 0 {
            return Ok(Buffer { ptr: NonNull::<u64>::dangling().cast(), bytes: 0, owner: Owner::Caller });
        }
        let align = if bytes >= HUGE_PAGE { HUGE_PAGE } else { ALIGN };
        let layout = Layout::from_size_align(bytes, align)
            .map_err(|_| Error::value(format!("{what}: {bytes} bytes is too large")))?;
        faults::before_allocation(what, bytes)?;
        // SAFETY: the layout has a non-zero size; `fill` writes the region before any use.
        let ptr = unsafe { std::alloc::alloc(layout) };
        let ptr =
            NonNull::new(ptr).ok_or_else(|| Error::out_of_memory(format!("{what}: cannot allocate {bytes} bytes")))?;
        if align == HUGE_PAGE {
            // before the pages are first touched, so that they come as huge ones
            ask_for_huge_pages(ptr.as_ptr(), bytes);
        }
        fill(ptr.as_ptr());
        faults::count_live(bytes as i64);
        Ok(Buffer { ptr, bytes, owner: Owner::Host(layout) })
    }

    /// The caller's memory; never freed by evsparse.
    pub fn borrow(what: &str, ptr: *mut u8, bytes: usize, align: usize) -> Result<Buffer> {
        let ptr = NonNull::new(ptr).ok_or_else(|| Error::null(format!("{what}: data pointer is NULL")))?;
        if (ptr.as_ptr() as usize) % align != 0 {
            return Err(Error::value(format!("{what}: pointer {:p} is not aligned to {align} bytes", ptr.as_ptr())));
        }
        Ok(Buffer { ptr, bytes, owner: Owner::Caller })
    }

    /// Device memory owned by evsparse (a dangling address when empty: nothing reads it).
    pub fn device(mem: DeviceMemory, bytes: usize) -> Buffer {
        let ptr = NonNull::new(mem.ptr as *mut u8).unwrap_or(NonNull::<u64>::dangling().cast());
        Buffer { ptr, bytes, owner: Owner::Device(mem) }
    }

    /// Memory the caller owns (wrapped), where evsparse cannot see every write.
    pub fn is_borrowed(&self) -> bool {
        matches!(self.owner, Owner::Caller) && self.bytes > 0
    }

    pub fn ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The address as the driver sees it.
    pub fn addr(&self) -> u64 {
        self.ptr.as_ptr() as u64
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        if let Owner::Host(layout) = self.owner {
            // SAFETY: allocated in alloc_host with this layout.
            unsafe { std::alloc::dealloc(self.ptr.as_ptr(), layout) };
            faults::count_live(-(layout.size() as i64));
        }
        // Device memory returns to its pool when `owner` drops.
    }
}

/// Advises the kernel to back `bytes` from `ptr` (aligned to HUGE_PAGE) with huge pages; a hint
/// only (refused where transparent huge pages are off, and elsewhere than on Linux).
fn ask_for_huge_pages(ptr: *mut u8, bytes: usize) {
    #[cfg(target_os = "linux")]
    // SAFETY: madvise on a region this process owns; MADV_HUGEPAGE changes no contents.
    unsafe {
        libc::madvise(ptr.cast(), bytes, libc::MADV_HUGEPAGE);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (ptr, bytes);
}

/// Reinterprets host bytes of a C array as a typed slice.
///
/// # Safety
/// `ptr` must point to `len` readable, aligned elements of `T` (or `len` must be 0).
pub unsafe fn host_slice<'a, T>(ptr: *const T, len: usize) -> &'a [T] {
    if len == 0 {
        &[]
    } else {
        std::slice::from_raw_parts(ptr, len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regions from HUGE_PAGE on start on a huge page and arrive zeroed (the zeroing follows the
    /// advice), or hold the copied bytes; smaller ones keep ALIGN.
    #[test]
    fn host_regions_are_zeroed_and_aligned_by_size() {
        for bytes in [1, 4096, HUGE_PAGE - 1, HUGE_PAGE, 3 * HUGE_PAGE + 5] {
            let buf = Buffer::alloc_host("test", bytes).unwrap();
            let align = if bytes >= HUGE_PAGE { HUGE_PAGE } else { ALIGN };
            assert_eq!(buf.addr() as usize % align, 0, "{bytes} bytes");
            // SAFETY: buf holds `bytes` bytes.
            let data = unsafe { std::slice::from_raw_parts(buf.ptr(), bytes) };
            assert!(data.iter().all(|&b| b == 0), "{bytes} bytes");
            let src: Vec<u8> = (0..bytes).map(|i| (i % 251) as u8).collect();
            let copy = Buffer::from_host("test", &src).unwrap();
            assert_eq!(copy.addr() as usize % align, 0, "{bytes} bytes copied");
            // SAFETY: copy holds `bytes` bytes.
            assert!(unsafe { std::slice::from_raw_parts(copy.ptr(), bytes) } == &src[..], "{bytes} bytes copied");
        }
    }
}
