//! Kernel arguments and launches. `Args` mirrors `struct Args` in kernels/common.cuh field for
//! field (every field 8 bytes, so the layouts agree).

use super::driver::{call, Function, Gpu};
use super::kernels::Family;
use crate::dtype::DType;
use crate::error::{Error, Result};
use cudarc::driver::sys;
use std::ffi::c_void;

#[repr(C)]
#[derive(Clone, Copy)]
pub struct Args {
    pub indptr: u64,
    pub indices: u64,
    pub weights: u64,
    pub colptr: u64,
    pub rowind: u64,
    pub perm: u64,
    /// The weights in CSC order and their stale flag (`DeviceCscWeights`), or 0.
    pub csc_weights: u64,
    pub csc_stale: u64,
    pub order: u64,
    pub class_rows: [i64; 3],
    pub chunks: u64,
    pub n_chunks: i64,
    pub slice_offsets: u64,
    /// Outputs of a slice where it is not `SLICE_OUTPUTS` (spmv N's column slices).
    pub slice_width: i64,
    /// Per run of 32 CSR entries: its row and the next non-empty row
    /// (`DeviceAnalysis::post_runs`), or 0.
    pub runs: u64,
    /// The column indices as uint16, the top bit marking an entry of its run's next row
    /// (`PostRuns::columns`), or 0.
    pub cols16: u64,
    pub x: u64,
    pub ldx: i64,
    pub y: u64,
    pub ldy: i64,
    pub aux: u64,
    pub ldaux: i64,
    pub out2: u64,
    pub lines: i64,
    pub spike_count: u64,
    pub live: u64,
    pub m: i64,
    pub k: i64,
    pub n: i64,
    pub nnz: i64,
    pub batches: i64,
    pub idx64: i64,
    pub events: i64,
    /// A variant of the kernel's algorithm, where one kernel holds several (bsrmm: pairs).
    pub variant: i64,
    pub alpha: f64,
    pub beta: f64,
    pub homo: f64,
    pub lo: f64,
    pub hi: f64,
}

impl Default for Args {
    fn default() -> Self {
        Args {
            indptr: 0,
            indices: 0,
            weights: 0,
            colptr: 0,
            rowind: 0,
            perm: 0,
            csc_weights: 0,
            csc_stale: 0,
            order: 0,
            class_rows: [0; 3],
            chunks: 0,
            n_chunks: 0,
            slice_offsets: 0,
            slice_width: 0,
            runs: 0,
            cols16: 0,
            x: 0,
            ldx: 0,
            y: 0,
            ldy: 0,
            aux: 0,
            ldaux: 0,
            out2: 0,
            lines: 0,
            spike_count: 0,
            live: 0,
            m: 0,
            k: 0,
            n: 0,
            nnz: 0,
            batches: 1,
            idx64: 0,
            events: 0,
            variant: 0,
            alpha: 1.0,
            beta: 0.0,
            homo: 0.0,
            lo: f64::NEG_INFINITY,
            hi: f64::INFINITY,
        }
    }
}

/// A TMA tensor map (kernels/common.cuh, `TensorMap`): 128 opaque bytes the driver encodes.
#[repr(C, align(64))]
pub struct TensorMap(sys::CUtensorMap);

impl TensorMap {
    /// A 2-D row-major tensor of `dtype` (f16, bf16 or f32) at `base`, `rows` x `cols` with rows
    /// `row_bytes` apart, read in boxes of `box_rows` x `box_cols` into shared memory with the
    /// swizzle of the box's row width (128, 64 or 32 bytes), each miss in L2 widened to
    /// `promotion` bytes (0: none, 64, 128 or 256). TMA needs `base` and `row_bytes` on 16 bytes and
    /// each extent below 2^32 (the caller checks; the driver's refusal is an error).
    pub fn swizzled_2d(
        gpu: &Gpu,
        dtype: DType,
        base: u64,
        (rows, cols, row_bytes): (u64, u64, u64),
        (box_rows, box_cols): (u32, u32),
        promotion: u32,
    ) -> Result<TensorMap> {
        use sys::CUtensorMapDataType::*;
        let element = match dtype {
            DType::F16 => CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
            DType::BF16 => CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
            DType::F32 => CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
            _ => return Err(Error::internal(format!("no tensor map for {}", dtype.name()))),
        };
        let swizzle = match box_cols as usize * dtype.size() {
            128 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
            64 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_64B,
            32 => sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_32B,
            bytes => return Err(Error::internal(format!("no swizzle for {bytes}-byte box rows"))),
        };
        use sys::CUtensorMapL2promotion::*;
        let promotion = match promotion {
            0 => CU_TENSOR_MAP_L2_PROMOTION_NONE,
            64 => CU_TENSOR_MAP_L2_PROMOTION_L2_64B,
            128 => CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
            256 => CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            bytes => return Err(Error::internal(format!("no L2 promotion of {bytes} bytes"))),
        };
        let (dims, strides, boxes, unit) = ([cols, rows], [row_bytes], [box_cols, box_rows], [1u32, 1]);
        // SAFETY: an all-zero CUtensorMap is a valid value to be overwritten by the encoder.
        let mut map: sys::CUtensorMap = unsafe { std::mem::zeroed() };
        // the encoder wants a current context
        let _scope = gpu.enter()?;
        // SAFETY: every array holds the rank's (2) entries, strides rank - 1; the encoder only
        // writes `map` and reads the arrays.
        call("encoding a TMA tensor map", || unsafe {
            sys::cuTensorMapEncodeTiled(
                &mut map,
                element,
                2,
                base as *mut c_void,
                dims.as_ptr(),
                strides.as_ptr(),
                boxes.as_ptr(),
                unit.as_ptr(),
                sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
                swizzle,
                promotion,
                sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            )
        })?;
        Ok(TensorMap(map))
    }
}

/// Launch shape: blocks in x and y, threads per block in x and y.
#[derive(Clone, Copy)]
pub struct Grid {
    pub blocks: (u64, u64),
    pub threads: (u32, u32),
}

/// Threads per block of the one-dimensional kernels.
pub(crate) const THREADS: u32 = 256;
/// Largest grid extent in y (the x extent is 2^31 - 1).
pub(crate) const MAX_GRID_Y: u64 = 65535;

impl Grid {
    /// One warp per item, 8 warps per block.
    pub fn warps(items: u64) -> Grid {
        Grid { blocks: (items.div_ceil(8), 1), threads: (THREADS, 1) }
    }

    /// One warp per (item, `per_warp` columns), 8 warps per block.
    pub fn warps_by_columns(items: u64, cols: u64, per_warp: u64) -> Grid {
        Grid { blocks: (items.div_ceil(8), cols.div_ceil(per_warp)), threads: (THREADS, 1) }
    }

    /// A grid-stride loop over `items`, capped at a few waves of the GPU.
    pub fn strided(gpu: &Gpu, items: u64) -> Grid {
        let cap = gpu.multiprocessors as u64 * 32;
        Grid { blocks: (items.div_ceil(THREADS as u64).clamp(1, cap), 1), threads: (THREADS, 1) }
    }

    pub fn new(blocks: (u64, u64), threads: (u32, u32)) -> Grid {
        Grid { blocks, threads }
    }

    fn is_empty(&self) -> bool {
        self.blocks.0 == 0 || self.blocks.1 == 0
    }
}

impl Gpu {
    /// The kernel of `family` for dtypes `a` and `b` (`None` where the family takes no dtype).
    pub(crate) fn kernel(&self, family: Family, a: Option<DType>, b: Option<DType>) -> Result<Function> {
        self.kernels.get(family, a, b)
    }

    /// Queues `function` on `stream`; empty grids launch nothing.
    pub(crate) fn launch(&self, stream: sys::CUstream, function: Function, grid: Grid, args: &Args) -> Result<()> {
        self.launch_shared(stream, function, grid, args, 0)
    }

    /// Queues `function` with `shared_bytes` of dynamic shared memory.
    pub(crate) fn launch_shared(
        &self,
        stream: sys::CUstream,
        function: Function,
        grid: Grid,
        args: &Args,
        shared_bytes: u32,
    ) -> Result<()> {
        let mut params = [args as *const Args as *mut c_void];
        // SAFETY: the kernel takes one `Args` by value, which params points to.
        unsafe { self.launch_params(stream, function, grid, &mut params, shared_bytes) }
    }

    /// Blocks of `threads` threads and `shared_bytes` of dynamic shared memory that fit on one
    /// multiprocessor at once (at least 1).
    pub(crate) fn blocks_per_multiprocessor(&self, function: Function, threads: u32, shared_bytes: u32) -> Result<u32> {
        let _scope = self.enter()?;
        self.allow_shared(function, shared_bytes)?;
        let mut blocks = 0;
        // SAFETY: a loaded function in its context and a valid out-pointer.
        call("sizing a launch", || unsafe {
            sys::cuOccupancyMaxActiveBlocksPerMultiprocessor(
                &mut blocks,
                function.0,
                threads as i32,
                shared_bytes as usize,
            )
        })?;
        Ok(blocks.max(1) as u32)
    }

    /// Lets `function` take `shared_bytes` of dynamic shared memory (the default allowance is
    /// 48 KB); its context must be current.
    fn allow_shared(&self, function: Function, shared_bytes: u32) -> Result<()> {
        let attribute = sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
        // SAFETY: a plain attribute of a loaded function, in its context.
        call("sizing shared memory", || unsafe { sys::cuFuncSetAttribute(function.0, attribute, shared_bytes as i32) })
    }

    /// Queues a kernel that takes two TMA tensor maps and then `Args`, with `shared_bytes` of
    /// dynamic shared memory.
    pub(crate) fn launch_with_maps(
        &self,
        stream: sys::CUstream,
        function: Function,
        grid: Grid,
        maps: [&TensorMap; 2],
        args: &Args,
        shared_bytes: u32,
    ) -> Result<()> {
        let mut params = [
            maps[0] as *const TensorMap as *mut c_void,
            maps[1] as *const TensorMap as *mut c_void,
            args as *const Args as *mut c_void,
        ];
        // SAFETY: the kernel's parameters are two tensor maps and one `Args`, which params
        // points to in order.
        unsafe { self.launch_params(stream, function, grid, &mut params, shared_bytes) }
    }

    /// Launches with `shared_bytes` of dynamic shared memory, first allowing the function that
    /// much (the default allowance is 48 KB).
    ///
    /// # Safety
    /// `params` must point to the kernel's parameters, in order and of their types.
    unsafe fn launch_params(
        &self,
        stream: sys::CUstream,
        function: Function,
        grid: Grid,
        params: &mut [*mut c_void],
        shared_bytes: u32,
    ) -> Result<()> {
        if grid.is_empty() {
            return Ok(());
        }
        if grid.blocks.0 >= i32::MAX as u64 || grid.blocks.1 > MAX_GRID_Y {
            return Err(Error::not_supported("the problem is too large for one kernel launch"));
        }
        let (blocks_x, blocks_y) = (grid.blocks.0 as u32, grid.blocks.1 as u32);
        let _scope = self.enter()?;
        if shared_bytes > 0 {
            self.allow_shared(function, shared_bytes)?;
        }
        // Every kernel waits for the grids before it first (kernels/common.cuh), so it may be
        // scheduled while its predecessor finishes: the launch gap between small kernels shrinks.
        // SAFETY: plain data; the value's union member for this attribute is an int.
        let mut overlap: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
        overlap.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        overlap.value.programmaticStreamSerializationAllowed = 1;
        let config = sys::CUlaunchConfig {
            gridDimX: blocks_x,
            gridDimY: blocks_y,
            gridDimZ: 1,
            blockDimX: grid.threads.0,
            blockDimY: grid.threads.1,
            blockDimZ: 1,
            sharedMemBytes: shared_bytes,
            hStream: stream,
            attrs: &mut overlap,
            numAttrs: self.programmatic_launch as u32,
        };
        // SAFETY: the caller vouches for params; config and the attribute outlive the call.
        call("launching a kernel", || unsafe {
            sys::cuLaunchKernelEx(&config, function.0, params.as_mut_ptr(), std::ptr::null_mut())
        })
    }
}

#[cfg(test)]
mod tests {
    /// The names in a C or Rust field list, in order, one per 8-byte word (`int64_t m, k, n;`
    /// gives three, `class_rows[3]` three).
    fn words(fields: &str, rust: bool) -> Vec<String> {
        let mut names = vec![];
        for line in fields.lines().map(|l| l.split("//").next().unwrap().trim()).filter(|l| !l.is_empty()) {
            let declared = if rust {
                let (name, ty) = line.trim_start_matches("pub ").split_once(':').unwrap();
                let count = ty.split_once(';').map_or(1, |(_, n)| n.trim_end_matches("],").trim().parse().unwrap());
                vec![(name.trim().to_string(), count)]
            } else {
                // `type name, name...;`: the first name follows the type's last space or star
                line.trim_end_matches(';')
                    .split(',')
                    .map(|n| {
                        let n = n.rsplit([' ', '*']).next().unwrap();
                        match n.split_once('[') {
                            Some((n, count)) => (n.to_string(), count.trim_end_matches(']').parse().unwrap()),
                            None => (n.to_string(), 1),
                        }
                    })
                    .collect()
            };
            for (name, count) in declared {
                names.extend(std::iter::repeat(name).take(count));
            }
        }
        names
    }

    fn between<'a>(text: &'a str, start: &str, end: &str) -> &'a str {
        let from = text.find(start).unwrap() + start.len();
        &text[from..from + text[from..].find(end).unwrap()]
    }

    /// Kernels read their arguments at the offsets of kernels/common.cuh's `struct Args`: the
    /// Rust mirror must name the same words in the same order.
    #[test]
    fn args_mirror_the_kernels_struct_word_for_word() {
        let dir = env!("CARGO_MANIFEST_DIR");
        let c = std::fs::read_to_string(format!("{dir}/kernels/common.cuh")).unwrap();
        let rust = std::fs::read_to_string(format!("{dir}/src/cuda/launch.rs")).unwrap();
        let rust_fields: String = between(&rust, "pub struct Args {\n", "\n}")
            .lines()
            .filter(|l| !l.trim_start().starts_with("///"))
            .map(|l| format!("{l}\n"))
            .collect();
        let (c_words, rust_words) = (words(between(&c, "struct Args {\n", "\n};"), false), words(&rust_fields, true));
        assert_eq!(c_words.len(), std::mem::size_of::<super::Args>() / 8, "parsed {c_words:?}");
        assert_eq!(c_words, rust_words);
    }
}
