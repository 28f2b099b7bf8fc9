//! The CUDA backend: the driver API through cudarc's `sys` layer (libcuda loaded lazily, so a
//! machine without a GPU loads evsparse fine), kernels from the fatbin that build.rs embeds,
//! and one launch sequence per operation.

mod driver;
mod kernels;
mod launch;
mod ops;

pub use driver::{DeviceMemory, Gpu, GpuStream, Scratch};
pub use ops::*;

use crate::core::context::{Backend, Stream};
use crate::core::memory::Buffer;
use crate::error::{Error, Result};
use std::sync::Arc;

/// The kernels compiled by build.rs (kernels/*.cu), or None in a CPU-only build.
#[cfg(evs_kernels)]
const FATBIN: Option<&[u8]> = Some(include_bytes!(concat!(env!("OUT_DIR"), "/evsparse.fatbin")));
#[cfg(not(evs_kernels))]
const FATBIN: Option<&[u8]> = None;

/// Opens CUDA device `ordinal` for a new context.
pub fn open(ordinal: i32) -> Result<Arc<Gpu>> {
    let image = FATBIN.ok_or_else(|| {
        Error::device_unavailable(format!(
            "context: CUDA device {ordinal} requested, but this build of evsparse has no CUDA kernels \
             (nvcc was not found when it was built)"
        ))
    })?;
    Gpu::open(ordinal, image)
}

/// The GPU and native stream behind a stream of a CUDA context.
pub(crate) fn parts(s: &Stream) -> Result<(&Arc<Gpu>, cudarc::driver::sys::CUstream)> {
    match (&s.ctx.backend, &s.gpu) {
        (Backend::Cuda(gpu), Some(native)) => Ok((gpu, native.raw)),
        _ => Err(Error::internal("a CUDA operation was dispatched on a stream without a GPU")),
    }
}

/// At least `bytes` bytes of the stream's scratch memory, leased (see `GpuStream::scratch`).
pub(crate) fn scratch(s: &Stream, bytes: usize) -> Result<Scratch<'_>> {
    match &s.gpu {
        Some(native) => native.scratch(bytes),
        None => Err(Error::internal("scratch memory was asked of a stream without a GPU")),
    }
}

/// The stream's self-resetting tile counter (see `GpuStream::tile_counter`).
pub(crate) fn tile_counter(s: &Stream) -> Result<u64> {
    match &s.gpu {
        Some(native) => native.tile_counter(),
        None => Err(Error::internal("a tile counter was asked of a stream without a GPU")),
    }
}

/// Copies `len` elements of a device buffer to a host vector, waiting for the copy.
pub(crate) fn download<T: Copy + Default>(s: &Stream, buf: &Buffer, len: usize) -> Result<Vec<T>> {
    let (gpu, stream) = parts(s)?;
    let mut out = vec![T::default(); len];
    // SAFETY: `out` holds len elements of plain data; the buffer holds at least as many.
    let bytes = unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr() as *mut u8, std::mem::size_of_val(&out[..])) };
    gpu.download(stream, buf.addr(), bytes)?;
    Ok(out)
}
