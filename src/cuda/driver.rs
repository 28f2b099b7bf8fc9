//! The CUDA driver through cudarc's `sys` layer, wrapped in evsparse's own RAII types: the
//! per-context device state (`Gpu`), device memory from a stream-ordered pool, streams, and
//! the push/pop scope that keeps the caller's current context unchanged.

use super::kernels::Kernels;
use crate::core::faults;
use crate::error::{Error, Result};
use cudarc::driver::sys::{self, CUresult};
use std::ffi::{c_void, CStr};
use std::sync::{Arc, Mutex};

/// The legacy default stream: work on it waits for (and is waited on by) every blocking stream
/// of the context. Frees go there, so they wait for the work queued before them.
pub(crate) const LEGACY_STREAM: sys::CUstream = 0x1 as sys::CUstream;

/// The driver's name and description of a result code.
fn describe(r: CUresult) -> String {
    let (mut name, mut text) = (std::ptr::null(), std::ptr::null());
    // SAFETY: the driver fills static strings or leaves the pointers NULL.
    unsafe {
        sys::cuGetErrorName(r, &mut name);
        sys::cuGetErrorString(r, &mut text);
    }
    let read = |p: *const std::ffi::c_char| {
        // SAFETY: non-NULL pointers from the driver are static C strings.
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    };
    match (read(name), read(text)) {
        (Some(n), Some(t)) => format!("{n}: {t}"),
        _ => format!("CUDA error {}", r as i32),
    }
}

/// Makes driver call `f` and maps its result (`check`); a test may make it fail instead, without
/// calling the driver (`core::faults::fail_driver_call_after`). Every checked driver call goes
/// through here; the unchecked ones are the releases in Drop, which cannot report.
pub fn call(what: &str, f: impl FnOnce() -> CUresult) -> Result<()> {
    faults::before_driver_call(what)?;
    check(f(), what)
}

/// Maps a driver result to a status: out-of-memory to `EVS_ERROR_OUT_OF_MEMORY`, anything else
/// to `EVS_ERROR_DEVICE`, with the driver's message.
fn check(r: CUresult, what: &str) -> Result<()> {
    match r {
        CUresult::CUDA_SUCCESS => Ok(()),
        CUresult::CUDA_ERROR_OUT_OF_MEMORY => Err(Error::out_of_memory(format!("{what}: {}", describe(r)))),
        _ => Err(Error::device(format!("{what}: {}", describe(r)))),
    }
}

/// A kernel handle; the driver's function handles may be used from any thread.
#[derive(Clone, Copy)]
pub struct Function(pub sys::CUfunction);
// SAFETY: CUfunction is an immutable handle, valid while the module is loaded.
unsafe impl Send for Function {}
unsafe impl Sync for Function {}

/// One context's hold on a GPU: the retained primary context, the loaded kernel module with
/// its kernel table, and the memory pool.
pub struct Gpu {
    pub ordinal: i32,
    device: sys::CUdevice,
    context: sys::CUcontext,
    module: sys::CUmodule,
    pool: sys::CUmemoryPool,
    /// A private non-blocking stream for setup-time allocations and copies, so that creating an
    /// array never waits for kernels other threads have queued.
    setup: sys::CUstream,
    pub kernels: Kernels,
    pub multiprocessors: u32,
    /// Compute capability as major * 10 + minor (90 for Hopper).
    pub compute_capability: u32,
    /// Shared memory one block may ask for (the opt-in limit: 227 KB on Hopper).
    pub shared_per_block: u32,
    /// Kernels may be launched with programmatic stream serialization (see `programmatic_launch`).
    pub programmatic_launch: bool,
}

// SAFETY: the driver's handles are usable from any thread once their context is current, which
// every use ensures through `Scope`.
unsafe impl Send for Gpu {}
unsafe impl Sync for Gpu {}

/// Why CUDA cannot be used here, or `None` when the driver can be called.
fn driver_missing() -> Option<String> {
    // SAFETY: probes for the library without keeping it loaded.
    if !unsafe { sys::is_culib_present() } {
        return Some("the CUDA driver library (libcuda.so) was not found: no NVIDIA driver on this machine".into());
    }
    None
}

/// The driver version from which launches with programmatic stream serialization are captured
/// into graphs as programmatic edges (CUDA 12.3).
const PROGRAMMATIC_CAPTURE_DRIVER: i32 = 12030;

/// Whether kernels may start before the kernel ahead of them in the stream has finished
/// (programmatic dependent launch): only where the image the driver loaded for this device has
/// every kernel wait for its predecessors first (`evs_kernels_wait_for_prior_grids`, set by
/// kernels/common.cuh on sm_90 and later), where the driver captures such launches into
/// graphs, and unless `EVS_PROGRAMMATIC_LAUNCH=0` turns it off or the process runs under
/// compute-sanitizer (which sets NV_SANITIZER_INJECTION_PORT_BASE): its racecheck deadlocks on
/// overlapping launches from several streams (8 threads x 300 spike-list spmv calls: hung past
/// 35 s with them, 5 s without; bench/NOTES.md, "Programmatic dependent launch").
///
/// # Safety
/// `module` is a loaded module, its context current.
unsafe fn programmatic_launch(module: sys::CUmodule) -> bool {
    let turned_off = std::env::var("EVS_PROGRAMMATIC_LAUNCH").is_ok_and(|v| v == "0");
    if turned_off || std::env::var_os("NV_SANITIZER_INJECTION_PORT_BASE").is_some() {
        return false;
    }
    let mut version = 0;
    if sys::cuDriverGetVersion(&mut version) != CUresult::CUDA_SUCCESS || version < PROGRAMMATIC_CAPTURE_DRIVER {
        return false;
    }
    let (mut flag, mut bytes, mut waits) = (0, 0, 0i32);
    let name = c"evs_kernels_wait_for_prior_grids";
    sys::cuModuleGetGlobal_v2(&mut flag, &mut bytes, module, name.as_ptr()) == CUresult::CUDA_SUCCESS
        && bytes == 4
        && sys::cuMemcpyDtoH_v2(&mut waits as *mut i32 as *mut c_void, flag, 4) == CUresult::CUDA_SUCCESS
        && waits == 1
}

impl Gpu {
    /// Retains device `ordinal`'s primary context and loads `image` (a fatbin) into it.
    pub fn open(ordinal: i32, image: &[u8]) -> Result<Arc<Gpu>> {
        if let Some(why) = driver_missing() {
            return Err(Error::device_unavailable(format!("context: {why}")));
        }
        let unavailable =
            |what: &str, r: CUresult| Error::device_unavailable(format!("context: {what}: {}", describe(r)));
        // SAFETY: plain driver calls with valid out-pointers; every acquired handle is released on
        // failure by the guards below or by Gpu's Drop.
        unsafe {
            let r = sys::cuInit(0);
            if r != CUresult::CUDA_SUCCESS {
                return Err(unavailable("cannot initialise the CUDA driver", r));
            }
            let mut count = 0;
            call("context", || sys::cuDeviceGetCount(&mut count))?;
            if ordinal >= count {
                return Err(Error::device_unavailable(format!(
                    "context: CUDA device {ordinal} requested, but this machine has {count}"
                )));
            }
            let mut device = 0;
            call("context", || sys::cuDeviceGet(&mut device, ordinal))?;
            let mut context = std::ptr::null_mut();
            call("context: retaining the primary context", || sys::cuDevicePrimaryCtxRetain(&mut context, device))?;
            let mut gpu = Gpu {
                ordinal,
                device,
                context,
                module: std::ptr::null_mut(),
                pool: std::ptr::null_mut(),
                setup: std::ptr::null_mut(),
                kernels: Kernels::empty(),
                multiprocessors: 1,
                compute_capability: 0,
                shared_per_block: 48 << 10,
                programmatic_launch: false,
            };
            let _scope = Scope::enter(context)?;
            // cuModuleLoadData wants the image aligned like the fatbin header (8 bytes).
            let mut aligned = vec![0u64; image.len().div_ceil(8)];
            std::ptr::copy_nonoverlapping(image.as_ptr(), aligned.as_mut_ptr() as *mut u8, image.len());
            let r = sys::cuModuleLoadData(&mut gpu.module, aligned.as_ptr() as *const c_void);
            if r != CUresult::CUDA_SUCCESS {
                return Err(unavailable(
                    &format!("the evsparse kernels do not load on CUDA device {ordinal} ({})", gpu.arch()),
                    r,
                ));
            }
            gpu.kernels = Kernels::resolve(gpu.module)?;
            let mut props: sys::CUmemPoolProps = std::mem::zeroed();
            props.allocType = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
            props.handleTypes = sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_NONE;
            props.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
            props.location.id = ordinal;
            call("context: creating the memory pool", || sys::cuMemPoolCreate(&mut gpu.pool, &props))?;
            let non_blocking = sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32;
            call("context: creating the setup stream", || sys::cuStreamCreate(&mut gpu.setup, non_blocking))?;
            gpu.multiprocessors =
                gpu.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT).max(1) as u32;
            let (major, minor) = gpu.capability();
            gpu.compute_capability = major * 10 + minor;
            gpu.shared_per_block = gpu
                .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
                .max(0) as u32;
            gpu.programmatic_launch = programmatic_launch(gpu.module);
            Ok(Arc::new(gpu))
        }
    }

    fn attribute(&self, attr: sys::CUdevice_attribute) -> i32 {
        let mut v = 0;
        // SAFETY: valid device handle and out-pointer.
        unsafe { sys::cuDeviceGetAttribute(&mut v, attr, self.device) };
        v
    }

    /// Compute capability (major, minor).
    fn capability(&self) -> (u32, u32) {
        use sys::CUdevice_attribute::*;
        let major = self.attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
        (major.max(0) as u32, self.attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR).max(0) as u32)
    }

    /// "sm_90" style name of the device's architecture, for messages.
    fn arch(&self) -> String {
        let (major, minor) = self.capability();
        format!("sm_{major}{minor}")
    }

    /// Makes this GPU's context current until the scope ends.
    pub fn enter(&self) -> Result<Scope> {
        Scope::enter(self.context)
    }

    /// `bytes` of device memory from this context's pool, zero-filled, ready on every stream.
    pub fn alloc(self: &Arc<Gpu>, what: &str, bytes: usize) -> Result<DeviceMemory> {
        let mem = self.alloc_uninit(what, bytes)?;
        if bytes > 0 {
            // SAFETY: mem holds `bytes` bytes.
            self.on_setup_stream(what, || unsafe { sys::cuMemsetD8Async(mem.ptr, 0, bytes, self.setup) })?;
        }
        Ok(mem)
    }

    /// Device memory holding a copy of host bytes, ready on every stream.
    pub fn upload(self: &Arc<Gpu>, what: &str, src: &[u8]) -> Result<DeviceMemory> {
        let mem = self.alloc_uninit(what, src.len())?;
        if !src.is_empty() {
            // SAFETY: mem holds src.len() bytes.
            self.on_setup_stream(what, || unsafe {
                sys::cuMemcpyHtoDAsync_v2(mem.ptr, src.as_ptr() as *const c_void, src.len(), self.setup)
            })?;
        }
        Ok(mem)
    }

    /// Copies host bytes into device memory the caller owns, waiting for the copy.
    pub fn write(&self, what: &str, dst: u64, src: &[u8]) -> Result<()> {
        // SAFETY: the caller vouches that dst holds src.len() bytes of device memory.
        self.on_setup_stream(what, || unsafe {
            sys::cuMemcpyHtoDAsync_v2(dst, src.as_ptr() as *const c_void, src.len(), self.setup)
        })
    }

    /// Queues `work` (a copy or memset) on the setup stream and waits for it. Where queuing
    /// succeeded but the wait failed, it still waits, unchecked, before returning the error: the
    /// caller then frees the memory (ordered on the legacy stream, which does not wait for this
    /// non-blocking one) or drops the host bytes, and the work must not land on either after
    /// that (a fault there broke the context for its next user: tests/faults.rs).
    fn on_setup_stream(&self, what: &str, work: impl FnOnce() -> CUresult) -> Result<()> {
        let _scope = self.enter()?;
        call(what, work)?;
        // SAFETY: the setup stream lives as long as self.
        let waited = call(what, || unsafe { sys::cuStreamSynchronize(self.setup) });
        if waited.is_err() {
            // SAFETY: as above.
            unsafe { sys::cuStreamSynchronize(self.setup) };
        }
        waited
    }

    /// Bytes of device memory free now (the driver's count, all processes included).
    pub fn free_memory(&self) -> Result<usize> {
        let _scope = self.enter()?;
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: two out-pointers.
        call("free memory", || unsafe { sys::cuMemGetInfo_v2(&mut free, &mut total) })?;
        Ok(free)
    }

    fn alloc_uninit(self: &Arc<Gpu>, what: &str, bytes: usize) -> Result<DeviceMemory> {
        let mut ptr: sys::CUdeviceptr = 0;
        if bytes > 0 {
            faults::before_allocation(what, bytes)?;
            let _scope = self.enter()?;
            // SAFETY: valid pool and out-pointer.
            call(what, || unsafe { sys::cuMemAllocFromPoolAsync(&mut ptr, bytes, self.pool, self.setup) })?;
            faults::count_live(bytes as i64);
        }
        Ok(DeviceMemory { gpu: self.clone(), ptr, bytes })
    }

    /// Copies device bytes to the host, waiting for the copy (setup-time checks only).
    pub(crate) fn download(&self, stream: sys::CUstream, src: u64, dst: &mut [u8]) -> Result<()> {
        if dst.is_empty() {
            return Ok(());
        }
        let _scope = self.enter()?;
        // SAFETY: the caller vouches that src holds dst.len() bytes of device memory.
        unsafe {
            call("download", || sys::cuMemcpyDtoHAsync_v2(dst.as_mut_ptr() as *mut c_void, src, dst.len(), stream))?;
            call("download", || sys::cuStreamSynchronize(stream))
        }
    }

    /// Fails unless `bytes` from `ptr` are memory this GPU can access (device, managed or
    /// registered host) and, where the driver knows the allocation, lie inside it.
    pub fn expect_accessible(&self, what: &str, ptr: *mut u8, bytes: usize) -> Result<()> {
        let _scope = self.enter()?;
        use sys::CUpointer_attribute::*;
        let (mut memory_type, mut ordinal): (u32, i32) = (0, -1);
        let mut attrs = [CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL];
        let mut data = [&mut memory_type as *mut u32 as *mut c_void, &mut ordinal as *mut i32 as *mut c_void];
        // SAFETY: two attributes with matching out-pointers. Unlike cuPointerGetAttribute, this
        // succeeds for memory CUDA does not know, leaving the memory type 0.
        call(what, || unsafe { sys::cuPointerGetAttributes(2, attrs.as_mut_ptr(), data.as_mut_ptr(), ptr as u64) })?;
        if memory_type == 0 {
            return Err(Error::value(format!(
                "{what}: pointer {ptr:p} is not memory CUDA knows (a CUDA context needs device pointers)"
            )));
        }
        if ordinal != self.ordinal {
            return Err(Error::value(format!(
                "{what}: pointer {ptr:p} is on CUDA device {ordinal}, the context is on device {}",
                self.ordinal
            )));
        }
        if memory_type != sys::CUmemorytype::CU_MEMORYTYPE_DEVICE as u32 {
            return Ok(()); // managed or registered host memory: no device allocation range to check
        }
        let (mut base, mut size) = (0, 0);
        // SAFETY: valid out-pointers.
        if unsafe { sys::cuMemGetAddressRange_v2(&mut base, &mut size, ptr as u64) } == CUresult::CUDA_SUCCESS {
            let end = ptr as u64 + bytes as u64;
            if end > base + size as u64 {
                return Err(Error::value(format!(
                    "{what}: {bytes} bytes from {ptr:p} run past the end of its device allocation ({size} bytes from {base:#x})"
                )));
            }
        }
        Ok(())
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        // SAFETY: handles acquired in `open`; device memory holds an Arc, so all of it is freed.
        unsafe {
            if let Ok(_scope) = Scope::enter(self.context) {
                sys::cuStreamSynchronize(LEGACY_STREAM);
                if !self.setup.is_null() {
                    sys::cuStreamSynchronize(self.setup); // non-blocking: the legacy stream's wait skips it
                    sys::cuStreamDestroy_v2(self.setup);
                }
                if !self.pool.is_null() {
                    sys::cuMemPoolDestroy(self.pool);
                }
                if !self.module.is_null() {
                    sys::cuModuleUnload(self.module);
                }
            }
            sys::cuDevicePrimaryCtxRelease_v2(self.device);
        }
    }
}

/// The GPU's context made current on this thread until the scope ends: pushed (and popped
/// on drop) unless it is current already, as it is for callers of the CUDA runtime, torch and
/// cupy on that device. Either way the caller's current context is the same after every
/// evsparse call.
pub struct Scope {
    pushed: bool,
}

impl Scope {
    fn enter(context: sys::CUcontext) -> Result<Scope> {
        let mut current = std::ptr::null_mut();
        // SAFETY: valid out-pointer.
        if unsafe { sys::cuCtxGetCurrent(&mut current) } == CUresult::CUDA_SUCCESS && current == context {
            return Ok(Scope { pushed: false });
        }
        // SAFETY: a retained primary context.
        call("making the CUDA context current", || unsafe { sys::cuCtxPushCurrent_v2(context) })?;
        Ok(Scope { pushed: true })
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        if self.pushed {
            let mut popped = std::ptr::null_mut();
            // SAFETY: pops what `enter` pushed.
            unsafe { sys::cuCtxPopCurrent_v2(&mut popped) };
        }
    }
}

/// Device memory owned by evsparse, returned to the pool on drop. The free is ordered on the
/// legacy stream, so it waits for work queued on blocking streams (evsparse's own streams).
pub struct DeviceMemory {
    gpu: Arc<Gpu>,
    pub ptr: u64,
    bytes: usize,
}

impl Drop for DeviceMemory {
    fn drop(&mut self) {
        if self.ptr != 0 {
            if let Ok(_scope) = self.gpu.enter() {
                // SAFETY: allocated from the pool in alloc_uninit and not freed before.
                unsafe { sys::cuMemFreeAsync(self.ptr, LEGACY_STREAM) };
            }
            faults::count_live(-(self.bytes as i64));
        }
    }
}

/// A stream on a GPU: created (and destroyed) by evsparse, or the caller's.
pub struct GpuStream {
    gpu: Arc<Gpu>,
    pub raw: sys::CUstream,
    owned: bool,
    /// Scratch memory of this stream's calls (bytes, memory), newest last; see `scratch`.
    scratch: Mutex<Vec<(usize, DeviceMemory)>>,
    /// A word kernels draw tiles from and leave at zero; see `tile_counter`.
    tile_counter: Mutex<Option<DeviceMemory>>,
}

/// The smallest scratch block a stream allocates.
const SCRATCH_MIN: usize = 1 << 16;

/// A stream's scratch memory, its address in `ptr`, leased to one call (`GpuStream::scratch`).
pub struct Scratch<'a> {
    pub ptr: u64,
    _lease: std::sync::MutexGuard<'a, Vec<(usize, DeviceMemory)>>,
}

// SAFETY: CUstream handles may be used from any thread.
unsafe impl Send for GpuStream {}
unsafe impl Sync for GpuStream {}

impl GpuStream {
    /// A new blocking stream (ordered with the legacy stream, which frees memory).
    pub fn create(gpu: &Arc<Gpu>) -> Result<GpuStream> {
        let _scope = gpu.enter()?;
        let mut raw = std::ptr::null_mut();
        call("stream", || unsafe { sys::cuStreamCreate(&mut raw, 0) })?;
        Ok(GpuStream { gpu: gpu.clone(), raw, owned: true, scratch: Mutex::default(), tile_counter: Mutex::default() })
    }

    /// The caller's stream, checked to belong to this GPU's context.
    pub(crate) fn wrap(gpu: &Arc<Gpu>, raw: sys::CUstream) -> Result<GpuStream> {
        let _scope = gpu.enter()?;
        if !raw.is_null() && raw != LEGACY_STREAM {
            let mut owner = std::ptr::null_mut();
            call("stream: the native stream", || unsafe { sys::cuStreamGetCtx(raw, &mut owner) })?;
            if owner != gpu.context {
                return Err(Error::context_mismatch(format!(
                    "stream: native stream {raw:p} belongs to another CUDA context than device {}'s primary context",
                    gpu.ordinal
                )));
            }
        }
        Ok(GpuStream { gpu: gpu.clone(), raw, owned: false, scratch: Mutex::default(), tile_counter: Mutex::default() })
    }

    pub fn synchronize(&self) -> Result<()> {
        let _scope = self.gpu.enter()?;
        call("stream synchronize", || unsafe { sys::cuStreamSynchronize(self.raw) })
    }

    /// At least `bytes` bytes of scratch memory for the next launches on this stream (calls on
    /// one stream run in order, so they share it), leased until the lease drops: a call keeps it
    /// while it queues the launches that use it, so that threads sharing the stream cannot queue
    /// theirs in between. Reused while large enough; a larger request allocates a block of twice
    /// its size (host-synchronous, as setup is). Earlier blocks are kept until the stream is
    /// destroyed, so that a graph captured with one still runs on valid memory.
    pub fn scratch(&self, bytes: usize) -> Result<Scratch<'_>> {
        let mut held = self.scratch.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let ptr = match held.last() {
            Some((size, mem)) if *size >= bytes => mem.ptr,
            _ if bytes == 0 => 0,
            _ => {
                let size = bytes.saturating_mul(2).max(SCRATCH_MIN);
                let mem = self.gpu.alloc("stream scratch", size)?;
                let ptr = mem.ptr;
                held.push((size, mem));
                ptr
            }
        };
        if ptr != 0 && poison_scratch() {
            // SAFETY: `bytes` of the block at ptr, on this stream, ordered before the launches
            // that use them.
            call("poisoning the stream scratch", || unsafe { sys::cuMemsetD8Async(ptr, 0xff, bytes, self.raw) })?;
        }
        Ok(Scratch { ptr, _lease: held })
    }

    /// The address of this stream's tile counter: a 32-bit word, zeroed when first asked for,
    /// that a kernel drawing its tiles from it returns to zero itself (it draws exactly as many
    /// times as its `atomicInc` wraps at), so that no memset node precedes such a launch.
    /// Launches on one stream run in order, so they share it; kept until the stream is
    /// destroyed, as the scratch is.
    pub fn tile_counter(&self) -> Result<u64> {
        let mut held = self.tile_counter.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let mem = match held.take() {
            Some(mem) => mem,
            None => self.gpu.alloc("stream tile counter", 4)?,
        };
        Ok(held.insert(mem).ptr)
    }
}

/// Whether each lease of a stream's scratch is first filled with 0xff bytes (NaN in every float
/// dtype), so that a kernel reading scratch bytes that its call never wrote shows in results:
/// EVS_TEST_POISON_SCRATCH=1, set by the GPU check's suites (a memset per call: tests only).
fn poison_scratch() -> bool {
    static POISON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *POISON.get_or_init(|| std::env::var_os("EVS_TEST_POISON_SCRATCH").is_some_and(|v| v == "1"))
}

impl Drop for GpuStream {
    fn drop(&mut self) {
        if self.owned {
            if let Ok(_scope) = self.gpu.enter() {
                // SAFETY: created in `create`.
                unsafe { sys::cuStreamDestroy_v2(self.raw) };
            }
        }
    }
}
