//! Plans: which kernel variant (algorithm) runs a call, on the GPU or on the CPU.
//!
//! Every operation family has a small enum of algorithms named for what they do, each marked
//! with the backends that run it, and one pure chooser per backend that picks one from the
//! matrix statistics cached at analysis, the call (op, n, dtype, input kind) and the device.
//! Every family has `reference`: the CPU's plainly written path, which the tests compare every
//! other CPU path with. The thresholds a chooser uses live in one table per
//! family, each with the measurement that set it (bench/NOTES.md has the runs).
//!
//! A context can force an algorithm per family (`evs_context_set_algorithm`, or the
//! `EVS_FORCE_ALGORITHM` environment variable read when the context is created), for tests and
//! benchmarks. A forced algorithm that cannot run a call fails it with
//! `EVS_ERROR_NOT_SUPPORTED`. `evs_last_plan` names what the last call on a thread ran.

use super::stats::{CsrStats, LengthStats};
use super::{InputKind, Op};
use crate::dtype::DType;
use crate::error::{Error, Result};
use std::cell::Cell;
use std::sync::atomic::{AtomicU8, Ordering};

/// What a family's algorithms have in common.
pub trait Algorithm: Copy + PartialEq + std::fmt::Debug + 'static {
    const FAMILY: Family;
    /// Every algorithm of the family, in declaration order.
    const ALL: &'static [Self];
    /// The family's plainly written CPU path.
    const REFERENCE: Self;
    /// "family:algorithm", as `evs_last_plan` reports it (NUL-terminated for the C API).
    fn plan(self) -> &'static str;
    /// The backends that run it.
    fn runs(self) -> Runs;
    fn position(self) -> usize {
        Self::ALL.iter().position(|&a| a == self).expect("every algorithm is in ALL")
    }
}

/// The backends that run an algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runs {
    Gpu,
    Cpu,
    Both,
}

impl Runs {
    pub fn on(self, backend: Backend) -> bool {
        matches!((self, backend), (Runs::Both, _) | (Runs::Gpu, Backend::Gpu) | (Runs::Cpu, Backend::Cpu))
    }
}

/// The backend a call runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Gpu,
    Cpu,
}

macro_rules! algorithms {
    ($($(#[$fdoc:meta])* $family:ident = $fname:literal {
        $($(#[$vdoc:meta])* $variant:ident = $vname:literal on $runs:ident,)*
    })*) => {
        /// The operation families that have a plan.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Family { $($family),* }

        /// Each family's name and its algorithms' names, in `Family` order.
        pub const FAMILIES: &[(&str, &[&str])] = &[$(($fname, &[$($vname),*])),*];

        $(
            $(#[$fdoc])*
            #[derive(Clone, Copy, Debug, PartialEq, Eq)]
            pub enum $family { $($(#[$vdoc])* $variant),* }

            impl Algorithm for $family {
                const FAMILY: Family = Family::$family;
                const ALL: &'static [Self] = &[$($family::$variant),*];
                const REFERENCE: Self = $family::Reference;
                fn plan(self) -> &'static str {
                    match self { $($family::$variant => concat!($fname, ":", $vname, "\0")),* }
                }
                fn runs(self) -> Runs {
                    match self { $($family::$variant => Runs::$runs),* }
                }
            }
        )*
    };
}

/// Every family's CPU reference, as a spec for `Forced::apply`.
pub fn all_reference() -> String {
    FAMILIES.iter().map(|(f, _)| format!("{f}:reference")).collect::<Vec<_>>().join(",")
}

algorithms! {
    /// spmv / spmm with the matrix as stored.
    SpmmN = "spmm_n" {
        /// One thread per row (n = 1: the short rows of spiking networks and graphs).
        ThreadPerRow = "thread_per_row" on Gpu,
        /// One warp per row (and 64 columns of B), entries broadcast by shuffles.
        WarpPerRow = "warp_per_row" on Gpu,
        /// Rows binned by length at analysis: a thread (n = 1), a warp or a block per row,
        /// long rows first, in one launch; f32/f64 spread long rows over blocks of
        /// `SPMM_N.long_row_chunk` entries that add into C with atomics.
        LengthClasses = "length_classes" on Gpu,
        /// Threads over row ranges of equal entry counts (one range, on the calling thread,
        /// for small calls); each row adds rows of B in panels of columns, with the machine's
        /// SIMD width.
        RowRanges = "row_ranges" on Cpu,
        /// `row_ranges` with B's rows in blocks of half the core's L2, each range's rows
        /// walking their entries one block at a time with their sums kept between blocks (B
        /// larger than L2: its rows, met at random, come from L2 rather than L3). Rows sorted
        /// by column give the same sums as `row_ranges`, bit for bit.
        InputBlocks = "input_blocks" on Cpu,
        /// Events with n > 1: B's events packed to bits (a per-stream scratch), then a warp per
        /// row and 128 columns adding each entry's weight where its bits are set; no atomics.
        EventBits = "event_bits" on Gpu,
        /// Floats with n > 1: each row of B listed as its nonzeros per 128 columns (a
        /// per-stream scratch; a tile with more than 32 nonzeros stays as it is), then a
        /// warp per row and 128 columns where each entry touches only its row's nonzeros; no
        /// atomics. Where more than 1/7 of B is nonzero (1/8 for f16 and bf16 and with 33 to
        /// 64 columns), counted on the device, `warp_per_row` runs instead.
        NonzeroLists = "nonzero_lists" on Gpu,
        /// Columns with live input (events, spike lists) spread their entries onto the output
        /// rows along the CSC mirror: only the active synapses are touched (CPU: on the calling
        /// thread; GPU, f32/f64, with atomics: a warp per listed column of a spike list; an
        /// event vector of up to `N_PARTS_MAX_COLUMNS` elements by line parts in one launch,
        /// listed nowhere; a longer one is counted first, and where its active columns are not
        /// few the same launch gathers the rows instead, decided on the device).
        CscScatter = "csc_scatter" on Both,
        /// spmv on event vectors of up to `N_SLICE_INPUTS` elements, in one launch: every block
        /// lists the live columns itself; where they are few, a block per slice of the output
        /// sums their entries in that slice along the CSC mirror in shared memory and writes
        /// the slice once (no global atomics, no beta pass), any dtype; where they are not, the
        /// same launch gathers the rows (decided on the device). Needs the columns' slice
        /// offsets that analysis keeps where they are small (`column_slice_width`).
        OutputSlices = "output_slices" on Gpu,
        /// The CPU's plainly written path.
        Reference = "reference" on Cpu,
    }
    /// spmv / spmm transposed.
    SpmmT = "spmm_t" {
        /// Rows with live input add into the output: with atomics (GPU, f32/f64; for spmv a
        /// warp ballots 32 rows' inputs and walks the live ones), or into an accumulator of the
        /// calling thread, touching only the active synapses (CPU).
        Scatter = "scatter" on Both,
        /// spmv scatter with a warp per row, every row checking its own input (f32/f64): more
        /// live rows in flight at once, which long rows need; and a warp per listed row of a
        /// spike list.
        RowWarpScatter = "row_warp_scatter" on Gpu,
        /// Output rows gather along the cached CSC mirror, without atomics: a warp per output
        /// column (GPU), or threads over output rows with the machine's SIMD width (CPU).
        CscGather = "csc_gather" on Both,
        /// `csc_gather` through L2-sized blocks of B, as `spmm_n:input_blocks` (CPU; the same
        /// sums as `csc_gather`, bit for bit).
        InputBlocks = "input_blocks" on Cpu,
        /// Events with n > 1: `event_bits` of spmm N along the CSC mirror.
        EventBits = "event_bits" on Gpu,
        /// Floats with n > 1: `nonzero_lists` of spmm N along the CSC mirror (`csc_gather`
        /// where B is mostly nonzero).
        NonzeroLists = "nonzero_lists" on Gpu,
        /// spmv on events and spike lists, rows sorted by column: a block per slice of
        /// `SLICE_OUTPUTS` outputs sums the live rows' entries in that slice in shared memory and
        /// writes the slice once (no global atomics, no beta pass), any dtype; needs the rows'
        /// slice offsets that analysis keeps where they are small beside the matrix
        /// (`slice_offsets_kept`).
        OutputSlices = "output_slices" on Gpu,
        /// The CPU's plainly written path.
        Reference = "reference" on Cpu,
    }
    /// Per-synapse products.
    Yw2y = "yw2y" {
        /// N: one warp per row.
        RowWarp = "row_warp" on Gpu,
        /// T: one thread per stored entry.
        EntryThread = "entry_thread" on Gpu,
        /// T on rows whose slice offsets analysis keeps (as for `output_slices`): a block per
        /// even share of the entries, y staged in shared memory a window of slices at a time.
        YWindows = "y_windows" on Gpu,
        /// The CPU's plainly written path.
        Reference = "reference" on Cpu,
    }
    /// Dense weights times events or floats.
    DenseMm = "dense_mm" {
        /// N with one column: warps over output rows (two a warp, 32 a block), reading W at the
        /// live inputs, in one launch (each block lists an event or float vector itself in
        /// shared memory; a spike list is read where it lies).
        MvRowWarp = "mv_row_warp" on Gpu,
        /// T with one column: blocks of 128 output columns, their warps sharing the live input
        /// rows, in one launch (each block lists an event or float vector itself; a spike list
        /// is read where it lies).
        MvColumnBlocks = "mv_column_blocks" on Gpu,
        /// Any shape: 64 x 64 output tiles staged through shared memory.
        Tiled = "tiled" on Gpu,
        /// Events with n > 1: the active rows of each column of S listed per chunk of rows (a
        /// per-stream scratch), then W read once and only the active (row, column) pairs added.
        EventLists = "event_lists" on Gpu,
        /// T on events with 2 to `DENSE_ROWS_T_COLS` columns: the active rows of each column
        /// of S listed first (one launch, a per-stream scratch), then blocks of 32 outputs
        /// whose warps share the listed (row, column) pairs, reading W only at their rows and
        /// summing in shared memory in a fixed order. Reproducible.
        ActiveRows = "active_rows" on Gpu,
        /// Events with n > 1 on Hopper's tensor cores (sm_90; f16, bf16, f32 W, TMA-aligned): the
        /// events as exact 0/1 (a per-stream scratch); N streams W once through TMA, T only the
        /// rows of W that the events select (listed on the device first; chunks that list most
        /// of their rows read whole), by a persistent grid sharing the work evenly (stream-K,
        /// partial tiles summed in a fixed order); f32 W split into three bf16 parts (f32
        /// accuracy). Reproducible.
        Wgmma = "wgmma" on Gpu,
        /// Only the input's nonzeros (events) are visited: N gathers W's row at their rows, T
        /// adds W's rows into each output column, with the machine's SIMD width.
        InputNonzeros = "input_nonzeros" on Cpu,
        /// The gemm crate's micro-kernels over all of W and the input (f32/f64).
        Gemm = "gemm" on Cpu,
        /// The CPU's plainly written path.
        Reference = "reference" on Cpu,
    }
    /// Plasticity on CSR weights.
    CsrPlasticity = "csr_plasticity" {
        /// Pre: one warp per row of an active pre-neuron.
        PreRows = "pre_rows" on Gpu,
        /// Post: one warp per CSC column of an active post-neuron.
        PostColumns = "post_columns" on Gpu,
        /// The CPU's plainly written path.
        Reference = "reference" on Cpu,
    }
    /// Plasticity on dense weights.
    DensePlasticity = "dense_plasticity" {
        /// Each block lists the live neurons in shared memory; pre: blocks of 256 columns, a
        /// stride of the listed rows each; post: blocks of 32 rows, each at the listed columns.
        RowStride = "row_stride" on Gpu,
        /// The CPU's plainly written path.
        Reference = "reference" on Cpu,
    }
    /// Block-sparse times dense.
    Bsrmm = "bsrmm" {
        /// Hopper's tensor cores (sm_90): wgmma from shared memory fed by TMA through a
        /// pipeline of 3-4 stages, a producer and two consumer warpgroups; 64 x 512 or 128 x 256
        /// tiles of C (f16/bf16, every block shape, 16-byte aligned operands).
        Wgmma = "wgmma" on Gpu,
        /// `wgmma` with two block rows of 64 x 64+ blocks in each 128 x 256 tile of C, one a
        /// consumer: the producer walks the union of their block columns and loads each B slice
        /// once for both rows where both hold its block.
        WgmmaPairs = "wgmma_pairs" on Gpu,
        /// Tensor cores, 64 x 128 tiles of C staged through shared memory (f16/bf16, blocks of
        /// at least 64 x 32, aligned operands).
        Tiled = "tiled" on Gpu,
        /// Tensor cores from global memory (f16/bf16, aligned operands).
        Wmma = "wmma" on Gpu,
        /// One thread per output element (any dtype and shape).
        Simt = "simt" on Gpu,
        /// Each block times B's rows through an optimized GEMM micro-kernel (the gemm crate),
        /// block rows over threads (f32 values and C).
        BlockGemm = "block_gemm" on Cpu,
        /// The CPU's plainly written path.
        Reference = "reference" on Cpu,
    }
    /// Event compaction.
    Compact = "compact" {
        /// One block up to 4,096 spikes; past that slices of the spikes per block (up to 64
        /// blocks, each counting the actives before its slice): one launch, sorted output.
        BlockSlices = "block_slices" on Gpu,
        /// One cluster of 8 blocks (sm_90 and later), in rounds of 131,072 spikes: each block
        /// counts its own run of a round and reads the counts before it from the cluster's shared
        /// memory, so no block reads another's spikes: one launch, sorted output.
        ClusterRounds = "cluster_rounds" on Gpu,
        /// The CPU's plainly written path.
        Reference = "reference" on Cpu,
    }
}

impl Family {
    fn index(self) -> usize {
        self as usize
    }

    pub fn name(self) -> &'static str {
        FAMILIES[self.index()].0
    }
}

// ---------------------------------------------------------------- the device

/// What choosers know of the device.
#[derive(Clone, Copy, Debug)]
pub struct DeviceInfo {
    pub multiprocessors: u32,
    /// major * 10 + minor.
    pub compute_capability: u32,
}

// ---------------------------------------------------------------- spmm N

/// Thresholds of the spmm N chooser and of the row-length classes built at analysis.
pub struct SpmmNTable {
    /// Rows up to this length run one per thread (n = 1): the thread class of
    /// `LengthClasses`, and `ThreadPerRow` when no row is longer.
    pub thread_row_max: usize,
    /// Rows of at least this length run one per block (or per chunk) in `LengthClasses`.
    pub block_row_min: usize,
    /// `LengthClasses` runs when the longest row is at least `block_row_min` and this many
    /// times the mean.
    pub skew: f64,
    /// Entries of a long row one block takes (f32/f64).
    pub long_row_chunk: usize,
}

/// Set from `bench/bench.py --variants` on the H100 (bench/NOTES.md, "spmm N classes").
pub const SPMM_N: SpmmNTable = SpmmNTable {
    // a warp per row leaves most lanes idle on short rows: 2,000,000 rows of 4 entries, a
    // thread per row 82 µs against a warp per row 431 µs
    thread_row_max: 8,
    // a warp gathers about one entry per L2 round trip (~0.4 µs under load on the H100): a
    // warp per row of 1,000 entries set a 400 µs tail on the skewed workload, rows up to 127
    // keep it near 50 µs
    block_row_min: 128,
    // uniform rows (max = mean) run best a warp per row; the skewed workload has max = 400 x mean
    skew: 8.0,
    // a block shares its SM's load throughput with the other blocks there: one block took
    // about 1 ms over the 20,000-entry rows of the skewed workload, where chunks of 512 spread
    // a row over 40 SMs
    long_row_chunk: 512,
};

/// The length class of a row under `SPMM_N`: 0 thread, 1 warp, 2 block.
pub fn row_class(len: usize) -> usize {
    if len <= SPMM_N.thread_row_max {
        0
    } else if len < SPMM_N.block_row_min {
        1
    } else {
        2
    }
}

/// Whether lines of these lengths are skewed enough to need `LengthClasses` (a warp per line
/// would wait on the longest).
fn skewed(lines: &LengthStats) -> bool {
    lines.max >= SPMM_N.block_row_min && lines.max as f64 >= SPMM_N.skew * lines.mean
}

/// spmv / spmm N. Events with n > 1 read bits, 2.5-4x faster than the gather of bytes or
/// floats on 10,000² x 200/row with 10 % of B active (bench/NOTES.md, "spmm on events").
/// Floats with n >= 32 run `nonzero_lists`, which chooses on the device between B's nonzeros and
/// the gather: f32 1.6-1.9x the gather at 10 % nonzero (128 and 256 columns, rows of 200 and
/// 1000, B larger than L2; 1.1-1.4x at 32 and 64), the gather and its listing pass (4-12 %) on
/// dense B; f16 / bf16 1.3x and f64 1.6x at 10 % (bench/NOTES.md, "spmm lists: what binds them,
/// and the lists' heads in one load").
///
/// spmv on an event vector (f32/f64) walks the active columns along the CSC mirror
/// (`csc_scatter`): up to N_PARTS_MAX_COLUMNS columns by line parts in one launch after the
/// scaling, listed nowhere (10000² x 200/row at 1 %: 3.4 graph µs against `output_slices`' 4.5,
/// bench/NOTES.md, "N on events by line parts"); longer ones where the active columns are few,
/// which the device decides from its count: 0.1 % and 1 %, 5.0-5.4 and 5.6-5.8 graph µs against
/// 6.1 and 6.7 for warp_per_row, which reads every index; at 20 % (the rows gathered after the
/// count) 10.5 against 7.7 (bench/NOTES.md, "spmv N on events along the CSC mirror").
pub fn choose_spmm_n(stats: &CsrStats, n: usize, kind: InputKind, dtype: DType, _dev: &DeviceInfo) -> SpmmN {
    let rows = &stats.rows;
    if skewed(rows) {
        SpmmN::LengthClasses
    } else if kind == InputKind::Events && n == 1 && can_scatter(dtype) && stats.cols.lines <= N_PARTS_MAX_COLUMNS {
        SpmmN::CscScatter
    } else if kind == InputKind::Events && n == 1 && column_slice_width(stats).is_some() {
        SpmmN::OutputSlices
    } else if kind == InputKind::Events && n == 1 && can_scatter(dtype) {
        SpmmN::CscScatter
    } else if kind == InputKind::Events && n > 1 {
        SpmmN::EventBits
    } else if lists_measured(stats, kind, n) {
        SpmmN::NonzeroLists
    } else if n == 1 && rows.max <= SPMM_N.thread_row_max {
        SpmmN::ThreadPerRow
    } else {
        SpmmN::WarpPerRow
    }
}

/// Events `spmm_n:output_slices` takes at most: every block lists them in one window of its
/// shared memory (kernels/sparse.cu, N_SLICE_INPUTS).
const N_SLICE_INPUTS: usize = 16384;
/// spmv N on event vectors of up to this many columns runs `csc_scatter` by line parts
/// (kernels/sparse.cu, csc_parts): no listing, no census.
pub const N_PARTS_MAX_COLUMNS: usize = 16384;

/// The slice widths `spmm_n:output_slices` may run with, narrowest first (kernels/sparse.cu,
/// N_SLICE_WIDTH_MAX): narrower slices are more blocks, each with fewer entries per column.
const N_SLICE_WIDTHS: [usize; 4] = [128, 256, 512, 1024];

/// Bytes of column slice offsets analysis may keep per stored entry (the CSC mirror takes 12
/// and more).
const N_SLICE_OFFSET_BYTES_PER_ENTRY: usize = 2;

/// The slice width of `spmm_n:output_slices` on a matrix, where analysis keeps its columns'
/// slice offsets (4 bytes per column and slice boundary): the narrowest whose offsets take at
/// most `N_SLICE_OFFSET_BYTES_PER_ENTRY` bytes per stored entry, on matrices of at most
/// `N_SLICE_INPUTS` columns. None where no width fits.
pub fn column_slice_width(stats: &CsrStats) -> Option<usize> {
    let (m, k) = (stats.rows.lines, stats.cols.lines);
    if stats.nnz == 0 || k > N_SLICE_INPUTS || stats.cols.max >= u32::MAX as usize {
        return None;
    }
    let offsets_bytes = |width: usize| 4 * k * (m.div_ceil(width) + 1);
    N_SLICE_WIDTHS.into_iter().find(|&width| offsets_bytes(width) <= N_SLICE_OFFSET_BYTES_PER_ENTRY * stats.nnz)
}

// ---------------------------------------------------------------- the other families

/// Thresholds of the spmm T chooser.
pub struct SpmmTTable {
    /// spmv on events scatters a warp per row from this mean row length up (atomics bound the
    /// step, and more rows in flight feed them), and ballots 32 rows per warp below (the scan
    /// of the silent rows bounds it).
    pub row_warp_mean_min: f64,
    /// Events scatter from this many stored entries up; below, one gather launch beats the
    /// scatter's two.
    pub scatter_nnz_min: usize,
    /// Analysis keeps the rows' slice offsets (4 bytes per row and slice) when rows hold at
    /// least this many entries per offset on average: at most 1/8 of the indices' memory.
    pub entries_per_slice_offset_min: f64,
    /// spmv on events runs `output_slices` from this many slices (blocks) up, when the offsets
    /// are kept and the matrix holds `scatter_nnz_min` entries.
    pub slices_min: usize,
}

/// Outputs one block of `output_slices` owns (kernels/sparse.cu, SLICE_OUTPUTS).
pub const SLICE_OUTPUTS: usize = 4096;

/// Slices of an output of `k` elements.
pub fn slices(k: usize) -> usize {
    k.div_ceil(SLICE_OUTPUTS)
}

/// Whether analysis keeps the slice offsets of a matrix (`output_slices` can run on it): rows
/// sorted, long enough for the offsets to be small beside the indices, and short enough for
/// 32-bit offsets.
pub fn slice_offsets_kept(stats: &CsrStats) -> bool {
    let offsets = (slices(stats.cols.lines) + 1) as f64;
    stats.sorted_rows
        && stats.nnz > 0
        && stats.rows.mean >= SPMM_T.entries_per_slice_offset_min * offsets
        && stats.rows.max < u32::MAX as usize
}

/// Neurons of the event vectors that `csr_post_even` takes (16 events of its mask a thread of a
/// 512-thread block: kernels/plasticity.cu, POST_EVEN_COLUMNS).
pub const POST_EVEN_COLUMNS: usize = 8192;
/// Entries of a run record of `csr_post_even` (a warp's 32 lanes).
pub const POST_RUN_ENTRIES: usize = 32;

/// Whether analysis keeps the run records of post plasticity by rows (`csr_post_even`): the
/// columns fit its mask, and every non-empty row holds a run's worth of entries or more, so that
/// a run meets at most one row start (16 bytes a run, and the column indices as uint16: two and
/// a half bytes an entry). 32-bit positions, with room past the last entry for a warp's last
/// batch of runs (kernels/plasticity.cu, `even_runs`: 4 runs a batch, so a position reaches
/// nnz + 159 before its bounds test).
pub fn post_runs_kept(stats: &CsrStats) -> bool {
    let short_rows: u64 = stats.rows.histogram[1..=POST_RUN_ENTRIES.trailing_zeros() as usize].iter().sum();
    stats.nnz > 0
        && stats.cols.lines <= POST_EVEN_COLUMNS
        && short_rows == 0
        && stats.nnz <= i32::MAX as usize - 8 * POST_RUN_ENTRIES
}

/// Whether `output_slices` is the choice for spmv on events and spike lists.
pub fn output_slices_pay(stats: &CsrStats) -> bool {
    slice_offsets_kept(stats) && stats.nnz >= SPMM_T.scatter_nnz_min && slices(stats.cols.lines) >= SPMM_T.slices_min
}

/// Set from `bench/bench.py --variants` on the H100 (bench/NOTES.md, "spmm T"): events at
/// 0.4-0.5% active on 32M and 1G entries, scatter 43 / 82 µs against gather 233 / 5,678 µs
/// (only active rows cost more than a load); on 320k entries gather 17.6 µs against 22.5.
/// The row-warp threshold from the same table, same run: 500,000 rows of 2,000 at 0.4 %
/// active, row_warp_scatter 61.6-61.7 µs against scatter 74.7-74.9 (graph-replayed); 400,000
/// rows of 80 at 0.5 %, scatter 9.1 against 34.9.
///
/// Output slices from `bench/probe_slices.cu` (graph µs, H100, homogeneous, spike lists):
/// 500,000 rows of 2,000 at 0.4 %, 15.6 against 50.8 for row_warp_scatter; 100,000 of 1,000 at
/// 1 % (25 slices), 10.0 against 16.6; 400,000 of 80 (98 slices, under one entry per row and
/// slice), 7.6 against 5.5.
pub const SPMM_T: SpmmTTable = SpmmTTable {
    scatter_nnz_min: 1 << 20,
    row_warp_mean_min: 512.0,
    entries_per_slice_offset_min: 8.0,
    slices_min: 16,
};

/// Stored entries from which a float spmm runs `nonzero_lists`: on 500,000 entries (10000² x
/// 50/row or 2500² x 200/row, 128 columns) the lists gain 1-3 µs of 30-35 at 10 % nonzero and
/// their listing pass costs 4-6 µs on dense B, so smaller calls keep the gather's one launch.
const LISTS_NNZ_MIN: usize = 1 << 19;

/// Whether a float spmm runs `nonzero_lists` (which falls back to the gather on the device):
/// 32 columns or more. With the lists' heads in one load (H200, 10000² x 200/row) they take
/// 29 % off N at 32 columns and 10 % nonzero, and 27 / 9 % at 64 columns and 5 / 10 % (T 39 /
/// 28 %), where the listing pass costs 12 % on dense B (bench/NOTES.md, "spmm lists: what binds
/// them, and the lists' heads in one load"); narrower B is not measured.
const LISTS_COLS_MIN: usize = 32;
fn lists_measured(stats: &CsrStats, kind: InputKind, n: usize) -> bool {
    kind == InputKind::Float && n >= LISTS_COLS_MIN && stats.nnz >= LISTS_NNZ_MIN
}

/// spmv / spmm T: f32/f64 events on large matrices scatter, everything else gathers along the
/// CSC mirror: float inputs gather 1.1-1.5x faster on uniform rows of 200 and 1000 entries
/// and 8x on power-law rows up to 20,000 (a scatter warp walks its row alone); floats with more
/// 32 columns or more and 2^19 entries through `nonzero_lists` (as N) where the columns are
/// not skewed.
pub fn choose_spmm_t(stats: &CsrStats, n: usize, dtype: DType, kind: InputKind) -> SpmmT {
    let spmv_events = n == 1 && kind == InputKind::Events && can_scatter(dtype);
    if n == 1 && kind == InputKind::Events && output_slices_pay(stats) {
        SpmmT::OutputSlices
    } else if spmv_events && stats.nnz >= SPMM_T.scatter_nnz_min && stats.rows.mean >= SPMM_T.row_warp_mean_min {
        SpmmT::RowWarpScatter
    } else if spmv_events && stats.nnz >= SPMM_T.scatter_nnz_min {
        SpmmT::Scatter
    } else if kind == InputKind::Events && n > 1 && !skewed(&stats.cols) {
        SpmmT::EventBits
    } else if lists_measured(stats, kind, n) && !skewed(&stats.cols) {
        SpmmT::NonzeroLists
    } else {
        SpmmT::CscGather
    }
}

/// Thresholds of the CPU choosers.
pub struct CpuTable {
    /// Calls with fewer multiply-adds than this run on the calling thread: handing work to the
    /// thread pool and back costs several microseconds.
    pub inline_work_max: usize,
    /// spmm T (and N on events, along the CSC mirror) scatters when the lines with live input
    /// hold less than 1 / `scatter_share` of the stored entries (the scatter runs on one
    /// thread, the gather on all).
    pub scatter_share: usize,
    /// N along the CSC mirror with several input columns scatters only below 1 /
    /// `wide_csc_scatter_share`: each live entry adds a whole input row into an output row met
    /// at random (B 10000 x 128: the two paths meet at 7 % of the rows live).
    pub wide_csc_scatter_share: usize,
    /// Dense products visit only the input's nonzeros when they are fewer than 1 /
    /// `dense_nonzero_share` of its elements.
    pub dense_nonzero_share: usize,
    /// The fewest input columns for which a gather walks B in L2-sized blocks: a full panel.
    /// Narrower rows take the partial panels' loop, which measured no faster through blocks
    /// (B 10000 x 64, 40000 x 32) or slower (100000 x 16).
    pub input_blocks_min_cols: usize,
}

/// Set from `make bench-cpu` (bench/NOTES.md, "CPU").
pub const CPU: CpuTable = CpuTable {
    inline_work_max: 1 << 15,
    scatter_share: 8,
    wide_csc_scatter_share: 16,
    dense_nonzero_share: 4,
    input_blocks_min_cols: 128,
};

/// The stored entries that live input must reach for a gather over all `nnz` to beat
/// scattering them: 1 / `share` of them.
fn gather_from(nnz: usize, share: usize) -> usize {
    nnz.div_ceil(share)
}

/// The stored entries that the live input rows must reach for spmv / spmm N on the CPU to
/// gather rather than scatter (a count may stop there).
pub fn spmm_n_gather_from(nnz: usize, cols: usize) -> usize {
    gather_from(nnz, if cols > 1 { CPU.wide_csc_scatter_share } else { CPU.scatter_share })
}

/// A core's caches as the CPU gathers see them: its L2, and the largest input its L3 feeds a
/// row gather from better than L2-sized blocks would (0: none).
#[derive(Clone, Copy, Debug)]
pub struct GatherCaches {
    pub l2: usize,
    pub l3_gather: usize,
}

/// Whether a CPU gather walks its input in L2-sized blocks: the input (B) larger than the
/// core's L2 and than what its L3 feeds a row gather from better than the blocks (an AMD Zen L3
/// does, for inputs up to half of it: the row gather ran 1.1-1.7x faster there, bench/NOTES.md
/// "CPU: the row gather against L2 blocks by the L3 that feeds it"), at least
/// `CPU.input_blocks_min_cols` columns, and the lines it gathers along sorted (else a line's
/// entries within a block are not together and the walk meets them in later blocks).
pub fn input_blocks_pay(rows: usize, cols: usize, acc_bytes: usize, caches: GatherCaches, sorted_lines: bool) -> bool {
    let bytes = rows.saturating_mul(cols * acc_bytes);
    sorted_lines && cols >= CPU.input_blocks_min_cols && bytes > caches.l2 && bytes > caches.l3_gather
}

/// spmv / spmm N on the CPU, from the stored entries the live input rows (A's columns) reach,
/// the input's columns and whether blocks of it pay (`input_blocks_pay`).
pub fn choose_spmm_n_cpu(live_entries: usize, nnz: usize, cols: usize, blocks_pay: bool) -> SpmmN {
    if live_entries < spmm_n_gather_from(nnz, cols) {
        SpmmN::CscScatter
    } else if blocks_pay {
        SpmmN::InputBlocks
    } else {
        SpmmN::RowRanges
    }
}

/// spmv / spmm T on the CPU, from the stored entries the live input rows reach and whether
/// blocks of the input pay (`input_blocks_pay`).
pub fn choose_spmm_t_cpu(live_entries: usize, nnz: usize, blocks_pay: bool) -> SpmmT {
    if live_entries < gather_from(nnz, CPU.scatter_share) {
        SpmmT::Scatter
    } else if blocks_pay {
        SpmmT::InputBlocks
    } else {
        SpmmT::CscGather
    }
}

/// Dense mv / mm on the CPU, from the input's nonzeros among its elements: visiting only the
/// nonzeros costs a scalar gather each (N); above that share the GEMM micro-kernels (f32/f64)
/// or the reference (f16/bf16).
pub fn choose_dense_mm_cpu(nonzeros: usize, elements: usize, dtype: DType) -> DenseMm {
    if nonzeros.saturating_mul(CPU.dense_nonzero_share) < elements {
        DenseMm::InputNonzeros
    } else if matches!(dtype, DType::F32 | DType::F64) {
        DenseMm::Gemm
    } else {
        DenseMm::Reference
    }
}

/// bsrmm on the CPU: the GEMM micro-kernels where values and C are f32.
pub fn choose_bsrmm_cpu(all_f32: bool) -> Bsrmm {
    if all_f32 {
        Bsrmm::BlockGemm
    } else {
        Bsrmm::Reference
    }
}

/// Atomic adds exist for the output dtype and keep the accumulator's precision.
pub fn can_scatter(dtype: DType) -> bool {
    matches!(dtype, DType::F32 | DType::F64)
}

/// yw2y T stages y in shared memory (`y_windows`) for one batch of y larger than this, where
/// `entry_thread`'s gathers miss L1 (bench/NOTES.md, "yw2y T through windows of y": y of 400
/// and 800 KB 1.4x faster, 120 KB even, 40 KB 5 % slower), on at least `YW2Y_WINDOWS_NNZ_MIN`
/// entries.
pub(crate) const YW2Y_WINDOWS_Y_BYTES_MIN: usize = 128 << 10;
pub(crate) const YW2Y_WINDOWS_NNZ_MIN: usize = 1 << 20;

pub fn choose_yw2y(op: Op, stats: &CsrStats, batches: usize, dtype: DType) -> Yw2y {
    let y_bytes = stats.cols.lines * dtype.size();
    let windows = batches == 1 && y_bytes > YW2Y_WINDOWS_Y_BYTES_MIN && stats.nnz >= YW2Y_WINDOWS_NNZ_MIN;
    match op {
        Op::N => Yw2y::RowWarp,
        Op::T if windows && slice_offsets_kept(stats) => Yw2y::YWindows,
        Op::T => Yw2y::EntryThread,
    }
}

/// Whether yw2y algorithm `alg` can run op on a matrix of these stats.
pub fn yw2y_fits(alg: Yw2y, op: Op, stats: &CsrStats) -> bool {
    match alg {
        Yw2y::RowWarp => op == Op::N,
        Yw2y::EntryThread => op == Op::T,
        Yw2y::YWindows => op == Op::T && slice_offsets_kept(stats),
        Yw2y::Reference => true,
    }
}

/// Columns of events up to which dense mm T lists the active rows of each column of S
/// (`active_rows`; ROWS_T_COLS in kernels/dense.cu).
pub(crate) const DENSE_ROWS_T_COLS: usize = 16;

/// Dense mv / mm on the GPU: one column runs the mv kernels; T with few columns lists the active
/// rows of each column of S; events with more columns run on the tensor cores where
/// `tensor_cores` says they can, others list their active pairs (bench/NOTES.md, "Dense mm on events");
/// float inputs run the tiles.
pub fn choose_dense_mm(op: Op, n: usize, kind: InputKind, tensor_cores: bool) -> DenseMm {
    match (op, n) {
        (Op::N, 1) => DenseMm::MvRowWarp,
        (Op::T, 1) => DenseMm::MvColumnBlocks,
        (Op::T, 2..=DENSE_ROWS_T_COLS) if kind == InputKind::Events => DenseMm::ActiveRows,
        _ if kind == InputKind::Events && tensor_cores => DenseMm::Wgmma,
        _ if kind == InputKind::Events => DenseMm::EventLists,
        _ => DenseMm::Tiled,
    }
}

pub fn choose_csr_plasticity(post: bool) -> CsrPlasticity {
    if post {
        CsrPlasticity::PostColumns
    } else {
        CsrPlasticity::PreRows
    }
}

/// Dense plasticity has one algorithm so far.
pub fn choose_dense_plasticity() -> DensePlasticity {
    DensePlasticity::RowStride
}

/// Event compaction: one block up to COMPACT_ONE_BLOCK_MAX spikes, else a cluster where the
/// device has them (the slices' last block reads every spike before its own: 100,000 spikes
/// chained at 3.46 graph µs in slices, 2.95 in a cluster; bench/NOTES.md, "Multi-block
/// compaction in one cluster").
pub fn choose_compact(spikes: usize, clusters: bool) -> Compact {
    if spikes > COMPACT_ONE_BLOCK_MAX && clusters {
        Compact::ClusterRounds
    } else {
        Compact::BlockSlices
    }
}

/// The most spikes `block_slices` lists in one block (one tile: 256 threads, 16 spikes each).
/// The probe has one block faster to 12,000 (several tiles: one block / cluster / slices 1.84 /
/// 2.57 / 2.75 graph µs at 8,192, 2.46 / 2.75 / 3.39 at 12,000, 3.65 / 2.69 / 3.37 at 20,000;
/// bench/probe_compact_cluster.cu); raising it waits for the GPU suites and sanitizers on it.
pub(crate) const COMPACT_ONE_BLOCK_MAX: usize = 4096;

/// The shapes bsrmm's tensor-core paths accept.
#[derive(Clone, Copy, Debug)]
pub struct BsrmmCall {
    pub dtype: DType,
    pub bm: usize,
    pub bk: usize,
    /// B's columns, its row stride and both base pointers are aligned for WMMA loads.
    pub aligned: bool,
    /// An sm_90 device, and operands TMA can address (`cuda::bsrmm_tma`).
    pub tma: bool,
    /// Stored blocks over block rows x block columns, and stored blocks a block row.
    pub density: f64,
    pub row_blocks: f64,
}

impl BsrmmCall {
    fn tensor_cores(&self) -> bool {
        matches!(self.dtype, DType::F16 | DType::BF16) && self.aligned
    }

    pub fn fits(&self, alg: Bsrmm) -> bool {
        match alg {
            Bsrmm::Wgmma => matches!(self.dtype, DType::F16 | DType::BF16) && self.tma,
            Bsrmm::WgmmaPairs => self.fits(Bsrmm::Wgmma) && self.bm == 64 && self.bk >= 64,
            Bsrmm::Tiled => self.tensor_cores() && self.bm >= 64 && self.bk >= 32,
            Bsrmm::Wmma => self.tensor_cores(),
            Bsrmm::Simt | Bsrmm::Reference => true,
            Bsrmm::BlockGemm => false,
        }
    }
}

/// Where `wgmma_pairs` beats `wgmma` on 64 x 512 tiles (8192³ bf16, 64 x 64 blocks, H200,
/// bench/NOTES.md, "bsrmm: 64-row tiles of 512 columns"): dense enough that the two rows share
/// most B slices. At 50 % one call takes 1,070-1,083 µs paired against 1,100-1,119 (back to back
/// in a graph the order turns: 1,204-1,211 against 1,135-1,141); at 25 % 662-815 against 589-600.
const PAIRS_DENSITY_MIN: f64 = 0.4;

/// `wgmma` on 64-row blocks draws its tiles from a counter, rows longest first, where rows are
/// this short (1.5 %, ~2 blocks a row: -17 % against the fixed order, and faster than the pairs;
/// at 10-50 % the counter costs 2-6 %, at 32-row blocks 9 %: bench/NOTES.md, "bsrmm: 64-row
/// tiles from a counter"). 128-row blocks always draw from it.
const COUNTER64_ROW_BLOCKS_MAX: f64 = 4.0;

/// Stored blocks a block row on average, of `nnzb` blocks in `mb` block rows.
pub fn row_blocks(nnzb: usize, mb: usize) -> f64 {
    nnzb as f64 / mb.max(1) as f64
}

/// Whether bsrmm's Hopper kernel takes its tiles from a counter for `nnzb` blocks of `bm` rows in
/// `mb` block rows (unpaired tiles only).
pub fn bsrmm_tile_counter(bm: usize, nnzb: usize, mb: usize) -> bool {
    bm == 128 || (bm == 64 && row_blocks(nnzb, mb) <= COUNTER64_ROW_BLOCKS_MAX)
}

/// The fastest path that fits (8192³ bf16, blocks 64 and 128, 1.5-50 %: wgmma 108-513 TFLOP/s,
/// tiled 56-102, wmma ~18; bench/NOTES.md, "bsrmm on Hopper").
pub fn choose_bsrmm(call: &BsrmmCall) -> Bsrmm {
    if call.density >= PAIRS_DENSITY_MIN && call.fits(Bsrmm::WgmmaPairs) {
        return Bsrmm::WgmmaPairs;
    }
    *Bsrmm::ALL.iter().find(|&&a| a != Bsrmm::WgmmaPairs && call.fits(a)).expect("simt fits every call")
}

// ---------------------------------------------------------------- forcing and reporting

/// The algorithms a context forces, per family (0: the chooser decides).
pub struct Forced([AtomicU8; FAMILIES.len()]);

impl Default for Forced {
    fn default() -> Self {
        Forced(std::array::from_fn(|_| AtomicU8::new(0)))
    }
}

impl Forced {
    /// Applies a spec such as "spmm_n:length_classes,spmm_t:auto" ("auto" gives the family
    /// back to its chooser). The whole spec is checked first: a rejected spec changes nothing.
    pub fn apply(&self, spec: &str) -> Result<()> {
        let parsed = parse(spec)?;
        for (family, choice) in parsed {
            self.0[family].store(choice, Ordering::Relaxed);
        }
        Ok(())
    }

    /// The algorithm forced for `A`'s family, if any.
    pub fn get<A: Algorithm>(&self) -> Option<A> {
        match self.0[A::FAMILY.index()].load(Ordering::Relaxed) {
            0 => None,
            v => A::ALL.get(v as usize - 1).copied(),
        }
    }
}

/// (family index, 0 for auto or 1 + algorithm index) for each item of a spec.
fn parse(spec: &str) -> Result<Vec<(usize, u8)>> {
    let known = || FAMILIES.iter().map(|(f, algs)| format!("{f}: {}", algs.join(", "))).collect::<Vec<_>>().join("; ");
    let mut out = Vec::new();
    for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let Some((family, alg)) = item.split_once(':') else {
            return Err(Error::value(format!("algorithm: \"{item}\" is not of the form family:algorithm")));
        };
        let (family, alg) = (family.trim(), alg.trim());
        let Some(f) = FAMILIES.iter().position(|(name, _)| *name == family) else {
            return Err(Error::value(format!("algorithm: unknown family \"{family}\" (known: {})", known())));
        };
        let choice = if alg == "auto" {
            0
        } else {
            match FAMILIES[f].1.iter().position(|a| *a == alg) {
                Some(i) => i as u8 + 1,
                None => {
                    return Err(Error::value(format!(
                        "algorithm: {family} has no algorithm \"{alg}\" (it has auto, {})",
                        FAMILIES[f].1.join(", ")
                    )))
                }
            }
        };
        out.push((f, choice));
    }
    Ok(out)
}

/// The chooser's pick, or the forced algorithm where it runs on `backend` and can run the call
/// (`fits`); records the plan for `evs_last_plan`.
pub fn decide<A: Algorithm>(forced: &Forced, backend: Backend, chosen: A, fits: impl Fn(A) -> bool) -> Result<A> {
    let alg = match forced.get::<A>() {
        Some(f) if f.runs().on(backend) && fits(f) => f,
        Some(f) => {
            let why = if f.runs().on(backend) { "this call" } else { "on this backend" };
            return Err(Error::not_supported(format!(
                "the forced algorithm {} cannot run {why} (evs_context_set_algorithm / EVS_FORCE_ALGORITHM)",
                plan_name(f.plan())
            )));
        }
        None => chosen,
    };
    record(alg.plan());
    Ok(alg)
}

thread_local! {
    static LAST_PLAN: Cell<&'static str> = const { Cell::new("\0") };
}

fn record(plan: &'static str) {
    LAST_PLAN.with(|p| p.set(plan));
}

/// The plan of the last operation on this thread, NUL-terminated ("\0" before any).
pub fn last() -> &'static str {
    LAST_PLAN.with(Cell::get)
}

/// A plan string without its terminating NUL.
pub fn plan_name(plan: &'static str) -> &'static str {
    plan.trim_end_matches('\0')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::stats::LengthStats;

    const H100: DeviceInfo = DeviceInfo { multiprocessors: 132, compute_capability: 90 };

    fn stats(lengths: &[usize]) -> CsrStats {
        let rows = LengthStats::from_lengths(lengths.iter().copied());
        CsrStats { nnz: lengths.iter().sum(), rows: rows.clone(), cols: rows, sorted_rows: true }
    }

    #[test]
    fn spmm_n_picks_by_row_lengths() {
        let uniform = stats(&[1000; 1000]);
        let float = InputKind::Float;
        assert_eq!(choose_spmm_n(&uniform, 128, float, DType::F32, &H100), SpmmN::NonzeroLists);
        assert_eq!(choose_spmm_n(&uniform, 64, float, DType::F32, &H100), SpmmN::NonzeroLists);
        assert_eq!(choose_spmm_n(&uniform, 32, float, DType::F32, &H100), SpmmN::NonzeroLists);
        assert_eq!(choose_spmm_n(&uniform, 31, float, DType::F32, &H100), SpmmN::WarpPerRow);
        for dtype in [DType::F16, DType::BF16, DType::F64] {
            assert_eq!(choose_spmm_n(&uniform, 128, float, dtype, &H100), SpmmN::NonzeroLists);
        }
        assert_eq!(choose_spmm_n(&stats(&[100; 1000]), 128, float, DType::F32, &H100), SpmmN::WarpPerRow);
        assert_eq!(choose_spmm_n(&uniform, 1, float, DType::F32, &H100), SpmmN::WarpPerRow);
        assert_eq!(choose_spmm_n(&uniform, 128, InputKind::Events, DType::F32, &H100), SpmmN::EventBits);
        // event vectors: csc_scatter by line parts up to N_PARTS_MAX_COLUMNS columns (f32/f64),
        // else output_slices up to N_SLICE_INPUTS columns, then csc_scatter (f32/f64)
        let wide = stats(&[20; N_SLICE_INPUTS + 1]);
        assert_eq!(choose_spmm_n(&uniform, 1, InputKind::Events, DType::F32, &H100), SpmmN::CscScatter);
        assert_eq!(choose_spmm_n(&uniform, 1, InputKind::Events, DType::BF16, &H100), SpmmN::OutputSlices);
        assert_eq!(choose_spmm_n(&wide, 1, InputKind::Events, DType::F32, &H100), SpmmN::CscScatter);
        assert_eq!(choose_spmm_n(&wide, 1, InputKind::Events, DType::BF16, &H100), SpmmN::WarpPerRow);
        let short = stats(&[3, 0, 8, 5]);
        assert_eq!(choose_spmm_n(&short, 1, float, DType::F32, &H100), SpmmN::ThreadPerRow);
        assert_eq!(choose_spmm_n(&short, 64, float, DType::F32, &H100), SpmmN::WarpPerRow);
        let mut skewed = vec![50; 10_000];
        skewed[7] = 20_000;
        for n in [1, 64] {
            for kind in [float, InputKind::Events] {
                assert_eq!(choose_spmm_n(&stats(&skewed), n, kind, DType::F32, &H100), SpmmN::LengthClasses);
            }
        }
    }

    #[test]
    fn row_classes_follow_the_table() {
        assert_eq!(row_class(0), 0);
        assert_eq!(row_class(SPMM_N.thread_row_max), 0);
        assert_eq!(row_class(SPMM_N.thread_row_max + 1), 1);
        assert_eq!(row_class(SPMM_N.block_row_min - 1), 1);
        assert_eq!(row_class(SPMM_N.block_row_min), 2);
    }

    #[test]
    fn column_slices_take_at_most_two_bytes_an_entry() {
        // 10,000² x 200: 79 slices of 128 rows, 3.2 MB of offsets for 2 M entries
        assert_eq!(column_slice_width(&stats(&[200; 10_000])), Some(128));
        // 5,000 x 5,000 x 12: 16 bytes a column at 1,024 rows (6 offsets), none narrower fits
        assert_eq!(column_slice_width(&stats(&[12; 5_000])), Some(1_024));
        assert_eq!(column_slice_width(&stats(&[2; 5_000])), None);
        assert_eq!(column_slice_width(&stats(&[200; N_SLICE_INPUTS + 1])), None);
        assert_eq!(column_slice_width(&stats(&[0; 100])), None);
    }

    #[test]
    fn other_families_choose_by_the_call() {
        let (small, large) = (stats(&[80; 4000]), stats(&[80; 400_000]));
        let long = stats(&[2000; 1000]);
        assert_eq!(choose_spmm_t(&large, 1, DType::F32, InputKind::Float), SpmmT::CscGather);
        assert_eq!(choose_spmm_t(&large, 1, DType::F64, InputKind::Events), SpmmT::Scatter);
        assert_eq!(choose_spmm_t(&long, 1, DType::F32, InputKind::Events), SpmmT::RowWarpScatter);
        assert_eq!(choose_spmm_t(&large, 128, DType::F32, InputKind::Events), SpmmT::EventBits);
        assert_eq!(choose_spmm_t(&large, 128, DType::F32, InputKind::Float), SpmmT::NonzeroLists);
        assert_eq!(choose_spmm_t(&large, 128, DType::F16, InputKind::Float), SpmmT::NonzeroLists);
        assert_eq!(choose_spmm_t(&small, 128, DType::F32, InputKind::Float), SpmmT::CscGather);
        let mut hub = vec![50; 20_000];
        hub[3] = 20_000;
        assert_eq!(choose_spmm_t(&stats(&hub), 128, DType::F32, InputKind::Float), SpmmT::CscGather);
        assert_eq!(choose_spmm_t(&small, 1, DType::F32, InputKind::Events), SpmmT::CscGather);
        assert_eq!(choose_spmm_t(&large, 1, DType::BF16, InputKind::Events), SpmmT::CscGather);
        let wide = CsrStats { cols: LengthStats::from_lengths(std::iter::repeat_n(4, 500_000)), ..long.clone() };
        assert!(output_slices_pay(&wide) && !output_slices_pay(&long) && slice_offsets_kept(&long));
        for dtype in [DType::BF16, DType::F32] {
            assert_eq!(choose_spmm_t(&wide, 1, dtype, InputKind::Events), SpmmT::OutputSlices);
        }
        assert_eq!(
            choose_spmm_t(&CsrStats { sorted_rows: false, ..wide.clone() }, 1, DType::F32, InputKind::Events),
            SpmmT::RowWarpScatter
        );
        assert!(!slice_offsets_kept(&CsrStats {
            cols: LengthStats::from_lengths(std::iter::repeat_n(1, 400_000)),
            ..large.clone()
        }));
        let seed = stats(&[1000; 100_000]);
        assert_eq!(choose_yw2y(Op::T, &seed, 1, DType::F32), Yw2y::YWindows);
        assert_eq!(choose_yw2y(Op::T, &seed, 8, DType::F32), Yw2y::EntryThread);
        assert_eq!(choose_yw2y(Op::T, &stats(&[200; 10_000]), 1, DType::F32), Yw2y::EntryThread);
        assert_eq!(choose_yw2y(Op::T, &CsrStats { sorted_rows: false, ..seed }, 1, DType::F32), Yw2y::EntryThread);
        assert_eq!(choose_dense_mm(Op::T, 1, InputKind::Events, true), DenseMm::MvColumnBlocks);
        assert_eq!(choose_dense_mm(Op::N, 7, InputKind::Float, true), DenseMm::Tiled);
        assert_eq!(choose_dense_mm(Op::T, 7, InputKind::Events, false), DenseMm::ActiveRows);
        assert_eq!(choose_dense_mm(Op::T, 17, InputKind::Events, false), DenseMm::EventLists);
        assert_eq!(choose_dense_mm(Op::T, 17, InputKind::Events, true), DenseMm::Wgmma);
        assert_eq!(choose_dense_mm(Op::N, 7, InputKind::Events, false), DenseMm::EventLists);
        assert_eq!(choose_dense_mm(Op::N, 7, InputKind::Events, true), DenseMm::Wgmma);
        assert_eq!(choose_csr_plasticity(true), CsrPlasticity::PostColumns);
        let call =
            |dtype, bm, bk, aligned| BsrmmCall { dtype, bm, bk, aligned, tma: false, density: 0.1, row_blocks: 10.0 };
        let hopper = |dtype, bm, bk| BsrmmCall { tma: true, ..call(dtype, bm, bk, true) };
        assert_eq!(choose_bsrmm(&hopper(DType::BF16, 64, 128)), Bsrmm::Wgmma);
        let dense = BsrmmCall { density: 0.5, row_blocks: 64.0, ..hopper(DType::BF16, 64, 128) };
        assert_eq!(choose_bsrmm(&dense), Bsrmm::WgmmaPairs);
        let short = BsrmmCall { density: 0.015, row_blocks: 2.0, ..hopper(DType::F16, 64, 64) };
        assert_eq!(choose_bsrmm(&short), Bsrmm::Wgmma);
        assert!(bsrmm_tile_counter(64, 8, 4) && !bsrmm_tile_counter(64, 64, 5) && !bsrmm_tile_counter(32, 8, 4));
        assert!(bsrmm_tile_counter(128, 250, 5));
        assert_eq!(choose_bsrmm(&BsrmmCall { bk: 32, ..dense }), Bsrmm::Wgmma);
        assert_eq!(choose_bsrmm(&hopper(DType::F16, 128, 32)), Bsrmm::Wgmma);
        assert_eq!(choose_bsrmm(&hopper(DType::F16, 16, 64)), Bsrmm::Wgmma);
        assert_eq!(choose_bsrmm(&hopper(DType::F32, 128, 128)), Bsrmm::Simt);
        assert_eq!(choose_bsrmm(&call(DType::BF16, 64, 64, true)), Bsrmm::Tiled);
        assert_eq!(choose_bsrmm(&call(DType::F16, 16, 16, true)), Bsrmm::Wmma);
        assert_eq!(choose_bsrmm(&call(DType::F16, 64, 64, false)), Bsrmm::Simt);
        assert_eq!(choose_bsrmm(&call(DType::F32, 64, 64, true)), Bsrmm::Simt);
        assert_eq!(choose_spmm_t_cpu(20 * 80, 4000 * 80, false), SpmmT::Scatter);
        assert_eq!(choose_spmm_n_cpu(20 * 80, 4000 * 80, 1, false), SpmmN::CscScatter);
        assert_eq!(choose_spmm_n_cpu(4000 * 80, 4000 * 80, 1, false), SpmmN::RowRanges);
        // B 10000 x 128 (2M entries): 1 % of its rows live scatters, 10 % gathers
        assert_eq!(choose_spmm_n_cpu(100 * 200, 10000 * 200, 128, true), SpmmN::CscScatter);
        assert_eq!(choose_spmm_n_cpu(1000 * 200, 10000 * 200, 128, false), SpmmN::RowRanges);
        assert_eq!(choose_spmm_n_cpu(1000 * 200, 10000 * 200, 128, true), SpmmN::InputBlocks);
        assert_eq!(choose_spmm_t_cpu(4000 * 80, 4000 * 80, false), SpmmT::CscGather);
        assert_eq!(choose_spmm_t_cpu(4000 * 80, 4000 * 80, true), SpmmT::InputBlocks);
        // B 10000 x 128 f32 (5 MB) in a 2 MB L2 pays; in 8 MB, rows unsorted, 64 columns or an L3
        // that feeds the row gather from 16 MB not; B 200,000 x 128 (102 MB) past that L3 pays
        let l2 = |l2| GatherCaches { l2, l3_gather: 0 };
        assert!(input_blocks_pay(10000, 128, 4, l2(2 << 20), true));
        assert!(!input_blocks_pay(10000, 128, 4, l2(8 << 20), true));
        assert!(!input_blocks_pay(10000, 128, 4, l2(2 << 20), false));
        assert!(!input_blocks_pay(40000, 64, 4, l2(2 << 20), true));
        let zen = GatherCaches { l2: 1 << 20, l3_gather: 16 << 20 };
        assert!(!input_blocks_pay(10000, 128, 4, zen, true));
        assert!(input_blocks_pay(200_000, 128, 4, zen, true));
        assert_eq!(choose_dense_mm_cpu(2000, 2000 * 100, DType::F32), DenseMm::InputNonzeros);
        assert_eq!(choose_dense_mm_cpu(2000 * 100, 2000 * 100, DType::F32), DenseMm::Gemm);
        assert_eq!(choose_dense_mm_cpu(2000 * 100, 2000 * 100, DType::BF16), DenseMm::Reference);
    }

    #[test]
    fn forcing_parses_checks_and_reports() {
        let forced = Forced::default();
        assert_eq!(forced.get::<SpmmN>(), None);
        forced.apply("spmm_n:thread_per_row, bsrmm:simt").unwrap();
        assert_eq!(forced.get::<SpmmN>(), Some(SpmmN::ThreadPerRow));
        assert_eq!(forced.get::<Bsrmm>(), Some(Bsrmm::Simt));
        let alg = decide(&forced, Backend::Gpu, SpmmN::WarpPerRow, |_| true).unwrap();
        assert_eq!((alg, plan_name(last())), (SpmmN::ThreadPerRow, "spmm_n:thread_per_row"));
        assert!(last().ends_with('\0'));
        let err = decide(&forced, Backend::Gpu, Bsrmm::Tiled, |a| a != Bsrmm::Simt).unwrap_err();
        assert_eq!(err.status, crate::error::EVS_ERROR_NOT_SUPPORTED);
        // a GPU algorithm forced on the CPU, and the reference forced on the GPU
        let err = decide(&forced, Backend::Cpu, SpmmN::RowRanges, |_| true).unwrap_err();
        assert!(err.message.contains("on this backend"), "{}", err.message);
        forced.apply("spmm_n:reference").unwrap();
        assert!(decide(&forced, Backend::Gpu, SpmmN::WarpPerRow, |_| true).is_err());
        assert_eq!(decide(&forced, Backend::Cpu, SpmmN::RowRanges, |_| true).unwrap(), SpmmN::Reference);
        forced.apply("spmm_n:thread_per_row").unwrap();
        // a bad item rejects the whole spec
        for bad in ["spmm_n", "nope:x", "spmm_n:nope", "spmm_n:auto,bsrmm:fast"] {
            assert!(forced.apply(bad).is_err(), "{bad}");
        }
        assert_eq!(forced.get::<SpmmN>(), Some(SpmmN::ThreadPerRow));
        forced.apply("spmm_n:auto").unwrap();
        assert_eq!(forced.get::<SpmmN>(), None);
        assert_eq!(decide(&forced, Backend::Gpu, SpmmN::WarpPerRow, |_| true).unwrap(), SpmmN::WarpPerRow);
        forced.apply(&all_reference()).unwrap();
        assert_eq!(forced.get::<Compact>(), Some(Compact::Reference));
    }

    #[test]
    fn every_algorithm_has_a_unique_plan_name() {
        let mut seen = std::collections::HashSet::new();
        for (family, algs) in FAMILIES {
            for alg in *algs {
                assert!(seen.insert(format!("{family}:{alg}")));
            }
        }
        assert_eq!(SpmmN::LengthClasses.plan(), "spmm_n:length_classes\0");
        assert_eq!(SpmmN::LengthClasses.position(), 2);
        for family in FAMILIES {
            assert!(family.1.contains(&"reference"), "{} has a CPU reference", family.0);
        }
        assert!(SpmmT::Scatter.runs().on(Backend::Cpu) && SpmmT::Scatter.runs().on(Backend::Gpu));
        assert!(!SpmmN::WarpPerRow.runs().on(Backend::Cpu) && !SpmmN::Reference.runs().on(Backend::Gpu));
    }
}
