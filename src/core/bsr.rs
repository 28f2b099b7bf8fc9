//! Block-sparse (BSR) matrices: bm x bk row-major blocks, int32 block structure.

use super::context::{Backend, Context, Stream};
use super::csr::{as_bytes, CsrView};
use super::dense::{Dense, MAX_DIM};
use super::memory::{host_slice, Buffer};
use super::plan;
use super::{checked_product, size_arg};
use crate::dtype::DType;
use crate::error::{Error, Result};
use std::sync::{Arc, OnceLock};

/// Block extents the kernels are built for.
const BLOCK_SIZES: [usize; 4] = [16, 32, 64, 128];

pub struct Bsr {
    pub ctx: Arc<Context>,
    /// Block rows and block columns.
    pub mb: usize,
    pub kb: usize,
    pub bm: usize,
    pub bk: usize,
    pub nnzb: usize,
    pub indptr: Arc<Buffer>,
    pub indices: Arc<Buffer>,
    /// nnzb * bm * bk values, block after block, each block row-major.
    pub values: Dense,
    /// The outcome of the structure check (see `Csr::expect_valid`) and, where it passed and a
    /// kernel reads it, the block rows in `heavy_first` order.
    structure: OnceLock<Result<Option<Arc<Buffer>>>>,
}

pub struct BsrShape {
    pub mb: usize,
    pub kb: usize,
    pub bm: usize,
    pub bk: usize,
    pub nnzb: usize,
    pub dtype: DType,
}

impl BsrShape {
    pub fn new(mb: i64, kb: i64, bm: i64, bk: i64, nnzb: i64, dtype: DType) -> Result<BsrShape> {
        let block = |arg: &str, v: i64| -> Result<usize> {
            if BLOCK_SIZES.contains(&(v as usize)) && v > 0 {
                Ok(v as usize)
            } else {
                Err(Error::value(format!("{arg} = {v}: block extents must be 16, 32, 64 or 128")))
            }
        };
        let (bm, bk) = (block("bm", bm)?, block("bk", bk)?);
        let mb = size_arg("mb", mb, MAX_DIM / bm as i64)?;
        let kb = size_arg("kb", kb, MAX_DIM / bk as i64)?;
        let nnzb = size_arg("nnzb", nnzb, i32::MAX as i64)?;
        if !matches!(dtype, DType::F16 | DType::BF16 | DType::F32) {
            return Err(Error::dtype(format!("bsr values must be f16, bf16 or f32, got {}", dtype.name())));
        }
        checked_product("bsr values", &[nnzb, bm, bk, dtype.size()])?;
        Ok(BsrShape { mb, kb, bm, bk, nnzb, dtype })
    }

    fn value_count(&self) -> usize {
        self.nnzb * self.bm * self.bk
    }
}

/// Whether bsrmm reads the block rows in `Bsr::heavy_first` order: its GPU kernel where it hands
/// out tiles from a counter (`plan::bsrmm_tile_counter`).
fn orders_rows(ctx: &Context, bm: usize, view: &CsrView<'_, i32>) -> bool {
    matches!(ctx.backend, Backend::Cuda(_)) && plan::bsrmm_tile_counter(bm, view.indices.len(), view.m)
}

/// Validates a host view of the block structure and, where a kernel reads it, uploads its rows
/// in `Bsr::heavy_first` order.
fn checked_order(ctx: &Arc<Context>, bm: usize, view: &CsrView<'_, i32>) -> Result<Option<Arc<Buffer>>> {
    view.validate("bsr")?;
    if !orders_rows(ctx, bm, view) {
        return Ok(None);
    }
    let mut order: Vec<usize> = (0..view.m).collect();
    order.sort_by_key(|&r| std::cmp::Reverse(view.row(r).len())); // stable
    let rows: Vec<[i32; 4]> = order.iter().map(|&r| ordered_row(view, r)).collect();
    ctx.upload("bsr row order", as_bytes(&rows)).map(Some)
}

/// Block row `r` as the kernel's counter decodes it (kernels/bsr.cu, `OrderedRow`): the row, its
/// first stored block, their count and the first one's block column (0 for an empty row), so
/// that a drawn tile costs one 16-byte load and no dependent one.
fn ordered_row(view: &CsrView<'_, i32>, r: usize) -> [i32; 4] {
    let blocks = view.row(r);
    let first_col = if blocks.is_empty() { 0 } else { view.indices[blocks.start] };
    [r as i32, blocks.start as i32, blocks.len() as i32, first_col]
}

impl Bsr {
    /// Validates host arrays and copies them into memory owned by the context.
    ///
    /// # Safety
    /// `indptr` must hold mb + 1 int32 values, `indices` nnzb, and `values`
    /// nnzb * bm * bk elements of the dtype.
    pub unsafe fn from_host(
        ctx: &Arc<Context>,
        s: BsrShape,
        indptr: *const i32,
        indices: *const i32,
        values: *const u8,
    ) -> Result<Bsr> {
        let view =
            CsrView { m: s.mb, k: s.kb, indptr: host_slice(indptr, s.mb + 1), indices: host_slice(indices, s.nnzb) };
        let order = checked_order(ctx, s.bm, &view)?;
        let indptr = ctx.upload("bsr indptr", host_slice(indptr as *const u8, (s.mb + 1) * 4))?;
        let indices = ctx.upload("bsr indices", host_slice(indices as *const u8, s.nnzb * 4))?;
        let values = ctx.upload("bsr values", host_slice(values, s.value_count() * s.dtype.size()))?;
        let bsr = Bsr::assemble(ctx, s, indptr, indices, values);
        bsr.structure.get_or_init(|| Ok(order));
        Ok(bsr)
    }

    /// Wraps the caller's arrays without copying. The structure is checked by `validate`, or
    /// once before its first use by an operation.
    pub fn wrap(ctx: &Arc<Context>, s: BsrShape, indptr: *mut i32, indices: *mut i32, values: *mut u8) -> Result<Bsr> {
        let indptr = ctx.borrow("bsr indptr", indptr as *mut u8, (s.mb + 1) * 4, 4)?;
        let indices = ctx.borrow("bsr indices", indices as *mut u8, s.nnzb * 4, 4)?;
        let values = ctx.borrow("bsr values", values, s.value_count() * s.dtype.size(), s.dtype.size())?;
        Ok(Bsr::assemble(ctx, s, indptr, indices, values))
    }

    fn assemble(
        ctx: &Arc<Context>,
        s: BsrShape,
        indptr: Arc<Buffer>,
        indices: Arc<Buffer>,
        values: Arc<Buffer>,
    ) -> Bsr {
        let values = Dense::vector_of(ctx, values, s.dtype, s.value_count());
        let structure = OnceLock::new();
        Bsr {
            ctx: ctx.clone(),
            mb: s.mb,
            kb: s.kb,
            bm: s.bm,
            bk: s.bk,
            nnzb: s.nnzb,
            indptr,
            indices,
            values,
            structure,
        }
    }

    /// The block structure as host slices.
    ///
    /// # Safety
    /// The memory must be host memory.
    pub unsafe fn view(&self) -> CsrView<'_, i32> {
        CsrView {
            m: self.mb,
            k: self.kb,
            indptr: host_slice(self.indptr.ptr() as *const i32, self.mb + 1),
            indices: host_slice(self.indices.ptr() as *const i32, self.nnzb),
        }
    }

    pub fn validate(&self, stream: &Stream) -> Result<()> {
        self.on_structure(stream, |view| view.validate("bsr"))
    }

    /// f applied to a host view of the block structure (downloaded from a GPU).
    fn on_structure<R>(&self, stream: &Stream, f: impl FnOnce(&CsrView<'_, i32>) -> Result<R>) -> Result<R> {
        match stream.ctx.backend {
            // SAFETY: CPU contexts hold host memory.
            Backend::Cpu(_) => f(&unsafe { self.view() }),
            Backend::Cuda(_) => {
                let indptr = crate::cuda::download::<i32>(stream, &self.indptr, self.mb + 1)?;
                let indices = crate::cuda::download::<i32>(stream, &self.indices, self.nnzb)?;
                f(&CsrView { m: self.mb, k: self.kb, indptr: &indptr, indices: &indices })
            }
        }
    }

    /// Fails unless the structure is valid, checking a wrapped matrix once.
    pub fn expect_valid(&self, stream: &Stream) -> Result<()> {
        self.checked(stream).map(|_| ())
    }

    /// The structure check's outcome, once: with it the block rows in `heavy_first` order where
    /// a kernel reads them.
    fn checked(&self, stream: &Stream) -> Result<Option<Arc<Buffer>>> {
        self.structure.get_or_init(|| self.on_structure(stream, |view| checked_order(&self.ctx, self.bm, view))).clone()
    }

    /// The block rows (four int32 each: `ordered_row`), most stored blocks first and rows of
    /// equal length in order: the order in which bsrmm's Hopper kernel hands out tiles from its
    /// counter, so that the long rows start early and the short ones fill the tail. Built with
    /// the structure check, once, on GPU contexts where `plan::bsrmm_tile_counter` says the
    /// kernel draws tiles.
    pub fn heavy_first(&self, stream: &Stream) -> Result<Arc<Buffer>> {
        self.checked(stream)?
            .ok_or_else(|| Error::internal("bsr row order: built where bsrmm draws tiles on a GPU only"))
    }

    pub fn rows(&self) -> usize {
        self.mb * self.bm
    }

    pub fn cols(&self) -> usize {
        self.kb * self.bk
    }
}
