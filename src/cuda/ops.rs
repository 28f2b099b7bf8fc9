//! One launch sequence per operation of SPEC §3, on the caller's stream. Arguments were checked
//! by `core::ops`; nothing here allocates or waits on the host once a matrix is analysed.

use super::driver::call;
use super::kernels::*;
use super::launch::{Args, Grid, TensorMap, MAX_GRID_Y, THREADS};
use super::{parts, scratch, tile_counter};
use crate::core::bsr::Bsr;
use crate::core::context::Stream;
use crate::core::csr::{Csr, Profile, Weights};
use crate::core::dense::Dense;
use crate::core::ops::Product;
use crate::core::plan::{
    self, can_scatter, plan_name, Algorithm, Bsrmm, Compact, CsrPlasticity, DenseMm, SpmmN, SpmmT, Yw2y,
};
use crate::core::spikes::{SpikeList, Spikes};
use crate::core::InputKind;
use crate::dtype::DType;
use crate::error::{Error, Result};
use cudarc::driver::sys;

/// The error of a CPU algorithm reaching the GPU (`plan::decide` lets none through).
fn cpu_only(alg: impl Algorithm) -> Error {
    Error::internal(format!("{} runs on the CPU only", plan_name(alg.plan())))
}

/// The structure and weights of a CSR matrix as kernel arguments.
fn csr_args(a: &Csr) -> Args {
    let (weights, homo) = match &a.weights {
        Weights::Homo(v) => (0, *v),
        Weights::Hetero(w) => (w.buf.addr(), 0.0),
    };
    Args {
        indptr: a.indptr.addr(),
        indices: a.indices.addr(),
        weights,
        homo,
        m: a.m as i64,
        k: a.k as i64,
        nnz: a.nnz as i64,
        idx64: (a.index == DType::I64) as i64,
        ..Args::default()
    }
}

/// Adds the cached CSC mirror (built now if it is not yet).
fn with_csc(s: &Stream, a: &Csr, args: Args) -> Result<Args> {
    let csc = a.device_analysis(s)?;
    Ok(Args { colptr: csc.colptr.addr(), rowind: csc.rowind.addr(), perm: csc.perm.addr(), ..args })
}

/// The CSC mirror for a product that walks only the mirror and reads the weights, with
/// analysis' CSC-ordered copy of the weights and its stale flag where the host has seen no
/// write since: the kernel (`in_csc_order`) then reads a column's weights as one run instead of
/// one random sector each, unless the flag says a write came after (a graph captured earlier).
fn with_csc_weights(s: &Stream, a: &Csr, args: Args) -> Result<Args> {
    let args = with_csc(s, a, args)?;
    Ok(match a.csc_weights_on_device(a.device_analysis(s)?) {
        Some(copy) => Args { csc_weights: copy.weights.addr(), csc_stale: copy.stale.addr(), ..args },
        None => args,
    })
}

/// T's gather, on the weights' CSC-ordered copy where `with_csc_weights` passed one.
fn t_gather(args: &Args, vector: bool) -> Family {
    match (args.csc_weights != 0, vector) {
        (false, false) => SPMM_T_GATHER,
        (false, true) => SPMV_T_GATHER,
        (true, false) => SPMM_T_GATHER_CSC_COPY,
        (true, true) => SPMV_T_GATHER_CSC_COPY,
    }
}

/// The kernel arguments of a product.
fn product_args(p: &Product) -> Args {
    let Product { kind, alpha, a, x, beta, y } = *p;
    Args {
        x: x.buf.addr(),
        ldx: x.ld as i64,
        y: y.buf.addr(),
        ldy: y.ld as i64,
        n: y.cols as i64,
        events: (kind == InputKind::Events) as i64,
        alpha,
        beta,
        ..csr_args(a)
    }
}

/// A spike list as the input of a kernel (common.cuh, `SpikeList`): its indices in x, the
/// capacity in `lines`, the device-side count in `spike_count`.
fn list_args(list: SpikeList, args: Args) -> Args {
    Listed { indices: list.indices.buf.addr(), count: list.count.buf.addr(), capacity: list.capacity() }
        .as_spike_list(args)
}

/// An event vector as the input of a kernel: its elements in x (stride ldx), read as events.
fn event_args(x: &Dense, args: Args) -> Args {
    Args { x: x.buf.addr(), ldx: x.ld as i64, events: 1, ..args }
}

/// A list of indices on the device (int32) with its device-side count: a caller's spike list,
/// or the active rows of an event array that `list_event_columns` wrote (one list a column,
/// `capacity` apart, their counts side by side).
#[derive(Clone, Copy)]
struct Listed {
    indices: u64,
    count: u64,
    capacity: usize,
}

impl Listed {
    /// As a kernel's spike-list input (x holds the indices).
    fn as_spike_list(self, args: Args) -> Args {
        Args { x: self.indices, ldx: 1, lines: self.capacity as i64, spike_count: self.count, ..args }
    }

    /// Beside the event array it lists (x stays the events; kernels read `live`).
    fn beside(self, args: Args) -> Args {
        Args { live: self.indices, lines: self.capacity as i64, spike_count: self.count, ..args }
    }
}

/// Warps for the warp-per-line kernels on a spike list: a warp for each run of 32 entries
/// (`runs` a line) of the lines listed at the design rate, one index of the list's capacity in
/// `LIST_DESIGN_RATE_DIV`, up to `per_sm` warps an SM. The kernels share them among the listed
/// lines (the count is on the device) and loop past the grid, so more spikes than the design
/// rate cost time, never correctness. A full GPU for every list measured slower on small
/// networks: 4.46 against 3.82 µs at 4,000 neurons (bench/NOTES.md, "Spike lists").
fn list_warps(gpu: &super::Gpu, capacity: usize, per_sm: u64, runs: u64) -> Grid {
    let want = (capacity as u64 * runs).div_ceil(LIST_DESIGN_RATE_DIV);
    Grid::warps(want.clamp(1, gpu.multiprocessors as u64 * per_sm))
}

/// A spike list's capacity over the lines it is sized for: a list of capacity n is launched as
/// if n / 16 lines spike. A grid's blocks cost a chained kernel by themselves (0.71 graph µs at
/// 1 block, 1.18 at 528), and lists are sized for the worst step, not the usual one: the whole
/// step 4,000 10.89 -> 10.56 graph µs on the H200 at 16, the rest of the bench within noise;
/// at 32 plasticity pre on a list of 500 of 5,000 rows slows 3.1 -> 3.7 (bench/NOTES.md,
/// "Spike-list grids sized by a design rate").
const LIST_DESIGN_RATE_DIV: u64 = 16;

/// Runs of 32 entries in a line of the mean length (`nnz` entries over `lines` lines).
fn line_runs(nnz: usize, lines: usize) -> u64 {
    ((nnz / lines.max(1)) as u64).div_ceil(32).max(1)
}

/// Warps per SM of the spmv launches on spike lists (a full SM holds 64): half the GPU. Their
/// lines are short (80-200 entries in the bench), so a line needs few warps, and warps past that
/// only add blocks and reads of the count: H200 graph µs at 64 / 32 warps an SM, N on a list of
/// 100 of 10,000 columns 3.57 / 3.26, of 2,000 of 400,000 6.37 / 6.28, T 400,000 alike
/// (bench/NOTES.md, "Warps of the spike-list launches").
const SPMV_LIST_WARPS_PER_SM: u64 = 32;
/// The same for CSR plasticity on a spike list: pre on a full GPU (its rows of 1,000 entries
/// at 100,000² want every warp: 8.6 µs at 64, 9.2 at 32, 9.5 at 256), post on four times that,
/// in waves: its weights are reached through the CSC permutation, a scattered read-modify-write
/// each, which more warps in flight serve faster (100,000² list 68.1 -> 64.9 µs at 256).
const PRE_LIST_WARPS_PER_SM: u64 = 64;
const POST_LIST_WARPS_PER_SM: u64 = 256;

/// Blocks for the warp-per-line kernels on an input vector: each block takes a run of the
/// `lines` candidates and shares its live lines among its 8 warps (kernels/common.cuh,
/// each_line), so that a few live lines still get many warps each. Four waves of blocks (runs
/// of 8 candidates at least) measured best of 1-4 waves and runs of 1-16: plasticity pre on
/// 100,000² 13.2 µs against 15.7 with one wave (bench/NOTES.md, "Plasticity").
fn line_blocks(gpu: &super::Gpu, lines: usize) -> Grid {
    let blocks = (lines as u64).div_ceil(LINE_RUN_MIN).min(gpu.multiprocessors as u64 * LINE_RUN_BLOCKS_PER_SM);
    Grid::new((blocks, 1), (LINES_THREADS, 1))
}

/// Blocks of 8 warps, one warp per item (and `WARP_COLS` columns when n > 1).
fn warp_grid(items: usize, n: usize) -> Grid {
    match n {
        1 => Grid::warps(items as u64),
        _ => Grid::warps_by_columns(items as u64, n as u64, WARP_COLS),
    }
}

/// Columns of B and C one warp covers in the gather kernels (kernels/sparse.cu).
const WARP_COLS: u64 = 64;

/// Shape of the event-driven launches (kernels/active_lines.cuh).
const LINES_THREADS: u32 = 256;
/// Candidate lines a warp takes at a time (as kernels/sparse.cu instantiates them).
const WARP_LINES: u64 = 32;
/// Blocks per SM at most (their warps stride over the candidates beyond). More than stay
/// resident (6, kernels/active_lines.cuh): a warp's chunks run in series, so more warps with
/// fewer chunks each win even in waves. spmv T on 400,000 events (0.5 %), graph µs on the H200:
/// 5 blocks an SM 9.2, 8 7.4, 16 (a chunk a warp) 7.1 (bench/NOTES.md, "two chunks a warp").
const LINE_BLOCKS_PER_SM: u64 = 16;
/// Candidates per block at least, and blocks per SM at most, of line_blocks.
const LINE_RUN_MIN: u64 = 8;
const LINE_RUN_BLOCKS_PER_SM: u64 = 32;

/// Outputs up to this many bytes are zeroed by the scaling kernel where launches overlap
/// (programmatic launch), beyond it by a memset: the kernel's launch hides behind its
/// neighbours' and a memset node stops that. Measured, whole step graph-replayed: 4,000 neurons
/// (16 KB) 13.5 -> 12.7 µs with the kernel, 400,000 (1.6 MB) 38.0 -> 38.4 (bench/NOTES.md,
/// "Programmatic dependent launch").
const ZERO_BY_KERNEL_MAX: usize = 64 << 10;

/// y = beta·y over `rows` x `cols` elements of `dtype` (skipped when beta = 1): the pass before
/// a scatter's atomics. beta = 0 on a large contiguous y is a memset (a memset node in a
/// graph): 1 µs faster than the scaling kernel on 400,000 outputs (bench/NOTES.md, "Spike
/// lists").
fn scale_output(s: &Stream, args: &Args, (rows, cols): (usize, usize), dtype: DType) -> Result<()> {
    if args.beta == 1.0 {
        return Ok(());
    }
    let (gpu, stream) = parts(s)?;
    let bytes = rows * cols * dtype.size();
    if args.beta == 0.0 && (args.ldy as usize == cols || rows <= 1) && !scaled_by_kernel(gpu, args, bytes) {
        return zero_device(gpu, stream, args.y, bytes);
    }
    launch_scale(s, SCALE, args, (rows, cols), dtype, Grid::strided(gpu, (rows * cols) as u64))
}

/// y = beta·y over `rows` x `cols` elements of `dtype` by the scaling kernel `family` on `grid`:
/// SCALE, or SCALE_OPENER, which lets the scatter after it launch at once (`scatter_after_scale`).
fn launch_scale(
    s: &Stream,
    family: Family,
    args: &Args,
    (rows, cols): (usize, usize),
    dtype: DType,
    grid: Grid,
) -> Result<()> {
    let (gpu, stream) = parts(s)?;
    let scale = Args { m: rows as i64, n: cols as i64, ..*args };
    gpu.launch(stream, gpu.kernel(family, Some(dtype), None)?, grid, &scale)
}

/// Whether y (`bytes` of it) is scaled by the scaling kernel (where beta is not 1): where
/// launches overlap and y is small (ZERO_BY_KERNEL_MAX).
fn scaled_by_kernel(gpu: &super::Gpu, args: &Args, bytes: usize) -> bool {
    opens_with_scaling(gpu, args) && bytes <= ZERO_BY_KERNEL_MAX
}

/// Blocks an SM of the scaling that opens a scatter (`open_with_scaling`), striding over y: the
/// scatter's blocks, launched at once, find room beside them and load while y is scaled. A full
/// grid (a thread an output: 1,563 blocks at 400,000) held the SMs until it drained, and the
/// memset node was the better barrier past 64 KB (bench/NOTES.md, "The scaling as opener at any
/// length of y"); with a block an SM, spmv T and N on a 400,000 spike list 5.2 -> 4.2 and 6.4 ->
/// 5.4 graph µs (H200, "Openers a block an SM").
const OPENER_BLOCKS_PER_SM: u64 = 1;

/// Whether a scatter's call opens with the scaling kernel (beta is not 1; launches overlap).
fn opens_with_scaling(gpu: &super::Gpu, args: &Args) -> bool {
    args.beta != 1.0 && gpu.programmatic_launch
}

/// y = beta·y over the vector y (`rows` of `dtype`) by the kernel that lets the scatter after it
/// launch at once (SCALE_OPENER), OPENER_BLOCKS_PER_SM blocks an SM.
fn open_with_scaling(s: &Stream, args: &Args, rows: usize, dtype: DType) -> Result<()> {
    let gpu = parts(s)?.0;
    let strided = Grid::strided(gpu, rows as u64);
    let blocks = strided.blocks.0.min(gpu.multiprocessors as u64 * OPENER_BLOCKS_PER_SM);
    launch_scale(s, SCALE_OPENER, args, (rows, 1), dtype, Grid::new((blocks, 1), strided.threads))
}

/// One event-driven launch over the live lines among `lines` candidates (spmv T on an event
/// vector of `input`), adding into `y` (`len` elements of `dtype`) after scaling it by beta.
fn active_lines(s: &Stream, input: Option<DType>, args: Args, lines: usize, len: usize, dtype: DType) -> Result<()> {
    let gpu = parts(s)?.0;
    let block_lines = WARP_LINES * (LINES_THREADS / 32) as u64;
    let blocks = (lines as u64).div_ceil(block_lines).min(gpu.multiprocessors as u64 * LINE_BLOCKS_PER_SM);
    let grid = Grid::new((blocks, 1), (LINES_THREADS, 1));
    let args = Args { lines: lines as i64, ..args };
    scatter_after_scale(s, [(SPMV_SCATTER, input), (SPMV_SCATTER_AFTER_SCALE, input)], grid, &args, (len, dtype))
}

/// spmv (n = 1) and spmm, N, with the algorithm the plan chose.
pub fn spmm_n(s: &Stream, alg: SpmmN, profile: &Profile, p: &Product) -> Result<()> {
    let (gpu, stream) = parts(s)?;
    let (a, t, input, n) = (p.a, Some(p.a.dtype), Some(p.x.dtype), p.y.cols);
    let args = product_args(p);
    let vector = n == 1;
    match alg {
        SpmmN::RowRanges | SpmmN::InputBlocks | SpmmN::Reference => Err(cpu_only(alg)),
        SpmmN::CscScatter => csc_events(s, p, args),
        SpmmN::OutputSlices => column_slices(s, p.a, p.x.dtype, args),
        SpmmN::ThreadPerRow => {
            let grid = Grid::new(((a.m as u64).div_ceil(THREADS as u64), 1), (THREADS, 1));
            gpu.launch(stream, gpu.kernel(SPMM_N_THREAD, t, input)?, grid, &args)
        }
        SpmmN::WarpPerRow => {
            let family = if vector { SPMV_N_WARP } else { SPMM_N_WARP };
            gpu.launch(stream, gpu.kernel(family, t, input)?, warp_grid(a.m, n), &args)
        }
        SpmmN::EventBits => event_bits(s, SPMM_N_BITS, p, args, a.m),
        SpmmN::NonzeroLists => nonzero_lists(s, (SPMM_N_LISTS, SPMM_N_WARP), p, args, a.m),
        SpmmN::LengthClasses => {
            let [thread, warp, block] = profile.class_rows.map(|r| r as u64);
            let warps = THREADS as u64 / 32;
            let args = Args {
                order: profile.class_order.addr(),
                class_rows: profile.class_rows.map(|r| r as i64),
                chunks: profile.long_chunks.addr(),
                n_chunks: profile.n_chunks as i64,
                ..args
            };
            let tiles = (n as u64).div_ceil(WARP_COLS);
            // f32/f64 cut long rows into chunks that add into C, scaled by beta first
            let long_blocks = if can_scatter(a.dtype) {
                let scale = Grid::new(((n as u64).div_ceil(THREADS as u64), block), (THREADS, 1));
                gpu.launch(stream, gpu.kernel(SCALE_LONG_ROWS, t, None)?, scale, &args)?;
                profile.n_chunks as u64
            } else {
                block
            };
            // the block counts of each class, as kernels/sparse.cu lays them out
            let (family, blocks) = if vector {
                (SPMV_N_CLASSES, long_blocks + warp.div_ceil(warps) + thread.div_ceil(THREADS as u64))
            } else {
                (SPMM_N_CLASSES, long_blocks + (thread + warp).div_ceil(warps))
            };
            gpu.launch(stream, gpu.kernel(family, t, input)?, Grid::new((blocks, tiles), (THREADS, 1)), &args)
        }
    }
}

/// spmv (n = 1) and spmm, T, with the algorithm the plan chose.
pub fn spmm_t(s: &Stream, alg: SpmmT, p: &Product) -> Result<()> {
    let (gpu, stream) = parts(s)?;
    let (a, t, input, n) = (p.a, Some(p.a.dtype), Some(p.x.dtype), p.y.cols);
    let args = product_args(p);
    let vector = n == 1;
    match alg {
        SpmmT::InputBlocks | SpmmT::Reference => Err(cpu_only(alg)),
        SpmmT::RowWarpScatter => {
            scale_output(s, &args, (a.k, 1), a.dtype)?;
            gpu.launch(stream, gpu.kernel(SPMV_ROW_WARP_SCATTER, t, input)?, line_blocks(gpu, a.m), &args)
        }
        SpmmT::Scatter if vector => active_lines(s, input, args, a.m, a.k, a.dtype),
        SpmmT::Scatter => {
            scale_output(s, &args, (a.k, n), a.dtype)?;
            let grid = Grid::warps_by_columns(a.m as u64, n as u64, 32);
            gpu.launch(stream, gpu.kernel(SPMM_SCATTER, t, input)?, grid, &args)
        }
        SpmmT::EventBits => event_bits(s, SPMM_T_BITS, p, with_csc_weights(s, a, args)?, a.k),
        SpmmT::NonzeroLists => {
            let args = with_csc_weights(s, a, args)?;
            nonzero_lists(s, (SPMM_T_LISTS, t_gather(&args, false)), p, args, a.k)
        }
        SpmmT::OutputSlices => output_slices_on_events(s, p, args),
        SpmmT::CscGather => {
            let args = with_csc_weights(s, a, args)?;
            gpu.launch(stream, gpu.kernel(t_gather(&args, vector), t, input)?, warp_grid(a.k, n), &args)
        }
    }
}

/// Columns of C a warp covers in the event-bits kernels, and the 32-bit words of packed
/// events per row of B they read (kernels/sparse.cu, "spmm on events").
const BITS_COLS: u64 = 128;
const BITS_WORDS: u64 = 4;

/// How a two-launch spmm rewrites B first: `kernel` runs a warp per (row of B, one of `tiles`
/// tiles of columns) and writes `row_bytes` bytes a row into the stream's scratch, which the
/// product reads with `ldaux` as its row stride.
struct PackedB {
    kernel: Family,
    tiles: u64,
    ldaux: u64,
    row_bytes: u64,
}

/// spmm in two launches: B rewritten into the stream's scratch by `packed`, then `family` with a
/// warp per output line (`lines` of them) and `warp_cols` columns, blending into C (no beta pass).
fn through_packed_b(
    s: &Stream,
    p: &Product,
    args: Args,
    packed: PackedB,
    (family, lines, warp_cols): (Family, usize, u64),
) -> Result<()> {
    let (gpu, stream) = parts(s)?;
    let (b_rows, n) = (p.x.rows as u64, p.y.cols as u64);
    let scratch = scratch(s, (b_rows * packed.row_bytes) as usize)?; // held until both launches are queued
    let pack = rewrite_b(p, &args, scratch.ptr, packed.ldaux);
    gpu.launch(stream, gpu.kernel(packed.kernel, Some(p.x.dtype), None)?, Grid::warps(b_rows * packed.tiles), &pack)?;
    gpu.launch(
        stream,
        gpu.kernel(family, Some(p.a.dtype), None)?,
        Grid::warps_by_columns(lines as u64, n, warp_cols),
        &Args { aux: scratch.ptr, ldaux: packed.ldaux as i64, ..args },
    )
}

/// The arguments of a pass that rewrites B (`args.x`, p.x.rows x p.y.cols) into `out`, `ldaux`
/// units a row.
fn rewrite_b(p: &Product, args: &Args, out: u64, ldaux: u64) -> Args {
    Args {
        x: args.x,
        ldx: args.ldx,
        y: out,
        ldaux: ldaux as i64,
        lines: p.x.rows as i64,
        n: p.y.cols as i64,
        ..Args::default()
    }
}

/// spmm on events: B's events packed to bits, then a warp per output line and 128 columns (64
/// where n <= 64: quarter-warps per entry).
fn event_bits(s: &Stream, family: Family, p: &Product, args: Args, lines: usize) -> Result<()> {
    let n = p.y.cols as u64;
    let tiles = n.div_ceil(BITS_COLS);
    let words = tiles * BITS_WORDS;
    let packed = PackedB { kernel: PACK_EVENTS, tiles, ldaux: words, row_bytes: words * 4 };
    let warp_cols = if n <= BITS_COLS / 2 { BITS_COLS / 2 } else { BITS_COLS };
    through_packed_b(s, p, args, packed, (family, lines, warp_cols))
}

/// Columns of B one list covers, and the (column, value) pairs of its slot, a pair twice the
/// dtype's width (kernels/sparse.cu, "spmm on mostly-zero floats").
const NONZERO_COLS: u64 = 128;
const NONZERO_SLOT_PAIRS: u64 = 32;

/// Blocks of `list_nonzeros` at most: each leaves a count that every block of the lists'
/// product sums (kernels/sparse.cu, `lists_pay`); 1,024 of 8 warps fill an H100 (132 SMs).
const LIST_BLOCKS_MAX: u64 = 1024;

/// spmm on floats in three launches: B's rows listed as their nonzeros per 128 columns,
/// counting them, then the lists' product (`lists`, one wave of blocks whose warps
/// stride over the output lines, 128 columns each) and the gather (`gather`, as its own plan
/// launches it), of which the device runs one: the lists where B is mostly zeros, else the
/// gather (the other returns at once; the lists leave their choice for the gather after the
/// counts).
fn nonzero_lists(s: &Stream, (lists, gather): (Family, Family), p: &Product, args: Args, lines: usize) -> Result<()> {
    let (gpu, stream) = parts(s)?;
    let (t, n) = (Some(p.a.dtype), p.y.cols as u64);
    let tiles = n.div_ceil(NONZERO_COLS);
    let slots = p.x.rows as u64 * tiles;
    let blocks = slots.div_ceil(8).clamp(1, LIST_BLOCKS_MAX);
    let slot_bytes = slots * NONZERO_SLOT_PAIRS * 2 * p.x.dtype.size() as u64;
    let scratch = scratch(s, (slot_bytes + 4 * (blocks + 1)) as usize)?; // held until the launches are queued
    let counts = scratch.ptr + slot_bytes;
    let list = Args { out2: counts, ..rewrite_b(p, &args, scratch.ptr, tiles) };
    gpu.launch(stream, gpu.kernel(LIST_NONZEROS, Some(p.x.dtype), None)?, Grid::new((blocks, 1), (THREADS, 1)), &list)?;
    let chosen = Args { out2: counts, lines: blocks as i64, ..args };
    let product = Args { aux: scratch.ptr, ldaux: tiles as i64, ..chosen };
    let lists_grid =
        one_wave(gpu, Grid::warps_by_columns(lines as u64, n, NONZERO_COLS), lists_blocks_per_sm(p.a.dtype));
    gpu.launch(stream, gpu.kernel(lists, t, None)?, lists_grid, &product)?;
    gpu.launch(stream, gpu.kernel(gather, t, Some(p.x.dtype))?, warp_grid(lines, p.y.cols), &chosen)
}

/// Blocks an SM holds at once of the lists' product, N and T (kernels/sparse.cu,
/// LISTS_BLOCKS_PER_SM).
fn lists_blocks_per_sm(t: DType) -> u64 {
    if t.size() == 8 {
        3
    } else {
        4
    }
}

/// `grid` with at most one wave of blocks (`per_sm` an SM), its columns kept: for kernels whose
/// warps stride over their lines.
fn one_wave(gpu: &super::Gpu, grid: Grid, per_sm: u64) -> Grid {
    let wave = (gpu.multiprocessors as u64 * per_sm).div_ceil(grid.blocks.1);
    Grid { blocks: (grid.blocks.0.min(wave), grid.blocks.1), ..grid }
}

/// spmv N on an event vector (f32/f64, `csc_scatter`): the census scales y by beta and counts
/// the events per block into the stream's scratch; then one launch reads the counts and walks
/// the active columns along the CSC mirror where they are few, else gathers the rows
/// (kernels/sparse.cu, "N on an event vector"). The count stays on the device.
fn csc_events(s: &Stream, p: &Product, args: Args) -> Result<()> {
    let (gpu, stream) = parts(s)?;
    let (a, t, input) = (p.a, Some(p.a.dtype), Some(p.x.dtype));
    if a.k <= plan::N_PARTS_MAX_COLUMNS && a.nnz <= i32::MAX as usize {
        return csc_parts(s, p, with_csc_weights(s, a, args)?);
    }
    let elements = a.m.max(a.k) as u64;
    let blocks = elements.div_ceil(CENSUS_THREADS as u64).clamp(1, CENSUS_BLOCKS_MAX);
    let counts = scratch(s, 4 * blocks as usize)?;
    let args = Args { out2: counts.ptr, lines: blocks as i64, ..with_csc(s, a, args)? };
    gpu.launch(stream, gpu.kernel(CENSUS, t, input)?, Grid::new((blocks, 1), (CENSUS_THREADS, 1)), &args)?;
    // one wave of warps for the gather; its first blocks share the active columns
    let grid = warp_grid(a.m.max(1), 1);
    let grid =
        Grid { blocks: (grid.blocks.0.min(gpu.multiprocessors as u64 * CSC_EVENTS_WAVE_BLOCKS_PER_SM), 1), ..grid };
    let scatter_blocks = line_blocks(gpu, a.k).blocks.0.min(gpu.multiprocessors as u64 * CSC_EVENTS_BLOCKS_PER_SM);
    let args = Args { n_chunks: scatter_blocks.clamp(1, grid.blocks.0) as i64, ..args };
    gpu.launch(stream, gpu.kernel(SPMV_CSC_EVENTS, t, input)?, grid, &args)
}

/// spmv N on a short event vector by line parts along the CSC mirror (`csc_parts`), after y is
/// scaled by beta: by the opener kernel where launches overlap (the parts load their entries
/// while it runs), else first.
fn csc_parts(s: &Stream, p: &Product, args: Args) -> Result<()> {
    let (a, input) = (p.a, Some(p.x.dtype));
    let grid = line_parts_grid(parts(s)?.0, a.k, a.nnz, a.dtype.size() == 8);
    scatter_after_scale(s, [(SPMV_CSC_PARTS, input), (SPMV_CSC_PARTS_AFTER_SCALE, input)], grid, &args, (a.m, a.dtype))
}

/// A scatter into the vector y (`rows` of `dtype`, the kernels' T) scaled by beta first: where
/// launches overlap, the scaling kernel opening the call (OPENER_BLOCKS_PER_SM) and the
/// scatter's after-scale form launched at once, loading its inputs while y is scaled and waiting
/// for it only before its adds; else its plain form after `scale_output`. Each form with its
/// input dtype.
fn scatter_after_scale(
    s: &Stream,
    [plain, after]: [(Family, Option<DType>); 2],
    grid: Grid,
    args: &Args,
    (rows, dtype): (usize, DType),
) -> Result<()> {
    let (gpu, stream) = parts(s)?;
    if opens_with_scaling(gpu, args) {
        open_with_scaling(s, args, rows, dtype)?;
        return gpu.launch(stream, gpu.kernel(after.0, Some(dtype), after.1)?, grid, args);
    }
    scale_output(s, args, (rows, 1), dtype)?;
    gpu.launch(stream, gpu.kernel(plain.0, Some(dtype), plain.1)?, grid, args)
}

/// spmv N on an event vector (`output_slices`, any dtype): one launch, a block per slice of y
/// along the CSC mirror and at least `N_SLICE_BLOCKS_PER_SM` an SM for the gather its blocks run
/// instead where the events are not few (kernels/sparse.cu, "N on events: output slices").
fn column_slices(s: &Stream, a: &Csr, input: DType, args: Args) -> Result<()> {
    let (gpu, stream) = parts(s)?;
    let kept = a.device_analysis(s)?.column_slices.as_ref();
    let kept = kept.ok_or_else(|| {
        Error::internal("output_slices ran on a matrix whose column slice offsets analysis did not keep")
    })?;
    let slices = a.m.div_ceil(kept.width) as u64;
    let blocks = slices.max(gpu.multiprocessors as u64 * N_SLICE_BLOCKS_PER_SM);
    let args =
        Args { slice_offsets: kept.offsets.addr(), slice_width: kept.width as i64, ..with_csc_weights(s, a, args)? };
    let function = gpu.kernel(SPMV_N_SLICES, Some(a.dtype), Some(input))?;
    gpu.launch(stream, function, Grid::new((blocks, 1), (N_SLICE_THREADS, 1)), &args)
}

/// Threads of a `spmm_n:output_slices` block (kernels/sparse.cu, N_SLICE_THREADS), and its
/// blocks per SM at least: 32 warps an SM for the gather branch.
const N_SLICE_THREADS: u32 = 512;
const N_SLICE_BLOCKS_PER_SM: u64 = 2;

/// Blocks per SM of `csc_events`' one wave: 6 blocks of 256 threads at 40 registers fit. Every
/// block first sums the census's counts, so a warp per row (50,000 blocks at 400,000 rows)
/// cost 68 µs where the spike list takes 4.7 (bench/NOTES.md, "`csc_scatter` on event vectors:
/// one wave of blocks").
const CSC_EVENTS_WAVE_BLOCKS_PER_SM: u64 = 6;

/// Blocks per SM of `csc_events` that share the active columns (the rest exit): 4 measured
/// best of 2, 4 and 8 at 10000² x 200/row (bench/NOTES.md, "spmv N on events along the CSC
/// mirror").
const CSC_EVENTS_BLOCKS_PER_SM: u64 = 4;

/// The census's blocks (kernels/sparse.cu): a thread per element of y and of x, at most this
/// many blocks (whose counts every block of the next launch sums).
const CENSUS_THREADS: u32 = 256;
const CENSUS_BLOCKS_MAX: u64 = 1024;

/// spmv N on a spike list: `output_slices` (one launch), or (f32/f64) a warp per listed column
/// along the CSC mirror (`csc_scatter`) after scaling y by beta.
pub fn spmv_spikes_n(s: &Stream, alg: SpmmN, alpha: f64, a: &Csr, list: SpikeList, beta: f64, y: &Dense) -> Result<()> {
    if alg == SpmmN::OutputSlices {
        return column_slices(s, a, DType::I32, list_product_args(list, alpha, a, beta, y));
    }
    let args = with_csc_weights(s, a, list_product_args(list, alpha, a, beta, y))?;
    list_scatter(
        s,
        (SPMV_CSC_SCATTER, SPMV_CSC_LIST_SCATTER_AFTER_SCALE),
        (list, line_runs(a.nnz, a.k)),
        &args,
        y,
        a.dtype,
    )
}

/// spmv T on a spike list: `output_slices`, or a warp per listed row (`row_warp_scatter`,
/// f32/f64) after scaling y by beta.
pub fn spmv_spikes_t(s: &Stream, alg: SpmmT, alpha: f64, a: &Csr, list: SpikeList, beta: f64, y: &Dense) -> Result<()> {
    let args = list_product_args(list, alpha, a, beta, y);
    if alg == SpmmT::OutputSlices {
        return output_slices(s, a, args, Some(DType::I32));
    }
    list_scatter(
        s,
        (SPMV_ROW_WARP_SCATTER, SPMV_LIST_SCATTER_AFTER_SCALE),
        (list, line_runs(a.nnz, a.m)),
        &args,
        y,
        a.dtype,
    )
}

/// A warp-per-line scatter of a spike list into the vector y (`families`: its plain form, and
/// its form after the scaling kernel), y scaled by beta first (`scatter_after_scale`).
fn list_scatter(
    s: &Stream,
    families: (Family, Family),
    (list, runs): (SpikeList, u64),
    args: &Args,
    y: &Dense,
    dtype: DType,
) -> Result<()> {
    let grid = list_warps(parts(s)?.0, list.capacity(), SPMV_LIST_WARPS_PER_SM, runs);
    scatter_after_scale(s, [(families.0, Some(DType::I32)), (families.1, None)], grid, args, (y.rows, dtype))
}

fn list_product_args(list: SpikeList, alpha: f64, a: &Csr, beta: f64, y: &Dense) -> Args {
    list_args(list, Args { y: y.buf.addr(), ldy: y.ld as i64, n: 1, alpha, beta, ..csr_args(a) })
}

/// Threads of an `output_slices` block, and the most lists `live_rows` makes (kernels/sparse.cu,
/// SLICE_THREADS, LIVE_LISTS_MAX).
const SLICE_THREADS: u32 = 1024;
const LIVE_LISTS_MAX: u64 = 512;
/// Rows a `live_rows` block lists at least.
const LIVE_LIST_ROWS_MIN: u64 = 2048;

/// `output_slices`: a block per slice of the output, each blending its slice into y; the live
/// rows from a spike list (`list` = I32) or from `live_rows`' lists (None).
fn output_slices(s: &Stream, a: &Csr, args: Args, list: Option<DType>) -> Result<()> {
    let (gpu, stream) = parts(s)?;
    let offsets = slice_offsets(s, a, "output_slices")?;
    let grid = Grid::new((plan::slices(a.k) as u64, 1), (SLICE_THREADS, 1));
    gpu.launch(stream, gpu.kernel(SPMV_T_SLICES, Some(a.dtype), list)?, grid, &Args { slice_offsets: offsets, ..args })
}

/// The device address of the rows' slice offsets, which `alg` reads (kept at analysis where
/// `plan::slice_offsets_kept`, which the plans check before they pick it).
fn slice_offsets(s: &Stream, a: &Csr, alg: &str) -> Result<u64> {
    let kept = a.device_analysis(s)?.slice_offsets.as_ref();
    let offsets = kept
        .ok_or_else(|| Error::internal(format!("{alg} ran on a matrix whose slice offsets analysis did not keep")))?;
    Ok(offsets.addr())
}

/// `output_slices` on an event vector: its live rows listed first (`live_rows`, up to
/// LIVE_LISTS_MAX lists in the stream's scratch: their lengths, then the lists).
fn output_slices_on_events(s: &Stream, p: &Product, args: Args) -> Result<()> {
    let (gpu, stream) = parts(s)?;
    let m = p.a.m as u64;
    let lists = m.div_ceil(LIVE_LIST_ROWS_MIN).clamp(1, LIVE_LISTS_MAX);
    let rows_per_list = m.div_ceil(lists).max(1);
    let scratch = scratch(s, 4 * (LIVE_LISTS_MAX + lists * rows_per_list) as usize)?; // held until both launches are queued
    let (lengths, rows) = (scratch.ptr, scratch.ptr + 4 * LIVE_LISTS_MAX);
    let listing = Args {
        x: args.x,
        ldx: args.ldx,
        m: m as i64,
        n: rows_per_list as i64,
        y: rows,
        out2: lengths,
        ..Args::default()
    };
    gpu.launch(stream, gpu.kernel(LIVE_ROWS, Some(p.x.dtype), None)?, Grid::new((lists, 1), (THREADS, 1)), &listing)?;
    let listed = Args { x: rows, ldx: rows_per_list as i64, lines: lists as i64, spike_count: lengths, ..args };
    output_slices(s, p.a, listed, None)
}

/// Batches that share one read of the weights and indices (kernels/yw2y.cu).
const YW2Y_BATCH_GROUP: usize = 8;

/// yw2y, 1-D (one batch) or batched; per-batch weights replace the CSR's when given.
#[allow(clippy::too_many_arguments)]
pub fn yw2y(
    s: &Stream,
    alg: Yw2y,
    a: &Csr,
    bw: Option<&Dense>,
    alpha: f64,
    y: &Dense,
    beta: f64,
    out: &Dense,
) -> Result<()> {
    let (gpu, stream) = parts(s)?;
    let batches = if y.ndim == 1 { 1 } else { y.rows };
    let args = Args {
        x: y.buf.addr(),
        ldx: y.ld as i64,
        y: out.buf.addr(),
        ldy: out.ld as i64,
        aux: bw.map_or(0, |w| w.buf.addr()),
        ldaux: bw.map_or(0, |w| w.ld as i64),
        batches: batches as i64,
        alpha,
        beta,
        ..csr_args(a)
    };
    let (t, groups) = (Some(a.dtype), batches.div_ceil(YW2Y_BATCH_GROUP));
    match alg {
        Yw2y::Reference => Err(cpu_only(alg)),
        Yw2y::RowWarp => {
            // the kernel without per-batch weights and beta where the call has neither: fewer
            // registers, more warps to hide each row's loads (kernels/yw2y.cu)
            let family = if bw.is_none() && beta == 0.0 { YW2Y_N_PLAIN } else { YW2Y_N };
            gpu.launch(stream, gpu.kernel(family, t, None)?, Grid::warps((a.m * groups) as u64), &args)
        }
        Yw2y::EntryThread => {
            // a thread per entry (grid-stride), a grid row per group of batches; several batches
            // gather from a copy of y by column, each column's group side by side
            let entries = Grid::strided(gpu, a.nnz as u64);
            let grid = Grid::new((entries.blocks.0, (groups as u64).min(MAX_GRID_Y)), entries.threads);
            if batches == 1 || a.nnz == 0 {
                return gpu.launch(stream, gpu.kernel(YW2Y_T, t, None)?, grid, &args);
            }
            let columns = (groups * a.k) as u64;
            let scratch = scratch(s, columns as usize * YW2Y_BATCH_GROUP * a.dtype.size())?; // held until both launches are queued
            let copy = Args { out2: scratch.ptr, ..args };
            gpu.launch(stream, gpu.kernel(YW2Y_COLUMNS, t, None)?, Grid::strided(gpu, columns), &copy)?;
            gpu.launch(stream, gpu.kernel(YW2Y_T_BY_COLUMN, t, None)?, grid, &copy)
        }
        Yw2y::YWindows => {
            // blocks over even shares of the entries, a y window of whole slices filling a
            // block's shared memory (all of y where it fits), as many blocks as fit at once
            let offsets = slice_offsets(s, a, "y_windows")?;
            let function = gpu.kernel(YW2Y_T_WINDOWS, t, None)?;
            let slice_bytes = plan::SLICE_OUTPUTS * a.dtype.size();
            let room = (gpu.shared_per_block as usize).saturating_sub(WINDOW_STATIC_BYTES) / slice_bytes;
            let shared = (plan::slices(a.k).min(room).max(1) * slice_bytes) as u32;
            let per_sm = gpu.blocks_per_multiprocessor(function, WINDOW_THREADS, shared)?;
            let grid = Grid::new(((gpu.multiprocessors * per_sm) as u64, 1), (WINDOW_THREADS, 1));
            gpu.launch_shared(stream, function, grid, &Args { slice_offsets: offsets, ..args }, shared)
        }
    }
}

/// yw2y_t_windows (kernels/yw2y.cu): threads a block, and room left beside the y window for its
/// static shared memory.
const WINDOW_THREADS: u32 = 1024;
const WINDOW_STATIC_BYTES: usize = 1024;

/// Dense event mv/mm: W in aux (`transposed`: W is k x m); m output rows, k input rows, n
/// columns.
#[allow(clippy::too_many_arguments)]
pub fn dense_mm(
    s: &Stream,
    alg: DenseMm,
    transposed: bool,
    kind: InputKind,
    alpha: f64,
    w: &Dense,
    x: &Dense,
    beta: f64,
    c: &Dense,
) -> Result<()> {
    let input =
        Args { x: x.buf.addr(), ldx: x.ld as i64, events: (kind == InputKind::Events) as i64, ..Args::default() };
    let launch = |input| launch_dense(s, alg, transposed, alpha, w, beta, c, input);
    match alg {
        // mv N and T list an event vector in their own blocks (kernels/dense.cu, each_window)
        DenseMm::ActiveRows => on_event_columns(s, input, (x.rows, x.cols, x.dtype), |listed| {
            launch((listed.beside(input), x.rows, x.dtype))
        }),
        _ => launch((input, x.rows, x.dtype)),
    }
}

/// Dense mv on a spike list: N, a warp per output row over the listed columns of W; T, blocks
/// of MV_T_COLS output columns whose warps share the listed rows (the kernels of `dense_mm`).
pub fn dense_mv_spikes(
    s: &Stream,
    alg: DenseMm,
    alpha: f64,
    w: &Dense,
    list: SpikeList,
    beta: f64,
    c: &Dense,
) -> Result<()> {
    let transposed = alg == DenseMm::MvColumnBlocks;
    let neurons = if transposed { w.rows } else { w.cols };
    launch_dense(s, alg, transposed, alpha, w, beta, c, (list_args(list, Args::default()), neurons, DType::I32))
}

/// The launch of a dense product whose input is in `input`: its arguments (an array, or a
/// spike list), its rows (k) and the dtype its kernels are named for.
#[allow(clippy::too_many_arguments)]
fn launch_dense(
    s: &Stream,
    alg: DenseMm,
    transposed: bool,
    alpha: f64,
    w: &Dense,
    beta: f64,
    c: &Dense,
    (input, k, input_dtype): (Args, usize, DType),
) -> Result<()> {
    let (gpu, stream) = parts(s)?;
    let args = Args {
        aux: w.buf.addr(),
        ldaux: w.ld as i64,
        y: c.buf.addr(),
        ldy: c.ld as i64,
        m: c.rows as i64,
        k: k as i64,
        n: c.cols as i64,
        alpha,
        beta,
        ..input
    };
    let (m, n) = (c.rows as u64, c.cols as u64);
    let input = Some(input_dtype);
    let (family, grid, input) = match alg {
        DenseMm::InputNonzeros | DenseMm::Gemm | DenseMm::Reference => return Err(cpu_only(alg)),
        DenseMm::MvRowWarp => (DENSE_MV_N, Grid::new((m.div_ceil(MV_ROWS), 1), (MV_THREADS, 1)), input),
        DenseMm::MvColumnBlocks => (DENSE_MV_T, Grid::new((m.div_ceil(MV_T_COLS), 1), (MV_THREADS, 1)), input),
        DenseMm::Tiled => {
            let family = if transposed { DENSE_MM_T } else { DENSE_MM_N };
            (family, Grid::new((n.div_ceil(64), m.div_ceil(64)), (256, 1)), input)
        }
        DenseMm::EventLists => return event_lists(s, transposed, &args, input_dtype, w.dtype),
        DenseMm::Wgmma => return dense_wgmma(s, transposed, &args, w, input_dtype),
        // reads the lists of S's columns (`on_event_columns`), not S
        DenseMm::ActiveRows => (DENSE_MM_ROWS_T, Grid::new((m.div_ceil(32), 1), (32, 8)), None),
    };
    gpu.launch(stream, gpu.kernel(family, Some(w.dtype), input)?, grid, &args)
}

/// Threads of a dense mv block, rows of W an N block takes, outputs a T block takes (MV_THREADS,
/// MV_ROWS and MV_T_COLS in kernels/dense.cu).
const MV_THREADS: u32 = 512;
const MV_ROWS: u64 = 32;
const MV_T_COLS: u64 = 128;

/// Shapes of the active-list kernels (kernels/dense.cu, "mm on events"): rows of W and columns
/// of C per N block (64 where n <= 64: 200 against 255 µs at n = 10, 372 against 436 at n =
/// 100 for 128, bench/NOTES.md), columns of C per T block.
const LIST_ROWS: u64 = 32;
const LIST_COLS: u64 = 128;
const LIST_COLS_NARROW: u64 = 64;
const LIST_T_COLS: u64 = 8;

/// Dense mm on events in two launches: the active rows of each column of S listed per chunk
/// into the stream's scratch (counts, then offsets), then the product over the listed pairs.
fn event_lists(s: &Stream, transposed: bool, args: &Args, input_dtype: DType, w_dtype: DType) -> Result<()> {
    let (gpu, stream) = parts(s)?;
    let (m, k, n) = (args.m as u64, args.k as u64, args.n as u64);
    // rows of S per list chunk, as LIST_CHUNK_N / LIST_CHUNK_T in kernels/dense.cu
    let chunk = if transposed { 256 } else { 128 };
    let chunks = k.div_ceil(chunk);
    let counts_bytes = (chunks * n * 4).next_multiple_of(chunk); // the lists start aligned (16-byte heads)
    let scratch = scratch(s, (counts_bytes + chunks * n * chunk) as usize)?; // held until both launches are queued
    let (counts, lists) = (scratch.ptr, scratch.ptr + counts_bytes);
    let list = Args {
        x: args.x,
        ldx: args.ldx,
        y: lists,
        out2: counts,
        lines: chunk as i64,
        k: k as i64,
        n: n as i64,
        ..Args::default()
    };
    let groups = Grid::warps(chunks * n.div_ceil(32));
    gpu.launch(stream, gpu.kernel(LIST_EVENTS, Some(input_dtype), None)?, groups, &list)?;
    let (family, grid) = if transposed {
        (DENSE_MM_LISTS_T, Grid::new((m.div_ceil(THREADS as u64), n.div_ceil(LIST_T_COLS)), (THREADS, 1)))
    } else {
        let (family, cols) = if n <= LIST_COLS_NARROW {
            (DENSE_MM_LISTS_N_NARROW, LIST_COLS_NARROW)
        } else {
            (DENSE_MM_LISTS_N, LIST_COLS)
        };
        (family, Grid::new((n.div_ceil(cols), m.div_ceil(LIST_ROWS)), (THREADS, 1)))
    };
    gpu.launch(stream, gpu.kernel(family, Some(w_dtype), None)?, grid, &Args { x: lists, out2: counts, ..*args })
}

/// Whether dense mm on events can run on Hopper's tensor cores (`dense_wgmma`): an sm_90
/// device, f16/bf16/f32 W that TMA can address (base and row stride on 16 bytes, extents within
/// i32 and not zero: an empty W has nothing for the tensor cores, and its map would have an empty
/// extent; T's E map has up to a chunk more rows than W), more than one column.
pub fn dense_tma(s: &Stream, w: &Dense, n: usize) -> bool {
    let Ok((gpu, _)) = parts(s) else { return false };
    gpu.compute_capability == 90
        && matches!(w.dtype, DType::F16 | DType::BF16 | DType::F32)
        && w.buf.addr() % 16 == 0
        && (w.ld * w.dtype.size()) % 16 == 0
        && n > 1
        && w.rows > 0
        && w.cols > 0
        && w.rows.max(w.cols) < (i32::MAX as u64 - DW_LISTED_CHUNK) as usize
}

/// Shape of dense_wgmma (kernels/dense.cu, "mm on events: tensor cores"): threads, rows of a
/// tile of C, columns of W a K step, columns of E per TMA box, the rings of stages (shared
/// memory).
const DW_THREADS: u32 = 384;
const DW_ROWS: u64 = 128;
const DW_K_STEP: u64 = 64;
const DW_BOX: u64 = 64;
const DW_RING_BYTES: u64 = 192 * 1024;
/// T with f32 W: four stages of W's padded rows and E's stages beside them.
const DW_RING_BYTES_T32: u64 = 216 * 1024;

/// Columns of dense_wgmma's tiles of C for W's dtype and n columns, as dense_wgmma_shapes picks
/// them: 64, 128 or 256 (f32 W at most 128).
fn dense_wgmma_cols(dtype: DType, n: u64) -> u64 {
    match n {
        0..=64 => 64,
        65..=128 => 128,
        _ if dtype == DType::F32 => 128,
        _ => 256,
    }
}

/// Listed rows of every DW_LISTED_CHUNK from which dense mm T reads a chunk of W's rows whole (2-D boxes of every row)
/// rather than a copy a listed row: a row's copy streams at about 2 TB/s for f32 rows of the
/// tile (512 bytes) and 1.2 for f16/bf16 (256), boxes at 2.4 and 2.1 (H100, bench/NOTES.md,
/// "Dense mm T on listed rows").
fn whole_chunk_rows(w_dtype: DType) -> u64 {
    let share = if w_dtype == DType::F32 { 0.75 } else { 0.55 };
    (share * DW_LISTED_CHUNK as f64) as u64
}

/// Rows of S a cluster of listed_event_rows lists (DW_LISTED_CHUNK in kernels/dense.cu; the
/// lists and E's rows of chunk c start at row c x this), its CTAs and the threads of a CTA.
const DW_LISTED_CHUNK: u64 = 1024;
const DW_LISTED_SLICES: u64 = 8;
const DW_LISTED_THREADS: u32 = 512;

/// Dense mm on events on Hopper's tensor cores, in two launches. The first writes the events as
/// a 0/1 matrix E in the MMA's type (bf16, or f16 for f16 W; ep = n rounded up to DW_BOX
/// columns) into the scratch and zeroes the tile counters: N, E of every row of S
/// (event_matrix); T, the rows of S with any event listed by chunks of DW_LISTED_CHUNK and E's
/// rows for them alone (listed_event_rows). Then the persistent stream-K product (a CTA per SM;
/// the workspace holds two partial tiles per CTA): N streams every row of W through TMA, T only
/// the listed rows, one copy each. The first opens the second: the product launches while it
/// runs (N streams W in meanwhile), so nothing may be queued between them.
fn dense_wgmma(s: &Stream, transposed: bool, args: &Args, w: &Dense, input_dtype: DType) -> Result<()> {
    let (gpu, stream) = parts(s)?;
    let (m, k, n) = (args.m as u64, args.k as u64, args.n as u64);
    let mma = if w.dtype == DType::F16 { DType::F16 } else { DType::BF16 };
    let ep = n.next_multiple_of(DW_BOX);
    let cols = dense_wgmma_cols(w.dtype, n);
    let tiles = m.div_ceil(DW_ROWS) * n.div_ceil(cols);
    let blocks = (tiles * k.div_ceil(DW_K_STEP)).min(gpu.multiprocessors as u64);
    // T: E's rows and the lists by chunk, each chunk's from its first row on
    let chunks = k.div_ceil(DW_LISTED_CHUNK);
    let e_rows = if transposed { chunks * DW_LISTED_CHUNK } else { k };
    let e_bytes = (e_rows * ep * 2).next_multiple_of(256);
    let counters_bytes = (tiles * 4).next_multiple_of(256);
    let workspace_bytes = 2 * blocks * DW_ROWS * cols * 4;
    let lists_bytes = if transposed { (e_rows * 4 + chunks * 4).next_multiple_of(256) } else { 0 };
    let scratch = scratch(s, (e_bytes + counters_bytes + workspace_bytes + lists_bytes) as usize)?; // held until both launches are queued
    let e = scratch.ptr;
    let (counters, workspace) = (e + e_bytes, e + e_bytes + counters_bytes);
    let (live, counts) = (workspace + workspace_bytes, workspace + workspace_bytes + e_rows * 4);
    let events = Args {
        x: args.x,
        ldx: args.ldx,
        y: e,
        ldy: ep as i64,
        out2: counters,
        lines: tiles as i64,
        k: k as i64,
        n: n as i64,
        live,
        spike_count: counts,
        nnz: whole_chunk_rows(w.dtype) as i64,
        ..Args::default()
    };
    let (first, first_grid) = if transposed {
        (LISTED_EVENT_ROWS, Grid::new((chunks * DW_LISTED_SLICES, 1), (DW_LISTED_THREADS, 1)))
    } else {
        (EVENT_MATRIX, Grid::strided(gpu, (k * ep / 8).max(tiles)))
    };
    gpu.launch(stream, gpu.kernel(first, Some(mma), Some(input_dtype))?, first_grid, &events)?;
    let e_map = TensorMap::swizzled_2d(gpu, mma, e, (e_rows, ep, ep * 2), (DW_K_STEP as u32, DW_BOX as u32), 256)?;
    // N: boxes of DW_ROWS rows of W (m x k) by 128 bytes, L2 misses widened to 256 bytes (the
    // CTA reads the rest of the lines a step later). T (W k x m; chunks read whole): boxes of
    // DW_K_STEP rows, unwidened (the widened bytes are another CTA's strip, read long after:
    // 10000² x 100 f32 504 MB from DRAM, 190 µs; unwidened 162, bench/NOTES.md)
    let row_bytes = (w.ld * w.dtype.size()) as u64;
    let box_cols = 128 / w.dtype.size() as u32;
    let (w_shape, box_rows, promotion, family) = if transposed {
        ((k, m, row_bytes), DW_K_STEP, 0, DENSE_MM_WGMMA_T)
    } else {
        ((m, k, row_bytes), DW_ROWS, 256, DENSE_MM_WGMMA)
    };
    let w_map = TensorMap::swizzled_2d(gpu, w.dtype, w.buf.addr(), w_shape, (box_rows as u32, box_cols), promotion)?;
    let product =
        Args { weights: workspace, out2: counters, live, spike_count: counts, n_chunks: chunks as i64, ..*args };
    let function = gpu.kernel(family, Some(w.dtype), None)?;
    let grid = Grid::new((blocks, 1), (DW_THREADS, 1));
    let ring = if transposed && w.dtype == DType::F32 { DW_RING_BYTES_T32 } else { DW_RING_BYTES };
    gpu.launch_with_maps(stream, function, grid, [&w_map, &e_map], &product, (ring + 1024) as u32)
}

/// CSR plasticity: pre walks the rows of active pre-neurons, post the CSC columns of active
/// post-neurons.
pub fn csr_plasticity(
    s: &Stream,
    alg: CsrPlasticity,
    a: &Csr,
    spikes: Spikes,
    trace: &Dense,
    lo: f64,
    hi: f64,
) -> Result<()> {
    let (gpu, stream) = parts(s)?;
    let base = Args { aux: trace.buf.addr(), lo, hi, csc_stale: a.csc_stale_flag(), ..csr_args(a) };
    let family = match alg {
        CsrPlasticity::Reference => return Err(cpu_only(alg)),
        CsrPlasticity::PostColumns => CSR_POST,
        CsrPlasticity::PreRows => CSR_PRE,
    };
    let base = if alg == CsrPlasticity::PostColumns { with_csc(s, a, base)? } else { base };
    if let (Spikes::Events(x), CsrPlasticity::PostColumns) = (spikes, alg) {
        if let Some(runs) = a.device_analysis(s)?.post_runs.as_ref().filter(|_| x.rows <= plan::POST_EVEN_COLUMNS) {
            let wide = a.dtype.size() == 8 || x.dtype.size() == 8;
            let per_sm = if wide { POST_EVEN_BLOCKS_PER_SM_F64 } else { POST_EVEN_BLOCKS_PER_SM };
            let grid = resident_grid(gpu, per_sm, POST_EVEN_THREADS);
            let args = Args { runs: runs.records.addr(), cols16: runs.columns.addr(), ..event_args(x, base) };
            return gpu.launch(stream, gpu.kernel(CSR_POST_EVEN, Some(a.dtype), Some(x.dtype))?, grid, &args);
        }
    }
    // a short event vector is walked by line parts in the one launch, listed nowhere
    if let Spikes::Events(x) = spikes {
        if x.rows <= LINE_PARTS_MAX_LINES && a.nnz <= i32::MAX as usize {
            let grid = line_parts_grid(gpu, x.rows, a.nnz, a.dtype.size() == 8);
            return gpu.launch(stream, gpu.kernel(family, Some(a.dtype), Some(x.dtype))?, grid, &event_args(x, base));
        }
    }
    let (per_sm, runs) = if alg == CsrPlasticity::PostColumns {
        (POST_LIST_WARPS_PER_SM, line_runs(a.nnz, a.k))
    } else {
        (PRE_LIST_WARPS_PER_SM, line_runs(a.nnz, a.m))
    };
    let launch = |args: Args, capacity: usize| {
        let function = gpu.kernel(family, Some(a.dtype), Some(DType::I32))?;
        gpu.launch(stream, function, list_warps(gpu, capacity, per_sm, runs), &args)
    };
    // else an event vector is listed first, then walked as a spike list: every warp of the grid
    // shares the live lines, where blocks walking their own runs of candidates wait on the ones
    // that drew several (bench/NOTES.md, "Plasticity on event vectors listed first")
    on_spike_list(s, spikes, base, launch)
}

/// Event vectors of CSR plasticity up to this long run `line_parts` (kernels/plasticity.cu), in
/// one launch; longer ones are listed first. Measured on the H200 (graph µs, 5,000² x 500, 10 %
/// live): pre 5.1 where each block listed the vector itself (windowed), ~3.8 by line parts in
/// the probe (bench/probe_post_rows.cu, bench/NOTES.md "Plasticity by line parts"); listing
/// first won past one window of the old form (15,000 neurons 5 %: 9.2 against 7.5).
const LINE_PARTS_MAX_LINES: usize = 8192;
/// The grid of the one-launch plasticity kernels on event vectors (`line_parts`, and
/// `csr_post_even` where the matrix keeps run records: `plan::post_runs_kept`): blocks of
/// `threads`, `per_sm` an SM, as many as stay resident at their launch bounds
/// (kernels/active_lines.cuh and plasticity.cu).
fn resident_grid(gpu: &super::Gpu, per_sm: u64, threads: u32) -> Grid {
    Grid::new((gpu.multiprocessors as u64 * per_sm, 1), (threads, 1))
}
/// `line_parts`' grid: a warp a task (32-line groups by parts, a power of two near the mean
/// line's 1 / 16 as the kernel counts them), no more than stay resident: the idle warps of a
/// resident grid cost pre 5,000² 10 % 0.7 of 3.8 graph µs (bench/NOTES.md, "Line parts in
/// phases").
fn line_parts_grid(gpu: &super::Gpu, lines: usize, nnz: usize, wide: bool) -> Grid {
    let ideal = (nnz / lines.max(1) / PART_ENTRIES).max(1);
    let tasks = lines.div_ceil(32) << (ideal + ideal / 2).ilog2();
    let per_sm = if wide { RESIDENT_BLOCKS_PER_SM_F64 } else { RESIDENT_BLOCKS_PER_SM };
    let resident = resident_grid(gpu, per_sm, LINES_THREADS);
    let warps_per_block = (LINES_THREADS / 32) as usize;
    Grid::new(((tasks.div_ceil(warps_per_block) as u64).clamp(1, resident.blocks.0), 1), (LINES_THREADS, 1))
}
/// Entries a part of a mean line (kernels/active_lines.cuh, PART_ENTRIES).
const PART_ENTRIES: usize = 16;
/// `line_parts`' blocks an SM: 8 at 32 registers, 5 where an f64 weight or input takes 40-48.
const RESIDENT_BLOCKS_PER_SM: u64 = 8;
const RESIDENT_BLOCKS_PER_SM_F64: u64 = 5;
/// `csr_post_even`'s blocks and their threads (kernels/plasticity.cu POST_EVEN_THREADS, each
/// block reads every event for its mask: fewer blocks, fewer bytes), blocks an SM with f32
/// weights and inputs (40 registers, so that the rows walk loads a run's record with its
/// indices) and with f64 (up to 64).
const POST_EVEN_THREADS: u32 = 512;
const POST_EVEN_BLOCKS_PER_SM: u64 = 3;
const POST_EVEN_BLOCKS_PER_SM_F64: u64 = 2;

/// `launch(args, capacity)` on a spike list, or on an event vector listed first into the
/// stream's scratch (`on_event_columns`): `base` with the list's arguments, and its capacity.
fn on_spike_list(s: &Stream, spikes: Spikes, base: Args, launch: impl FnOnce(Args, usize) -> Result<()>) -> Result<()> {
    match spikes {
        Spikes::List(list) => launch(list_args(list, base), list.capacity()),
        Spikes::Events(x) => {
            let events = Args { x: x.buf.addr(), ldx: x.ld as i64, ..Args::default() };
            on_event_columns(s, events, (x.rows, 1, x.dtype), |listed| {
                launch(listed.as_spike_list(base), listed.capacity)
            })
        }
    }
}

/// Rows of W a dense post-plasticity block takes (DENSE_POST_ROWS in kernels/plasticity.cu, whose
/// blocks have THREADS threads: PLASTICITY_THREADS), and blocks per SM that dense pre plasticity
/// aims at (its blocks' y index shares the live rows).
const DENSE_POST_ROWS: u64 = 32;
const DENSE_PRE_BLOCKS_PER_SM: u64 = 4;

/// Dense plasticity on W (m x k) in one launch; each block reads a spike list where it lies or
/// lists an event vector itself. Pre: blocks of 256 columns, their y index sharing the live
/// rows; post: blocks of DENSE_POST_ROWS rows.
pub fn dense_plasticity(
    s: &Stream,
    post: bool,
    w: &Dense,
    spikes: Spikes,
    trace: &Dense,
    lo: f64,
    hi: f64,
) -> Result<()> {
    let (gpu, stream) = parts(s)?;
    let base = Args {
        y: w.buf.addr(),
        ldy: w.ld as i64,
        aux: trace.buf.addr(),
        m: w.rows as i64,
        k: w.cols as i64,
        lo,
        hi,
        ..Args::default()
    };
    let (rows, cols) = (w.rows as u64, w.cols as u64);
    let grid = if post {
        Grid::new((rows.div_ceil(DENSE_POST_ROWS), 1), (THREADS, 1))
    } else {
        let x = cols.div_ceil(THREADS as u64);
        let y = (gpu.multiprocessors as u64 * DENSE_PRE_BLOCKS_PER_SM).div_ceil(x).clamp(1, MAX_GRID_Y);
        Grid::new((x, y), (THREADS, 1))
    };
    if rows == 0 || cols == 0 {
        return Ok(());
    }
    let family = if post { DENSE_POST } else { DENSE_PRE };
    let (args, input) = match spikes {
        Spikes::List(list) => (list_args(list, base), DType::I32),
        Spikes::Events(x) => (event_args(x, base), x.dtype),
    };
    gpu.launch(stream, gpu.kernel(family, Some(w.dtype), Some(input))?, grid, &args)
}

/// Whether B and A's values are aligned for the WMMA paths: B's columns and row stride multiples
/// of 16 elements, both bases on 32 bytes.
pub fn bsrmm_aligned(a: &Bsr, b: &Dense) -> bool {
    b.cols % 16 == 0 && b.ld % 16 == 0 && b.buf.addr() % 32 == 0 && a.values.buf.addr() % 32 == 0
}

/// Whether bsrmm's Hopper path can address A's values and B through TMA: an sm_90 device, both
/// bases and B's row stride on 16 bytes, and every row coordinate within i32.
pub fn bsrmm_tma(s: &Stream, a: &Bsr, b: &Dense) -> bool {
    let Ok((gpu, _)) = parts(s) else { return false };
    let esize = a.values.dtype.size();
    gpu.compute_capability == 90
        && a.values.buf.addr() % 16 == 0
        && b.buf.addr() % 16 == 0
        && (b.ld * esize) % 16 == 0
        && ((a.nnzb * a.bm) as u64) < i32::MAX as u64
        && (b.rows as u64) < i32::MAX as u64
        && (b.cols as u64) < i32::MAX as u64
}

/// Shape of bsrmm's Hopper kernel (kernels/bsr.cu, bsrmm_wgmma): its threads, the columns of C a
/// consumer covers, the K of a stage, the most bytes its ring of stages takes, and the columns
/// of a TMA box of B.
const WG_THREADS: u32 = 384;
const WG_N: u64 = 256;
const WG_STAGE_K: u64 = 64;
const WG_RING_BYTES: u64 = 216 * 1024;
const WG_BOX: u32 = 64;
/// The tile counter's queue after the ring (128-row blocks): 4 tiles of 16 bytes and 8 barriers.
const WG_TILE_QUEUE_BYTES: u64 = 4 * 16 + 8 * 8;

/// `Args::variant` of bsrmm:wgmma_pairs (kernels/bsr.cu, BSRMM_PAIRS).
const BSRMM_PAIRS: i64 = 1;

/// bsrmm on Hopper: tensor maps over A's values (boxes of 128 or 64 rows x a K slice) and over B
/// (K slice x 64), tiles of 128 x 256 (128-row blocks, and `pairs` of block rows of 64 x 64+
/// blocks) or 64 x 512 (others), K slices of 64 columns or the blocks' 32 or 16.
fn bsrmm_wgmma(s: &Stream, a: &Bsr, b: &Dense, c: &Dense, args: &Args, pairs: bool) -> Result<()> {
    let (gpu, stream) = parts(s)?;
    let esize = a.values.dtype.size() as u64;
    let tile_m: u64 = if a.bm == 128 || pairs { 128 } else { 64 };
    // a block shorter than the tile (32 or 16 rows) loads its own rows only: the MMA's others
    // read stale rows of the slot, whose products are dropped
    let box_m = if pairs { 64 } else { tile_m.min(a.bm as u64) as u32 };
    let slice = (a.bk as u64).min(64);
    let values = ((a.nnzb * a.bm) as u64, a.bk as u64, a.bk as u64 * esize);
    let a_map = TensorMap::swizzled_2d(gpu, a.values.dtype, a.values.buf.addr(), values, (box_m, slice as u32), 256)?;
    let b_shape = (b.rows as u64, b.cols as u64, b.ld as u64 * esize);
    let b_map = TensorMap::swizzled_2d(gpu, b.dtype, b.buf.addr(), b_shape, (slice as u32, WG_BOX), 256)?;
    let strips = if pairs { (a.mb as u64).div_ceil(2) } else { a.mb as u64 };
    let tile_cols = if tile_m == 128 { WG_N } else { 2 * WG_N };
    let tiles = strips * (c.cols as u64).div_ceil(tile_cols);
    let blocks = tiles.min(gpu.multiprocessors as u64); // persistent: one block per SM
    let mut args = Args { variant: if pairs { BSRMM_PAIRS } else { 0 }, ..*args };
    // 128-row blocks and short 64-row ones: tiles drawn from the stream's tile counter (which
    // the kernel leaves at zero: no memset before it), block rows longest first
    let counter = if !pairs && plan::bsrmm_tile_counter(a.bm, a.nnzb, a.mb) { Some(tile_counter(s)?) } else { None };
    if let Some(counter) = counter {
        args = Args { order: a.heavy_first(s)?.addr(), out2: counter, ..args };
    }
    // the ring of stages (4 of 48 KB or 3 of 72 KB), 1 KB to align it to the swizzle atoms, and
    // the counter's queue
    let stage_bytes = (tile_m + tile_cols) * WG_STAGE_K * esize;
    let stages = WG_RING_BYTES / stage_bytes;
    let queue = if counter.is_some() { WG_TILE_QUEUE_BYTES } else { 0 };
    let shared = stages * stage_bytes + 1024 + queue;
    let family = match (counter.is_some(), tile_m) {
        (false, _) => BSRMM_WGMMA,
        (true, 128) => BSRMM_WGMMA_COUNTER,
        (true, _) => BSRMM_WGMMA_COUNTER64,
    };
    let function = gpu.kernel(family, Some(a.values.dtype), Some(c.dtype))?;
    let grid = Grid::new((blocks, 1), (WG_THREADS, 1));
    gpu.launch_with_maps(stream, function, grid, [&a_map, &b_map], &args, shared as u32)
}

/// bsrmm with the algorithm the plan chose (`core::plan::BsrmmCall` says which fit).
pub fn bsrmm(s: &Stream, alg: Bsrmm, alpha: f64, a: &Bsr, b: &Dense, beta: f64, c: &Dense) -> Result<()> {
    let (gpu, stream) = parts(s)?;
    let args = Args {
        indptr: a.indptr.addr(),
        indices: a.indices.addr(),
        weights: a.values.buf.addr(),
        x: b.buf.addr(),
        ldx: b.ld as i64,
        y: c.buf.addr(),
        ldy: c.ld as i64,
        m: a.bm as i64,
        k: a.bk as i64,
        n: c.cols as i64,
        ldaux: a.mb as i64,
        alpha,
        beta,
        ..Args::default()
    };
    let (t, tc) = (Some(a.values.dtype), Some(c.dtype));
    let (rows, n) = (a.rows() as u64, c.cols as u64);
    let (family, grid) = match alg {
        Bsrmm::BlockGemm | Bsrmm::Reference => return Err(cpu_only(alg)),
        Bsrmm::Wgmma => return bsrmm_wgmma(s, a, b, c, &args, false),
        Bsrmm::WgmmaPairs => return bsrmm_wgmma(s, a, b, c, &args, true),
        // 64 x 128 tiles of C staged through shared memory, one 64-row strip of a block row each
        Bsrmm::Tiled => (BSRMM_TILED, Grid::new((n.div_ceil(128), rows / 64), (256, 1))),
        Bsrmm::Wmma => (BSRMM_WMMA, Grid::new((n.div_ceil(64), (rows / 16).div_ceil(4)), (128, 1))),
        Bsrmm::Simt => (BSRMM_SIMT, Grid::new((n.div_ceil(64), rows.div_ceil(4)), (64, 4))),
    };
    gpu.launch(stream, gpu.kernel(family, t, tc)?, grid, &args)
}

/// Spikes a compaction block owns at least, and blocks at most (each block counts the spikes
/// before its slice itself, so their reads grow with the blocks).
const COMPACT_SLICE_MIN: usize = plan::COMPACT_ONE_BLOCK_MAX;
const COMPACT_BLOCKS_MAX: usize = 64;
const COMPACT_THREADS: usize = 512;
/// Threads of the block that lists a column of up to COMPACT_ONE_BLOCK_MAX events by itself, one
/// tile of 16 events a thread (kernels/events.cu, compact_one_block).
const COMPACT_ONE_BLOCK_THREADS: u32 = 256;
/// Blocks and threads of a compaction cluster (kernels/events.cu, compact_cluster).
const COMPACT_CLUSTER: u64 = 8;
const COMPACT_CLUSTER_THREADS: u32 = 512;

/// Whether the device runs thread-block clusters (sm_90 and later): `compact_cluster`.
pub fn has_clusters(s: &Stream) -> bool {
    parts(s).is_ok_and(|(gpu, _)| gpu.compute_capability >= 90)
}

/// Event compaction in one launch (`alg`); the count stays on the device.
pub fn compact(s: &Stream, alg: Compact, spikes: &Dense, indices: &Dense, count: &Dense) -> Result<()> {
    let listed = Listed { indices: indices.buf.addr(), count: count.buf.addr(), capacity: spikes.rows };
    list_event_columns(s, alg, Args { x: spikes.buf.addr(), ldx: 1, ..Args::default() }, (1, spikes.dtype), listed)
}

/// The active rows of each of `columns` columns of an event array (x, ldx; `listed.capacity`
/// rows), each column's in order, with their counts (kernels/events.cu: compaction is one
/// column), in one launch: with `block_slices` a block of COMPACT_ONE_BLOCK_THREADS a column up
/// to COMPACT_ONE_BLOCK_MAX rows (its one tile), slices of the rows per block past that; with
/// `cluster_rounds` a cluster a column.
fn list_event_columns(
    s: &Stream,
    alg: Compact,
    events: Args,
    (columns, dtype): (usize, DType),
    listed: Listed,
) -> Result<()> {
    let (gpu, stream) = parts(s)?;
    let rows = listed.capacity;
    let args = Args { m: rows as i64, y: listed.indices, out2: listed.count, ..events };
    if alg == Compact::ClusterRounds {
        let grid = Grid::new((COMPACT_CLUSTER, columns as u64), (COMPACT_CLUSTER_THREADS, 1));
        return gpu.launch(stream, gpu.kernel(COMPACT_CLUSTER_ROUNDS, Some(dtype), None)?, grid, &args);
    }
    if rows <= plan::COMPACT_ONE_BLOCK_MAX {
        let grid = Grid::new((1, columns as u64), (COMPACT_ONE_BLOCK_THREADS, 1));
        return gpu.launch(stream, gpu.kernel(COMPACT_ONE_BLOCK, Some(dtype), None)?, grid, &args);
    }
    let blocks = rows.div_ceil(COMPACT_SLICE_MIN).clamp(1, COMPACT_BLOCKS_MAX);
    let slice = rows.div_ceil(blocks).next_multiple_of(COMPACT_THREADS).max(COMPACT_THREADS);
    // rounding the slices up may leave the last blocks nothing: launch only those with rows
    let blocks = rows.div_ceil(slice).max(1);
    let args = Args { n: slice as i64, ..args };
    let grid = Grid::new((blocks as u64, columns as u64), (COMPACT_THREADS as u32, 1));
    gpu.launch(stream, gpu.kernel(COMPACT, Some(dtype), None)?, grid, &args)
}

/// `launch` on the active rows of each column of an event array (x, ldx; `rows` x `columns`),
/// listed first into the stream's scratch (held until both launches are queued): the products
/// and rules that read a few rows of W then skip the scan of every event in every block.
fn on_event_columns(
    s: &Stream,
    events: Args,
    (rows, columns, dtype): (usize, usize, DType),
    launch: impl FnOnce(Listed) -> Result<()>,
) -> Result<()> {
    let scratch = scratch(s, listing_bytes(rows, columns))?;
    let listed = Listed { indices: scratch.ptr + 4 * columns as u64, count: scratch.ptr, capacity: rows };
    list_event_columns(s, plan::choose_compact(rows, has_clusters(s)), events, (columns, dtype), listed)?;
    launch(listed)
}

/// Scratch bytes of `on_event_columns`: each column's count, then its list of up to `rows`.
fn listing_bytes(rows: usize, columns: usize) -> usize {
    4 * columns * (rows + 1)
}

/// Takes the stream scratch that plasticity on an event vector of up to `neurons` entries lists
/// it into, so that calls after analysis allocate nothing (a graph captured then stays valid).
pub fn reserve_spike_listing(s: &Stream, neurons: usize) -> Result<()> {
    scratch(s, listing_bytes(neurons, 1)).map(drop)
}

/// Copies the cached CSC mirror into the caller's arrays, narrowing to int32 where asked.
pub fn csr_to_csc(s: &Stream, a: &Csr, colptr: &Dense, rowind: &Dense, perm: &Dense) -> Result<()> {
    let (gpu, stream) = parts(s)?;
    let csc = a.device_analysis(s)?;
    let copy_ints = |dst: &Dense, src: u64, len: usize| -> Result<()> {
        if dst.dtype == DType::I64 {
            copy_device(gpu, stream, dst.buf.addr(), src, len * 8)
        } else {
            let args = Args { x: src, y: dst.buf.addr(), n: len as i64, ..Args::default() };
            gpu.launch(stream, gpu.kernel(NARROW_I64_I32, None, None)?, Grid::strided(gpu, len as u64), &args)
        }
    };
    copy_ints(colptr, csc.colptr.addr(), a.k + 1)?;
    copy_device(gpu, stream, rowind.buf.addr(), csc.rowind.addr(), a.nnz * 4)?;
    copy_ints(perm, csc.perm.addr(), a.nnz)
}

/// Zeroes `bytes` bytes of device memory in stream order (every float dtype's +0 is all zero bits).
fn zero_device(gpu: &super::Gpu, stream: sys::CUstream, dst: u64, bytes: usize) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    let _scope = gpu.enter()?;
    // SAFETY: dst holds `bytes` bytes (the checked output); word-aligned sizes clear by words.
    call("zeroing the output", || unsafe {
        if bytes % 4 == 0 && dst % 4 == 0 {
            sys::cuMemsetD32Async(dst, 0, bytes / 4, stream)
        } else {
            sys::cuMemsetD8Async(dst, 0, bytes, stream)
        }
    })
}

fn copy_device(gpu: &super::Gpu, stream: sys::CUstream, dst: u64, src: u64, bytes: usize) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    let _scope = gpu.enter()?;
    // SAFETY: both regions hold `bytes` bytes (checked shapes).
    call("device copy", || unsafe { sys::cuMemcpyDtoDAsync_v2(dst, src, bytes, stream) })
}

/// Writes `value` into every logical element.
pub fn fill(s: &Stream, d: &Dense, value: f64) -> Result<()> {
    let (gpu, stream) = parts(s)?;
    let args =
        Args { y: d.buf.addr(), ldy: d.ld as i64, m: d.rows as i64, n: d.cols as i64, alpha: value, ..Args::default() };
    gpu.launch(stream, gpu.kernel(FILL, Some(d.dtype), None)?, Grid::strided(gpu, d.numel() as u64), &args)
}

/// Copies between packed host memory and a (possibly strided) device array, in stream order.
///
/// # Safety
/// `host` must hold rows x cols elements, valid until the stream is synchronized.
pub unsafe fn copy_host(s: &Stream, d: &Dense, host: *mut u8, to_host: bool) -> Result<()> {
    let (gpu, stream) = parts(s)?;
    let (size, row_bytes) = (d.dtype.size(), d.cols * d.dtype.size());
    if d.numel() == 0 {
        return Ok(());
    }
    let (device, pitch) = (d.buf.addr(), d.ld * size);
    let what = if to_host { "copy to host" } else { "copy from host" };
    let _scope = gpu.enter()?;
    if pitch == row_bytes || d.rows == 1 {
        let bytes = row_bytes * d.rows;
        return call(what, || {
            if to_host {
                sys::cuMemcpyDtoHAsync_v2(host as _, device, bytes, stream)
            } else {
                sys::cuMemcpyHtoDAsync_v2(device, host as _, bytes, stream)
            }
        });
    }
    let (host_type, device_type) = (sys::CUmemorytype::CU_MEMORYTYPE_HOST, sys::CUmemorytype::CU_MEMORYTYPE_DEVICE);
    let mut copy = sys::CUDA_MEMCPY2D {
        srcXInBytes: 0,
        srcY: 0,
        srcMemoryType: device_type,
        srcHost: std::ptr::null(),
        srcDevice: device,
        srcArray: std::ptr::null_mut(),
        srcPitch: pitch,
        dstXInBytes: 0,
        dstY: 0,
        dstMemoryType: host_type,
        dstHost: host as _,
        dstDevice: 0,
        dstArray: std::ptr::null_mut(),
        dstPitch: row_bytes,
        WidthInBytes: row_bytes,
        Height: d.rows,
    };
    if !to_host {
        (copy.srcMemoryType, copy.srcHost, copy.srcDevice, copy.srcPitch) = (host_type, host as _, 0, row_bytes);
        (copy.dstMemoryType, copy.dstHost, copy.dstDevice, copy.dstPitch) =
            (device_type, std::ptr::null_mut(), device, pitch);
    }
    call(what, || sys::cuMemcpy2DAsync_v2(&copy, stream))
}
