//! Contexts (one device each) and streams.

use super::memory::Buffer;
use crate::error::{Error, Result};
use std::sync::Arc;

/// Device a context runs on (C enum, stable values).
pub type evs_device_kind = i32;
/// The first usable GPU, else the CPU.
pub const EVS_DEVICE_DEFAULT: evs_device_kind = 0;
/// The multi-threaded CPU backend.
pub const EVS_DEVICE_CPU: evs_device_kind = 1;
/// CUDA device with the given ordinal.
pub const EVS_DEVICE_CUDA: evs_device_kind = 2;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Device {
    Cpu,
}

/// One device with its resources. Shared by every handle made from it.
pub struct Context {
    pub device: Device,
    pool: rayon::ThreadPool,
}

impl Context {
    pub fn new(kind: evs_device_kind, ordinal: i32) -> Result<Arc<Context>> {
        match kind {
            EVS_DEVICE_DEFAULT | EVS_DEVICE_CPU => Self::cpu(),
            EVS_DEVICE_CUDA => Err(Error::device_unavailable(format!(
                "context: CUDA device {ordinal} requested, but this build of evsparse has no CUDA backend yet"
            ))),
            _ => Err(Error::invalid_enum(format!("device kind: unknown value {kind}"))),
        }
    }

    fn cpu() -> Result<Arc<Context>> {
        let threads = std::env::var("EVS_NUM_THREADS").ok().and_then(|v| v.parse().ok()).unwrap_or(0);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("evsparse-cpu-{i}"))
            .build()
            .map_err(|e| Error::internal(format!("context: cannot start CPU thread pool: {e}")))?;
        Ok(Arc::new(Context { device: Device::Cpu, pool }))
    }

    pub fn kind(&self) -> evs_device_kind {
        match self.device {
            Device::Cpu => EVS_DEVICE_CPU,
        }
    }

    pub fn ordinal(&self) -> i32 {
        0
    }

    /// Runs CPU work on this context's thread pool.
    pub fn run<R: Send>(&self, work: impl FnOnce() -> R + Send) -> R {
        self.pool.install(work)
    }

    /// Zero-filled memory on this context's device.
    pub fn alloc(&self, what: &str, bytes: usize) -> Result<Buffer> {
        match self.device {
            Device::Cpu => Buffer::alloc_host(what, bytes),
        }
    }

    /// Memory on this context's device holding a copy of host bytes.
    pub fn upload(&self, what: &str, bytes: &[u8]) -> Result<Arc<Buffer>> {
        match self.device {
            Device::Cpu => Ok(Arc::new(Buffer::from_host(what, bytes)?)),
        }
    }

    pub fn same(a: &Arc<Context>, b: &Arc<Context>) -> bool {
        Arc::ptr_eq(a, b)
    }
}

/// An ordered queue of work on a context's device. On the CPU, work runs synchronously.
pub struct Stream {
    pub ctx: Arc<Context>,
}

impl Stream {
    pub fn new(ctx: &Arc<Context>) -> Stream {
        Stream { ctx: ctx.clone() }
    }

    pub fn wrap(ctx: &Arc<Context>, native: *mut std::ffi::c_void) -> Result<Stream> {
        match ctx.device {
            Device::Cpu => {
                Err(Error::not_supported(format!("stream: cannot wrap native stream {native:p} on a CPU context")))
            }
        }
    }

    pub fn synchronize(&self) -> Result<()> {
        match self.ctx.device {
            Device::Cpu => Ok(()),
        }
    }

    /// Fails unless the handle's context is this stream's context.
    pub fn expect_context(&self, arg: &str, ctx: &Arc<Context>) -> Result<()> {
        if Context::same(&self.ctx, ctx) {
            Ok(())
        } else {
            Err(Error::context_mismatch(format!("{arg} belongs to a different context than the stream")))
        }
    }
}
