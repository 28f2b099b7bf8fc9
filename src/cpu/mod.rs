//! The CPU backend. Every operation has a reference: plain, multi-threaded loops that read
//! inputs into packed accumulator arrays first, so that each is the formula of SPEC §3 written
//! out once (`sparse`, `dense`, `bsr`, `events`); the tests compare every other CPU path, and
//! every GPU result, with it. The fast paths the plan picks by default live beside it
//! (`products`: spmv / spmm; `dense_products`: dense mv / mm on sparse inputs).

mod bsr;
mod dense;
mod dense_products;
mod events;
mod products;
mod sparse;

pub use bsr::bsrmm;
pub use dense::dense_plasticity;
pub use dense_products::{dense_mm, DenseProduct};
pub use events::compact;
pub use products::spmm;
pub use sparse::{analyse, csr_plasticity, csr_to_csc, yw2y};

use crate::core::dense::Dense;
use crate::core::InputKind;
use crate::dtype::{with_event, with_float, Acc, DType, Event, Float};
use crate::error::Result;
use rayon::prelude::*;

/// Smallest number of rows a worker thread takes, so small problems stay on one thread.
const MIN_ROWS_PER_TASK: usize = 64;

/// The logical elements of `x`, row-major and packed, mapped through `f`.
fn packed<T: Copy, U>(x: &Dense, f: impl Fn(T) -> U) -> Vec<U> {
    let mut out = Vec::with_capacity(x.numel());
    pack_into(x, &mut out, f);
    out
}

/// Appends the logical elements of `x`, row-major, mapped through `f`.
fn pack_into<T: Copy, U>(x: &Dense, out: &mut Vec<U>, f: impl Fn(T) -> U) {
    // SAFETY: callers pick T from x.dtype; CPU arrays are host memory.
    let data = unsafe { x.slice::<T>() };
    for r in (0..x.rows).filter(|_| x.cols > 0) {
        out.extend(data[r * x.ld..r * x.ld + x.cols].iter().map(|&v| f(v)));
    }
}

/// Which elements of an event array are active.
fn load_events(x: &Dense) -> Result<Vec<bool>> {
    with_event!(x.dtype, E => Ok(packed::<E, bool>(x, Event::active)))
}

/// An input array in accumulator precision: values as they are, or events as 1/0.
fn load_input<T: Float>(x: &Dense, kind: InputKind) -> Result<Vec<T::Acc>> {
    match kind {
        InputKind::Float => Ok(packed::<T, T::Acc>(x, Float::to_acc)),
        InputKind::Events => {
            Ok(load_events(x)?.into_iter().map(|a| if a { T::Acc::ONE } else { T::Acc::ZERO }).collect())
        }
    }
}

/// Rows of a packed `rows x n` input that hold a non-zero: the rows events make live.
fn live_rows<A: Acc>(xs: &[A], rows: usize, n: usize) -> Vec<usize> {
    (0..rows).filter(|&r| xs[r * n..][..n].iter().any(|&v| v != A::ZERO)).collect()
}

/// Event-driven paths (touching only what live events reach) run when they reach fewer than
/// 1 / SPARSE_WORK of the stored entries; above that a parallel pass over everything wins.
const SPARSE_WORK: usize = 8;

/// `alpha * result + beta * old`, rounded once; with beta = 0 the old value is not read.
#[derive(Clone, Copy)]
struct Blend<A> {
    alpha: A,
    beta: A,
    read_old: bool,
}

impl<A: Acc> Blend<A> {
    fn new(alpha: f64, beta: f64) -> Self {
        Blend { alpha: A::cast(alpha), beta: A::cast(beta), read_old: beta != 0.0 }
    }

    #[inline]
    fn store<T: Float<Acc = A>>(&self, slot: &mut T, result: A) {
        let mut v = self.alpha * result;
        if self.read_old {
            v = v + self.beta * slot.to_acc();
        }
        *slot = T::from_acc(v);
    }
}

/// `clip(w + delta, lo, hi)` in accumulator precision, rounded once.
#[derive(Clone, Copy)]
struct Clip<A> {
    lo: A,
    hi: A,
}

impl<A: Acc> Clip<A> {
    fn new(lo: f64, hi: f64) -> Self {
        Clip { lo: A::cast(lo), hi: A::cast(hi) }
    }

    #[inline]
    fn add<T: Float<Acc = A>>(&self, w: &mut T, delta: A) {
        let v = w.to_acc() + delta;
        let v = if v < self.lo {
            self.lo
        } else if v > self.hi {
            self.hi
        } else {
            v
        };
        *w = T::from_acc(v);
    }
}

/// Writes `value` into every logical element of `x`.
pub fn fill(x: &Dense, value: f64) -> Result<()> {
    fn fill_as<T: Copy>(x: &Dense, v: T) {
        // SAFETY: T matches x.dtype (chosen below); CPU arrays are host memory.
        let data = unsafe { x.slice_mut::<T>() };
        for r in (0..x.rows).filter(|_| x.cols > 0) {
            data[r * x.ld..r * x.ld + x.cols].fill(v);
        }
    }
    match x.dtype {
        DType::Bool => fill_as::<u8>(x, (value != 0.0) as u8),
        DType::I32 => fill_as::<i32>(x, value as i32),
        DType::I64 => fill_as::<i64>(x, value as i64),
        float => with_float!(float, T => fill_as::<T>(x, T::from_f64(value))),
    }
    Ok(())
}

/// Rows of a row-major output with leading dimension `ld`, each trimmed to `cols`, in
/// parallel.
fn par_rows_mut<T: Send>(data: &mut [T], ld: usize, cols: usize) -> impl IndexedParallelIterator<Item = &mut [T]> {
    data.par_chunks_mut(ld.max(1)).with_min_len(MIN_ROWS_PER_TASK).map(move |row| &mut row[..cols])
}
