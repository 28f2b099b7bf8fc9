//! The fast CPU paths of spmv / spmm (SPEC §3), chosen by `core::plan` like the GPU kernels:
//! N over row ranges of equal entry counts, T gathering along the CSC mirror or scattering the
//! rows with live input. The plainly written reference they are tested against is
//! `sparse::spmm` (tests/backends.rs forces every path on the same random inputs).
//!
//! Inner loops add whole rows of the input in panels of `PANEL` columns, compiled for several
//! instruction sets and picked at run time (multiversion). They multiply and add in two
//! roundings (no fused multiply-add), so a result is the same bit for bit on every machine.
//! Calls too small to share run on the calling thread; buffers live in a per-thread scratch
//! that grows to the largest call and is reused, so a repeated call allocates nothing.

use super::sparse::{self, EntryWeights};
use super::{counts_of, event_value, with_input, Blend, PerThread, Scratch};
use crate::core::context::Stream;
use crate::core::csr::{with_index, Analysis, Csr, CsrView, Index};
use crate::core::dense::Dense;
use crate::core::ops::Product;
use crate::core::plan::{self, decide, Backend, SpmmN, SpmmT, CPU};
use crate::core::{InputKind, Op};
use crate::dtype::{with_event, with_float, Acc, DType, Float};
use crate::error::Result;
use multiversion::multiversion;
use rayon::prelude::*;
use std::cell::RefCell;
use std::ops::Range;

/// Columns of the input one pass over a row's entries accumulates: 64 f32 are four AVX-512
/// registers, 64 f64 eight (of 32). A row of 128 f32 in two passes of 64 ran 15 % faster than in
/// one of 128 on Zen 5 (bench/NOTES.md, "CPU: spmm's gather on Zen 5").
const PANEL: usize = 64;

/// Where an input row starts for the gathers: on a cache line, since a vector load across two
/// lines costs two (a misaligned B made the gather 1.3x slower on Zen 5).
const ROW_ALIGN: usize = 64;

/// Entries a gather reads per input row from which a misaligned float input is copied to rows
/// on `ROW_ALIGN` first: the copy reads and writes each row once.
const ALIGNED_COPY_MIN_READS: usize = 16;

/// Row ranges per thread: more than one, so that a range that runs slow is shared out.
const RANGES_PER_THREAD: usize = 4;

/// spmv / spmm on a CPU context, with the algorithm the plan picks.
pub fn spmm(s: &Stream, op: Op, p: &Product) -> Result<()> {
    with_float!(p.a.dtype, T => spmm_typed::<T>(s, op, p))
}

fn spmm_typed<T: Float>(s: &Stream, op: Op, p: &Product) -> Result<()>
where
    T::Acc: PerThread,
{
    let forced = &s.ctx.forced;
    let reference = || s.ctx.run(|| sparse::spmm(op, p.kind, p.alpha, p.a, p.x, p.beta, p.y));
    T::Acc::with_scratch(|scratch| {
        let Scratch { products: Buffers { input, gathered, acc }, live: live_rows, .. } = scratch;
        let a = p.a;
        match op {
            Op::N => {
                // an input with few live rows (events, or floats zero in most rows) spreads
                // along the CSC mirror; float rows are only counted unless the scatter runs
                let live = match p.kind {
                    InputKind::Events => Some(LiveRows::of::<T>(p.x, p.kind, live_rows, input)?),
                    InputKind::Float => None,
                };
                let live_entries = match &live {
                    Some(live) => live.entries(&columns(a)),
                    None => live_float_entries::<T, _>(p.x, &columns(a), plan::spmm_n_gather_from(a.nnz, p.x.cols)),
                };
                let sorted = a.expect_valid(s)?.stats.sorted_rows;
                let chosen = plan::choose_spmm_n_cpu(live_entries, a.nnz, p.x.cols, blocks_pay::<T>(p, sorted));
                match decide(forced, Backend::Cpu, chosen, |_| true)? {
                    SpmmN::Reference => reference(),
                    SpmmN::CscScatter => {
                        let live = match live {
                            Some(live) => live,
                            None => LiveRows::of::<T>(p.x, p.kind, live_rows, input)?,
                        };
                        spread::<T, _>(&columns(a), &live, acc, p)
                    }
                    // row_ranges or input_blocks (`decide` lets no GPU algorithm through)
                    alg => {
                        let input = Input::of::<T>(p.x, p.kind, a.nnz, gathered)?;
                        let blocks = (alg == SpmmN::InputBlocks).then(|| InputBlocks::for_rows::<T::Acc>(p.x.cols));
                        let w = EntryWeights::of(a);
                        // SAFETY (views): P is the index type; host memory.
                        with_index!(a.index, P => gather::<T, _>(s, &unsafe { a.view::<P>() }, &w, &input, p, blocks))
                    }
                }
            }
            Op::T => {
                let live = LiveRows::of::<T>(p.x, p.kind, live_rows, input)?;
                let live_entries = with_index!(a.index, P => live.entries(&unsafe { a.view::<P>() }));
                // the CSC mirror's columns list their rows in order
                let chosen = plan::choose_spmm_t_cpu(live_entries, a.nnz, blocks_pay::<T>(p, true));
                match decide(forced, Backend::Cpu, chosen, |_| true)? {
                    SpmmT::Reference => reference(),
                    SpmmT::Scatter => {
                        with_index!(a.index, P => spread::<T, _>(&unsafe { a.view::<P>() }, &live, acc, p))
                    }
                    // csc_gather or input_blocks (`decide` lets no GPU algorithm through): the
                    // weights in CSC order where the matrix keeps them, else through the
                    // permutation
                    alg => {
                        let input = Input::of::<T>(p.x, p.kind, a.nnz, gathered)?;
                        let blocks = (alg == SpmmT::InputBlocks).then(|| InputBlocks::for_rows::<T::Acc>(p.x.cols));
                        match a.csc_weights() {
                            Some(csc) => {
                                let w = EntryWeights::Hetero(csc.slice::<T>(a.nnz));
                                gather::<T, _>(s, &Columns::<true>(a.analysis()), &w, &input, p, blocks)
                            }
                            None => gather::<T, _>(s, &columns(a), &EntryWeights::of(a), &input, p, blocks),
                        }
                    }
                }
            }
        }
    })
}

/// Whether the gather of `p` walks its input in L2-sized blocks (`plan::input_blocks_pay`).
fn blocks_pay<T: Float>(p: &Product, sorted_lines: bool) -> bool {
    plan::input_blocks_pay(p.x.rows, p.x.cols, std::mem::size_of::<T::Acc>(), super::gather_caches(), sorted_lines)
}

/// spmv on a spike list (checked against the neurons) on a CPU context: the listed lines
/// scatter (T along the CSR rows, N along the CSC mirror); the reference reads the list as a
/// vector of counts.
pub fn spmv_spikes(s: &Stream, op: Op, alpha: f64, a: &Csr, listed: &[u32], beta: f64, y: &Dense) -> Result<()> {
    with_float!(a.dtype, T => spmv_spikes_typed::<T>(s, op, alpha, a, listed, beta, y))
}

fn spmv_spikes_typed<T: Float>(
    s: &Stream,
    op: Op,
    alpha: f64,
    a: &Csr,
    listed: &[u32],
    beta: f64,
    y: &Dense,
) -> Result<()>
where
    T::Acc: PerThread,
{
    let neurons = if op == Op::N { a.k } else { a.m };
    let reference = || -> Result<()> {
        let counts = counts_of(s, listed, neurons, a.dtype)?;
        s.ctx.run(|| sparse::spmm(op, InputKind::Float, alpha, a, &counts, beta, y))
    };
    // the scatter reads the spikes from `live` only; x is never read
    let p = Product { kind: InputKind::Events, alpha, a, x: y, beta, y };
    T::Acc::with_scratch(|scratch| {
        let Scratch { products: Buffers { input, acc, .. }, .. } = scratch;
        input.clear();
        input.resize(listed.len(), T::Acc::ONE);
        let live = LiveRows { rows: listed, values: input, n: 1 };
        let forced = &s.ctx.forced;
        match op {
            Op::N => match decide(forced, Backend::Cpu, SpmmN::CscScatter, |alg| {
                matches!(alg, SpmmN::CscScatter | SpmmN::Reference)
            })? {
                SpmmN::Reference => reference(),
                _ => spread::<T, _>(&columns(a), &live, acc, &p),
            },
            Op::T => match decide(forced, Backend::Cpu, SpmmT::Scatter, |alg| {
                matches!(alg, SpmmT::Scatter | SpmmT::Reference)
            })? {
                SpmmT::Reference => reference(),
                _ => with_index!(a.index, P => spread::<T, _>(&unsafe { a.view::<P>() }, &live, acc, &p)),
            },
        }
    })
}

/// Scatters the live input lines along `g`: in place where the output allows it, else through
/// the accumulator.
fn spread<T: Float, G: Lines>(g: &G, live: &LiveRows<T::Acc>, acc: &mut Vec<T::Acc>, p: &Product) -> Result<()> {
    if adds_in_place(p) {
        scatter_in_place::<T, G>(g, live, p)
    } else {
        scatter::<T, G>(g, live, acc, p)
    }
}

// ---------------------------------------------------------------- per-thread buffers

/// The buffers of spmm in a thread's `Scratch`, per accumulator type.
#[derive(Default)]
pub struct Buffers<A> {
    /// The input in accumulator precision (N, gather) or the live rows' values (scatter).
    input: Vec<A>,
    /// The input packed for the gather, when the scatter's scan came first.
    gathered: Vec<A>,
    /// The scatter's accumulator, one row per output row, all zero between calls.
    acc: Vec<A>,
}

// ---------------------------------------------------------------- inputs

/// The input as rows of accumulator values: the caller's array itself when it holds floats of
/// the accumulator's type with its rows on `ROW_ALIGN` (or rows shorter than a line, or too few
/// of the gather's `entries` per input row to pay for a copy), else a copy in a scratch buffer
/// with its rows on `ROW_ALIGN`.
struct Input<'a, A> {
    data: &'a [A],
    ld: usize,
}

impl<'a, A: Acc> Input<'a, A> {
    fn of<T: Float<Acc = A>>(
        x: &'a Dense,
        kind: InputKind,
        entries: usize,
        buf: &'a mut Vec<A>,
    ) -> Result<Input<'a, A>> {
        if kind == InputKind::Float && x.dtype == T::DTYPE && matches!(x.dtype, DType::F32 | DType::F64) {
            // SAFETY: f32 and f64 are their own accumulator type, so x holds A; host memory.
            let data = unsafe { x.slice::<A>() };
            let on_lines =
                data.as_ptr().align_offset(ROW_ALIGN) == 0 && (x.ld * std::mem::size_of::<A>()) % ROW_ALIGN == 0;
            if on_lines || line_elements::<A>(x.cols).is_none() || entries / x.rows.max(1) < ALIGNED_COPY_MIN_READS {
                return Ok(Input { data, ld: x.ld });
            }
        }
        let (first, ld) = with_input!(x.dtype, kind, T, f => pack_rows(x, buf, f));
        Ok(Input { data: &buf[first..], ld })
    }

    #[inline]
    fn row(&self, r: usize) -> &[A] {
        &self.data[r * self.ld..]
    }

    /// Columns `p0..p0 + W` of row `r`.
    #[inline(always)]
    fn panel<const W: usize>(&self, r: usize, p0: usize) -> &[A; W] {
        self.data[r * self.ld + p0..][..W].try_into().expect("a panel")
    }
}

/// The elements of A a cache line holds, where rows of `cols` span one (shorter rows gain
/// nothing from starting on a line).
fn line_elements<A>(cols: usize) -> Option<usize> {
    let line = ROW_ALIGN / std::mem::size_of::<A>();
    (cols >= line).then_some(line)
}

/// x's rows converted by `f` into `out`, each starting on `ROW_ALIGN` (zeros between them) where
/// they span a line, else packed: the position of row 0 in `out` and the distance between rows.
fn pack_rows<T: Copy, A: Acc>(x: &Dense, out: &mut Vec<A>, f: impl Fn(T) -> A) -> (usize, usize) {
    let line = line_elements::<A>(x.cols);
    let ld = line.map_or(x.cols, |line| x.cols.next_multiple_of(line));
    out.clear();
    out.reserve(x.rows * ld + line.unwrap_or(0));
    let first = line.map_or(0, |line| out.as_ptr().align_offset(ROW_ALIGN).min(line));
    out.resize(first, A::ZERO);
    // SAFETY: callers pick T from x.dtype; CPU arrays are host memory.
    let data = unsafe { x.slice::<T>() };
    for r in (0..x.rows).filter(|_| x.cols > 0) {
        out.extend(data[r * x.ld..r * x.ld + x.cols].iter().map(|&v| f(v)));
        out.resize(first + (r + 1) * ld, A::ZERO);
    }
    (first, ld)
}

/// The input rows holding a non-zero (a live event), with their values packed in order.
struct LiveRows<'a, A> {
    rows: &'a [u32],
    values: &'a [A],
    n: usize,
}

impl<'a, A: Acc> LiveRows<'a, A> {
    fn of<T: Float<Acc = A>>(
        x: &Dense,
        kind: InputKind,
        rows: &'a mut Vec<u32>,
        values: &'a mut Vec<A>,
    ) -> Result<LiveRows<'a, A>> {
        rows.clear();
        values.clear();
        match (kind, spike_bytes(x)) {
            (InputKind::Events, Some(bytes)) => {
                find_spikes(bytes, rows);
                values.resize(rows.len(), A::ONE);
            }
            _ => with_input!(x.dtype, kind, T, f => find_live(x, rows, values, f)),
        }
        Ok(LiveRows { rows, values, n: x.cols })
    }

    /// The stored entries the live lines reach.
    fn entries<G: Lines>(&self, g: &G) -> usize {
        self.rows.iter().map(|&r| g.offset(r as usize + 1) - g.offset(r as usize)).sum()
    }
}

/// The stored entries that the rows of a float input with a nonzero reach along `g`, counted
/// without copying the rows, up to `enough` (a dense input stops after a few rows); a row's
/// scan stops at its first nonzero.
fn live_float_entries<T: Float, G: Lines>(x: &Dense, g: &G, enough: usize) -> usize {
    // SAFETY: float inputs have the matrix's dtype, T; host memory.
    let data = unsafe { x.slice::<T>() };
    let live = |r: &usize| data[r * x.ld..][..x.cols].iter().any(|&v| v.to_acc() != T::Acc::ZERO);
    let mut entries = 0;
    for r in (0..x.rows).filter(|_| x.cols > 0).filter(live) {
        entries += g.offset(r + 1) - g.offset(r);
        if entries >= enough {
            break;
        }
    }
    entries
}

/// Bytes of zeros a scan skips at once.
const ZERO_RUN: usize = 64;

/// Finds the rows of `x` with a non-zero value under `f`; a vector skips runs of zero bytes
/// (a quiet step's spikes) a cache line at a time.
fn find_live<E: Copy, A: Acc>(x: &Dense, rows: &mut Vec<u32>, values: &mut Vec<A>, f: impl Fn(E) -> A) {
    // SAFETY: callers pick E from x.dtype; host memory.
    let data = unsafe { x.slice::<E>() };
    let n = x.cols;
    if n == 1 && x.ld == 1 {
        let per_run = (ZERO_RUN / std::mem::size_of::<E>()).max(1);
        for (c, chunk) in data[..x.rows].chunks(per_run).enumerate() {
            if all_zero_bytes(chunk) {
                continue;
            }
            for (i, &v) in chunk.iter().enumerate() {
                let v = f(v);
                if v != A::ZERO {
                    rows.push((c * per_run + i) as u32);
                    values.push(v);
                }
            }
        }
        return;
    }
    for r in (0..x.rows).filter(|_| n > 0) {
        let row = &data[r * x.ld..][..n];
        if row.iter().any(|&v| f(v) != A::ZERO) {
            rows.push(r as u32);
            values.extend(row.iter().map(|&v| f(v)));
        }
    }
}

/// `f` of the indices of an event vector's active elements, in order, found as the products find
/// their live rows (a quiet stretch costs a cache line's check). The list lives in a per-thread
/// buffer that calls reuse, so a repeated call allocates nothing (a nested one gets its own).
pub(super) fn with_active_indices<R>(spikes: &Dense, f: impl FnOnce(&[u32]) -> Result<R>) -> Result<R> {
    thread_local! { static ACTIVE: RefCell<(Vec<u32>, Vec<f32>)> = RefCell::default(); }
    ACTIVE.with(|cell| {
        let mut held = cell.try_borrow_mut().ok();
        let mut own = None; // a nested call's buffers
        let (rows, values) = match held.as_deref_mut() {
            Some(reused) => reused,
            None => own.insert(Default::default()),
        };
        rows.clear();
        values.clear();
        if let Some(bytes) = spike_bytes(spikes) {
            find_spikes(bytes, rows);
        } else {
            with_event!(spikes.dtype, E => find_live(spikes, rows, values, event_value::<E, f32>));
        }
        f(rows)
    })
}

/// A bool vector's bytes, where they lie contiguous (the spike vectors of a simulator).
fn spike_bytes(x: &Dense) -> Option<&[u8]> {
    // SAFETY: bool arrays hold bytes; host memory.
    (x.dtype == DType::Bool && x.cols == 1 && x.ld == 1).then(|| &unsafe { x.slice::<u8>() }[..x.rows])
}

/// The positions of the non-zero bytes of a spike vector: runs of zero bytes are skipped a
/// cache line at a time, the rest eight bytes at a time, one step per spike.
fn find_spikes(spikes: &[u8], rows: &mut Vec<u32>) {
    for (c, chunk) in spikes.chunks(ZERO_RUN).enumerate() {
        if all_zero_bytes(chunk) {
            continue;
        }
        let base = c * ZERO_RUN;
        let words = chunk.chunks_exact(8);
        let tail = words.remainder();
        for (w, word) in words.enumerate() {
            let mut bits = u64::from_le_bytes(word.try_into().expect("8 bytes"));
            while bits != 0 {
                let byte = bits.trailing_zeros() / 8;
                rows.push((base + w * 8) as u32 + byte);
                bits &= !(0xff << (byte * 8));
            }
        }
        let rest = base + chunk.len() - tail.len();
        rows.extend(tail.iter().enumerate().filter(|(_, &b)| b != 0).map(|(i, _)| (rest + i) as u32));
    }
}

/// Whether every byte of `chunk` is zero (then every element is zero, or a float's +0).
fn all_zero_bytes<E>(chunk: &[E]) -> bool {
    // SAFETY: the elements are plain numbers (u8, f16, bf16, f32, f64): every byte is initialized.
    let bytes = unsafe { std::slice::from_raw_parts(chunk.as_ptr() as *const u8, std::mem::size_of_val(chunk)) };
    bytes.iter().fold(0u8, |acc, &b| acc | b) == 0
}

// ---------------------------------------------------------------- gather (N, and T along CSC)

/// The matrix as lines, by position: the rows of the CSR arrays, or its columns along the CSC
/// mirror. Each stored entry has a position (a line's run from its offset to the next line's),
/// the index across it (a row's column, a column's row) and the position of its weight. A
/// gather sums each output line over the inputs across it; a scatter spreads each live input
/// line onto the outputs across it.
pub(super) trait Lines: Sync {
    /// Whether consecutive entries' weights lie apart in memory.
    const SCATTERED_WEIGHTS: bool;
    fn lines(&self) -> usize;
    fn offset(&self, line: usize) -> usize;
    fn across(&self, pos: usize) -> usize;
    /// `across` over a run of positions, with one bounds check for the run.
    fn across_run(&self, span: Range<usize>) -> impl Iterator<Item = usize> + '_;
    fn weight(&self, pos: usize) -> usize;
    /// Asks for the cache lines of `line`'s extent.
    fn prefetch_extent(&self, line: usize);
    /// Asks for the cache lines of the entries at `span` (indices across, weight positions).
    fn prefetch_entries(&self, span: Range<usize>);
}

/// The rows of the CSR arrays: N gathers along them, T scatters along them.
impl<P: Index> Lines for CsrView<'_, P> {
    const SCATTERED_WEIGHTS: bool = false;
    fn lines(&self) -> usize {
        self.m
    }
    fn offset(&self, row: usize) -> usize {
        self.indptr[row].get() as usize
    }
    fn across(&self, pos: usize) -> usize {
        self.indices[pos] as usize
    }
    fn across_run(&self, span: Range<usize>) -> impl Iterator<Item = usize> + '_ {
        self.indices[span].iter().map(|&c| c as usize)
    }
    fn weight(&self, pos: usize) -> usize {
        pos
    }
    fn prefetch_extent(&self, row: usize) {
        prefetch(&self.indptr[row..row + 2]);
    }
    fn prefetch_entries(&self, span: Range<usize>) {
        prefetch(&self.indices[span]);
    }
}

/// The columns, along the CSC mirror: T gathers along them, N on events scatters along them.
/// Their weights are read through the permutation, or, with `IN_ORDER`, from a copy already in
/// CSC order (`Csr::csc_weights`), in step with the rows as N's along the CSR rows.
struct Columns<'a, const IN_ORDER: bool>(&'a Analysis);

/// The columns of `a`'s CSC mirror, weights read through the permutation.
fn columns(a: &Csr) -> Columns<'_, false> {
    Columns(a.analysis())
}

impl<const IN_ORDER: bool> Lines for Columns<'_, IN_ORDER> {
    const SCATTERED_WEIGHTS: bool = !IN_ORDER;
    fn lines(&self) -> usize {
        self.0.colptr.len() - 1
    }
    fn offset(&self, col: usize) -> usize {
        self.0.colptr[col]
    }
    fn across(&self, pos: usize) -> usize {
        self.0.rowind[pos] as usize
    }
    fn across_run(&self, span: Range<usize>) -> impl Iterator<Item = usize> + '_ {
        self.0.rowind[span].iter().map(|&r| r as usize)
    }
    fn weight(&self, pos: usize) -> usize {
        if IN_ORDER {
            pos
        } else {
            self.0.perm[pos]
        }
    }
    fn prefetch_extent(&self, col: usize) {
        prefetch(&self.0.colptr[col..col + 2]);
    }
    fn prefetch_entries(&self, span: Range<usize>) {
        prefetch(&self.0.rowind[span.clone()]);
        if !IN_ORDER {
            prefetch(&self.0.perm[span]);
        }
    }
}

/// The output, written by several threads at rows no two of them share.
pub(super) struct SharedRows<T> {
    ptr: *mut T,
    len: usize,
}

// SAFETY: every thread writes its own range of output rows (see `gather`).
unsafe impl<T: Send> Send for SharedRows<T> {}
unsafe impl<T: Send> Sync for SharedRows<T> {}

impl<T> SharedRows<T> {
    pub(super) fn new(data: &mut [T]) -> SharedRows<T> {
        SharedRows { ptr: data.as_mut_ptr(), len: data.len() }
    }

    /// Elements `start..end` (clamped to the array).
    ///
    /// # Safety
    /// No other live slice may overlap them.
    #[allow(clippy::mut_from_ref)]
    pub(super) unsafe fn part(&self, start: usize, end: usize) -> &mut [T] {
        let (start, end) = (start.min(self.len), end.min(self.len));
        std::slice::from_raw_parts_mut(self.ptr.add(start), end.saturating_sub(start))
    }

    /// Writes element `i`.
    ///
    /// # Safety
    /// `i` is in the array, and no other thread reads or writes it meanwhile.
    pub(super) unsafe fn write(&self, i: usize, value: T) {
        debug_assert!(i < self.len);
        self.ptr.add(i).write(value)
    }
}

/// Where B is larger than the core's L2 (`input_blocks`): its rows in blocks of `rows`, each run
/// of `run` output rows walking its entries one block at a time, so that the rows met at random
/// come from L2 rather than L3 (bench/NOTES.md, "CPU: spmm with B's rows in L2-sized blocks").
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct InputBlocks {
    /// Input rows a block: half of L2.
    rows: usize,
    /// Output rows whose partial sums are kept between blocks: as many bytes as L2.
    run: usize,
}

impl InputBlocks {
    /// Blocks for input rows of `n` accumulators, sized by the core's L2.
    fn for_rows<A>(n: usize) -> InputBlocks {
        let row_bytes = (n * std::mem::size_of::<A>()).max(1);
        let l2 = super::l2_bytes();
        InputBlocks { rows: (l2 / 2 / row_bytes).max(1), run: (l2 / row_bytes).max(1) }
    }
}

/// Every output row as a sum over the entries it gathers, threads over row ranges of equal
/// entry counts (or the calling thread alone for a small call); `blocks`: through L2-sized
/// blocks of the input (each sum the same, bit for bit, where the lines are sorted).
fn gather<T: Float, G: Lines>(
    s: &Stream,
    g: &G,
    w: &EntryWeights<T>,
    input: &Input<T::Acc>,
    p: &Product,
    blocks: Option<InputBlocks>,
) -> Result<()>
where
    T::Acc: PerThread,
{
    let (y, n) = (p.y, p.y.cols);
    let blend = Blend::<T::Acc>::new(p.alpha, p.beta);
    // SAFETY: T is y's dtype (checked by the op); host memory, written at disjoint rows below.
    let out = unsafe { y.slice_mut::<T>() };
    let out = SharedRows::new(out);
    let (rows, entries) = (g.lines(), g.offset(g.lines()));
    let ranges = if (entries + rows) * n < CPU.inline_work_max { 1 } else { s.ctx.threads() * RANGES_PER_THREAD };
    let range = |t: usize| balanced(g, ranges, t);
    let task = |t: usize| {
        let rows = range(t);
        if rows.is_empty() {
            return;
        }
        // SAFETY: ranges are disjoint, so are the output rows [rows.start, rows.end) they write.
        let part = unsafe { out.part(rows.start * y.ld, (rows.end - 1) * y.ld + n) };
        let rows_out = RowsOut { first: rows.start, n, blend, out: part, ld: y.ld };
        match blocks {
            None => gather_rows::<T, G>(g, rows, w, input, rows_out),
            Some(blocks) => T::Acc::with_task_buffer(|sums| {
                CURSORS.with_borrow_mut(|cursors| {
                    let walk = BlockWalk { blocks, inputs: p.x.rows, sums, cursors };
                    gather_blocks::<T, G>(g, rows, w, input, rows_out, walk)
                })
            }),
        }
    };
    if ranges == 1 {
        task(0);
    } else {
        s.ctx.run(|| (0..ranges).into_par_iter().for_each(task));
    }
    Ok(())
}

/// Range `t` of `ranges` that split the output rows into runs of about equal entry counts.
pub(super) fn balanced<G: Lines>(g: &G, ranges: usize, t: usize) -> Range<usize> {
    let (rows, entries) = (g.lines(), g.offset(g.lines()));
    let first_row_from = |e: usize| {
        // the first row whose entries start at or after e
        let (mut lo, mut hi) = (0, rows);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if g.offset(mid) < e {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    };
    let bound = |t: usize| if t == ranges { rows } else { first_row_from(entries * t / ranges) };
    bound(t)..bound(t + 1)
}

/// A range's output rows: row `first + i` at `out[i * ld..][..n]`, written through `blend`.
struct RowsOut<'a, T: Float> {
    first: usize,
    n: usize,
    blend: Blend<T::Acc>,
    out: &'a mut [T],
    ld: usize,
}

impl<T: Float> RowsOut<'_, T> {
    /// Writes the sums of columns `p0..p0 + sums.len()` of output row `i`.
    #[inline(always)]
    fn store(&mut self, i: usize, p0: usize, sums: &[T::Acc]) {
        let row = &mut self.out[(i - self.first) * self.ld + p0..][..sums.len()];
        row.iter_mut().zip(sums).for_each(|(o, &v)| self.blend.store(o, v));
    }
}

/// Output rows `rows`, each an accumulation over its entries in panels of columns. The input
/// rows `AHEAD` entries on are fetched into the cache while this one adds: they are scattered
/// over the input, so the hardware cannot guess them.
#[multiversion(targets("x86_64+avx512f+avx512vl+avx2+fma", "x86_64+avx2+fma", "aarch64+neon"))]
fn gather_rows<T: Float, G: Lines>(
    g: &G,
    rows: Range<usize>,
    w: &EntryWeights<T>,
    input: &Input<T::Acc>,
    mut out: RowsOut<T>,
) {
    let limit = g.offset(rows.end);
    for i in rows {
        let span = g.offset(i)..g.offset(i + 1);
        for p0 in (0..out.n).step_by(PANEL) {
            let mut acc = [T::Acc::ZERO; PANEL];
            let sums = &mut acc[..PANEL.min(out.n - p0)];
            add_panel(g, span.clone(), limit, w, input, p0, sums);
            out.store(i, p0, sums);
        }
    }
}

/// `gather_blocks`' blocks and its per-thread buffers: the sums of a run's rows and their
/// cursors (the position of each row's first entry not yet added).
struct BlockWalk<'a, A> {
    blocks: InputBlocks,
    /// Rows of the input.
    inputs: usize,
    sums: &'a mut Vec<A>,
    cursors: &'a mut Vec<usize>,
}

/// `gather_rows` through blocks of the input rows: each run of output rows keeps its sums and
/// cursors in `walk`'s buffers; a block adds every row's entries up to the first one across
/// past the block. (The buffers are borrowed outside: closures here would be compiled without
/// the function's instruction set.)
#[multiversion(targets("x86_64+avx512f+avx512vl+avx2+fma", "x86_64+avx2+fma", "aarch64+neon"))]
fn gather_blocks<T: Float, G: Lines>(
    g: &G,
    rows: Range<usize>,
    w: &EntryWeights<T>,
    input: &Input<T::Acc>,
    mut out: RowsOut<T>,
    walk: BlockWalk<T::Acc>,
) {
    let (n, BlockWalk { blocks, inputs, sums, cursors }) = (out.n, walk);
    for first in rows.clone().step_by(blocks.run) {
        let run = first..(first + blocks.run).min(rows.end);
        sums.clear();
        sums.resize(run.len() * n, T::Acc::ZERO);
        cursors.clear();
        cursors.extend(run.clone().map(|i| g.offset(i)));
        for block in (0..inputs).step_by(blocks.rows) {
            let block_end = (block + blocks.rows).min(inputs);
            for (i, (cursor, row_sums)) in run.clone().zip(cursors.iter_mut().zip(sums.chunks_mut(n))) {
                let rest = *cursor..g.offset(i + 1);
                // the first panel finds where the row leaves the block, the others stop there
                let mut panels = (0..n).step_by(PANEL).zip(row_sums.chunks_mut(PANEL));
                let Some((_, first)) = panels.next() else { continue };
                let stop = match <&mut [T::Acc; PANEL]>::try_from(&mut *first) {
                    Ok(first) => {
                        let stop;
                        (*first, stop) = full_panel_in_block(g, rest, block_end, w, input, *first);
                        stop
                    }
                    Err(_) => {
                        let stop = rest.start + g.across_run(rest.clone()).take_while(|&r| r < block_end).count();
                        add_panel(g, rest.start..stop, stop, w, input, 0, first);
                        stop
                    }
                };
                for (p0, panel) in panels {
                    add_panel(g, *cursor..stop, stop, w, input, p0, panel);
                }
                *cursor = stop;
            }
        }
        for (i, row_sums) in run.zip(sums.chunks(n)) {
            for (p0, panel) in (0..n).step_by(PANEL).zip(row_sums.chunks(PANEL)) {
                out.store(i, p0, panel);
            }
        }
    }
}

thread_local! {
    /// `gather_blocks`' cursors, one per output row of a run.
    static CURSORS: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

/// Adds the entries at `span` into `sums`, columns `p0..p0 + sums.len()` (at most a panel) of
/// an output row; the input rows `AHEAD` entries on, below `limit`, are fetched meanwhile. A
/// full panel, and in a partial one its parts of 32, 16, 8 and 4 columns, add in vector registers
/// (`full_panel`), a pass each; the last few columns element by element (sums kept in memory
/// cost 40 % on an f64 row of 32: bench/NOTES.md, "CPU: spmm's gather on Zen 5").
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn add_panel<T: Float, G: Lines>(
    g: &G,
    span: Range<usize>,
    limit: usize,
    w: &EntryWeights<T>,
    input: &Input<T::Acc>,
    p0: usize,
    sums: &mut [T::Acc],
) {
    let mut done = registers::<T, G, PANEL>(g, &span, limit, w, input, p0, sums);
    done += registers::<T, G, 32>(g, &span, limit, w, input, p0 + done, &mut sums[done..]);
    done += registers::<T, G, 16>(g, &span, limit, w, input, p0 + done, &mut sums[done..]);
    done += registers::<T, G, 8>(g, &span, limit, w, input, p0 + done, &mut sums[done..]);
    done += registers::<T, G, 4>(g, &span, limit, w, input, p0 + done, &mut sums[done..]);
    let (sums, p0) = (&mut sums[done..], p0 + done);
    let width = sums.len();
    match width {
        0 => {}
        1 => {
            let mut sum = sums[0];
            for pos in span {
                fetch_ahead(g, w, input, limit, pos, p0..p0 + 1);
                sum = sum + w.at(g.weight(pos)) * input.row(g.across(pos))[p0];
            }
            sums[0] = sum;
        }
        _ => {
            for pos in span {
                fetch_ahead(g, w, input, limit, pos, p0..p0 + width);
                let (wj, src) = (w.at(g.weight(pos)), &input.row(g.across(pos))[p0..][..width]);
                sums.iter_mut().zip(src).for_each(|(a, &v)| *a = *a + wj * v);
            }
        }
    }
}

/// Asks for the input row's `columns` of the entry `AHEAD` after `pos` (and its weight where the
/// weights lie scattered), below `limit`. A function, not a closure: see `add_row`.
#[inline(always)]
fn fetch_ahead<T: Float, G: Lines>(
    g: &G,
    w: &EntryWeights<T>,
    input: &Input<T::Acc>,
    limit: usize,
    pos: usize,
    columns: Range<usize>,
) {
    if pos + AHEAD < limit {
        prefetch(&input.row(g.across(pos + AHEAD))[columns]);
        if G::SCATTERED_WEIGHTS {
            w.prefetch(g.weight(pos + AHEAD));
        }
    }
}

/// `full_panel` of the first `W` columns of `sums` where there are that many: the columns added.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn registers<T: Float, G: Lines, const W: usize>(
    g: &G,
    span: &Range<usize>,
    limit: usize,
    w: &EntryWeights<T>,
    input: &Input<T::Acc>,
    p0: usize,
    sums: &mut [T::Acc],
) -> usize {
    let Some(part) = sums.get_mut(..W) else { return 0 };
    let part: &mut [T::Acc; W] = part.try_into().expect("W columns");
    *part = full_panel(g, span.clone(), limit, w, input, p0, *part);
    W
}

/// `acc` plus the products of `W` columns from `p0` over the entries at `span`, indexed by
/// constants only, so that they stay in vector registers. The entries whose input row `AHEAD`
/// on is fetched run apart from the rest, so that neither loop tests for it.
#[inline(always)]
fn full_panel<T: Float, G: Lines, const W: usize>(
    g: &G,
    span: Range<usize>,
    limit: usize,
    w: &EntryWeights<T>,
    input: &Input<T::Acc>,
    p0: usize,
    mut acc: [T::Acc; W],
) -> [T::Acc; W] {
    let split = limit.saturating_sub(AHEAD).clamp(span.start, span.end);
    let fetched = span.start..split;
    let ahead = if split > span.start { span.start + AHEAD..split + AHEAD } else { split..split };
    for ((pos, r), next) in fetched.clone().zip(g.across_run(fetched)).zip(g.across_run(ahead)) {
        prefetch_panel(input.panel::<W>(next, p0));
        if G::SCATTERED_WEIGHTS && pos + WEIGHTS_AHEAD < limit {
            w.prefetch(g.weight(pos + WEIGHTS_AHEAD));
        }
        add_row(&mut acc, w.at(g.weight(pos)), input.panel(r, p0));
    }
    for (pos, r) in (split..span.end).zip(g.across_run(split..span.end)) {
        add_row(&mut acc, w.at(g.weight(pos)), input.panel(r, p0));
    }
    acc
}

/// `acc += wj * src`, column by column (a function, not a closure: a closure the compiler does
/// not inline is built without the caller's instruction set, as `full_panel::<32>`'s was).
#[inline(always)]
fn add_row<A: Acc, const W: usize>(acc: &mut [A; W], wj: A, src: &[A; W]) {
    for c in 0..W {
        acc[c] = acc[c] + wj * src[c];
    }
}

/// `full_panel` of columns `0..PANEL` over the entries at the start of `span` whose input rows
/// lie below `block_end`, and the position of the first one that does not: the walk and its
/// test in one loop, so that the loads of the indices overlap the adds.
#[inline(always)]
fn full_panel_in_block<T: Float, G: Lines>(
    g: &G,
    span: Range<usize>,
    block_end: usize,
    w: &EntryWeights<T>,
    input: &Input<T::Acc>,
    mut acc: [T::Acc; PANEL],
) -> ([T::Acc; PANEL], usize) {
    let mut pos = span.start;
    while pos < span.end {
        let r = g.across(pos);
        if r >= block_end {
            break;
        }
        if pos + AHEAD < span.end {
            let next = g.across(pos + AHEAD);
            if next < block_end {
                prefetch_panel(input.panel::<PANEL>(next, 0));
            }
        }
        if G::SCATTERED_WEIGHTS && pos + WEIGHTS_AHEAD < span.end {
            w.prefetch(g.weight(pos + WEIGHTS_AHEAD));
        }
        add_row(&mut acc, w.at(g.weight(pos)), input.panel(r, 0));
        pos += 1;
    }
    (acc, pos)
}

/// Asks for the cache line of one element (x86-64; elsewhere a no-op).
#[inline(always)]
fn prefetch_element<A>(element: &A) {
    // SAFETY: a prefetch of an address inside `element`; it reads nothing architecturally.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(element as *const A as *const i8)
    }
}

/// Asks for the cache lines of one panel (a fixed count: no loop left at run time).
#[inline(always)]
fn prefetch_panel<A, const W: usize>(panel: &[A; W]) {
    #[cfg(target_arch = "x86_64")]
    for line in 0..std::mem::size_of::<[A; W]>().div_ceil(64) {
        // SAFETY: a prefetch of an address inside `panel`; it reads nothing architecturally.
        unsafe {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            _mm_prefetch::<_MM_HINT_T0>((panel.as_ptr() as *const i8).add(line * 64))
        }
    }
}

/// Entries between the one being added and the one whose input row is fetched ahead.
const AHEAD: usize = 8;

/// Entries between the one being added and the one whose weight is fetched ahead: T reads
/// weights through the CSC permutation, anywhere in memory (L3 or DRAM, further than B's rows).
const WEIGHTS_AHEAD: usize = 32;

/// Live rows between the one being scattered and the one whose entries are fetched ahead.
const ROWS_AHEAD: usize = 4;

/// Asks for the cache lines of `data` (x86-64; elsewhere a no-op).
#[inline(always)]
pub(super) fn prefetch<A>(data: &[A]) {
    #[cfg(target_arch = "x86_64")]
    for line in (0..std::mem::size_of_val(data)).step_by(64) {
        // SAFETY: a prefetch of an address inside `data`; it reads nothing architecturally.
        unsafe {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            _mm_prefetch::<_MM_HINT_T0>((data.as_ptr() as *const i8).add(line))
        }
    }
}

// ---------------------------------------------------------------- scatter (T, live rows)

/// Live lines lie anywhere in the matrix: fetches the entries of live line `i` before they are
/// needed, and the extent of the one `ROWS_AHEAD` further on.
#[inline]
fn fetch_live_line<T: Float, G: Lines, A>(g: &G, w: &EntryWeights<T>, live: &LiveRows<A>, i: usize) {
    if let Some(&r) = live.rows.get(i) {
        let span = g.offset(r as usize)..g.offset(r as usize + 1);
        g.prefetch_entries(span.clone());
        if !G::SCATTERED_WEIGHTS {
            w.prefetch_range(span);
        }
    }
    if let Some(&r) = live.rows.get(i + ROWS_AHEAD) {
        g.prefetch_extent(r as usize);
    }
}

/// Whether the scatter can add into the output itself: beta = 1 keeps every output value, and
/// the output (f32, f64) has the accumulator's precision.
fn adds_in_place(p: &Product) -> bool {
    p.beta == 1.0 && p.alpha.is_finite() && matches!(p.y.dtype, DType::F32 | DType::F64)
}

/// T with beta = 1 on f32/f64 outputs, on the calling thread: each entry of a live row adds
/// alpha·w·x straight into its output element, as a simulator adds synaptic currents (one
/// pass, no accumulator; rows ascending, each addition rounded in the output's precision).
fn scatter_in_place<T: Float, G: Lines>(g: &G, live: &LiveRows<T::Acc>, p: &Product) -> Result<()> {
    // SAFETY: T is y's dtype (checked by the op); host memory.
    let out = unsafe { p.y.slice_mut::<T>() };
    if std::mem::size_of_val(out) > CACHED_OUTPUT_BYTES || G::SCATTERED_WEIGHTS {
        add_in_place::<T, G, true>(g, live, p, out)
    } else {
        add_in_place::<T, G, false>(g, live, p, out)
    }
}

/// Outputs up to this size stay in a core's cache between calls, so `scatter_in_place` asks for
/// none of their elements ahead: 4,000 neurons x 80 (16 KB of output), one thread, 3.5 ->
/// 2.2 µs a call (bench/NOTES.md).
const CACHED_OUTPUT_BYTES: usize = 256 << 10;

/// scatter_in_place's loop, `FETCH`: the output element (and a scattered weight) `AHEAD`
/// entries on asked for while one adds. The weight of an entry is read by a function chosen
/// once per call (one scalar, or the entry's own), so that the loop over a line holds no test
/// of the weights' kind nor of the input's width (with `each_entry`: 400,000 neurons x 80,
/// 0.5 % spiking, one thread, 370 -> 270 µs a call; bench/NOTES.md). Along the CSR rows (T) it
/// holds no bounds test either: the 4,000-neuron step 1.3-1.4 (or 1.8 in some builds) -> 1.0 µs,
/// 400,000 243-250 -> 216-220 µs. Along the CSC mirror (N on events) the tests stay: without them that
/// loop measured 6 % slower.
fn add_in_place<T: Float, G: Lines, const FETCH: bool>(
    g: &G,
    live: &LiveRows<T::Acc>,
    p: &Product,
    out: &mut [T],
) -> Result<()> {
    let w = EntryWeights::<T>::of(p.a);
    match w {
        EntryWeights::Homo(h) => add_lines::<T, G, FETCH>(g, live, p, out, &w, |_| h),
        EntryWeights::Hetero(ws) => add_lines::<T, G, FETCH>(g, live, p, out, &w, |pos| {
            if G::SCATTERED_WEIGHTS {
                ws[g.weight(pos)].to_acc()
            } else {
                // SAFETY: along the CSR rows an entry's weight is at its position, below nnz =
                // ws.len(): the op validated the structure (`Csr::expect_valid`).
                unsafe { ws.get_unchecked(pos) }.to_acc()
            }
        }),
    }
    Ok(())
}

/// add_in_place for one kind of weights: `weight(pos)` is the weight of the entry at `pos`.
#[inline(always)]
fn add_lines<T: Float, G: Lines, const FETCH: bool>(
    g: &G,
    live: &LiveRows<T::Acc>,
    p: &Product,
    out: &mut [T],
    w: &EntryWeights<T>,
    weight: impl Fn(usize) -> T::Acc,
) {
    let (ld, n, alpha) = (p.y.ld, live.n, T::Acc::cast(p.alpha));
    for (i, (&r, values)) in live.rows.iter().zip(live.values.chunks(n.max(1))).enumerate() {
        fetch_live_line(g, w, live, i + ROWS_AHEAD);
        let span = g.offset(r as usize)..g.offset(r as usize + 1);
        if n == 1 {
            let v = values[0];
            each_entry::<T, G, FETCH>(g, w, span, out, ld, |out, pos, c| {
                let o = if G::SCATTERED_WEIGHTS {
                    &mut out[c * ld]
                } else {
                    // SAFETY: c is a validated column index, below k, and the op checked that
                    // the output has k rows of ld elements.
                    unsafe { out.get_unchecked_mut(c * ld) }
                };
                *o = T::from_acc(o.to_acc() + alpha * weight(pos) * v);
            });
        } else {
            each_entry::<T, G, FETCH>(g, w, span, out, ld, |out, pos, c| {
                let aw = alpha * weight(pos);
                let dst = &mut out[c * ld..][..n];
                dst.iter_mut().zip(values).for_each(|(o, &v)| *o = T::from_acc(o.to_acc() + aw * v));
            });
        }
    }
}

/// `body(out, pos, c)` for each entry of `span` (c: the index across), `FETCH`: with the output
/// element (and a scattered weight) `AHEAD` entries on asked for first. The entries with one
/// ahead run apart from the last `AHEAD`, so that neither loop tests for a missing one.
#[inline(always)]
fn each_entry<T: Float, G: Lines, const FETCH: bool>(
    g: &G,
    w: &EntryWeights<T>,
    span: Range<usize>,
    out: &mut [T],
    ld: usize,
    mut body: impl FnMut(&mut [T], usize, usize),
) {
    let split = if FETCH { span.end.saturating_sub(AHEAD).max(span.start) } else { span.start };
    let ahead = if split > span.start { span.start + AHEAD..split + AHEAD } else { split..split };
    for ((pos, c), next) in (span.start..split).zip(g.across_run(span.start..split)).zip(g.across_run(ahead)) {
        prefetch_element(&out[next * ld]);
        if G::SCATTERED_WEIGHTS {
            w.prefetch(g.weight(pos + AHEAD));
        }
        body(out, pos, c);
    }
    for (pos, c) in (split..span.end).zip(g.across_run(split..span.end)) {
        body(out, pos, c);
    }
}

/// T on the calling thread, touching only the entries of live rows. Each adds into the
/// accumulator row of its column (rows ascending, the order in which the CSC gather sums), then
/// the output is written from the accumulator, which is left zero again: with beta = 1 only the
/// rows those entries reach (a row that summed to zero keeps its value, as `alpha·0 + y` would),
/// else every row. Accumulator rows `AHEAD` entries on are fetched while one adds.
fn scatter<T: Float, G: Lines>(g: &G, live: &LiveRows<T::Acc>, acc: &mut Vec<T::Acc>, p: &Product) -> Result<()> {
    let (y, n, outputs) = (p.y, live.n, p.y.rows);
    let w = EntryWeights::<T>::of(p.a);
    let blend = Blend::<T::Acc>::new(p.alpha, p.beta);
    if acc.len() < outputs * n {
        acc.resize(outputs * n, T::Acc::ZERO);
    }
    let spans = || live.rows.iter().map(|&r| g.offset(r as usize)..g.offset(r as usize + 1));
    for (i, (span, values)) in spans().zip(live.values.chunks(n.max(1))).enumerate() {
        fetch_live_line(g, &w, live, i + ROWS_AHEAD);
        for pos in span.clone() {
            if pos + AHEAD < span.end {
                prefetch(&acc[g.across(pos + AHEAD) * n..][..n]);
            }
            let (c, wj) = (g.across(pos), w.at(g.weight(pos)));
            if n == 1 {
                acc[c] = acc[c] + wj * values[0];
            } else {
                acc[c * n..][..n].iter_mut().zip(values).for_each(|(s, &v)| *s = *s + wj * v);
            }
        }
    }
    // SAFETY: T is y's dtype (checked by the op); host memory.
    let out = unsafe { y.slice_mut::<T>() };
    // with beta = 1 only the rows the live entries reach are written; else all of them
    let every_row = p.beta != 1.0 || !p.alpha.is_finite();
    let reached = spans().flatten().map(|pos| g.across(pos));
    let rows: &mut dyn Iterator<Item = usize> = if every_row { &mut (0..outputs) } else { &mut { reached } };
    if n == 1 {
        // one column, the common spiking step: plain elements, no slices
        for c in rows {
            let sum = std::mem::replace(&mut acc[c], T::Acc::ZERO);
            if every_row || sum != T::Acc::ZERO {
                blend.store(&mut out[c * y.ld], sum);
            }
        }
        return Ok(());
    }
    for c in rows {
        let sums = &mut acc[c * n..][..n];
        if every_row || sums.iter().any(|&v| v != T::Acc::ZERO) {
            out[c * y.ld..][..n].iter_mut().zip(sums.iter()).for_each(|(o, &v)| blend.store(o, v));
            sums.fill(T::Acc::ZERO);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sorted random CSR over k columns: empty rows, a long row, duplicate columns.
    fn pattern(m: usize, k: usize, next: &mut impl FnMut(usize) -> usize) -> (Vec<i64>, Vec<i32>) {
        let (mut indptr, mut indices) = (vec![0i64], Vec::new());
        for i in 0..m {
            let len = match i % 7 {
                0 => 0,
                3 => 3 * k,
                _ => next(12),
            };
            let mut row: Vec<i32> = (0..len).map(|_| next(k) as i32).collect();
            row.sort_unstable();
            indices.extend(row);
            indptr.push(indices.len() as i64);
        }
        (indptr, indices)
    }

    /// The block walk sums every output in the order `gather_rows` does, so with sorted rows
    /// they agree bit for bit, for blocks and runs of any size and any panel layout.
    #[test]
    fn gather_blocks_is_gather_rows_bit_for_bit() {
        let mut next = super::super::test_rng(0x2545_f491_4f6c_dd1du64);
        let (m, k) = (23, 17);
        let (indptr, indices) = pattern(m, k, &mut next);
        let view = CsrView { m, k, indptr: &indptr, indices: &indices };
        let weights: Vec<f32> = (0..indices.len()).map(|_| next(1000) as f32 / 37.0 - 9.0).collect();
        let w = EntryWeights::<f32>::Hetero(&weights);
        for n in [1, 3, 128, 130, 260] {
            let b: Vec<f32> = (0..k * n).map(|_| next(1000) as f32 / 13.0 - 30.0).collect();
            let input = Input { data: &b, ld: n };
            let ld = n + 2;
            let start: Vec<f32> = (0..m * ld).map(|_| next(100) as f32).collect();
            let mut want = start.clone();
            fn rows_out(out: &mut [f32], n: usize, ld: usize) -> RowsOut<'_, f32> {
                RowsOut { first: 0, n, blend: Blend::new(1.5, 0.25), out, ld }
            }
            gather_rows::<f32, _>(&view, 0..m, &w, &input, rows_out(&mut want, n, ld));
            for (rows, run) in [(1, 1), (3, 5), (4, 64), (k, m), (100, 2)] {
                let mut got = start.clone();
                let (mut sums, mut cursors) = (Vec::new(), Vec::new());
                let walk =
                    BlockWalk { blocks: InputBlocks { rows, run }, inputs: k, sums: &mut sums, cursors: &mut cursors };
                gather_blocks::<f32, _>(&view, 0..m, &w, &input, rows_out(&mut got, n, ld), walk);
                let same = got.iter().zip(&want).all(|(g, w)| g.to_bits() == w.to_bits());
                assert!(same, "n {n}, blocks of {rows} rows, runs of {run}");
            }
        }
    }
}
