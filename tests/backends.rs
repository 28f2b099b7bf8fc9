//! The backend of EVS_TEST_DEVICE against the CPU backend: every algorithm of every operation
//! (each forced in turn, see `core::plan`), every dtype, N and T, homo and hetero, float and
//! event inputs, alpha/beta, on fresh random inputs (odd sizes, empty rows, duplicates,
//! nnz = 0, and skewed rows: a few rows 100x longer than the mean among many empty ones).
//! The CPU side runs every family's plainly written `reference` path. Outputs on the device
//! under test are poisoned (NaN, or a sentinel for integers) before each run so that unwritten
//! elements show. With the default EVS_TEST_DEVICE=cpu this tests every fast CPU path against
//! the CPU reference.

mod common;

use common::{encode, read, setup, upload, Rng};
use evsparse::core::bsr::{Bsr, BsrShape};
use evsparse::core::context::{Context, Stream, EVS_DEVICE_CPU};
use evsparse::core::csr::{Csr, CsrShape, CsrView};
use evsparse::core::dense::Dense;
use evsparse::core::plan::{self, Algorithm};
use evsparse::core::spikes::{SpikeList, Spikes};
use evsparse::core::stats::CsrStats;
use evsparse::core::{ops, InputKind, Op};
use evsparse::dtype::DType;
use evsparse::error::{Result, EVS_ERROR_INVALID_VALUE, EVS_ERROR_NOT_SUPPORTED};
use std::sync::Arc;

const FLOATS: [DType; 4] = [DType::F16, DType::BF16, DType::F32, DType::F64];
const EVENTS: [DType; 5] = [DType::Bool, DType::F16, DType::BF16, DType::F32, DType::F64];
/// Event vectors of each dtype, then spike lists (named by their int32 indices).
const SPIKE_INPUTS: [DType; 6] = [DType::Bool, DType::F16, DType::BF16, DType::F32, DType::F64, DType::I32];

/// One device under test and the CPU reference, fed the same inputs.
struct Pair {
    dev: (Arc<Context>, Stream),
    cpu: (Arc<Context>, Stream),
    rng: Rng,
    /// The plan forced on the device under test, and how many calls ran it.
    forced: Option<&'static str>,
    ran: usize,
}

/// The same array on both sides.
struct Both {
    dev: Dense,
    cpu: Dense,
}

/// Largest relative difference accepted for results stored in `t` (one rounding of the output
/// plus f32 sums in another order).
fn tolerance(t: DType) -> f64 {
    match t {
        DType::F16 => 4e-3,
        DType::BF16 => 3e-2,
        DType::F32 => 2e-5,
        DType::F64 => 1e-12,
        _ => 0.0,
    }
}

impl Pair {
    fn new() -> Pair {
        let cpu = Context::new(EVS_DEVICE_CPU, 0).unwrap();
        cpu.forced.apply(&plan::all_reference()).unwrap();
        let cpu_stream = Stream::new(&cpu).unwrap();
        Pair { dev: setup(), cpu: (cpu, cpu_stream), rng: Rng::new(), forced: None, ran: 0 }
    }

    /// Whether a call on the device under test ran: true when it did (with the forced plan,
    /// on a GPU), false when the forced algorithm cannot run it; any other failure panics.
    fn ran(&mut self, what: &str, result: Result<()>) -> bool {
        match (result, self.forced) {
            (Ok(()), forced) => {
                if let Some(want) = forced {
                    assert_eq!(plan::plan_name(plan::last()), want, "{what}: the plan that ran");
                }
                self.ran += 1;
                true
            }
            (Err(e), Some(_)) if e.status == EVS_ERROR_NOT_SUPPORTED => false,
            (Err(e), _) => panic!("{what}: {e}"),
        }
    }

    /// Runs `case` once per algorithm of `A`'s family that the device under test runs, each
    /// forced there, and checks that every one ran at least one call.
    fn each_algorithm<A: Algorithm>(&mut self, mut case: impl FnMut(&mut Pair)) {
        let backend = if self.dev.0.is_cpu() { plan::Backend::Cpu } else { plan::Backend::Gpu };
        for &alg in A::ALL.iter().filter(|a| a.runs().on(backend)) {
            let name = plan::plan_name(alg.plan());
            self.dev.0.forced.apply(name).unwrap();
            (self.forced, self.ran) = (Some(name), 0);
            case(self);
            assert!(self.ran > 0, "{name}: no call ran it");
        }
        self.dev.0.forced.apply(&format!("{}:auto", A::FAMILY.name())).unwrap();
        self.forced = None;
    }

    fn both(&self, t: DType, shape: (u32, usize, usize), values: &[f64]) -> Both {
        Both {
            dev: upload(&self.dev.0, &self.dev.1, t, shape, values),
            cpu: upload(&self.cpu.0, &self.cpu.1, t, shape, values),
        }
    }

    /// Random values in [-1, 1], `zero_pct` percent of them zero.
    fn values(&mut self, n: usize, zero_pct: usize) -> Vec<f64> {
        (0..n).map(|_| if self.rng.below(100) < zero_pct { 0.0 } else { self.rng.unit() }).collect()
    }

    /// Events: 0/1 for bool, else floats whose positive entries are active (negatives are not).
    fn events(&mut self, t: DType, n: usize) -> Vec<f64> {
        let pct = [2, 10, 40][self.rng.below(3)];
        (0..n)
            .map(|_| {
                let on = self.rng.below(100) < pct;
                match (t, on) {
                    (DType::Bool, _) => on as u8 as f64,
                    (_, true) => 0.25 + self.rng.unit().abs(),
                    (_, false) => -self.rng.unit().abs() * self.rng.below(2) as f64,
                }
            })
            .collect()
    }

    /// An output array: random contents on both sides when beta reads them, otherwise poison
    /// (NaN) on the device under test so unwritten elements show.
    fn output(&mut self, t: DType, shape: (u32, usize, usize), beta: f64) -> Both {
        let n = shape.1 * shape.2;
        let init = self.values(n, 0);
        let out = self.both(t, shape, &init);
        if beta == 0.0 {
            out.dev.fill(&self.dev.1, f64::NAN).unwrap();
        }
        out
    }

    /// Checks the device result against the CPU one, elementwise.
    fn compare(&self, what: &str, out: &Both) {
        let (got, want) = (read(&self.dev.1, &out.dev), read(&self.cpu.1, &out.cpu));
        let tol = tolerance(out.dev.dtype);
        // NaN and infinities must match exactly, and take no part in the finite values' scale
        let scale = want.iter().filter(|v| v.is_finite()).fold(1.0f64, |m, v| m.max(v.abs()));
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            let same = match w.is_finite() {
                true => (g - w).abs() <= tol * (w.abs() + 0.1 * scale),
                false => g == w || (g.is_nan() && w.is_nan()),
            };
            assert!(same, "{what} ({}): [{i}] got {g}, CPU gives {w} (of {})", out.dev.dtype.name(), got.len());
        }
    }
}

/// A spike list on both sides: indices (room for more than the count, the rest garbage that
/// must not be read) and the count.
struct ListBoth {
    indices: Both,
    count: Both,
}

impl ListBoth {
    fn dev(&self) -> SpikeList<'_> {
        SpikeList { indices: &self.indices.dev, count: &self.count.dev }
    }
    fn cpu(&self) -> SpikeList<'_> {
        SpikeList { indices: &self.indices.cpu, count: &self.count.cpu }
    }
}

/// Spikes of a plasticity rule: an event vector, or a spike list.
enum SpikesBoth {
    Events(Both),
    List(ListBoth),
}

impl SpikesBoth {
    fn dev(&self) -> Spikes<'_> {
        match self {
            SpikesBoth::Events(e) => Spikes::Events(&e.dev),
            SpikesBoth::List(l) => Spikes::List(l.dev()),
        }
    }
    fn cpu(&self) -> Spikes<'_> {
        match self {
            SpikesBoth::Events(e) => Spikes::Events(&e.cpu),
            SpikesBoth::List(l) => Spikes::List(l.cpu()),
        }
    }
}

impl Pair {
    /// A spike list of `neurons` (a few percent of them, or none; each once unless
    /// `duplicates`, in random order), with garbage past the count.
    fn list(&mut self, neurons: usize, duplicates: bool) -> ListBoth {
        let listed = self.listed(neurons, duplicates);
        let garbage = self.rng.below(5);
        let values: Vec<f64> =
            listed.iter().map(|&i| i as f64).chain((0..garbage).map(|g| [-7.0, 1e9][g % 2])).collect();
        ListBoth {
            indices: self.both(DType::I32, (1, values.len(), 1), &values),
            count: self.both(DType::I32, (1, 1, 1), &[listed.len() as f64]),
        }
    }

    fn listed(&mut self, neurons: usize, duplicates: bool) -> Vec<usize> {
        let pct = [0, 2, 10, 40][self.rng.below(4)];
        let mut listed: Vec<usize> = (0..neurons).filter(|_| self.rng.below(100) < pct).collect();
        for i in (1..listed.len()).rev() {
            listed.swap(i, self.rng.below(i + 1));
        }
        if duplicates && !listed.is_empty() {
            for _ in 0..1 + self.rng.below(4) {
                listed.push(listed[self.rng.below(listed.len())]);
            }
        }
        listed
    }

    /// Spikes of `neurons`: events of dtype `e`, or a spike list for I32.
    fn spikes(&mut self, e: DType, neurons: usize, duplicates: bool) -> SpikesBoth {
        if e == DType::I32 {
            return SpikesBoth::List(self.list(neurons, duplicates));
        }
        let sv = self.events(e, neurons);
        SpikesBoth::Events(self.both(e, (1, neurons, 1), &sv))
    }

    /// Whether the device under test is a GPU.
    fn on_gpu(&self) -> bool {
        !self.dev.0.is_cpu()
    }
}

/// A random CSR pattern: odd sizes, empty rows, duplicates, sometimes nnz = 0 or a larger case.
struct Pattern {
    m: usize,
    k: usize,
    indptr: Vec<i64>,
    indices: Vec<i32>,
}

fn pattern(rng: &mut Rng) -> Pattern {
    if rng.below(4) == 0 {
        return skewed_pattern(rng);
    }
    let big = rng.below(6) == 0;
    let (m, k) =
        if big { (500 + rng.below(3000), 500 + rng.below(3000)) } else { (1 + rng.below(90), 1 + rng.below(90)) };
    let per_row = if rng.below(8) == 0 { 0 } else { 1 + rng.below(if big { 60 } else { 12 }) };
    let mut pat =
        random_rows(rng, (m, k), 6, |rng| if per_row == 0 || rng.below(5) == 0 { 0 } else { rng.below(2 * per_row) });
    if rng.below(2) == 0 {
        sort_rows(&mut pat.indices, &pat.indptr);
    }
    pat
}

impl Pattern {
    fn view(&self) -> CsrView<'_, i64> {
        CsrView { m: self.m, k: self.k, indptr: &self.indptr, indices: &self.indices }
    }
}

/// m x k with `per_row` entries in every row (some repeated).
fn uniform_pattern(rng: &mut Rng, shape: (usize, usize), per_row: usize) -> Pattern {
    random_rows(rng, shape, 6, |_| per_row)
}

/// m x k, each row `len(rng)` random columns, one in `dup_in` repeating the entry before.
fn random_rows(
    rng: &mut Rng,
    (m, k): (usize, usize),
    dup_in: usize,
    mut len: impl FnMut(&mut Rng) -> usize,
) -> Pattern {
    let (mut indptr, mut indices) = (vec![0i64], vec![]);
    for _ in 0..m {
        let len = len(rng);
        push_row(rng, (&mut indptr, &mut indices), len, k, dup_in);
    }
    Pattern { m, k, indptr, indices }
}

/// Appends a row of `len` random columns below k, one in `dup_in` repeating the entry before.
fn push_row(rng: &mut Rng, (indptr, indices): (&mut Vec<i64>, &mut Vec<i32>), len: usize, k: usize, dup_in: usize) {
    for _ in 0..len {
        let dup = !indices.is_empty() && rng.below(dup_in) == 0;
        indices.push(if dup { *indices.last().unwrap() } else { rng.below(k) as i32 });
    }
    indptr.push(indices.len() as i64);
}

fn sort_rows(indices: &mut [i32], indptr: &[i64]) {
    indptr.windows(2).for_each(|r| indices[r[0] as usize..r[1] as usize].sort_unstable());
}

/// Rows sorted by column (duplicates and empty rows among them) over several slices of
/// `output_slices`' outputs, long enough that analysis keeps their slice offsets.
fn sliced_pattern(rng: &mut Rng) -> Pattern {
    let slices = 2 + rng.below(3);
    let (m, k) = (100 + rng.below(300), (slices - 1) * plan::SLICE_OUTPUTS + 1 + rng.below(plan::SLICE_OUTPUTS));
    let mean = (plan::SPMM_T.entries_per_slice_offset_min as usize) * (slices + 1) * 2;
    let mut pat = random_rows(rng, (m, k), 8, |rng| if rng.below(6) == 0 { 0 } else { rng.below(2 * mean) });
    sort_rows(&mut pat.indices, &pat.indptr);
    pat
}

/// Columns long enough that analysis keeps their slice offsets for `spmm_n:output_slices`
/// (about four entries per column and slice of 128 rows, several slices), rows unsorted, with
/// duplicates and empty rows among them.
fn column_sliced_pattern(rng: &mut Rng) -> Pattern {
    let (m, k) = (129 + rng.below(1_500), 1 + rng.below(2_000));
    let row_mean = 4 * (m.div_ceil(128) + 1) * k / m + 1;
    random_rows(rng, (m, k), 8, |rng| if rng.below(6) == 0 { 0 } else { rng.below(2 * row_mean) })
}

/// Skewed rows, as in power-law networks: a few rows about 100x longer than the mean (longer
/// than the block class's threshold), many empty rows, the rest short.
fn skewed_pattern(rng: &mut Rng) -> Pattern {
    let (m, k) = (800 + rng.below(2500), 300 + rng.below(3000));
    let long_rows: Vec<usize> = (0..1 + rng.below(4)).map(|_| rng.below(m)).collect();
    let mut indptr = vec![0i64];
    let mut indices = vec![];
    for i in 0..m {
        let len = if long_rows.contains(&i) {
            plan::SPMM_N.block_row_min + rng.below(2500)
        } else if rng.below(2) == 0 {
            0
        } else {
            rng.below(40)
        };
        push_row(rng, (&mut indptr, &mut indices), len, k, 8);
    }
    Pattern { m, k, indptr, indices }
}

/// The pattern as a CSR on both sides: int32 or int64 indptr, homo or hetero weights.
fn csr_both(p: &mut Pair, pat: &Pattern, t: DType, homo: bool) -> (Csr, Csr, Vec<f64>) {
    let index = if p.rng.below(2) == 0 { DType::I32 } else { DType::I64 };
    let indptr = encode(index, &pat.indptr.iter().map(|&v| v as f64).collect::<Vec<_>>());
    let w = p.values(pat.indices.len(), 0);
    let wb = encode(t, &w);
    let homo_value = p.rng.unit();
    let make = |ctx: &Arc<Context>| {
        let shape = CsrShape::new(pat.m as i64, pat.k as i64, pat.indices.len() as i64, index, t).unwrap();
        let weights = (!homo).then_some(wb.as_ptr());
        unsafe { Csr::from_host(ctx, shape, indptr.as_ptr(), pat.indices.as_ptr(), weights, homo_value) }.unwrap()
    };
    (make(&p.dev.0), make(&p.cpu.0), w)
}

fn input_kinds(t: DType) -> Vec<(InputKind, DType)> {
    let mut kinds = vec![(InputKind::Float, t)];
    kinds.extend(EVENTS.iter().map(|&e| (InputKind::Events, e)));
    kinds
}

fn input(p: &mut Pair, kind: InputKind, dtype: DType, shape: (u32, usize, usize)) -> Both {
    let v = if kind == InputKind::Float { p.mostly_zero(shape.1, shape.2) } else { p.events(dtype, shape.1 * shape.2) };
    p.both(dtype, shape, &v)
}

impl Pair {
    /// rows x cols floats, each row with its own share of zeros (none, some, most or all), so
    /// that zero-skipping kernels meet dense and sparse rows in one call.
    fn mostly_zero(&mut self, rows: usize, cols: usize) -> Vec<f64> {
        (0..rows)
            .flat_map(|_| {
                let pct = [0, 30, 80, 95, 100][self.rng.below(5)];
                self.values(cols, pct)
            })
            .collect()
    }

    /// Rows 97 to 100 % zero, and every 64th row (from row 7) all nonzero, from rows 23 and 39
    /// with 32 and 33 nonzeros (`with_nonzeros`): under 1/10 of B in all, so `nonzero_lists`
    /// takes its lists (with whole tiles read as they are) on a B of a hundred rows or more.
    fn sparse_rows(&mut self, rows: usize, cols: usize) -> Vec<f64> {
        (0..rows)
            .flat_map(|r| match r % 64 {
                7 => self.values(cols, 0),
                23 => self.with_nonzeros(cols, 32),
                39 => self.with_nonzeros(cols, 33),
                _ => {
                    let pct = [97, 99, 100][self.rng.below(3)];
                    self.values(cols, pct)
                }
            })
            .collect()
    }

    /// A row of `cols` zeros but for `count` nonzeros at random among its first 128 columns (all
    /// of them where it has fewer): a tile's list holds up to 32, a tile of 33 is read as it is.
    fn with_nonzeros(&mut self, cols: usize, count: usize) -> Vec<f64> {
        let mut row = vec![0.0; cols];
        let mut at: Vec<usize> = (0..cols.min(128)).collect();
        for i in 0..count.min(at.len()) {
            let j = i + self.rng.below(at.len() - i);
            at.swap(i, j);
            row[at[i]] = 0.25 + self.rng.unit().abs();
        }
        row
    }
}

fn scalars(p: &mut Pair) -> (f64, f64) {
    let alpha = [1.0, -0.5, 2.0][p.rng.below(3)];
    let beta = [0.0, 0.0, 1.0, 0.25][p.rng.below(4)];
    (alpha, beta)
}

/// spmv / spmm with op `op` on random and skewed patterns, every dtype, homo and hetero, every
/// input kind.
fn spmm_cases(p: &mut Pair, op: Op) {
    for t in FLOATS {
        for homo in [true, false] {
            // sorted rows over several output slices (N: long columns over several): every dtype
            // once, homo and hetero alike
            let sliced = homo == matches!(t, DType::F16 | DType::F32);
            let pat = match (sliced, op) {
                (true, Op::T) => sliced_pattern(&mut p.rng),
                (true, Op::N) => column_sliced_pattern(&mut p.rng),
                (false, _) => pattern(&mut p.rng),
            };
            let (dev_a, cpu_a, _) = csr_both(p, &pat, t, homo);
            let (rows_in, rows_out) = if op == Op::N { (pat.k, pat.m) } else { (pat.m, pat.k) };
            for (kind, xt) in input_kinds(t) {
                let vector = p.rng.below(3) == 0;
                let n = if vector { 1 } else { [1, 3, 33, 70, 130][p.rng.below(5)] };
                let ndim = if vector { 1 } else { 2 };
                let x = input(p, kind, xt, (ndim, rows_in, n));
                let (alpha, beta) = scalars(p);
                let y = p.output(t, (ndim, rows_out, n), beta);
                let what = format!("spmm {op:?} {kind:?} {} homo={homo} n={n} {}x{}", xt.name(), pat.m, pat.k);
                if p.ran(&what, ops::spmm(&p.dev.1, op, kind, alpha, &dev_a, &x.dev, beta, &y.dev, vector)) {
                    ops::spmm(&p.cpu.1, op, kind, alpha, &cpu_a, &x.cpu, beta, &y.cpu, vector).unwrap();
                    p.compare(&what, &y);
                }
            }
            spmv_spikes_case(p, op, t, homo, &pat, (&dev_a, &cpu_a));
        }
    }
}

/// spmv on a spike list (repeated neurons included) against the CPU reference; the GPU takes
/// f32/f64 only, except where `output_slices` runs (T and N).
fn spmv_spikes_case(p: &mut Pair, op: Op, t: DType, homo: bool, pat: &Pattern, (dev_a, cpu_a): (&Csr, &Csr)) {
    let (rows_in, rows_out) = if op == Op::N { (pat.k, pat.m) } else { (pat.m, pat.k) };
    let list = p.list(rows_in, true);
    let (alpha, beta) = scalars(p);
    let y = p.output(t, (1, rows_out, 1), beta);
    let what = format!("spmv spikes {op:?} {} homo={homo} {}x{}", t.name(), pat.m, pat.k);
    let result = ops::spmv_spikes(&p.dev.1, op, alpha, dev_a, list.dev(), beta, &y.dev);
    let stats = CsrStats::of(&pat.view());
    let sliced = match op {
        Op::T => plan::slice_offsets_kept(&stats),
        Op::N => plan::column_slice_width(&stats).is_some(),
    };
    if p.on_gpu() && !plan::can_scatter(t) && !sliced {
        assert_eq!(result.unwrap_err().status, EVS_ERROR_NOT_SUPPORTED, "{what}");
    } else if p.ran(&what, result) {
        ops::spmv_spikes(&p.cpu.1, op, alpha, cpu_a, list.cpu(), beta, &y.cpu).unwrap();
        p.compare(&what, &y);
    }
}

#[test]
fn spmv_and_spmm_n_match_cpu() {
    let mut p = Pair::new();
    p.each_algorithm::<plan::SpmmN>(|p| (0..2).for_each(|_| spmm_cases(p, Op::N)));
}

#[test]
fn spmv_and_spmm_t_match_cpu() {
    let mut p = Pair::new();
    p.each_algorithm::<plan::SpmmT>(|p| (0..2).for_each(|_| spmm_cases(p, Op::T)));
}

/// The CPU gathers (spmm N `row_ranges`, T `csc_gather`) on a B read often enough that they
/// copy it to rows on cache lines first: B a view whose rows start anywhere (ld n + 1, one
/// element in) or on lines (ld a multiple of 16), n past one 64-column panel and with a partial
/// one, and partial panels of every part (61 = 32 + 16 + 8 + 4 + 1 columns), every dtype, float
/// and event inputs, each against the reference.
#[test]
fn cpu_gathers_on_misaligned_inputs_match_reference() {
    let mut p = Pair::new();
    if p.on_gpu() {
        return;
    }
    p.dev.0.forced.apply("spmm_n:row_ranges,spmm_t:csc_gather").unwrap();
    for (case, t) in FLOATS.into_iter().enumerate() {
        // 24 entries a row over 40 columns: each input row is read 36 (N) or 24 (T) times
        let pat = uniform_pattern(&mut p.rng, (60, 40), 24);
        let (dev_a, cpu_a, _) = csr_both(&mut p, &pat, t, case % 2 == 0);
        for op in [Op::N, Op::T] {
            p.forced = Some(if op == Op::N { "spmm_n:row_ranges" } else { "spmm_t:csc_gather" });
            let (rows_in, rows_out) = if op == Op::N { (pat.k, pat.m) } else { (pat.m, pat.k) };
            for (n, (ld, offset)) in
                [(64, (65, 1)), (70, (80, 0)), (130, (131, 1)), (130, (144, 0)), (29, (29, 0)), (61, (63, 1))]
            {
                for (kind, xt) in input_kinds(t).into_iter().take(2) {
                    let values =
                        if kind == InputKind::Float { p.values(rows_in * n, 0) } else { p.events(xt, rows_in * n) };
                    let b = p.placed(xt, (2, rows_in, n, ld), offset, &values);
                    let (alpha, beta) = scalars(&mut p);
                    let c = p.output(t, (2, rows_out, n), beta);
                    let what = format!("gather {op:?} {kind:?} {} n={n} ld={ld} offset={offset}", xt.name());
                    if p.ran(&what, ops::spmm(&p.dev.1, op, kind, alpha, &dev_a, &b.view.dev, beta, &c.dev, false)) {
                        ops::spmm(&p.cpu.1, op, kind, alpha, &cpu_a, &b.view.cpu, beta, &c.cpu, false).unwrap();
                        p.compare(&what, &c);
                    }
                }
            }
        }
    }
    p.dev.0.forced.apply("spmm_n:auto,spmm_t:auto").unwrap();
    p.forced = None;
}

/// spmv N on event vectors with `output_slices` forced: slices 128 and 1,024 rows wide (the last
/// one partial), up to `N_SLICE_INPUTS` columns, unsorted rows with duplicates, every dtype,
/// homo and hetero, every event dtype (negative floats inactive), and no event, few (the
/// slices), many and all (the gather branch of the same launch), each against the CPU.
#[test]
fn spmv_n_output_slices_match_cpu() {
    let shapes = [(37, 300, 20, 128), (1_000, 777, 40, 128), (5_000, 4_000, 14, 1_024), (3_001, 16_384, 60, 128)];
    let cases = shapes.map(|(m, k, per_column, _)| (m, k, per_column));
    spmv_n_events_match_cpu("spmm_n:output_slices", &cases, &FLOATS, |pat, case| {
        let width = shapes[case].3;
        assert_eq!(plan::column_slice_width(&CsrStats::of(&pat.view())), Some(width), "{}x{}", pat.m, pat.k);
    });
}

/// spmv N on event vectors with `csc_scatter` forced (f32 and f64): by line parts up to
/// `N_PARTS_MAX_COLUMNS` columns (one column, a few, one group of 32 partly, the limit), after
/// it the census and its launch, as `spmv_n_output_slices_match_cpu` checks them.
#[test]
fn spmv_n_csc_scatter_on_events_matches_cpu() {
    let limit = plan::N_PARTS_MAX_COLUMNS;
    let cases =
        [(64, 1, 30), (37, 300, 20), (1_000, 777, 40), (500, 33, 200), (3_001, limit, 10), (2_000, limit + 1, 8)];
    spmv_n_events_match_cpu("spmm_n:csc_scatter", &cases, &[DType::F32, DType::F64], |_, _| {});
}

/// spmv N on event vectors with `name` forced: per (m, k, mean entries a column), unsorted rows
/// with duplicates, each of `floats` (homo and hetero in turn), every event dtype in turn
/// (negative floats inactive), no event, few, many and all, each against the CPU. `check` sees
/// each pattern and its case first.
fn spmv_n_events_match_cpu(
    name: &'static str,
    cases: &[(usize, usize, usize)],
    floats: &[DType],
    check: impl Fn(&Pattern, usize),
) {
    let mut p = Pair::new();
    if !p.on_gpu() {
        return;
    }
    p.dev.0.forced.apply(name).unwrap();
    p.forced = Some(name);
    for (case, &(m, k, per_column)) in cases.iter().enumerate() {
        let pat = random_rows(&mut p.rng, (m, k), 6, |rng| rng.below(2 * per_column * k / m + 1));
        check(&pat, case);
        for (i, &t) in floats.iter().enumerate() {
            let homo = (case + i) % 2 == 0;
            let (dev_a, cpu_a, _) = csr_both(&mut p, &pat, t, homo);
            for (j, rate) in [0, 2, 12, 100].into_iter().enumerate() {
                let xt = [DType::Bool, DType::F16, DType::BF16, DType::F32, DType::F64][(case + i + j) % 5];
                let inactive = if xt == DType::Bool { 0.0 } else { -0.5 };
                let events: Vec<f64> = (0..k).map(|_| if p.rng.below(100) < rate { 1.0 } else { inactive }).collect();
                let x = p.both(xt, (1, k, 1), &events);
                let (alpha, beta) = scalars(&mut p);
                let y = p.output(t, (1, m, 1), beta);
                let what = format!("{name} {} homo={homo} {}% {} events {m}x{k}", t.name(), rate, xt.name());
                let kind = InputKind::Events;
                assert!(p.ran(&what, ops::spmm(&p.dev.1, Op::N, kind, alpha, &dev_a, &x.dev, beta, &y.dev, true)));
                ops::spmm(&p.cpu.1, Op::N, kind, alpha, &cpu_a, &x.cpu, beta, &y.cpu, true).unwrap();
                p.compare(&what, &y);
            }
        }
    }
    p.dev.0.forced.apply("spmm_n:auto").unwrap();
}

/// The scatters' beta pass (y scaled or zeroed before the atomics): outputs past one 64 KB
/// scaling launch (a memset where beta = 0) and under it (T on a spike list then loads while the
/// scaling runs), six calls in a row on one stream with beta changing,
/// from an event vector and a spike list, f32 and f64, each against the CPU. T:
/// `row_warp_scatter` and `scatter` (event vectors only); N on spike lists: `csc_scatter`.
#[test]
fn scatters_apply_beta_call_after_call() {
    let mut p = Pair::new();
    if !p.on_gpu() {
        return;
    }
    for (op, plan, (m, k)) in [
        (Op::T, "spmm_t:row_warp_scatter", (3_000, 20_011)),
        (Op::T, "spmm_t:scatter", (2_500, 9_000)),
        (Op::N, "spmm_n:csc_scatter", (20_011, 3_000)),
        // outputs the scaling kernel scales (64 KB at most), spike lists right after it
        (Op::T, "spmm_t:row_warp_scatter", (400, 1_024)),
        (Op::N, "spmm_n:csc_scatter", (1_000, 600)),
    ] {
        p.dev.0.forced.apply(plan).unwrap();
        let pat = random_rows(&mut p.rng, (m, k), 6, |rng| rng.below(80));
        for t in [DType::F32, DType::F64] {
            let homo = p.rng.below(2) == 0;
            let (dev_a, cpu_a, _) = csr_both(&mut p, &pat, t, homo);
            let (rows_in, rows_out) = if op == Op::N { (k, m) } else { (m, k) };
            let y = p.output(t, (1, rows_out, 1), 0.0);
            for (call, beta) in [0.0, 0.5, 0.0, 2.0, 1.0, -1.0].into_iter().enumerate() {
                let what = format!("{plan} {} call {call} beta={beta} {m}x{k}", t.name());
                if op == Op::N || (call % 2 == 1 && plan != "spmm_t:scatter") {
                    let list = p.list(rows_in, true);
                    ops::spmv_spikes(&p.dev.1, op, 1.5, &dev_a, list.dev(), beta, &y.dev).unwrap();
                    ops::spmv_spikes(&p.cpu.1, op, 1.5, &cpu_a, list.cpu(), beta, &y.cpu).unwrap();
                } else {
                    let x = input(&mut p, InputKind::Events, DType::Bool, (1, rows_in, 1));
                    ops::spmm(&p.dev.1, op, InputKind::Events, 1.5, &dev_a, &x.dev, beta, &y.dev, true).unwrap();
                    ops::spmm(&p.cpu.1, op, InputKind::Events, 1.5, &cpu_a, &x.cpu, beta, &y.cpu, true).unwrap();
                }
                p.compare(&what, &y);
            }
        }
    }
    p.dev.0.forced.apply("spmm_n:auto,spmm_t:auto").unwrap();
}

/// The scaling kernel that opens a scatter zeroes y (beta = 0) in 16-byte stores where y is
/// contiguous and 16-byte aligned, an element at a time otherwise: spmv T on events (`scatter`)
/// into y placed 0, 1 and 2 elements into its array, NaN before and after it, outputs from 1 to
/// past a multiple of the 16-byte stores, f32 and f64; each against the CPU, the NaN around y
/// kept.
#[test]
fn scatter_opener_zeroes_y_and_nothing_around_it() {
    let mut p = Pair::new();
    if !p.on_gpu() {
        return;
    }
    p.dev.0.forced.apply("spmm_t:scatter").unwrap();
    const GUARD: usize = 4;
    for (m, k) in [(40, 1), (200, 3), (900, 1_027), (2_000, 4_096)] {
        let pat = random_rows(&mut p.rng, (m, k), 6, |rng| rng.below(80));
        for t in [DType::F32, DType::F64] {
            let (dev_a, cpu_a, _) = csr_both(&mut p, &pat, t, false);
            for offset in [0, 1, 2] {
                let values = p.values(k, 0);
                let y = p.placed(t, (1, 1, k, k + GUARD), offset, &values);
                let x = input(&mut p, InputKind::Events, DType::Bool, (1, m, 1));
                ops::spmm(&p.dev.1, Op::T, InputKind::Events, 1.5, &dev_a, &x.dev, 0.0, &y.view.dev, true).unwrap();
                ops::spmm(&p.cpu.1, Op::T, InputKind::Events, 1.5, &cpu_a, &x.cpu, 0.0, &y.view.cpu, true).unwrap();
                let what = format!("scatter into {k} outputs {offset} past alignment ({})", t.name());
                p.compare(&what, &y.view);
                let around = read(&p.dev.1, &y._backing.dev);
                let outside: Vec<f64> = around[..offset].iter().chain(&around[offset + k..]).copied().collect();
                assert_eq!(outside.len(), offset + GUARD, "{what}");
                assert!(outside.iter().all(|v| v.is_nan()), "{what}: wrote past y");
            }
        }
    }
    p.dev.0.forced.apply("spmm_t:auto").unwrap();
}

/// spmm N and T on mostly-zero floats with `nonzero_lists` forced: every dtype, homo and
/// hetero, n across the parts' widths and past one 128-column tile, B a view with 16-byte rows
/// or misaligned ones, rows from all-zero to all-nonzero (also all of B either). B's density
/// picks the lists or the gather on the device.
#[test]
fn spmm_on_mostly_zero_floats_matches_cpu() {
    let mut p = Pair::new();
    if !p.on_gpu() {
        return;
    }
    for (case, n) in [2, 31, 32, 33, 64, 65, 128, 136, 300].into_iter().enumerate() {
        for op in [Op::N, Op::T] {
            let t = FLOATS[case % FLOATS.len()];
            let homo = case % 3 == 0;
            let pat = if case % 2 == 0 { pattern(&mut p.rng) } else { skewed_pattern(&mut p.rng) };
            let rows_in = if op == Op::N { pat.k } else { pat.m };
            let values = match case % 4 {
                0 => vec![0.0; rows_in * n],
                1 => p.values(rows_in * n, 0),
                2 => p.sparse_rows(rows_in, n),
                _ => p.mostly_zero(rows_in, n),
            };
            let ld = if case % 3 == 1 { (n + 1, 1) } else { (n.next_multiple_of(8), 0) };
            nonzero_lists_case(&mut p, op, (t, homo), &pat, n, &values, ld);
        }
    }
    p.dev.0.forced.apply("spmm_n:auto,spmm_t:auto").unwrap();
    p.forced = None;
}

/// `nonzero_lists` down each of its device-side branches on a B of 1,500 rows: 1-4 % nonzero
/// with every 64th row whole and two more with 32 and 33 nonzeros (the lists, some tiles read
/// as they are); 2, 5 and 10 % nonzero
/// (parts of 4 lanes in one and two chunks, of 8 lanes over 128 columns: `lists_in_parts`); all
/// nonzero (the gather).
/// At 48 and 128 columns (their thresholds differ), every dtype.
#[test]
fn nonzero_lists_takes_the_lists_and_the_gather() {
    let mut p = Pair::new();
    if !p.on_gpu() {
        return;
    }
    let pat = uniform_pattern(&mut p.rng, (1500, 1500), 24);
    let cases = [
        (DType::F32, 128),
        (DType::F16, 48),
        (DType::F32, 48),
        (DType::F16, 128),
        (DType::F64, 128),
        (DType::BF16, 48),
    ];
    for (t, n) in cases {
        for op in [Op::N, Op::T] {
            for zero_pct in [None, Some(98), Some(95), Some(90), Some(0)] {
                let values = match zero_pct {
                    Some(pct) => p.values(1500 * n, pct),
                    None => p.sparse_rows(1500, n),
                };
                nonzero_lists_case(&mut p, op, (t, n == 48), &pat, n, &values, (n, 0));
            }
        }
    }
    p.dev.0.forced.apply("spmm_n:auto,spmm_t:auto").unwrap();
    p.forced = None;
}

/// One spmm with `nonzero_lists` forced against the CPU: B holds `values` (rows x n, leading
/// dimension `ld`, `offset` elements past alignment).
fn nonzero_lists_case(
    p: &mut Pair,
    op: Op,
    (t, homo): (DType, bool),
    pat: &Pattern,
    n: usize,
    values: &[f64],
    (ld, offset): (usize, usize),
) {
    let forced = if op == Op::N { "spmm_n:nonzero_lists" } else { "spmm_t:nonzero_lists" };
    p.dev.0.forced.apply(forced).unwrap();
    p.forced = Some(forced);
    let (dev_a, cpu_a, _) = csr_both(p, pat, t, homo);
    let (rows_in, rows_out) = if op == Op::N { (pat.k, pat.m) } else { (pat.m, pat.k) };
    let b = p.placed(t, (2, rows_in, n, ld), offset, values);
    let (alpha, beta) = scalars(p);
    let c = p.output(t, (2, rows_out, n), beta);
    let what = format!("nonzero_lists {op:?} {} homo={homo} n={n} ld={ld} {}x{}", t.name(), pat.m, pat.k);
    let run = |side: &(Arc<Context>, Stream), a: &Csr, b: &Dense, c: &Dense| {
        ops::spmm(&side.1, op, InputKind::Float, alpha, a, b, beta, c, false)
    };
    let ran = run(&p.dev, &dev_a, &b.view.dev, &c.dev);
    assert!(p.ran(&what, ran), "{what}: not supported");
    run(&p.cpu, &cpu_a, &b.view.cpu, &c.cpu).unwrap();
    p.compare(&what, &c);
}

/// spmm T on hetero weights evsparse owns reads them in CSC order (a copy kept at analysis)
/// until something writes them: after plasticity and after a fill through a view of the weights
/// T must match the CPU again (it then reads them through the permutation). Every dtype; the
/// gather, the lists and events.
#[test]
fn spmm_t_sees_the_weights_written_after_analysis() {
    let mut p = Pair::new();
    for t in FLOATS {
        let pat = pattern(&mut p.rng);
        let (dev_a, cpu_a, _) = csr_both(&mut p, &pat, t, false);
        let products = |p: &mut Pair, when: &str| {
            let calls =
                [(InputKind::Float, 1, "auto"), (InputKind::Float, 70, "auto"), (InputKind::Events, 33, "auto")];
            let lists = p.on_gpu().then_some((InputKind::Float, 70, "nonzero_lists"));
            for (kind, n, alg) in calls.into_iter().chain(lists) {
                p.dev.0.forced.apply(&format!("spmm_t:{alg}")).unwrap();
                let xt = if kind == InputKind::Float { t } else { DType::Bool };
                let ndim = if n == 1 { 1 } else { 2 };
                let x = input(p, kind, xt, (ndim, pat.m, n));
                let y = p.output(t, (ndim, pat.k, n), 0.0);
                let what = format!("spmm T {} n={n} {alg} {when}", t.name());
                if p.ran(&what, ops::spmm(&p.dev.1, Op::T, kind, 1.0, &dev_a, &x.dev, 0.0, &y.dev, n == 1)) {
                    ops::spmm(&p.cpu.1, Op::T, kind, 1.0, &cpu_a, &x.cpu, 0.0, &y.cpu, n == 1).unwrap();
                    p.compare(&what, &y);
                }
            }
            p.dev.0.forced.apply("spmm_t:auto").unwrap();
        };
        products(&mut p, "as created");
        let spikes = p.spikes(DType::Bool, pat.k, false);
        let tv = p.values(pat.m, 10);
        let trace = p.both(t, (1, pat.m, 1), &tv);
        ops::csr_plasticity(&p.dev.1, true, &dev_a, spikes.dev(), &trace.dev, -1.0, 1.0).unwrap();
        ops::csr_plasticity(&p.cpu.1, true, &cpu_a, spikes.cpu(), &trace.cpu, -1.0, 1.0).unwrap();
        products(&mut p, "after plasticity");
        for (a, s) in [(&dev_a, &p.dev.1), (&cpu_a, &p.cpu.1)] {
            a.weights_view().unwrap().fill(s, 0.375).unwrap();
        }
        products(&mut p, "after a fill through a view");
    }
}

#[test]
fn yw2y_matches_cpu() {
    let mut p = Pair::new();
    p.each_algorithm::<plan::Yw2y>(|p| {
        yw2y_cases(p);
        yw2y_vector_cases(p);
        yw2y_window_cases(p);
    });
}

/// yw2y on its 16-byte vector paths and around them: rows from empty to thousands of entries
/// (heads, tails, several vectors in flight per thread), bases one element past alignment, batch
/// rows padded off the vector width, more batches than share one read of the weights,
/// per-batch weights and homogeneous ones.
fn yw2y_vector_cases(p: &mut Pair) {
    let lengths = [0usize, 1, 3, 5, 8, 13, 700, 3001, 2, 4096, 17, 6000];
    let pat = sorted_rows_of(&mut p.rng, &lengths, 900);
    yw2y_layout_cases(p, &pat);
}

/// yw2y where y spans several windows of `y_windows` (a window of slices fills a block's shared
/// memory: 57,344 f32 columns on an H100), on rows sorted by column (with duplicates) long enough
/// for analysis to keep their slice offsets: a few long rows split between blocks, and many
/// rows per block.
fn yw2y_window_cases(p: &mut Pair) {
    let lengths = [0usize, 1, 5, 3000, 40, 17_000, 2, 900, 0, 9000, 33];
    let long = sorted_rows_of(&mut p.rng, &lengths, 150_001);
    yw2y_layout_cases(p, &long);
    let lengths: Vec<usize> = (0..3000).map(|_| 100 + p.rng.below(100)).collect();
    let many = sorted_rows_of(&mut p.rng, &lengths, 60_000);
    yw2y_layout_cases(p, &many);
}

/// A pattern of rows of these lengths, columns below k sorted within each row (with duplicates).
fn sorted_rows_of(rng: &mut Rng, lengths: &[usize], k: usize) -> Pattern {
    let (mut indptr, mut indices) = (vec![0], vec![]);
    lengths.iter().for_each(|&len| push_row(rng, (&mut indptr, &mut indices), len, k, 9));
    sort_rows(&mut indices, &indptr);
    Pattern { m: lengths.len(), k, indptr, indices }
}

/// yw2y on one pattern across layouts: bases one element past alignment, batch rows padded off
/// the vector width, batches beyond one group, per-batch and homogeneous weights.
fn yw2y_layout_cases(p: &mut Pair, pat: &Pattern) {
    let nnz = pat.indices.len();
    for t in FLOATS {
        for op in [Op::N, Op::T] {
            for (offset, batches, pad, homo, weighted) in [
                (0, 1, 0, false, false),
                (1, 1, 0, false, false),
                (0, 3, 1, true, false),
                (1, 2, 8, false, true),
                (0, 10, 4, false, false),
                (0, 9, 0, false, true),
            ] {
                let (dev_a, cpu_a, _) = csr_both(p, pat, t, homo);
                let (ndim, len) = (if batches == 1 { 1 } else { 2 }, if op == Op::N { pat.m } else { pat.k });
                let yv = p.values(batches * len, 10);
                let y = p.placed(t, (ndim, batches, len, len), offset, &yv);
                let wv = p.values(batches * nnz, 0);
                let bw = weighted.then(|| p.placed(t, (ndim, batches, nnz, nnz + pad), offset, &wv));
                let (alpha, beta) = scalars(p);
                let init = if beta == 0.0 { vec![f64::NAN; batches * nnz] } else { p.values(batches * nnz, 0) };
                let out = p.placed(t, (ndim, batches, nnz, nnz + pad), offset, &init);
                let what = format!(
                    "yw2y {op:?} {batches} batches, offset {offset}, ld +{pad}, homo {homo}, weighted {weighted}"
                );
                let run = |side: &(Arc<Context>, Stream), a: &Csr, bw: Option<&Dense>, y: &Dense, out: &Dense| {
                    ops::yw2y(&side.1, op, a, bw, alpha, y, beta, out)
                };
                if p.ran(&what, run(&p.dev, &dev_a, bw.as_ref().map(|b| &b.view.dev), &y.view.dev, &out.view.dev)) {
                    run(&p.cpu, &cpu_a, bw.as_ref().map(|b| &b.view.cpu), &y.view.cpu, &out.view.cpu).unwrap();
                    p.compare(&what, &out.view);
                }
            }
        }
    }
}

fn yw2y_cases(p: &mut Pair) {
    for _ in 0..2 {
        for t in FLOATS {
            for op in [Op::N, Op::T] {
                let pat = pattern(&mut p.rng);
                let homo = p.rng.below(2) == 0;
                let (dev_a, cpu_a, _) = csr_both(p, &pat, t, homo);
                let nnz = pat.indices.len();
                let len = if op == Op::N { pat.m } else { pat.k };
                let batches = p.rng.below(4);
                let (yshape, oshape) =
                    if batches == 0 { ((1, len, 1), (1, nnz, 1)) } else { ((2, batches, len), (2, batches, nnz)) };
                let yv = p.values(yshape.1 * yshape.2, 10);
                let y = p.both(t, yshape, &yv);
                let bw = (p.rng.below(2) == 0).then(|| {
                    let v = p.values(oshape.1 * oshape.2, 0);
                    p.both(t, oshape, &v)
                });
                let (alpha, beta) = scalars(p);
                let out = p.output(t, oshape, beta);
                let what = format!("yw2y {op:?} batches={batches}");
                let bw_dev = bw.as_ref().map(|b| &b.dev);
                if p.ran(&what, ops::yw2y(&p.dev.1, op, &dev_a, bw_dev, alpha, &y.dev, beta, &out.dev)) {
                    ops::yw2y(&p.cpu.1, op, &cpu_a, bw.as_ref().map(|b| &b.cpu), alpha, &y.cpu, beta, &out.cpu)
                        .unwrap();
                    p.compare(&what, &out);
                }
            }
        }
    }
}

#[test]
fn dense_products_match_cpu() {
    let mut p = Pair::new();
    p.each_algorithm::<plan::DenseMm>(|p| {
        (0..2).for_each(|_| dense_cases(p));
        dense_tensor_core_cases(p);
        dense_empty_w_cases(p);
        dense_few_columns_t_cases(p);
        dense_mv_window_cases(p);
        dense_repeats(p);
    });
}

/// Whether the tests run under compute-sanitizer (which sets NV_SANITIZER_INJECTION_PORT_BASE),
/// whose tools make each kernel far slower.
fn under_sanitizer() -> bool {
    std::env::var_os("NV_SANITIZER_INJECTION_PORT_BASE").is_some()
}

/// Whether the tensor cores' own dense cases are skipped: under compute-sanitizer with another
/// dense path forced (the racecheck step's time bound; `dense_cases` covers the other paths).
fn sanitizer_spares_tensor_core_cases(p: &Pair) -> bool {
    under_sanitizer() && p.forced != Some("dense_mm:wgmma")
}

/// Calls of one dense mm N and T on events repeated on the GPU. Every GPU path is reproducible,
/// so each call must give the first one's bits; a race shows as a call that differs (f32 W on the
/// tensor cores once let a wgmma read A fragments that the next stage had rewritten: 15 of
/// 3,000 calls wrong at 10000² x 100, bench/NOTES.md). Under compute-sanitizer a few calls
/// (racecheck finds such hazards itself, and 500 calls there outlast its time bound), T's only
/// on the tensor cores, which are what T adds there (the step's time bound).
fn dense_repeats(p: &mut Pair) {
    let repeats = if under_sanitizer() { 2 } else { 500 };
    if !p.on_gpu() {
        return;
    }
    let (m, k, n) = (2048, 8192, 100);
    let upload_dev = |p: &mut Pair, t, shape, values: &[f64]| upload(&p.dev.0, &p.dev.1, t, shape, values);
    let ops: &[Op] = if sanitizer_spares_tensor_core_cases(p) { &[Op::N] } else { &[Op::N, Op::T] };
    for &op in ops {
        let w_shape = if op == Op::N { (2, m, k) } else { (2, k, m) };
        let wv = p.values(m * k, 5);
        let sv = p.events(DType::Bool, k * n);
        let (w, x) = (upload_dev(p, DType::F32, w_shape, &wv), upload_dev(p, DType::Bool, (2, k, n), &sv));
        let c = upload_dev(p, DType::F32, (2, m, n), &vec![f64::NAN; m * n]);
        let call = |p: &Pair| ops::dense_mm(&p.dev.1, op, InputKind::Events, 1.0, &w, &x, 0.0, &c, false);
        if !p.ran("dense repeats", call(p)) {
            continue;
        }
        let first = read(&p.dev.1, &c);
        for repeat in 1..=repeats {
            call(p).unwrap();
            let same = read(&p.dev.1, &c) == first;
            assert!(same, "dense mm {op:?} W {m}x{k} f32 S x{n}: call {repeat} differs from the first");
        }
    }
}

/// Dense mm T on events with 2 to 16 columns (and 17, past `active_rows`), every dtype and event
/// kind, padded W and S (S's padding NaN: active if read as bool), all-zero events included.
fn dense_few_columns_t_cases(p: &mut Pair) {
    for t in FLOATS {
        for (case, &e) in EVENTS.iter().enumerate() {
            let (m, k, n) = (1 + p.rng.below(300), 1 + p.rng.below(300), [2, 10, 16, 17, 5][case]);
            let ld = m + case % 3;
            let wv = p.values(k * m, 5);
            let w = p.padded(t, (k, m, ld), &wv);
            let sv = if case == 4 { vec![0.0; k * n] } else { p.events(e, k * n) };
            let x_ld = n + (case + 1) % 3;
            let x = p.padded(e, (k, n, x_ld), &sv);
            let (alpha, beta) = scalars(p);
            let c = p.output(t, (2, m, n), beta);
            let what = format!("dense T {} W {k}x{m} (ld {ld}) S {} x{n} (ld {x_ld})", t.name(), e.name());
            p.dense_events(Op::T, &what, &w.view, &x.view, &c, (alpha, beta));
        }
    }
}

/// Dense mv N and T on events past one window of the GPU's listing (16,384 inputs), every event
/// kind: W with rows of odd lengths (no 16-byte loads), S strided or starting off its alignment.
fn dense_mv_window_cases(p: &mut Pair) {
    for op in [Op::N, Op::T] {
        for (case, &e) in EVENTS.iter().enumerate() {
            let t = FLOATS[case % FLOATS.len()];
            let (m, k) = (129 + p.rng.below(100), 16_385 + p.rng.below(2000));
            let (rows, cols) = if op == Op::N { (m, k) } else { (k, m) };
            let ld = cols + case % 3;
            let wv = p.values(rows * cols, 5);
            let w = p.padded(t, (rows, cols, ld), &wv);
            let sv = p.events(e, k);
            let (x_ld, offset) = (1 + case % 2, (case / 2) % 2);
            let x = p.placed(e, (2, k, 1, x_ld), offset, &sv);
            let (alpha, beta) = scalars(p);
            let c = p.output(t, (2, m, 1), beta);
            let what = format!(
                "dense mv {op:?} {} W {rows}x{cols} (ld {ld}) S {} (ld {x_ld}, offset {offset})",
                t.name(),
                e.name()
            );
            p.dense_events(op, &what, &w.view, &x.view, &c, (alpha, beta));
        }
    }
}

/// A row-major array whose rows are `ld` elements apart (ld >= cols): a view of a larger one.
struct Padded {
    view: Both,
    _backing: Both,
}

impl Pair {
    /// dense mm `op` on events on both sides (W often a padded view), the device's result compared
    /// with the CPU's; whether the device ran it.
    fn dense_events(&mut self, op: Op, what: &str, w: &Both, x: &Both, c: &Both, (alpha, beta): (f64, f64)) -> bool {
        let run = |side: &(Arc<Context>, Stream), w: &Dense, x: &Dense, c: &Dense| {
            ops::dense_mm(&side.1, op, InputKind::Events, alpha, w, x, beta, c, false)
        };
        if !self.ran(what, run(&self.dev, &w.dev, &x.dev, &c.dev)) {
            return false;
        }
        run(&self.cpu, &w.cpu, &x.cpu, &c.cpu).unwrap();
        self.compare(what, c);
        true
    }

    fn padded(&self, t: DType, (rows, cols, ld): (usize, usize, usize), values: &[f64]) -> Padded {
        self.placed(t, (2, rows, cols, ld), 0, values)
    }

    /// A `ndim`-D view of rows x cols `values` with leading dimension `ld`, starting `offset`
    /// elements into its backing array (NaN around it).
    fn placed(
        &self,
        t: DType,
        (ndim, rows, cols, ld): (u32, usize, usize, usize),
        offset: usize,
        values: &[f64],
    ) -> Padded {
        let mut wide = vec![f64::NAN; offset + rows * ld];
        for r in 0..rows {
            wide[offset + r * ld..offset + r * ld + cols].copy_from_slice(&values[r * cols..(r + 1) * cols]);
        }
        let backing = self.both(t, (1, wide.len(), 1), &wide);
        let (rows, cols, ld) = if ndim == 1 { (rows * cols, 1, 1) } else { (rows, cols, ld) };
        let view = |d: &Dense| {
            let start = unsafe { d.buf.ptr().add(offset * t.size()) };
            Dense::wrap(&d.ctx, t, ndim, rows as i64, cols as i64, ld as i64, start).unwrap()
        };
        Padded { view: Both { dev: view(&backing.dev), cpu: view(&backing.cpu) }, _backing: backing }
    }
}

/// Dense mm N and T on events with W the tensor-core path can address (16-byte rows, also
/// padded): m not a multiple of the 128-row tile, k not of a K step, n from 2 to past 256 (two
/// column tiles; T from 17, past `active_rows`), shapes whose tiles several CTAs share, all-zero
/// and all-active events, S's rows in three of T's listing chunks (1,024 rows) with none active in
/// the second, f32 N at MMA widths between 64 and 128 columns; f32 results also within 1e-6 (norm-wise) of a float64 product. Under
/// compute-sanitizer only on the tensor cores: `dense_cases` gives the other paths their shapes,
/// and these under every path outlast the racecheck step's time bound.
fn dense_tensor_core_cases(p: &mut Pair) {
    if sanitizer_spares_tensor_core_cases(p) {
        return;
    }
    let shapes: [(usize, usize, usize); 7] =
        [(300, 1000, 100), (130, 72, 20), (64, 264, 64), (257, 40, 130), (200, 512, 300), (1, 8, 17), (150, 2500, 40)];
    // f32 N's MMAs are n rounded up to 8 wide between 64 and 128 columns: widths of each kind
    let narrow: [(usize, usize, usize); 3] = [(130, 200, 65), (70, 136, 88), (129, 300, 121)];
    for t in [DType::F16, DType::BF16, DType::F32] {
        for op in [Op::N, Op::T] {
            let extra = if t == DType::F32 && op == Op::N { &narrow[..] } else { &[] };
            for (case, &(m, k, n)) in shapes.iter().chain(extra).enumerate() {
                let n = if op == Op::N && case == 1 { 2 } else { n };
                let e = EVENTS[case % EVENTS.len()];
                // W m x k (N) or k x m (T), its rows padded
                let (rows, cols) = if op == Op::N { (m, k) } else { (k, m) };
                let ld = cols.next_multiple_of(8) + [0, 8, 24][case % 3];
                let wv = p.values(m * k, 5);
                let w = p.padded(t, (rows, cols, ld), &wv);
                let mut sv = match case {
                    4 => vec![0.0; k * n],
                    5 => vec![1.0; k * n],
                    _ => p.events(e, k * n),
                };
                if case == 6 {
                    sv[1024 * n..2048 * n].fill(0.0);
                }
                let x = p.both(e, (2, k, n), &sv);
                let (alpha, beta) = scalars(p);
                let c = p.output(t, (2, m, n), beta);
                let c0 = read(&p.cpu.1, &c.cpu);
                let what =
                    format!("dense tensor cores {op:?} {} W {rows}x{cols} (ld {ld}) S {} x{n}", t.name(), e.name());
                if p.dense_events(op, &what, &w.view, &x, &c, (alpha, beta)) && t == DType::F32 {
                    // W as m x k for the float64 product
                    let wn = if op == Op::N { wv } else { (0..m * k).map(|e| wv[e % k * m + e / k]).collect() };
                    let exact = dense_n_f64(&wn, &sv, (m, k, n), alpha, beta, &c0);
                    // f32 sums err relative to the terms' magnitudes, not to a result that
                    // cancellation made small (a 1 x 8 W once gave 1.6e-6 of the result's norm)
                    let abs = |v: &[f64]| v.iter().map(|x| x.abs()).collect::<Vec<_>>();
                    let terms = dense_n_f64(&abs(&wn), &sv, (m, k, n), alpha.abs(), beta.abs(), &abs(&c0));
                    let got = read(&p.dev.1, &c.dev);
                    let err = got.iter().zip(&exact).map(|(g, x)| (g - x).powi(2)).sum::<f64>().sqrt();
                    let norm = terms.iter().map(|x| x * x).sum::<f64>().sqrt();
                    assert!(
                        err <= 1e-6 * norm.max(1e-30),
                        "{what}: error {} of the terms' norm against float64",
                        err / norm
                    );
                }
            }
        }
    }
}

/// Dense mm on events with an empty W: no output rows, or no input rows (C = beta · C). The
/// tensor cores' path declines both (it would encode a tensor map with an empty extent, which
/// the driver's documentation does not promise to accept); it used to take N with no output
/// rows and, from T's first version, T with no input rows.
fn dense_empty_w_cases(p: &mut Pair) {
    let n = 20;
    for op in [Op::N, Op::T] {
        for (m, k) in [(0, 40), (24, 0)] {
            let w = p.both(DType::F32, if op == Op::N { (2, m, k) } else { (2, k, m) }, &[]);
            let sv = p.events(DType::Bool, k * n);
            let x = p.both(DType::Bool, (2, k, n), &sv);
            let (alpha, beta) = scalars(p);
            let c = p.output(DType::F32, (2, m, n), beta);
            let what = format!("dense {op:?} on events, W empty: {m} outputs, {k} inputs, x{n}");
            p.dense_events(op, &what, &w, &x, &c, (alpha, beta));
        }
    }
}

/// alpha · W · e(S) + beta · C0 in float64, S's values as events (active where > 0).
fn dense_n_f64(w: &[f64], s: &[f64], (m, k, n): (usize, usize, usize), alpha: f64, beta: f64, c0: &[f64]) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for r in (0..k).filter(|&r| w[i * k + r] != 0.0) {
            for j in (0..n).filter(|&j| s[r * n + j] > 0.0) {
                c[i * n + j] += w[i * k + r];
            }
        }
    }
    c.iter().zip(c0).map(|(v, c0)| alpha * v + if beta != 0.0 { beta * c0 } else { 0.0 }).collect()
}

fn dense_cases(p: &mut Pair) {
    for t in FLOATS {
        for op in [Op::N, Op::T] {
            for (kind, xt) in input_kinds(t) {
                let (m, k) = (1 + p.rng.below(150), 1 + p.rng.below(150));
                let vector = p.rng.below(2) == 0;
                let n = if vector { 1 } else { [1, 1, 5, 64, 71, 130][p.rng.below(6)] };
                let ndim = if vector { 1 } else { 2 };
                let wshape = if op == Op::N { (2, m, k) } else { (2, k, m) };
                let wv = p.values(m * k, 5);
                let w = p.both(t, wshape, &wv);
                let x = input(p, kind, xt, (ndim, k, n));
                let (alpha, beta) = scalars(p);
                let c = p.output(t, (ndim, m, n), beta);
                let what = format!("dense {op:?} {kind:?} {} {m}x{k}x{n}", xt.name());
                if p.ran(&what, ops::dense_mm(&p.dev.1, op, kind, alpha, &w.dev, &x.dev, beta, &c.dev, vector)) {
                    ops::dense_mm(&p.cpu.1, op, kind, alpha, &w.cpu, &x.cpu, beta, &c.cpu, vector).unwrap();
                    p.compare(&what, &c);
                }
            }
            dense_mv_spikes_case(p, op, t);
        }
    }
}

/// dense mv on a spike list (repeated neurons included, in random order) against the CPU
/// reference; k up to past several of N's blocks of input rows on the CPU.
fn dense_mv_spikes_case(p: &mut Pair, op: Op, t: DType) {
    let (m, k) = (1 + p.rng.below(150), 1 + p.rng.below(1500));
    let wshape = if op == Op::N { (2, m, k) } else { (2, k, m) };
    let wv = p.values(m * k, 5);
    let w = p.both(t, wshape, &wv);
    let list = p.list(k, true);
    let (alpha, beta) = scalars(p);
    let c = p.output(t, (1, m, 1), beta);
    let what = format!("dense mv spikes {op:?} {} {m}x{k}", t.name());
    if p.ran(&what, ops::dense_mv_spikes(&p.dev.1, op, alpha, &w.dev, list.dev(), beta, &c.dev)) {
        ops::dense_mv_spikes(&p.cpu.1, op, alpha, &w.cpu, list.cpu(), beta, &c.cpu).unwrap();
        p.compare(&what, &c);
    }
}

/// A bound that clips some of the updates, or none.
fn bounds(p: &mut Pair) -> (f64, f64) {
    match p.rng.below(3) {
        0 => (f64::NEG_INFINITY, f64::INFINITY),
        1 => (-0.5, 0.5),
        _ => (-1.0, f64::INFINITY),
    }
}

#[test]
fn csr_plasticity_matches_cpu() {
    let mut p = Pair::new();
    p.each_algorithm::<plan::CsrPlasticity>(|p| {
        for t in FLOATS {
            for e in SPIKE_INPUTS {
                for post in [false, true] {
                    // event vectors of up to 8,192 neurons in one launch, longer ones listed
                    // first (LINE_PARTS_MAX_LINES, src/cuda/ops.rs): both sides
                    let pat = if p.rng.below(3) == 0 {
                        let (neurons, other) = (7_000 + p.rng.below(2_500), 1 + p.rng.below(200));
                        let shape = if post { (other, neurons) } else { (neurons, other) };
                        uniform_pattern(&mut p.rng, shape, 2)
                    } else {
                        pattern(&mut p.rng)
                    };
                    let spikes = p.spikes(e, if post { pat.k } else { pat.m }, false);
                    csr_plasticity_case(p, t, post, &pat, spikes, e.name());
                }
            }
        }
    });
}

/// Post on event vectors where analysis keeps run records (columns up to 8,192, no non-empty
/// row under 32 entries: plan::post_runs_kept), which the GPU walks in one launch, every entry in
/// even shares where many columns are live and the live columns through the CSC mirror
/// otherwise (kernels/plasticity.cu, `csr_post_even`): rows of 32 to 2,048 entries with empty
/// ones and repeated columns, 1 / 7 / 40 % live, every event dtype, bool vectors ending in short
/// stretches of 8, 12 and 15 events (the mask's copy reads them in aligned pieces); and matrices
/// just outside (a row of 31 entries, 8,193 columns), which take line parts or the listing.
#[test]
fn csr_post_even_matches_cpu() {
    let mut p = Pair::new();
    for t in FLOATS {
        for (m, k, per_row) in [
            (3000, 5000, 40),
            (40, 8192, 2048),
            (300, 700, 500),
            (200, 8192, 32),
            (60, 7007, 64),
            (500, 3000, 31),
            (100, 8193, 40),
        ] {
            let pat = random_rows(&mut p.rng, (m, k), 6, |rng| if rng.below(9) == 0 { 0 } else { per_row });
            for share in [1, 7, 40] {
                let sv: Vec<f64> = (0..k).map(|_| (p.rng.below(100) < share) as u8 as f64).collect();
                let spikes = SpikesBoth::Events(p.both(DType::Bool, (1, k, 1), &sv));
                csr_plasticity_case(&mut p, t, true, &pat, spikes, &format!("bool, {share} % live"));
            }
            for e in EVENTS {
                let spikes = p.spikes(e, k, false);
                csr_plasticity_case(&mut p, t, true, &pat, spikes, e.name());
            }
        }
    }
}

/// Post by rows on many entries (2.2 M: several batches of 128 for every warp of the resident
/// grid), 5,000 bool events (a short last stretch of 8 in each block's mask copy,
/// `copy_bool_events` in kernels/plasticity.cu); f32 (4 entries a lane) and f64 (one), 7 and
/// 40 % live.
#[test]
fn csr_post_even_on_many_entries_matches_cpu() {
    let mut p = Pair::new();
    let pat = random_rows(&mut p.rng, (4_400, 5_000), 6, |rng| if rng.below(9) == 0 { 0 } else { 560 });
    for t in [DType::F32, DType::F64] {
        for share in [7, 40] {
            let sv: Vec<f64> = (0..pat.k).map(|_| (p.rng.below(100) < share) as u8 as f64).collect();
            let spikes = SpikesBoth::Events(p.both(DType::Bool, (1, pat.k, 1), &sv));
            let what = format!("bool, {share} % live, {} entries", pat.indices.len());
            csr_plasticity_case(&mut p, t, true, &pat, spikes, &what);
        }
    }
}

/// Event vectors walked by line parts (kernels/plasticity.cu, `line_parts`: up to 8,192 lines,
/// 32 candidate lines a warp task, a part of each live one): skewed lines (a few of 2,000-3,000
/// entries among empty and short ones, so that a task holds many batches and most lanes none),
/// every line of a group live, lines shorter than their parts, and long columns for post;
/// 1 / 30 / 100 % live, bool events and float inputs with zeros.
#[test]
fn csr_plasticity_line_parts_matches_cpu() {
    type LineLength = fn(&mut Rng) -> usize;
    let mut p = Pair::new();
    for t in FLOATS {
        let cases: [(bool, (usize, usize), LineLength); 4] = [
            (false, (8192, 300), |rng| if rng.below(50) == 0 { 2000 } else { rng.below(4) }),
            (false, (64, 9000), |rng| if rng.below(2) == 0 { 3000 } else { 0 }),
            (true, (3000, 40), |rng| 1 + rng.below(8)),
            (true, (2000, 8192), |rng| rng.below(9)),
        ];
        for (post, shape, len) in cases {
            let pat = random_rows(&mut p.rng, shape, 5, len);
            let neurons = if post { pat.k } else { pat.m };
            for share in [1, 30, 100] {
                let sv: Vec<f64> = (0..neurons).map(|_| (p.rng.below(100) < share) as u8 as f64).collect();
                let spikes = SpikesBoth::Events(p.both(DType::Bool, (1, neurons, 1), &sv));
                csr_plasticity_case(&mut p, t, post, &pat, spikes, &format!("bool, {share} % live"));
                let fv: Vec<f64> = sv.iter().map(|&s| s * (0.5 + p.rng.below(4) as f64)).collect();
                let spikes = SpikesBoth::Events(p.both(DType::F32, (1, neurons, 1), &fv));
                csr_plasticity_case(&mut p, t, post, &pat, spikes, &format!("f32, {share} % live"));
            }
        }
    }
}

/// Post by rows on wrapped arrays one element past 16-byte alignment (indices, weights or both):
/// `csr_post_even` walks 4 entries a lane only where both are aligned (`even_runs4`), so each
/// other case takes the one-entry walk; 40 % of the columns live so that the rows are walked.
#[test]
fn csr_post_rows_on_misaligned_arrays_match_cpu() {
    let mut p = Pair::new();
    let pat = random_rows(&mut p.rng, (600, 3000), 5, |rng| if rng.below(9) == 0 { 0 } else { 100 + rng.below(200) });
    let nnz = pat.indices.len();
    let floats = |v: &[i64]| v.iter().map(|&x| x as f64).collect::<Vec<_>>();
    let indptr = upload(&p.dev.0, &p.dev.1, DType::I64, (1, pat.m + 1, 1), &floats(&pat.indptr));
    let trace = p.values(pat.m, 10);
    let sv: Vec<f64> = (0..pat.k).map(|_| (p.rng.below(100) < 40) as u8 as f64).collect();
    for (index_skip, weight_skip) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
        let mut iv = vec![0.0; index_skip];
        iv.extend(floats(&pat.indices.iter().map(|&c| c as i64).collect::<Vec<_>>()));
        let indices = upload(&p.dev.0, &p.dev.1, DType::I32, (1, iv.len(), 1), &iv);
        let w = p.values(nnz, 0);
        let mut wv = vec![0.0; weight_skip];
        wv.extend(&w);
        let weights = upload(&p.dev.0, &p.dev.1, DType::F32, (1, wv.len(), 1), &wv);
        let shape = || CsrShape::new(pat.m as i64, pat.k as i64, nnz as i64, DType::I64, DType::F32).unwrap();
        let dev_a = Csr::wrap(
            &p.dev.0,
            shape(),
            indptr.buf.ptr(),
            indices.buf.ptr().wrapping_add(4 * index_skip) as *mut i32,
            Some(weights.buf.ptr().wrapping_add(4 * weight_skip)),
            0.0,
        )
        .unwrap();
        let wb = encode(DType::F32, &w);
        let ipb = encode(DType::I64, &floats(&pat.indptr));
        let cpu_a =
            unsafe { Csr::from_host(&p.cpu.0, shape(), ipb.as_ptr(), pat.indices.as_ptr(), Some(wb.as_ptr()), 0.0) }
                .unwrap();
        let spikes = p.both(DType::Bool, (1, pat.k, 1), &sv);
        let tr = p.both(DType::F32, (1, pat.m, 1), &trace);
        let what = format!("post by rows, indices {index_skip} and weights {weight_skip} past alignment");
        ops::csr_plasticity(&p.dev.1, true, &dev_a, Spikes::Events(&spikes.dev), &tr.dev, -0.5, 0.5).unwrap();
        ops::csr_plasticity(&p.cpu.1, true, &cpu_a, Spikes::Events(&spikes.cpu), &tr.cpu, -0.5, 0.5).unwrap();
        p.compare(&what, &Both { dev: hetero_weights(&dev_a, DType::F32), cpu: hetero_weights(&cpu_a, DType::F32) });
    }
}

/// Plasticity where weights and traces hold NaN and infinities (every 7th weight, every 11th
/// trace): a NaN passes through the clip and an infinite sum is clipped to the bound, as on the
/// CPU (its comparisons are false for NaN), on post by rows (40 % live: `csr_post_even`'s
/// `even_runs4`, kernels/common.cuh `clip_nan`), post by line parts (1 %) and pre.
#[test]
fn csr_plasticity_passes_nan_and_clips_infinities() {
    let mut p = Pair::new();
    let pat = random_rows(&mut p.rng, (600, 3000), 5, |rng| if rng.below(9) == 0 { 0 } else { 64 + rng.below(200) });
    let special = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 2.0, -2.0];
    let with_specials = |v: Vec<f64>, every: usize| -> Vec<f64> {
        v.into_iter()
            .enumerate()
            .map(|(i, x)| if i % every == 0 { special[i / every % special.len()] } else { x })
            .collect()
    };
    let w = with_specials(p.values(pat.indices.len(), 0), 7);
    let wb = encode(DType::F32, &w);
    let indptr = encode(DType::I32, &pat.indptr.iter().map(|&v| v as f64).collect::<Vec<_>>());
    for post in [true, false] {
        for share in [1, 40] {
            let make = |ctx: &Arc<Context>| {
                let shape = CsrShape::new(pat.m as i64, pat.k as i64, pat.indices.len() as i64, DType::I32, DType::F32)
                    .unwrap();
                unsafe { Csr::from_host(ctx, shape, indptr.as_ptr(), pat.indices.as_ptr(), Some(wb.as_ptr()), 0.0) }
                    .unwrap()
            };
            let (dev_a, cpu_a) = (make(&p.dev.0), make(&p.cpu.0));
            let (neurons, n_trace) = if post { (pat.k, pat.m) } else { (pat.m, pat.k) };
            let tv = with_specials(p.values(n_trace, 10), 11);
            let trace = p.both(DType::F32, (1, n_trace, 1), &tv);
            let sv: Vec<f64> = (0..neurons).map(|_| (p.rng.below(100) < share) as u8 as f64).collect();
            let spikes = p.both(DType::Bool, (1, neurons, 1), &sv);
            let what = format!("csr plasticity post={post}, {share} % live, NaN and infinities in weights and traces");
            ops::csr_plasticity(&p.dev.1, post, &dev_a, Spikes::Events(&spikes.dev), &trace.dev, -0.5, 0.5).unwrap();
            ops::csr_plasticity(&p.cpu.1, post, &cpu_a, Spikes::Events(&spikes.cpu), &trace.cpu, -0.5, 0.5).unwrap();
            p.compare(
                &what,
                &Both { dev: hetero_weights(&dev_a, DType::F32), cpu: hetero_weights(&cpu_a, DType::F32) },
            );
        }
    }
}

/// A matrix's heterogeneous weights as a dense vector.
fn hetero_weights(a: &Csr, t: DType) -> Dense {
    match &a.weights {
        evsparse::core::csr::Weights::Hetero(w) => Dense::vector_of(&a.ctx, w.buf.clone(), t, a.nnz),
        _ => unreachable!(),
    }
}

/// CSR plasticity (pre or post) on one pattern and spike input, the device against the CPU.
fn csr_plasticity_case(p: &mut Pair, t: DType, post: bool, pat: &Pattern, spikes: SpikesBoth, input: &str) {
    let (dev_a, cpu_a, _) = csr_both(p, pat, t, false);
    let n_trace = if post { pat.m } else { pat.k };
    let tv = p.values(n_trace, 10);
    let trace = p.both(t, (1, n_trace, 1), &tv);
    let (lo, hi) = bounds(p);
    let what = format!("csr plasticity {}x{} post={post} {input}", pat.m, pat.k);
    if p.ran(&what, ops::csr_plasticity(&p.dev.1, post, &dev_a, spikes.dev(), &trace.dev, lo, hi)) {
        ops::csr_plasticity(&p.cpu.1, post, &cpu_a, spikes.cpu(), &trace.cpu, lo, hi).unwrap();
        p.compare(&what, &Both { dev: hetero_weights(&dev_a, t), cpu: hetero_weights(&cpu_a, t) });
    }
}

#[test]
fn dense_plasticity_matches_cpu() {
    let mut p = Pair::new();
    p.each_algorithm::<plan::DensePlasticity>(|p| {
        for t in FLOATS {
            for e in SPIKE_INPUTS {
                // past one window of the GPU's listing (8,192 neurons) where `long`
                for (post, long) in [(false, false), (true, false), (false, true), (true, true)] {
                    let (mut m, mut k) = (1 + p.rng.below(120), 1 + p.rng.below(300));
                    if long {
                        let (neurons, other) = (8_193 + p.rng.below(2000), 1 + p.rng.below(20));
                        (m, k) = if post { (other, neurons) } else { (neurons, other) };
                    }
                    let (n_spikes, n_trace) = if post { (k, m) } else { (m, k) };
                    let wv = p.values(m * k, 0);
                    let w = p.both(t, (2, m, k), &wv);
                    let spikes = p.spikes(e, n_spikes, false);
                    let tv = p.values(n_trace, 10);
                    let trace = p.both(t, (1, n_trace, 1), &tv);
                    let (lo, hi) = bounds(p);
                    let what = format!("dense plasticity post={post} W {m}x{k} {}", e.name());
                    if p.ran(&what, ops::dense_plasticity(&p.dev.1, post, &w.dev, spikes.dev(), &trace.dev, lo, hi)) {
                        ops::dense_plasticity(&p.cpu.1, post, &w.cpu, spikes.cpu(), &trace.cpu, lo, hi).unwrap();
                        p.compare(&what, &w);
                    }
                }
            }
        }
    });
}

#[test]
fn bsrmm_matches_cpu() {
    let mut p = Pair::new();
    p.each_algorithm::<plan::Bsrmm>(bsrmm_cases);
}

fn bsrmm_cases(p: &mut Pair) {
    for t in [DType::F16, DType::BF16, DType::F32] {
        for out_t in [t, DType::F32] {
            let shapes = [(16, 16), (32, 16), (16, 64), (32, 32), (32, 128), (64, 32), (64, 16), (64, 64), (64, 128)];
            // a few tall matrices: several tiles for each block of the Hopper path's persistent
            // grid, whole ones and ragged ones in turn (a tile's stores overlap the next one's MMAs)
            // (64 x 64 blocks pair their block rows: an odd count leaves the last row alone)
            let tall = [(128, 16, 300), (64, 16, 600), (32, 32, 600), (64, 64, 301)];
            let short = shapes.into_iter().chain([(128, 32), (128, 64), (128, 128)]).map(|(bm, bk)| (bm, bk, 0));
            let tall = tall.into_iter().filter(|_| t != DType::F32 && out_t == t);
            for (bm, bk, tall_mb) in short.chain(tall) {
                let (mb, kb) = (if tall_mb > 0 { tall_mb } else { 1 + p.rng.below(5) }, 1 + p.rng.below(4));
                // multiples of 16 take the WMMA paths for f16/bf16 (shared-memory tiles of 128
                // columns from 64 x 32 blocks up), multiples of 8 the Hopper path (tiles of 128
                // or 256 columns, 512 columns to a group: 520 spans two), others the fallback
                let n = if tall_mb > 0 { 264 } else { [16, 48, 80, 144, 272, 7, 33, 40, 520][p.rng.below(9)] };
                let mut indptr = vec![0i32];
                let mut indices = vec![];
                for _ in 0..mb {
                    let mut row: Vec<i32> = (0..kb as i32).filter(|_| p.rng.below(2) == 0).collect();
                    // rows in any order, a column twice (both add): the paired rows' walk meets each
                    if p.rng.below(3) == 0 {
                        row.reverse();
                    }
                    if !row.is_empty() && p.rng.below(4) == 0 {
                        row.push(row[0]);
                    }
                    indices.extend(row);
                    indptr.push(indices.len() as i32);
                }
                let values = encode(t, &p.values(indices.len() * bm * bk, 0));
                let make = |ctx: &Arc<Context>| {
                    let shape =
                        BsrShape::new(mb as i64, kb as i64, bm as i64, bk as i64, indices.len() as i64, t).unwrap();
                    unsafe { Bsr::from_host(ctx, shape, indptr.as_ptr(), indices.as_ptr(), values.as_ptr()) }.unwrap()
                };
                let (dev_a, cpu_a) = (make(&p.dev.0), make(&p.cpu.0));
                let bv = p.values(kb * bk * n, 0);
                let b = p.both(t, (2, kb * bk, n), &bv);
                let (alpha, beta) = scalars(p);
                let beta = if tall_mb > 0 { 0.0 } else { beta }; // the held stores' path
                let c = p.output(out_t, (2, mb * bm, n), beta);
                let what = format!("bsrmm {} -> {} blocks {bm}x{bk} n={n}", t.name(), out_t.name());
                if p.ran(&what, ops::bsrmm(&p.dev.1, alpha, &dev_a, &b.dev, beta, &c.dev)) {
                    ops::bsrmm(&p.cpu.1, alpha, &cpu_a, &b.cpu, beta, &c.cpu).unwrap();
                    p.compare(&what, &c);
                }
            }
        }
    }
}

#[test]
fn compaction_and_csc_match_cpu() {
    let mut p = Pair::new();
    p.each_algorithm::<plan::Compact>(|p| {
        for e in EVENTS {
            // lengths between the listing's steps, drawn in the order they run
            let d = [2000 + p.rng.below(2000), 9000 + p.rng.below(3000), 20_000 + p.rng.below(10_000)];
            let huge = 300_000 + p.rng.below(9000);
            for n in [0, 1, 31, 1024, 1025, d[0], 4096, 4097, 8192, 8193, d[1], 12_288, 12_289, d[2], huge] {
                let sv = p.events(e, n);
                let spikes = p.both(e, (1, n, 1), &sv);
                let indices = p.both(DType::I32, (1, n.max(1), 1), &vec![-7.0; n.max(1)]);
                let count = p.both(DType::I32, (1, 1, 1), &[-7.0]);
                let what = format!("compact {} n={n}", e.name());
                if p.ran(&what, ops::compact(&p.dev.1, &spikes.dev, &indices.dev, &count.dev)) {
                    ops::compact(&p.cpu.1, &spikes.cpu, &indices.cpu, &count.cpu).unwrap();
                    p.compare(&what, &count);
                    let written = read(&p.cpu.1, &count.cpu)[0] as usize;
                    let (got, want) = (read(&p.dev.1, &indices.dev), read(&p.cpu.1, &indices.cpu));
                    assert_eq!(got[..written], want[..written], "compact indices {} n={n}", e.name());
                }
            }
        }
    });
    for _ in 0..6 {
        let pat = pattern(&mut p.rng);
        let (dev_a, cpu_a, _) = csr_both(&mut p, &pat, DType::F32, true);
        let nnz = pat.indices.len();
        for it in [DType::I32, DType::I64] {
            let colptr = p.both(it, (1, pat.k + 1, 1), &vec![-7.0; pat.k + 1]);
            let rowind = p.both(DType::I32, (1, nnz, 1), &vec![-7.0; nnz]);
            let perm = p.both(it, (1, nnz, 1), &vec![-7.0; nnz]);
            ops::csr_to_csc(&p.dev.1, &dev_a, &colptr.dev, &rowind.dev, &perm.dev).unwrap();
            ops::csr_to_csc(&p.cpu.1, &cpu_a, &colptr.cpu, &rowind.cpu, &perm.cpu).unwrap();
            for (name, arr) in [("colptr", &colptr), ("rowind", &rowind), ("perm", &perm)] {
                assert_eq!(read(&p.dev.1, &arr.dev), read(&p.cpu.1, &arr.cpu), "csr_to_csc {name} ({})", it.name());
            }
        }
    }
}

#[test]
fn fill_matches_cpu() {
    let mut p = Pair::new();
    for t in [DType::F16, DType::BF16, DType::F32, DType::F64, DType::Bool, DType::I32, DType::I64] {
        let (rows, cols) = (1 + p.rng.below(40), 1 + p.rng.below(40));
        let init = p.values(rows * cols, 0);
        let d = p.both(t, (2, rows, cols), &init);
        let value = if t.is_float() { p.rng.unit() } else { 3.0 };
        d.dev.fill(&p.dev.1, value).unwrap();
        d.cpu.fill(&p.cpu.1, value).unwrap();
        p.compare(&format!("fill {}", t.name()), &d);
    }
}

/// A wrapped matrix is copied to the host once (on a GPU; never on the CPU), however many
/// operations and analyses follow, and its first check builds what N and T need.
#[test]
fn wrapped_matrix_is_analysed_from_one_copy() {
    let mut p = Pair::new();
    let pat = skewed_pattern(&mut p.rng);
    let nnz = pat.indices.len();
    let indptr = upload(
        &p.dev.0,
        &p.dev.1,
        DType::I64,
        (1, pat.m + 1, 1),
        &pat.indptr.iter().map(|&v| v as f64).collect::<Vec<_>>(),
    );
    let indices =
        upload(&p.dev.0, &p.dev.1, DType::I32, (1, nnz, 1), &pat.indices.iter().map(|&v| v as f64).collect::<Vec<_>>());
    let shape = CsrShape::new(pat.m as i64, pat.k as i64, nnz as i64, DType::I64, DType::F32).unwrap();
    let a = Csr::wrap(&p.dev.0, shape, indptr.buf.ptr(), indices.buf.ptr() as *mut i32, None, 0.5).unwrap();
    ops::analyse(&p.dev.1, &a).unwrap();
    for (op, rows_in, rows_out) in [(Op::N, pat.k, pat.m), (Op::T, pat.m, pat.k)] {
        let x = p.both(DType::F32, (2, rows_in, 5), &vec![1.0; rows_in * 5]);
        let y = p.output(DType::F32, (2, rows_out, 5), 0.0);
        ops::spmm(&p.dev.1, op, InputKind::Float, 1.0, &a, &x.dev, 0.0, &y.dev, false).unwrap();
    }
    ops::analyse(&p.dev.1, &a).unwrap();
    let expected = if p.dev.0.is_cpu() { 0 } else { 1 };
    assert_eq!(a.structure_downloads(), expected);
}

/// A list of `valid` with bad entries mixed in (negative, past the neurons, far past), its
/// count `extra` past its capacity: the CPU rejects it and changes nothing; a GPU skips the bad
/// indices and clamps the count, giving the result of the valid entries alone.
#[test]
fn bad_spike_lists_are_rejected_or_skipped() {
    let mut p = Pair::new();
    for round in 0..8 {
        let pat = pattern(&mut p.rng);
        let (dev_a, cpu_a, _) = csr_both(&mut p, &pat, DType::F32, round % 2 == 0);
        let op = if round % 4 < 2 { Op::T } else { Op::N };
        let (rows_in, rows_out) = if op == Op::N { (pat.k, pat.m) } else { (pat.m, pat.k) };
        let valid = p.listed(rows_in, true);
        let mut bad: Vec<f64> = valid.iter().map(|&i| i as f64).collect();
        for (slot, value) in [(0, -3.0), (bad.len() / 2, rows_in as f64), (bad.len(), (1 << 30) as f64)] {
            bad.insert(slot.min(bad.len()), value);
        }
        let past_capacity = round % 3 == 0;
        let count = bad.len() as f64 + if past_capacity { 5.0 } else { 0.0 };
        let indices = upload(&p.dev.0, &p.dev.1, DType::I32, (1, bad.len(), 1), &bad);
        let count = upload(&p.dev.0, &p.dev.1, DType::I32, (1, 1, 1), &[count]);
        let list = SpikeList { indices: &indices, count: &count };
        let y = p.output(DType::F32, (1, rows_out, 1), 1.0);
        let before = read(&p.dev.1, &y.dev);
        let result = ops::spmv_spikes(&p.dev.1, op, 1.0, &dev_a, list, 1.0, &y.dev);
        let what = format!("bad spike list {op:?} past_capacity={past_capacity}");
        if p.on_gpu() {
            result.unwrap();
            let good = p.both(DType::I32, (1, valid.len(), 1), &valid.iter().map(|&i| i as f64).collect::<Vec<_>>());
            let n = p.both(DType::I32, (1, 1, 1), &[valid.len() as f64]);
            let cpu_list = SpikeList { indices: &good.cpu, count: &n.cpu };
            ops::spmv_spikes(&p.cpu.1, op, 1.0, &cpu_a, cpu_list, 1.0, &y.cpu).unwrap();
            p.compare(&what, &y);
        } else {
            let e = result.unwrap_err();
            assert_eq!(e.status, EVS_ERROR_INVALID_VALUE, "{what}: {e}");
            let named = if past_capacity { "spike count = " } else { "is out of range for" };
            assert!(e.message.contains(named), "{what}: {}", e.message);
            assert_eq!(read(&p.dev.1, &y.dev), before, "{what}: a rejected call changed y");
        }
    }
}

/// Plasticity with every listed neuron listed twice: the CPU applies the update twice, a GPU
/// once or twice per weight (the two warps are unordered), never anything else.
#[test]
fn repeated_spikes_in_plasticity_apply_once_or_twice() {
    let mut p = Pair::new();
    for post in [false, true] {
        let pat = pattern(&mut p.rng);
        let (dev_a, cpu_a, w0) = csr_both(&mut p, &pat, DType::F64, false);
        let (n_spikes, n_trace) = if post { (pat.k, pat.m) } else { (pat.m, pat.k) };
        let once = p.listed(n_spikes, false);
        let twice: Vec<f64> = once.iter().chain(&once).map(|&i| i as f64).collect();
        let list = ListBoth {
            indices: p.both(DType::I32, (1, twice.len(), 1), &twice),
            count: p.both(DType::I32, (1, 1, 1), &[twice.len() as f64]),
        };
        let tv = p.values(n_trace, 10);
        let trace = p.both(DType::F64, (1, n_trace, 1), &tv);
        let (inf, what) = (f64::INFINITY, format!("repeated spikes post={post}"));
        ops::csr_plasticity(&p.dev.1, post, &dev_a, Spikes::List(list.dev()), &trace.dev, -inf, inf).unwrap();
        ops::csr_plasticity(&p.cpu.1, post, &cpu_a, Spikes::List(list.cpu()), &trace.cpu, -inf, inf).unwrap();
        let got = read(&p.dev.1, dev_a.hetero_weights("test").unwrap());
        let want = read(&p.cpu.1, cpu_a.hetero_weights("test").unwrap());
        for (j, ((&g, &twice_applied), &w)) in got.iter().zip(&want).zip(&w0).enumerate() {
            let once_applied = w + (twice_applied - w) / 2.0;
            let close = |v: f64| (g - v).abs() <= 1e-12 * (1.0 + v.abs());
            assert!(
                close(twice_applied) || (p.on_gpu() && close(once_applied)),
                "{what}: [{j}] got {g}, want {twice_applied}"
            );
        }
    }
}
