//! CSR matrices: structure, weights (homogeneous or heterogeneous), validation, and the
//! derived structures cached by analysis.

use super::context::{Backend, Context, Stream};
use super::dense::{Dense, MAX_DIM};
use super::memory::{host_slice, Buffer};
use super::plan::{
    column_slice_width, post_runs_kept, row_class, slice_offsets_kept, slices, POST_RUN_ENTRIES, SLICE_OUTPUTS, SPMM_N,
};
use super::stats::CsrStats;
use super::{checked_product, size_arg};
use crate::dtype::{with_float, Acc, DType, Float};
use crate::error::{Error, Result};
use rayon::prelude::*;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// An indptr element type (int32 or int64).
pub trait Index: Copy + Send + Sync + 'static {
    fn get(self) -> i64;
}
impl Index for i32 {
    fn get(self) -> i64 {
        self as i64
    }
}
impl Index for i64 {
    fn get(self) -> i64 {
        self
    }
}

/// Runs `$body` with `$P` bound to the Rust type of the CSR's indptr.
macro_rules! with_index {
    ($dtype:expr, $P:ident => $body:expr) => {
        match $dtype {
            $crate::dtype::DType::I32 => {
                type $P = i32;
                $body
            }
            _ => {
                type $P = i64;
                $body
            }
        }
    };
}
pub(crate) use with_index;

/// The structure of a CSR matrix as host slices.
pub struct CsrView<'a, P> {
    pub m: usize,
    pub k: usize,
    pub indptr: &'a [P],
    pub indices: &'a [i32],
}

impl<P: Index> CsrView<'_, P> {
    pub fn row(&self, i: usize) -> Range<usize> {
        self.indptr[i].get() as usize..self.indptr[i + 1].get() as usize
    }

    /// Checks SPEC §4's structure rules; messages name the offending position and value.
    pub fn validate(&self, what: &str) -> Result<()> {
        let nnz = self.indices.len() as i64;
        let first = self.indptr[0].get();
        if first != 0 {
            return Err(Error::structure(format!("{what}: indptr[0] = {first}, expected 0")));
        }
        for i in 0..self.m {
            let (a, b) = (self.indptr[i].get(), self.indptr[i + 1].get());
            if b < a {
                return Err(Error::structure(format!(
                    "{what}: indptr[{}] = {b} is less than indptr[{i}] = {a} (indptr must be non-decreasing)",
                    i + 1
                )));
            }
        }
        let last = self.indptr[self.m].get();
        if last != nnz {
            return Err(Error::structure(format!("{what}: indptr[{}] = {last}, expected nnz = {nnz}", self.m)));
        }
        if let Some((j, &c)) = self.indices.iter().enumerate().find(|(_, &c)| c < 0 || c as usize >= self.k) {
            return Err(Error::structure(format!("{what}: indices[{j}] = {c} out of range for {} columns", self.k)));
        }
        Ok(())
    }
}

/// The per-entry weight: one scalar (kept as the dtype's value, widened to f64) or an array.
pub enum Weights {
    Homo(f64),
    Hetero(Dense),
}

/// Structures derived from the sparsity pattern, built once and cached in the handle.
pub struct Analysis {
    /// CSC column pointers (k + 1 entries).
    pub colptr: Vec<usize>,
    /// Row of each entry in CSC order.
    pub rowind: Vec<u32>,
    /// Original (CSR) position of each entry in CSC order; rows stay in order within a column.
    pub perm: Vec<usize>,
    /// Row of each entry in CSR order.
    pub row_of: Vec<u32>,
}

/// What analysis derives from the structure for kernel choice, once per matrix.
pub struct Profile {
    pub stats: CsrStats,
    /// The rows ordered by length class (thread, warp, block; see `plan::row_class`), original
    /// order within a class; int32, in the context's memory.
    pub class_order: Arc<Buffer>,
    /// How many rows each class holds.
    pub class_rows: [usize; 3],
    /// (row, begin, end) as int64 triples: the long rows (block class) cut into chunks of
    /// `SPMM_N.long_row_chunk` entries, in the class order.
    pub long_chunks: Arc<Buffer>,
    pub n_chunks: usize,
}

impl Profile {
    fn of<P: Index>(ctx: &Context, view: &CsrView<'_, P>) -> Result<Profile> {
        let mut class_rows = [0usize; 3];
        let classes: Vec<usize> = (0..view.m).map(|i| row_class(view.row(i).len())).collect();
        classes.iter().for_each(|&c| class_rows[c] += 1);
        let mut order = Vec::with_capacity(view.m);
        for class in 0..3 {
            order.extend((0..view.m).filter(|&i| classes[i] == class).map(|i| i as i32));
        }
        let mut chunks: Vec<i64> = Vec::new();
        for &i in &order[class_rows[0] + class_rows[1]..] {
            let row = view.row(i as usize);
            for begin in row.clone().step_by(SPMM_N.long_row_chunk) {
                chunks.extend([i as i64, begin as i64, row.end.min(begin + SPMM_N.long_row_chunk) as i64]);
            }
        }
        Ok(Profile {
            stats: CsrStats::of(view),
            class_order: ctx.upload("csr analysis", as_bytes(&order))?,
            class_rows,
            long_chunks: ctx.upload("csr analysis", as_bytes(&chunks))?,
            n_chunks: chunks.len() / 3,
        })
    }
}

/// The CSC mirror in device memory: colptr (int64, k + 1), rowind (int32), perm (int64); and
/// where `plan::slice_offsets_kept`, the rows' slice offsets of `output_slices`; and the columns'
/// of N's.
pub struct DeviceAnalysis {
    pub colptr: Arc<Buffer>,
    pub rowind: Arc<Buffer>,
    pub perm: Arc<Buffer>,
    pub slice_offsets: Option<Arc<Buffer>>,
    /// Where `plan::column_slice_width` gives a width, the columns' slice offsets of
    /// `spmm_n:output_slices`.
    pub column_slices: Option<ColumnSlices>,
    /// Where `plan::post_runs_kept`, what post plasticity by rows reads.
    pub post_runs: Option<PostRuns>,
    /// The hetero weights in CSC order, where evsparse owns them and nothing had written them
    /// at analysis (`Csr::csc_weights_on_device`).
    csc_weights: Option<DeviceCscWeights>,
}

/// Post plasticity by rows (`csr_post_even`): the run records and the column indices as uint16
/// (`post_runs_of`; the columns are at most `POST_EVEN_COLUMNS`): the walk's time
/// follows its L2 traffic, of which the 4-byte indices were 10 of 26 MB at 5,000² x 500 (16-bit
/// ones: post 10 % 6.65 -> 6.45 graph µs, bench/NOTES.md, "Post by rows: 16-bit columns").
pub struct PostRuns {
    pub records: Arc<Buffer>,
    pub columns: Arc<Buffer>,
}

/// The CSC mirror's columns' slice offsets (`slice_offsets`) for slices of `width` rows.
pub struct ColumnSlices {
    pub width: usize,
    pub offsets: Arc<Buffer>,
}

/// Analysis' copy of the hetero weights in CSC order on the device, and a device flag (uint32)
/// that plasticity kernels and weights views set once they may have written the weights: T
/// kernels test it on the device (`in_csc_order`), so graphs captured before a write stay right.
pub struct DeviceCscWeights {
    pub weights: Arc<Buffer>,
    pub stale: Arc<Buffer>,
}

/// Stored entries up to which analysis keeps a CSC-ordered copy of the weights on the device
/// (nnz x the dtype's bytes more memory; at most 2 GB, so that the largest matrices keep theirs
/// for the products).
const CSC_WEIGHTS_NNZ_MAX: usize = 1 << 28;

/// The share of the device's free memory the copy may take (1/4): beyond it analysis keeps no
/// copy rather than crowd out the caller's allocations.
const CSC_WEIGHTS_FREE_SHARE: usize = 4;

/// Per line, the offset of its first entry in each slice of `width` outputs, from the line's
/// start, and its length last (uint32, `slices + 1` per line; each line's targets sorted): the
/// rows' slice offsets of `spmm_t:output_slices`, the CSC mirror's columns' of `spmm_n`'s.
fn slice_offsets<'a, I: Copy + Into<i64> + Sync + 'a>(
    lines: usize,
    line: impl Fn(usize) -> &'a [I] + Sync,
    slices: usize,
    width: usize,
) -> Vec<u32> {
    let mut offsets = vec![0u32; lines * (slices + 1)];
    offsets.par_chunks_mut(slices + 1).enumerate().for_each(|(i, out)| {
        let targets = line(i);
        let mut p = 0;
        for (s, o) in out.iter_mut().enumerate() {
            while p < targets.len() && (targets[p].into() as usize) < s * width {
                p += 1;
            }
            *o = p as u32;
        }
    });
    offsets
}

/// The rows' slice offsets of `spmm_t:output_slices` (slices of `SLICE_OUTPUTS` columns).
fn row_slice_offsets(view: &CsrView<'_, i64>) -> Vec<u32> {
    slice_offsets(view.m, |i| &view.indices[view.row(i)], slices(view.k), SLICE_OUTPUTS)
}

/// What post plasticity by rows reads: a record per run of `POST_RUN_ENTRIES` entries (int32 x
/// 2: the row of its first entry, the next non-empty row), and each entry's column as uint16 with
/// `POST_NEXT_ROW` set where the entry lies in that next row. A run meets at most one row start
/// where no non-empty row is shorter than a run (`plan::post_runs_kept`), so each entry's row is
/// one of the two (kernels/plasticity.cu, `even_runs`).
fn post_runs_of(view: &CsrView<'_, i64>) -> (Vec<[i32; 2]>, Vec<u16>) {
    let starts = |i: usize| view.indptr[i] as usize;
    let next_nonempty = |row: usize| (row + 1..view.m).find(|&i| starts(i + 1) > starts(i));
    let (mut row, mut next) = (0, None);
    let (records, splits): (Vec<[i32; 2]>, Vec<usize>) = (0..view.indices.len().div_ceil(POST_RUN_ENTRIES))
        .map(|r| {
            let first = r * POST_RUN_ENTRIES;
            if r == 0 || starts(row + 1) <= first {
                while starts(row + 1) <= first {
                    row += 1;
                }
                next = next_nonempty(row);
            }
            let split = next.map_or(POST_RUN_ENTRIES, |i| (starts(i) - first).min(POST_RUN_ENTRIES));
            ([row as i32, next.unwrap_or(row) as i32], split)
        })
        .unzip();
    let columns = view.indices.par_iter().enumerate().map(|(p, &c)| {
        let in_next = p % POST_RUN_ENTRIES >= splits[p / POST_RUN_ENTRIES];
        c as u16 | if in_next { POST_NEXT_ROW } else { 0 }
    });
    (records, columns.collect())
}
/// The flag of a post-by-rows column that lies in its run's next row (kernels/plasticity.cu
/// POST_NEXT_ROW); the columns take 13 bits (`POST_EVEN_COLUMNS`).
const POST_NEXT_ROW: u16 = 0x8000;

/// The bytes of a slice of plain numbers.
pub(crate) fn as_bytes<T: Copy>(v: &[T]) -> &[u8] {
    // SAFETY: any initialised memory can be read as bytes.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
}

pub struct Csr {
    pub ctx: Arc<Context>,
    pub m: usize,
    pub k: usize,
    pub nnz: usize,
    pub index: DType,
    pub indptr: Arc<Buffer>,
    pub indices: Arc<Buffer>,
    pub dtype: DType,
    pub weights: Weights,
    analysis: OnceLock<Analysis>,
    device_analysis: OnceLock<DeviceAnalysis>,
    /// The outcome of the structure check with the profile built from the same look at the
    /// structure: set on creation from host arrays, on first use for wrapped ones.
    profile: OnceLock<Result<Profile>>,
    /// Copies of the structure taken from the device so far (tests check that analysis takes
    /// at most one).
    downloads: AtomicUsize,
    /// CPU contexts: the weights in CSC order, for T's gather along the mirror (see
    /// `csc_weights`), with the `weight_writes` count they were copied at.
    csc_weights: Mutex<Option<Arc<CscWeights>>>,
    /// Writes to the weights evsparse can see: plasticity, and every view handed out (its
    /// writes are not seen one by one).
    weight_writes: AtomicU64,
}

/// A copy of the hetero weights in CSC order (entry i is `weights[perm[i]]`), in 8-byte words
/// so that every dtype is aligned.
pub struct CscWeights {
    writes: u64,
    words: Vec<u64>,
}

impl CscWeights {
    /// The weights as `T` (the matrix's dtype).
    pub fn slice<T>(&self, nnz: usize) -> &[T] {
        assert!(nnz * std::mem::size_of::<T>() <= self.words.len() * 8 && std::mem::align_of::<T>() <= 8);
        // SAFETY: in bounds and aligned (checked above); the words hold nnz values of T.
        unsafe { std::slice::from_raw_parts(self.words.as_ptr() as *const T, nnz) }
    }
}

/// Sizes and types shared by the create and wrap entry points.
pub struct CsrShape {
    pub m: usize,
    pub k: usize,
    pub nnz: usize,
    pub index: DType,
    pub dtype: DType,
}

impl CsrShape {
    pub fn new(m: i64, k: i64, nnz: i64, index: DType, dtype: DType) -> Result<CsrShape> {
        let m = size_arg("m", m, MAX_DIM)?;
        let k = size_arg("k", k, MAX_DIM)?;
        let nnz = size_arg("nnz", nnz, i64::MAX)?;
        match index {
            DType::I32 if nnz > i32::MAX as usize => {
                return Err(Error::value(format!("nnz = {nnz} does not fit an int32 indptr; use EVS_DTYPE_I64")))
            }
            DType::I32 | DType::I64 => {}
            other => {
                return Err(Error::dtype(format!(
                    "indptr type must be EVS_DTYPE_I32 or EVS_DTYPE_I64, got {}",
                    other.name()
                )))
            }
        }
        dtype.expect_float("csr weights")?;
        checked_product("csr", &[nnz, 8])?;
        Ok(CsrShape { m, k, nnz, index, dtype })
    }

    fn indptr_bytes(&self) -> usize {
        (self.m + 1) * self.index.size()
    }
}

/// Rounds a homogeneous weight to the matrix dtype, so every backend sees the same value.
fn round_to_dtype(dtype: DType, value: f64) -> Result<f64> {
    fn round<T: Float>(value: f64) -> f64 {
        T::from_f64(value).to_acc().widen()
    }
    with_float!(dtype, T => Ok(round::<T>(value)))
}

impl Csr {
    /// Validates host arrays and copies them into memory owned by the context.
    ///
    /// # Safety
    /// `indptr` must hold m + 1 elements of the index type, `indices` nnz int32 values, and
    /// `weights` (when given) nnz elements of the dtype.
    pub unsafe fn from_host(
        ctx: &Arc<Context>,
        shape: CsrShape,
        indptr: *const u8,
        indices: *const i32,
        weights: Option<*const u8>,
        homo: f64,
    ) -> Result<Csr> {
        let indptr = host_slice(indptr, shape.indptr_bytes());
        let indices = host_slice(indices, shape.nnz);
        let profile = with_index!(shape.index, P => {
            let view = CsrView { m: shape.m, k: shape.k, indptr: host_slice(indptr.as_ptr() as *const P, shape.m + 1), indices };
            view.validate("csr")?;
            Profile::of(ctx, &view)?
        });
        let indptr = ctx.upload("csr indptr", indptr)?;
        let indices = ctx.upload("csr indices", host_slice(indices.as_ptr() as *const u8, shape.nnz * 4))?;
        let weights = match weights {
            Some(w) => {
                let buf = ctx.upload("csr weights", host_slice(w, shape.nnz * shape.dtype.size()))?;
                Weights::Hetero(Dense::vector_of(ctx, buf, shape.dtype, shape.nnz))
            }
            None => Weights::Homo(round_to_dtype(shape.dtype, homo)?),
        };
        let csr = Csr::assemble(ctx, shape, indptr, indices, weights);
        let _ = csr.profile.set(Ok(profile));
        Ok(csr)
    }

    /// Wraps the caller's arrays (device memory on CUDA contexts) without copying. The
    /// structure is checked by `validate`, or once before its first use by an operation.
    pub fn wrap(
        ctx: &Arc<Context>,
        shape: CsrShape,
        indptr: *mut u8,
        indices: *mut i32,
        weights: Option<*mut u8>,
        homo: f64,
    ) -> Result<Csr> {
        let indptr = ctx.borrow("csr indptr", indptr, shape.indptr_bytes(), shape.index.size())?;
        let indices = ctx.borrow("csr indices", indices as *mut u8, shape.nnz * 4, 4)?;
        let weights = match weights {
            Some(w) => {
                let buf = ctx.borrow("csr weights", w, shape.nnz * shape.dtype.size(), shape.dtype.size())?;
                Weights::Hetero(Dense::vector_of(ctx, buf, shape.dtype, shape.nnz))
            }
            None => Weights::Homo(round_to_dtype(shape.dtype, homo)?),
        };
        Ok(Csr::assemble(ctx, shape, indptr, indices, weights))
    }

    fn assemble(ctx: &Arc<Context>, s: CsrShape, indptr: Arc<Buffer>, indices: Arc<Buffer>, weights: Weights) -> Csr {
        Csr {
            ctx: ctx.clone(),
            m: s.m,
            k: s.k,
            nnz: s.nnz,
            index: s.index,
            indptr,
            indices,
            dtype: s.dtype,
            weights,
            analysis: OnceLock::new(),
            device_analysis: OnceLock::new(),
            profile: OnceLock::new(),
            downloads: AtomicUsize::new(0),
            csc_weights: Mutex::new(None),
            weight_writes: AtomicU64::new(0),
        }
    }

    /// The structure as host slices.
    ///
    /// # Safety
    /// `P` must be the indptr type and the memory must be host memory.
    pub unsafe fn view<P: Index>(&self) -> CsrView<'_, P> {
        CsrView {
            m: self.m,
            k: self.k,
            indptr: host_slice(self.indptr.ptr() as *const P, self.m + 1),
            indices: host_slice(self.indices.ptr() as *const i32, self.nnz),
        }
    }

    /// Copies the structure of a device matrix to the host (indptr widened to int64), waiting
    /// for the copy.
    fn download_structure(&self, stream: &Stream) -> Result<(Vec<i64>, Vec<i32>)> {
        self.downloads.fetch_add(1, Ordering::Relaxed);
        let indptr = with_index!(self.index, P => crate::cuda::download::<P>(stream, &self.indptr, self.m + 1)?
            .into_iter().map(Index::get).collect());
        Ok((indptr, crate::cuda::download::<i32>(stream, &self.indices, self.nnz)?))
    }

    /// Checks the structure now (SPEC §4), whatever was checked before. The first check of a
    /// wrapped matrix also builds its analysis from the same copy of the structure.
    pub fn validate(&self, stream: &Stream) -> Result<()> {
        if self.profile.get().is_none() {
            return self.expect_valid(stream).map(|_| ());
        }
        match stream.ctx.backend {
            // SAFETY: CPU contexts hold host memory; the index type selects P.
            Backend::Cpu(_) => with_index!(self.index, P => unsafe { self.view::<P>() }.validate("csr")),
            Backend::Cuda(_) => {
                let (indptr, indices) = self.download_structure(stream)?;
                CsrView { m: self.m, k: self.k, indptr: &indptr, indices: &indices }.validate("csr")
            }
        }
    }

    /// The profile of a valid matrix, checking a wrapped one once so that no kernel ever
    /// indexes out of bounds (the structure of a wrapped matrix must not change). On a CUDA
    /// context that check copies the structure to the host once and builds everything the
    /// matrix will need from that copy: statistics, row classes and the CSC mirror.
    pub fn expect_valid(&self, stream: &Stream) -> Result<&Profile> {
        self.profile.get_or_init(|| self.check_and_profile(stream)).as_ref().map_err(Error::clone)
    }

    fn check_and_profile(&self, stream: &Stream) -> Result<Profile> {
        match stream.ctx.backend {
            Backend::Cpu(_) => with_index!(self.index, P => {
                // SAFETY: CPU contexts hold host memory; the index type selects P.
                let view = unsafe { self.view::<P>() };
                view.validate("csr")?;
                Profile::of(&self.ctx, &view)
            }),
            Backend::Cuda(_) => {
                let (indptr, indices) = self.download_structure(stream)?;
                let view = CsrView { m: self.m, k: self.k, indptr: &indptr, indices: &indices };
                view.validate("csr")?;
                let profile = Profile::of(&self.ctx, &view)?;
                self.mirror_from(stream, &view, &profile.stats)?;
                Ok(profile)
            }
        }
    }

    /// The cached host analysis of a CPU context's matrix, built on first use (GPU contexts
    /// use `device_analysis`).
    pub(crate) fn analysis(&self) -> &Analysis {
        assert!(self.ctx.is_cpu(), "host analysis asked of a device matrix");
        // SAFETY: CPU contexts hold host memory; the index type selects P.
        self.analysis.get_or_init(|| {
            self.ctx.run(|| with_index!(self.index, P => crate::cpu::analyse(unsafe { &self.view::<P>() })))
        })
    }

    /// The CSC mirror on the device: built with the first check of a wrapped matrix, or on
    /// first use from one host copy of the structure.
    pub fn device_analysis(&self, stream: &Stream) -> Result<&DeviceAnalysis> {
        let stats = &self.expect_valid(stream)?.stats; // a wrapped matrix's first check builds it too
        if let Some(done) = self.device_analysis.get() {
            return Ok(done);
        }
        let (indptr, indices) = self.download_structure(stream)?;
        self.mirror_from(stream, &CsrView { m: self.m, k: self.k, indptr: &indptr, indices: &indices }, stats)
    }

    /// Builds the CSC mirror (and the slice offsets where kept) from a host view of the
    /// structure and caches it.
    fn mirror_from(&self, stream: &Stream, view: &CsrView<'_, i64>, stats: &CsrStats) -> Result<&DeviceAnalysis> {
        let (colptr, rowind, perm) = crate::cpu::csc_mirror(view);
        let csc_weights = self.csc_weights_upload(stream, &perm)?;
        let upload = |what: &str, bytes: &[u8]| self.ctx.upload(what, bytes);
        let colptr: Vec<i64> = colptr.par_iter().map(|&v| v as i64).collect();
        let rowind: Vec<i32> = rowind.par_iter().map(|&v| v as i32).collect();
        let perm: Vec<i64> = perm.par_iter().map(|&v| v as i64).collect();
        let built = DeviceAnalysis {
            colptr: upload("csr analysis", as_bytes(&colptr))?,
            rowind: upload("csr analysis", as_bytes(&rowind))?,
            perm: upload("csr analysis", as_bytes(&perm))?,
            slice_offsets: match slice_offsets_kept(stats) {
                true => Some(upload("csr analysis", as_bytes(&row_slice_offsets(view)))?),
                false => None,
            },
            column_slices: match column_slice_width(stats) {
                Some(width) => {
                    let column = |c: usize| &rowind[colptr[c] as usize..colptr[c + 1] as usize];
                    let offsets = slice_offsets(self.k, column, self.m.div_ceil(width), width);
                    Some(ColumnSlices { width, offsets: upload("csr analysis", as_bytes(&offsets))? })
                }
                None => None,
            },
            post_runs: if post_runs_kept(stats) {
                let (records, columns) = post_runs_of(view);
                Some(PostRuns {
                    records: upload("csr analysis", as_bytes(&records))?,
                    columns: upload("csr analysis", as_bytes(&columns))?,
                })
            } else {
                None
            },
            csc_weights,
        };
        // Two threads may race to build it; either result is the same.
        let _ = self.device_analysis.set(built);
        Ok(self.device_analysis.get().expect("set above"))
    }

    /// The hetero weights downloaded, put in CSC order (entry i is weights[perm[i]]) and uploaded,
    /// where T products may read them so: evsparse owns them, nothing has written them and no
    /// view of them is alive (see `csc_weights_on_device`), and the copy takes at most a
    /// `CSC_WEIGHTS_FREE_SHARE` of the free device memory. None otherwise (T then reads through
    /// `perm`).
    fn csc_weights_upload(&self, stream: &Stream, perm: &[usize]) -> Result<Option<DeviceCscWeights>> {
        let (Some(w), Backend::Cuda(gpu)) = (self.weights_seen_whole(), &self.ctx.backend) else { return Ok(None) };
        if self.weight_writes.load(Ordering::Acquire) != 0 || self.nnz > CSC_WEIGHTS_NNZ_MAX {
            return Ok(None);
        }
        if self.nnz * w.dtype.size() > gpu.free_memory()? / CSC_WEIGHTS_FREE_SHARE {
            return Ok(None);
        }
        fn permuted<T: Copy + Default + Send + Sync>(s: &Stream, w: &Buffer, perm: &[usize]) -> Result<Vec<T>> {
            let w = crate::cuda::download::<T>(s, w, perm.len())?;
            Ok(perm.par_iter().map(|&p| w[p]).collect())
        }
        let what = "csr weights in CSC order";
        let weights = match w.dtype.size() {
            2 => self.ctx.upload(what, as_bytes(&permuted::<u16>(stream, &w.buf, perm)?))?,
            4 => self.ctx.upload(what, as_bytes(&permuted::<u32>(stream, &w.buf, perm)?))?,
            _ => self.ctx.upload(what, as_bytes(&permuted::<u64>(stream, &w.buf, perm)?))?,
        };
        Ok(Some(DeviceCscWeights { weights, stale: Arc::new(self.ctx.alloc(what, 4)?) }))
    }

    /// The weights' CSC-ordered copy on the device while nothing evsparse can see has written
    /// the weights since analysis (plasticity, or any view handed out); the kernels test its
    /// stale flag too.
    pub fn csc_weights_on_device<'a>(&self, analysis: &'a DeviceAnalysis) -> Option<&'a DeviceCscWeights> {
        let untouched = self.weight_writes.load(Ordering::Acquire) == 0;
        analysis.csc_weights.as_ref().filter(|_| untouched)
    }

    /// The device address of the copy's stale flag, where analysis made a copy (0 if not), for
    /// the kernels that write the weights to set.
    pub fn csc_stale_flag(&self) -> u64 {
        let copy = self.device_analysis.get().and_then(|d| d.csc_weights.as_ref());
        copy.map_or(0, |c| c.stale.addr())
    }

    /// How many times the structure was copied from the device.
    pub fn structure_downloads(&self) -> usize {
        self.downloads.load(Ordering::Relaxed)
    }

    pub fn hetero_weights(&self, what: &str) -> Result<&Dense> {
        match &self.weights {
            Weights::Hetero(w) => Ok(w),
            Weights::Homo(_) => {
                Err(Error::value(format!("{what}: the csr has homogeneous weights; this needs one weight per entry")))
            }
        }
    }

    /// A view of the hetero weights (zero-copy) for the caller to read or write. Counted as a
    /// write: a CPU context's CSC-ordered copy is not trusted again until it is rebuilt after
    /// the view is gone; a CUDA context's (made at analysis) is not used again.
    pub fn weights_view(&self) -> Result<Dense> {
        let w = self.hetero_weights("csr weights")?;
        self.weights_written();
        let stale = self.csc_stale_flag();
        if let (true, Backend::Cuda(gpu)) = (stale != 0, &self.ctx.backend) {
            // T launches captured in a graph before now read the weights, not the copy
            gpu.write("csr weights view", stale, &1u32.to_ne_bytes())?;
        }
        Ok(Dense::vector_of(&self.ctx, w.buf.clone(), w.dtype, self.nnz))
    }

    /// Records a write to the weights (plasticity), so that a CPU context's CSC-ordered copy is
    /// rebuilt before its next use and a CUDA context's is no longer passed to the kernels.
    pub fn weights_written(&self) {
        self.weight_writes.fetch_add(1, Ordering::AcqRel);
    }

    /// The hetero weights where evsparse sees every write to them, so that a CSC-ordered copy
    /// can be kept: weights it owns (not the caller's memory), with no view of them alive (one
    /// holder of the buffer: this matrix), and at least one entry.
    fn weights_seen_whole(&self) -> Option<&Dense> {
        let Weights::Hetero(w) = &self.weights else { return None };
        (!w.buf.is_borrowed() && Arc::strong_count(&w.buf) == 1 && self.nnz > 0).then_some(w)
    }

    /// The hetero weights in CSC order (CPU contexts), copied when first asked for and again
    /// after any write evsparse saw, so that T's gather reads them in step with the mirror
    /// instead of through its permutation. None where evsparse cannot see every write: wrapped
    /// weights (the caller's memory), or while a view of them is alive (its pointer may write
    /// at any time); T then reads through the permutation.
    pub(crate) fn csc_weights(&self) -> Option<Arc<CscWeights>> {
        let w = self.weights_seen_whole()?;
        let writes = self.weight_writes.load(Ordering::Acquire);
        let mut cached = self.csc_weights.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(c) = cached.as_mut() {
            if c.writes != writes {
                // refilled in place unless a call still reads it (then a fresh copy)
                let Some(c) = Arc::get_mut(c) else {
                    *cached = None;
                    return self.csc_weights_fresh(w, writes, &mut cached);
                };
                self.permute_weights(w, &mut c.words);
                c.writes = writes;
            }
            return cached.clone();
        }
        self.csc_weights_fresh(w, writes, &mut cached)
    }

    /// A new CSC-ordered copy into `cached`; None (T reads through the permutation) where its
    /// memory cannot be had.
    fn csc_weights_fresh(
        &self,
        w: &Dense,
        writes: u64,
        cached: &mut Option<Arc<CscWeights>>,
    ) -> Option<Arc<CscWeights>> {
        let len = (self.nnz * w.dtype.size()).div_ceil(8);
        let mut words = Vec::new();
        words.try_reserve_exact(len).ok()?;
        words.resize(len, 0u64);
        self.permute_weights(w, &mut words);
        *cached = Some(Arc::new(CscWeights { writes, words }));
        cached.clone()
    }

    /// words <- the weights in CSC order (entry i is weights[perm[i]]): on the context's pool
    /// where that pays, else on the calling thread.
    fn permute_weights(&self, w: &Dense, words: &mut [u64]) {
        let (perm, nnz, at) = (&self.analysis().perm, self.nnz, words.as_mut_ptr() as usize);
        let parallel = crate::cpu::worth_sharing_on(&self.ctx, nnz);
        fn permute<T: Copy + Send + Sync>(src: &[T], perm: &[usize], dst: &mut [T], parallel: bool) {
            if parallel {
                dst.par_iter_mut().zip(perm).for_each(|(d, &p)| *d = src[p]);
            } else {
                dst.iter_mut().zip(perm).for_each(|(d, &p)| *d = src[p]);
            }
        }
        assert!(words.len() * 8 >= nnz * w.dtype.size());
        // SAFETY: host memory of nnz weights (CPU context); `words` (at `at`) holds nnz values
        // of the dtype's size (checked above), aligned to 8 bytes.
        let run = || unsafe {
            let bytes = at as *mut u8;
            match w.dtype.size() {
                2 => permute(w.slice::<u16>(), perm, std::slice::from_raw_parts_mut(bytes as *mut u16, nnz), parallel),
                4 => permute(w.slice::<u32>(), perm, std::slice::from_raw_parts_mut(bytes as *mut u32, nnz), parallel),
                _ => permute(w.slice::<u64>(), perm, std::slice::from_raw_parts_mut(bytes as *mut u64, nnz), parallel),
            }
        };
        if parallel {
            self.ctx.run(run)
        } else {
            run()
        }
    }

    pub fn describe(&self) -> String {
        let kind = if matches!(self.weights, Weights::Homo(_)) { "homogeneous" } else { "heterogeneous" };
        format!("{} x {} csr ({} entries, {kind} {})", self.m, self.k, self.nnz, self.dtype.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slice_offsets_mark_each_rows_first_entry_per_slice() {
        let w = SLICE_OUTPUTS as i32;
        let indices = [0, 5, w, w, 2 * w + 1, w - 1, 2 * w];
        let indptr = [0i64, 5, 5, 7];
        let view = CsrView { m: 3, k: 2 * SLICE_OUTPUTS + 10, indptr: &indptr, indices: &indices };
        // three slices: per row, the offsets where slices 0, 1, 2 begin and the row's length
        assert_eq!(row_slice_offsets(&view), [0, 2, 4, 5, 0, 0, 0, 0, 0, 1, 1, 2]);
    }

    #[test]
    fn column_slice_offsets_mark_each_columns_first_entry_per_slice() {
        // the CSC mirror of a 5 x 2 matrix: column 0 holds rows 0, 1, 4; column 1 rows 2, 3
        let (colptr, rowind) = ([0usize, 3, 5], [0u32, 1, 4, 2, 3]);
        // slices of 2 rows: [0, 2), [2, 4), [4, 5); per column their offsets and its length
        let offsets = slice_offsets(2, |c| &rowind[colptr[c]..colptr[c + 1]], 3, 2);
        assert_eq!(offsets, [0, 2, 2, 3, 0, 0, 2, 2]);
    }

    #[test]
    fn post_runs_give_each_entrys_row() {
        // rows of 40, 0, 0, 33, 64, 0 and 40 entries: runs meeting a start past empty rows, a run
        // starting a row, the last run partial
        let lengths = [40usize, 0, 0, 33, 64, 0, 40];
        let mut indptr = vec![0i64];
        for &n in &lengths {
            indptr.push(indptr[indptr.len() - 1] + n as i64);
        }
        let indices: Vec<i32> = (0..*indptr.last().unwrap() as i32).map(|p| p % 8191).collect();
        let view = CsrView { m: lengths.len(), k: 8191, indptr: &indptr, indices: &indices };
        let (records, columns) = post_runs_of(&view);
        assert_eq!(records.len(), indices.len().div_ceil(POST_RUN_ENTRIES));
        for p in 0..indices.len() {
            let [row, next] = records[p / POST_RUN_ENTRIES];
            let lane_row = if columns[p] & POST_NEXT_ROW != 0 { next } else { row };
            assert!(view.row(lane_row as usize).contains(&p), "entry {p}: row {lane_row}");
            assert_eq!((columns[p] & !POST_NEXT_ROW) as i32, indices[p], "entry {p}'s column");
        }
    }
}
