//! Dense 1-D and 2-D row-major arrays with a leading dimension.

use super::context::{Backend, Context, Stream};
use super::memory::{host_slice, Buffer};
use super::{checked_product, size_arg};
use crate::dtype::DType;
use crate::error::{Error, Result};
use std::sync::Arc;

/// A dense array. A 1-D array of length n is stored as an n x 1 matrix with ld = 1, so
/// vector operations are matrix operations with one column.
pub struct Dense {
    pub ctx: Arc<Context>,
    pub buf: Arc<Buffer>,
    pub dtype: DType,
    pub ndim: u32,
    pub rows: usize,
    pub cols: usize,
    pub ld: usize,
}

/// Largest extent of a matrix dimension (row and column indices are int32 inside kernels). A
/// vector may be longer: the arrays of a matrix's stored entries (weights, yw2y's outputs, the
/// CSC permutation) pass 2^31 elements, and kernels index them with 64 bits.
pub(crate) const MAX_DIM: i64 = i32::MAX as i64;

impl Dense {
    fn shape_args(ndim: u32, rows: i64, cols: i64, ld: i64) -> Result<(usize, usize, usize)> {
        let rows = match ndim {
            1 => size_arg("n", rows, i64::MAX)?, // the span's size in bytes is checked below
            _ => size_arg("rows", rows, MAX_DIM)?,
        };
        let cols = size_arg("cols", cols, MAX_DIM)?;
        let ld = size_arg("ld", ld, i64::MAX)?;
        if ndim == 2 && ld < cols.max(1) {
            // as BLAS asks of lda: at least one, even for zero columns
            return Err(Error::value(format!("ld = {ld} must be at least max(cols, 1) = {}", cols.max(1))));
        }
        Ok((rows, cols, ld))
    }

    /// Elements spanned in memory, from the first to one past the last.
    pub fn span(&self) -> usize {
        if self.rows == 0 || self.cols == 0 {
            0
        } else {
            (self.rows - 1) * self.ld + self.cols
        }
    }

    /// Number of logical elements (rows x cols).
    pub fn numel(&self) -> usize {
        self.rows * self.cols
    }

    fn span_bytes(dtype: DType, rows: usize, cols: usize, ld: usize) -> Result<usize> {
        if rows == 0 || cols == 0 {
            return Ok(0);
        }
        let span = checked_product("dense", &[rows - 1, ld])?
            .checked_add(cols)
            .ok_or_else(|| Error::value("dense: size overflows"))?;
        checked_product("dense", &[span, dtype.size()])
    }

    pub fn create(ctx: &Arc<Context>, dtype: DType, ndim: u32, rows: i64, cols: i64) -> Result<Dense> {
        let (rows, cols, ld) = Self::shape_args(ndim, rows, cols, cols.max(1))?;
        let bytes = Self::span_bytes(dtype, rows, cols, ld)?;
        let buf = ctx.alloc("dense", bytes)?;
        Ok(Dense { ctx: ctx.clone(), buf: Arc::new(buf), dtype, ndim, rows, cols, ld })
    }

    pub fn wrap(
        ctx: &Arc<Context>,
        dtype: DType,
        ndim: u32,
        rows: i64,
        cols: i64,
        ld: i64,
        ptr: *mut u8,
    ) -> Result<Dense> {
        let (rows, cols, ld) = Self::shape_args(ndim, rows, cols, ld)?;
        let bytes = Self::span_bytes(dtype, rows, cols, ld)?;
        let buf = ctx.borrow("dense", ptr, bytes, dtype.size())?;
        Ok(Dense { ctx: ctx.clone(), buf, dtype, ndim, rows, cols, ld })
    }

    /// A 1-D view of `len` elements of an existing buffer (used for CSR weights).
    pub fn vector_of(ctx: &Arc<Context>, buf: Arc<Buffer>, dtype: DType, len: usize) -> Dense {
        Dense { ctx: ctx.clone(), buf, dtype, ndim: 1, rows: len, cols: 1, ld: 1 }
    }

    /// The elements as a typed slice of `span()` elements.
    ///
    /// # Safety
    /// `T` must match `dtype`, the memory must be host memory, and no `slice_mut` of the same
    /// array may be alive.
    pub unsafe fn slice<T>(&self) -> &[T] {
        debug_assert_eq!(std::mem::size_of::<T>(), self.dtype.size());
        host_slice(self.buf.ptr() as *const T, self.span())
    }

    /// # Safety
    /// As for `slice`, and no other slice of the same array may be alive.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn slice_mut<T>(&self) -> &mut [T] {
        debug_assert_eq!(std::mem::size_of::<T>(), self.dtype.size());
        if self.span() == 0 {
            return &mut [];
        }
        std::slice::from_raw_parts_mut(self.buf.ptr() as *mut T, self.span())
    }

    /// Byte range in memory, for overlap checks.
    fn byte_range(&self) -> (usize, usize) {
        let start = self.buf.ptr() as usize;
        (start, start + self.span() * self.dtype.size())
    }

    /// Fails when the output array shares memory with an input (results would be undefined).
    pub fn expect_disjoint(&self, arg: &str, other: &Dense, other_arg: &str) -> Result<()> {
        let (a0, a1) = self.byte_range();
        let (b0, b1) = other.byte_range();
        if a0 < b1 && b0 < a1 {
            return Err(Error::value(format!("{arg} overlaps {other_arg} in memory")));
        }
        Ok(())
    }

    pub fn describe(&self) -> String {
        if self.ndim == 1 {
            format!("{} vector of length {}", self.dtype.name(), self.rows)
        } else {
            format!("{} matrix {} x {}", self.dtype.name(), self.rows, self.cols)
        }
    }

    pub fn expect_vector(&self, arg: &str, len: usize) -> Result<()> {
        if self.ndim != 1 {
            return Err(Error::shape(format!("{arg} must be a 1-D array, got a {}", self.describe())));
        }
        if self.rows != len {
            return Err(Error::shape(format!("{arg} has length {}, expected {len}", self.rows)));
        }
        Ok(())
    }

    pub fn expect_matrix(&self, arg: &str, rows: usize, cols: usize) -> Result<()> {
        if self.ndim != 2 {
            return Err(Error::shape(format!("{arg} must be a 2-D array, got a {}", self.describe())));
        }
        if (self.rows, self.cols) != (rows, cols) {
            return Err(Error::shape(format!("{arg} is {} x {}, expected {rows} x {cols}", self.rows, self.cols)));
        }
        Ok(())
    }

    pub fn expect_2d(&self, arg: &str) -> Result<()> {
        if self.ndim != 2 {
            return Err(Error::shape(format!("{arg} must be a 2-D array, got a {}", self.describe())));
        }
        Ok(())
    }

    fn expect_count(&self, count: usize) -> Result<()> {
        if count != self.numel() {
            return Err(Error::shape(format!(
                "host buffer has {count} elements, the {} has {}",
                self.describe(),
                self.numel()
            )));
        }
        Ok(())
    }

    /// Copies `count` packed row-major elements from host memory.
    ///
    /// # Safety
    /// `src` must point to `count * dtype.size()` readable bytes.
    pub unsafe fn copy_from_host(&self, stream: &Stream, src: *const u8, count: usize) -> Result<()> {
        self.expect_count(count)?;
        match stream.ctx.backend {
            Backend::Cpu(_) => {
                self.copy_rows(|host, array, bytes| std::ptr::copy(src.add(host), array, bytes));
                Ok(())
            }
            Backend::Cuda(_) => crate::cuda::copy_host(stream, self, src as *mut u8, false),
        }
    }

    /// Copies the elements, packed row-major, to host memory.
    ///
    /// # Safety
    /// `dst` must point to `count * dtype.size()` writable bytes.
    pub unsafe fn copy_to_host(&self, stream: &Stream, dst: *mut u8, count: usize) -> Result<()> {
        self.expect_count(count)?;
        match stream.ctx.backend {
            Backend::Cpu(_) => {
                self.copy_rows(|host, array, bytes| std::ptr::copy(array, dst.add(host), bytes));
                Ok(())
            }
            Backend::Cuda(_) => crate::cuda::copy_host(stream, self, dst, true),
        }
    }

    /// Calls `copy(host offset, row address, row bytes)` for every row of a host array: rows
    /// are `ld` apart here, contiguous on the host.
    unsafe fn copy_rows(&self, copy: impl Fn(usize, *mut u8, usize)) {
        let (size, row_bytes) = (self.dtype.size(), self.cols * self.dtype.size());
        (0..self.rows).for_each(|r| copy(r * row_bytes, self.buf.ptr().add(r * self.ld * size), row_bytes))
    }

    pub fn fill(&self, stream: &Stream, value: f64) -> Result<()> {
        if value.is_nan() && !self.dtype.is_float() {
            return Err(Error::value(format!("fill: NaN cannot be stored in a {}", self.describe())));
        }
        match stream.ctx.backend {
            Backend::Cpu(_) => crate::cpu::fill(self, value),
            Backend::Cuda(_) => crate::cuda::fill(stream, self, value),
        }
    }
}
