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
pub use dense_products::{dense_mm, dense_mv_spikes, DenseProduct};
pub use events::compact;
pub use products::{spmm, spmv_spikes};
pub use sparse::{analyse, csc_mirror, csr_plasticity, csr_to_csc, yw2y};

use crate::core::context::{Context, Stream};
use crate::core::dense::Dense;
use crate::core::plan;
use crate::core::InputKind;
use crate::dtype::{with_float, Acc, DType, Event, Float};
use crate::error::Result;
use rayon::prelude::*;
use std::cell::RefCell;

/// Smallest number of rows a worker thread takes, so small problems stay on one thread.
const MIN_ROWS_PER_TASK: usize = 64;

/// The L2 cache of one core, in bytes, read once from Linux's sysfs (1 MiB where it cannot
/// be read): the size of the blocks `spmm_n:input_blocks` and `spmm_t:input_blocks` walk.
pub(crate) fn l2_bytes() -> usize {
    static L2: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *L2.get_or_init(|| read_cache_bytes(2).unwrap_or(1 << 20))
}

/// This core's caches for the gathers' choice of L2 blocks (`plan::input_blocks_pay`): an AMD
/// L3 (Zen: close to its cores) feeds a row gather from inputs of up to half its size well
/// enough that it beat the L2 blocks 1.1-1.7x on Zen 4; the Intel server L3 on its mesh does
/// not (the blocks won 2x on the Xeon VM). Read once.
pub(crate) fn gather_caches() -> plan::GatherCaches {
    static L3_GATHER: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let l3_gather = *L3_GATHER.get_or_init(|| if amd() { read_cache_bytes(3).unwrap_or(0) / 2 } else { 0 });
    plan::GatherCaches { l2: l2_bytes(), l3_gather }
}

/// Whether this is an AMD x86 processor (CPUID's vendor string).
#[cfg(target_arch = "x86_64")]
fn amd() -> bool {
    // SAFETY: CPUID leaf 0 exists on every x86-64 processor (the call is safe from Rust 1.87;
    // the block keeps rust-version 1.80 building)
    #[allow(unused_unsafe)]
    let id = unsafe { std::arch::x86_64::__cpuid(0) };
    (id.ebx, id.edx, id.ecx)
        == (u32::from_le_bytes(*b"Auth"), u32::from_le_bytes(*b"enti"), u32::from_le_bytes(*b"cAMD"))
}

#[cfg(not(target_arch = "x86_64"))]
fn amd() -> bool {
    false
}

/// The data (or unified) cache of cpu0 at `level`, in bytes, from Linux's sysfs.
fn read_cache_bytes(level: u32) -> Option<usize> {
    let caches = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache").ok()?;
    caches.flatten().find_map(|entry| {
        let field = |name: &str| std::fs::read_to_string(entry.path().join(name)).ok();
        if field("level")?.trim() != level.to_string() || field("type")?.trim() == "Instruction" {
            return None;
        }
        let size = field("size")?;
        let size = size.trim();
        let (digits, unit) = size.split_at(size.find(|c: char| !c.is_ascii_digit()).unwrap_or(size.len()));
        let scale = match unit {
            "" => 1,
            "K" => 1 << 10,
            "M" => 1 << 20,
            _ => return None,
        };
        digits.parse::<usize>().ok().map(|v| v * scale).filter(|&b| b > 0)
    })
}

/// A xorshift generator for the unit tests: each call gives a number below its argument.
#[cfg(test)]
fn test_rng(seed: u64) -> impl FnMut(usize) -> usize {
    let mut state = seed;
    move |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    }
}

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

/// Which of `len` neurons are listed.
fn listed_mask(listed: &[u32], len: usize) -> Vec<bool> {
    let mut mask = vec![false; len];
    listed.iter().for_each(|&i| mask[i as usize] = true);
    mask
}

/// An event as an accumulator value: 1 when active, else 0.
fn event_value<E: Event, A: Acc>(e: E) -> A {
    if e.active() {
        A::ONE
    } else {
        A::ZERO
    }
}

/// Runs `$body` with `$f` bound to the function that reads one element of an input of `$dtype`
/// as an accumulator value of float type `$T`: floats as they are, events as 1 or 0.
macro_rules! with_input {
    ($dtype:expr, $kind:expr, $T:ty, $f:ident => $body:expr) => {
        match $kind {
            $crate::core::InputKind::Float => {
                let $f = |v: $T| <$T as $crate::dtype::Float>::to_acc(v);
                $body
            }
            $crate::core::InputKind::Events => $crate::dtype::with_event!($dtype, E => {
                let $f = |e: E| $crate::cpu::event_value::<E, <$T as $crate::dtype::Float>::Acc>(e);
                $body
            }),
        }
    };
}
use with_input;

/// An input array in accumulator precision: values as they are, or events as 1/0.
fn load_input<T: Float>(x: &Dense, kind: InputKind) -> Result<Vec<T::Acc>> {
    Ok(with_input!(x.dtype, kind, T, f => packed(x, f)))
}

/// A spike list as a vector of `neurons` counts in `dtype` (a neuron once per occurrence): the
/// references read spike lists through it.
fn counts_of(s: &Stream, listed: &[u32], neurons: usize, dtype: DType) -> Result<Dense> {
    let counts = Dense::create(&s.ctx, dtype, 1, neurons as i64, 1)?;
    with_float!(dtype, T => {
        // SAFETY: T is the dtype counts was made with; host memory.
        let c = unsafe { counts.slice_mut::<T>() };
        listed.iter().for_each(|&i| c[i as usize] = T::from_acc(c[i as usize].to_acc() + <<T as Float>::Acc as Acc>::ONE));
    });
    Ok(counts)
}

/// Per-thread buffers of one accumulator type that the fast paths reuse from call to call, so
/// that a repeated call allocates nothing once they have grown to its size.
#[derive(Default)]
struct Scratch<A> {
    products: products::Buffers<A>,
    /// The input rows with live input (spmm).
    live: Vec<u32>,
    nonzeros: dense_products::Nonzeros<A>,
    /// yw2y's y and per-batch weights in accumulator precision.
    y: Vec<A>,
    batch_weights: Vec<A>,
}

/// Accumulator types with per-thread buffers: a call's `Scratch`, and a buffer for each task a
/// call hands out (a dense product's column, the sums of the spmm block walk; a second cell: a
/// task may run on the calling thread).
trait PerThread: Acc {
    fn with_scratch<R>(f: impl FnOnce(&mut Scratch<Self>) -> R) -> R;
    fn with_task_buffer<R>(f: impl FnOnce(&mut Vec<Self>) -> R) -> R;
}

macro_rules! per_thread {
    ($($t:ty),*) => {$(
        impl PerThread for $t {
            fn with_scratch<R>(f: impl FnOnce(&mut Scratch<$t>) -> R) -> R {
                thread_local! { static SCRATCH: RefCell<Scratch<$t>> = RefCell::default(); }
                SCRATCH.with_borrow_mut(f)
            }
            fn with_task_buffer<R>(f: impl FnOnce(&mut Vec<$t>) -> R) -> R {
                thread_local! { static TASK_BUFFER: RefCell<Vec<$t>> = RefCell::default(); }
                TASK_BUFFER.with_borrow_mut(f)
            }
        }
    )*};
}
per_thread!(f32, f64);

/// `C = keep·C + scale·A·B` through the gemm crate's micro-kernels (which call keep alpha and
/// scale beta), C m x n, A m x k, B k x n, each given by its first element and its row and
/// column strides; C is not read when `read_c` is false. Over `threads` of the current pool.
///
/// # Safety
/// The pointers and strides must describe arrays of those shapes; C must not overlap A or B.
#[allow(clippy::too_many_arguments)]
unsafe fn gemm_update<A: 'static + Copy>(
    (m, n, k): (usize, usize, usize),
    (c, c_rs, c_cs): (*mut A, isize, isize),
    read_c: bool,
    (a, a_rs, a_cs): (*const A, isize, isize),
    (b, b_rs, b_cs): (*const A, isize, isize),
    keep: A,
    scale: A,
    threads: usize,
) {
    let parallelism = if threads > 1 { gemm::Parallelism::Rayon(threads) } else { gemm::Parallelism::None };
    gemm::gemm(
        m,
        n,
        k,
        c,
        c_cs,
        c_rs,
        read_c,
        a,
        a_cs,
        a_rs,
        b,
        b_cs,
        b_rs,
        keep,
        scale,
        false,
        false,
        false,
        parallelism,
    )
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

/// A plasticity call's rule: which side's spikes (post, else pre) add the other side's trace
/// to the weights they reach, clipped to [lo, hi].
#[derive(Clone, Copy)]
pub struct Rule<'a> {
    pub post: bool,
    pub trace: &'a Dense,
    pub lo: f64,
    pub hi: f64,
}

impl Rule<'_> {
    fn clip<A: Acc>(&self) -> Clip<A> {
        Clip::new(self.lo, self.hi)
    }
}

/// Whether `work` (elements touched or multiply-adds) is worth sharing among the context's
/// threads: below the plan's inline bound, handing it to the pool and waiting costs more than
/// the work.
fn worth_sharing(st: &Stream, work: usize) -> bool {
    worth_sharing_on(&st.ctx, work)
}

/// `worth_sharing` for work outside a call's stream (a matrix's derived arrays).
pub(crate) fn worth_sharing_on(ctx: &Context, work: usize) -> bool {
    work >= crate::core::plan::CPU.inline_work_max && ctx.threads() > 1
}

/// Runs `body(i, item)` for each item: on the context's pool (at least `min_len` items a task)
/// when `parallel`, else in order on the calling thread, which allocates nothing and touches no
/// thread pool at all (rayon's global one included). The pool gets the items as a list: its
/// calls are large enough (`worth_sharing`) that the list costs nothing beside the hand-off.
fn for_each_item<I: Send>(
    st: &Stream,
    parallel: bool,
    items: impl Iterator<Item = I>,
    min_len: usize,
    body: impl Fn(usize, I) + Sync + Send,
) {
    if parallel {
        let items: Vec<I> = items.collect();
        st.ctx.run(|| items.into_par_iter().with_min_len(min_len).enumerate().for_each(|(i, item)| body(i, item)));
    } else {
        items.enumerate().for_each(|(i, item)| body(i, item));
    }
}

/// Rows of a row-major array with leading dimension `ld`, each trimmed to `cols`.
fn rows_mut<T>(data: &mut [T], ld: usize, cols: usize) -> impl Iterator<Item = &mut [T]> {
    data.chunks_mut(ld.max(1)).map(move |row| &mut row[..cols])
}

/// Rows of a row-major output with leading dimension `ld`, each trimmed to `cols`, in
/// parallel.
fn par_rows_mut<T: Send>(data: &mut [T], ld: usize, cols: usize) -> impl IndexedParallelIterator<Item = &mut [T]> {
    data.par_chunks_mut(ld.max(1)).with_min_len(MIN_ROWS_PER_TASK).map(move |row| &mut row[..cols])
}
