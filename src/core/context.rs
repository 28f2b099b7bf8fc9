//! Contexts (one device each) and streams.

use super::memory::Buffer;
use super::plan::{DeviceInfo, Forced};
use crate::cuda::{self, Gpu, GpuStream};
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

/// The backend a context dispatches to, with its resources.
pub enum Backend {
    Cpu(rayon::ThreadPool),
    Cuda(Arc<Gpu>),
}

/// One device with its resources. Shared by every handle made from it.
pub struct Context {
    pub backend: Backend,
    /// Algorithms forced per operation family (see `core::plan`).
    pub forced: Forced,
}

/// The environment variable whose spec ("spmm_n:warp_per_row,...") every new context forces.
pub const FORCE_ALGORITHM_VAR: &str = "EVS_FORCE_ALGORITHM";

impl Context {
    pub fn new(kind: evs_device_kind, ordinal: i32) -> Result<Arc<Context>> {
        let forced = Forced::default();
        if let Ok(spec) = std::env::var(FORCE_ALGORITHM_VAR) {
            forced.apply(&spec).map_err(|e| Error::value(format!("{FORCE_ALGORITHM_VAR}: {}", e.message)))?;
        }
        let backend = match kind {
            EVS_DEVICE_CPU => Self::cpu()?,
            EVS_DEVICE_CUDA => Self::cuda(ordinal)?,
            // Any reason the GPU cannot be used (no driver, no device, no kernels for it, a
            // driver error) means the CPU; evs_context_device tells the caller which it got.
            EVS_DEVICE_DEFAULT => Self::cuda(ordinal).or_else(|_| Self::cpu())?,
            _ => return Err(Error::invalid_enum(format!("device kind: unknown value {kind}"))),
        };
        Ok(Arc::new(Context { backend, forced }))
    }

    fn cpu() -> Result<Backend> {
        let threads = std::env::var("EVS_NUM_THREADS").ok().and_then(|v| v.parse().ok()).unwrap_or(0);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("evsparse-cpu-{i}"))
            .build()
            .map_err(|e| Error::internal(format!("context: cannot start CPU thread pool: {e}")))?;
        Ok(Backend::Cpu(pool))
    }

    fn cuda(ordinal: i32) -> Result<Backend> {
        Ok(Backend::Cuda(cuda::open(ordinal)?))
    }

    /// What plan choosers know of the device (a CPU context reports no multiprocessors).
    pub fn device_info(&self) -> DeviceInfo {
        match &self.backend {
            Backend::Cpu(_) => DeviceInfo { multiprocessors: 0, compute_capability: 0 },
            Backend::Cuda(gpu) => {
                DeviceInfo { multiprocessors: gpu.multiprocessors, compute_capability: gpu.compute_capability }
            }
        }
    }

    pub fn kind(&self) -> evs_device_kind {
        match self.backend {
            Backend::Cpu(_) => EVS_DEVICE_CPU,
            Backend::Cuda(_) => EVS_DEVICE_CUDA,
        }
    }

    pub fn ordinal(&self) -> i32 {
        match &self.backend {
            Backend::Cpu(_) => 0,
            Backend::Cuda(gpu) => gpu.ordinal,
        }
    }

    pub fn is_cpu(&self) -> bool {
        matches!(self.backend, Backend::Cpu(_))
    }

    /// Runs host work: on a CPU context's thread pool, inline on a GPU context.
    /// Threads a CPU context's work is shared among (1 on a GPU context).
    pub fn threads(&self) -> usize {
        match &self.backend {
            Backend::Cpu(pool) => pool.current_num_threads(),
            Backend::Cuda(_) => 1,
        }
    }

    pub fn run<R: Send>(&self, work: impl FnOnce() -> R + Send) -> R {
        match &self.backend {
            Backend::Cpu(pool) => pool.install(work),
            Backend::Cuda(_) => work(),
        }
    }

    /// Zero-filled memory on this context's device.
    pub fn alloc(&self, what: &str, bytes: usize) -> Result<Buffer> {
        match &self.backend {
            Backend::Cpu(_) => Buffer::alloc_host(what, bytes),
            Backend::Cuda(gpu) => Ok(Buffer::device(gpu.alloc(what, bytes)?, bytes)),
        }
    }

    /// Memory on this context's device holding a copy of host bytes.
    pub fn upload(&self, what: &str, bytes: &[u8]) -> Result<Arc<Buffer>> {
        match &self.backend {
            Backend::Cpu(_) => Ok(Arc::new(Buffer::from_host(what, bytes)?)),
            Backend::Cuda(gpu) => Ok(Arc::new(Buffer::device(gpu.upload(what, bytes)?, bytes.len()))),
        }
    }

    /// The caller's memory, zero-copy: host memory on a CPU context, memory the GPU can reach
    /// (checked with the driver) on a CUDA context.
    pub fn borrow(&self, what: &str, ptr: *mut u8, bytes: usize, align: usize) -> Result<Arc<Buffer>> {
        let buf = Buffer::borrow(what, ptr, bytes, align)?;
        if let Backend::Cuda(gpu) = &self.backend {
            gpu.expect_accessible(what, ptr, bytes)?;
        }
        Ok(Arc::new(buf))
    }

    pub fn same(a: &Arc<Context>, b: &Arc<Context>) -> bool {
        Arc::ptr_eq(a, b)
    }
}

/// An ordered queue of work on a context's device. On the CPU, work runs synchronously.
pub struct Stream {
    pub ctx: Arc<Context>,
    /// The native stream of a CUDA context.
    pub gpu: Option<GpuStream>,
}

impl Stream {
    pub fn new(ctx: &Arc<Context>) -> Result<Stream> {
        let gpu = match &ctx.backend {
            Backend::Cpu(_) => None,
            Backend::Cuda(gpu) => Some(GpuStream::create(gpu)?),
        };
        Ok(Stream { ctx: ctx.clone(), gpu })
    }

    pub fn wrap(ctx: &Arc<Context>, native: *mut std::ffi::c_void) -> Result<Stream> {
        match &ctx.backend {
            Backend::Cpu(_) => {
                Err(Error::not_supported(format!("stream: cannot wrap native stream {native:p} on a CPU context")))
            }
            Backend::Cuda(gpu) => Ok(Stream { ctx: ctx.clone(), gpu: Some(GpuStream::wrap(gpu, native as _)?) }),
        }
    }

    pub fn synchronize(&self) -> Result<()> {
        match &self.gpu {
            None => Ok(()),
            Some(s) => s.synchronize(),
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
