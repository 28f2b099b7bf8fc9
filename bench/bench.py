"""GPU benchmark harness: evsparse (through its Python binding, python/evsparse, on tensors torch
owns, wrapped zero-copy) beside the baseline a user would pick instead, in the same run, on the same stream.

Each row: CUDA-event timing, median of REPS runs after WARMUP; the floor is the bytes that must
move over the measured device-to-device bandwidth (or FLOPs at the measured bf16 cuBLAS rate
for bsrmm), and "% of floor" is floor time / evsparse time. The plan column names the
algorithm that ran (`evs_last_plan`); with --variants every algorithm of the family is forced
in turn (`evs_context_set_algorithm`), one row each, the chooser's pick marked with *. The
graph column (event-driven, dense-event, plasticity and spmm rows) is the per-call time of a
CUDA graph of GRAPH_CALLS captured calls: GPU time without the host's launch gaps, for calls
of at most GRAPH_MS_MAX. On the spmm rows the baseline is captured and replayed the same way,
and its graph µs and the speed-up of graph µs over graph µs follow in parentheses.

    EVS_LIBRARY=path/to/libevsparse.so python3 bench/bench.py [--out table.md] [--quick] [--variants]
"""

import argparse
import datetime
import json
import os
import re
import statistics
import sys
import warnings

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import evsparse  # noqa: E402 (the binding in this tree, not an installed one)

# torch's notes on its sparse CSR tensors (beta state, invariant checks off) say nothing about a
# run and fill the probes' output, of which a device call returns the last 12,000 characters
warnings.filterwarnings("ignore", message="Sparse (CSR tensor support|invariant checks)")

WARMUP, REPS = 3, 25
OP_N, OP_T = "N", "T"
FLOAT, EVENTS = False, True


class Evs:
    """The harness's context and streams. Calls run on `stream`, which `graphed` points at a
    capture stream of its own meanwhile."""

    def __init__(self, stream):
        self.ctx = evsparse.Context("cuda", torch.cuda.current_device())
        self.stream = self.ctx.wrap_stream(stream)
        self.capture_torch = torch.cuda.Stream()  # graphs are captured on a stream of their own
        self.capture_stream = self.ctx.wrap_stream(self.capture_torch)

    def force(self, spec):
        self.ctx.set_algorithm(spec)

    def last_plan(self):
        return evsparse.last_plan()

    def dense(self, t):
        """Wraps a torch tensor (1-D or 2-D, row-major) without copying."""
        return self.ctx.wrap(t, self.stream)

    def csr(self, m, k, crow, col, weights=None, homo=1.0):
        """Wraps torch's CSR arrays without copying (the structure is valid by construction)."""
        return evsparse.CSR(crow, col, weights, shape=(m, k), homo_weight=homo, ctx=self.ctx, validate=False)


def algorithms():
    """{family: [algorithm, ...]} as the header documents them for evs_context_set_algorithm."""
    header = open(os.path.join(os.path.dirname(__file__), "..", "include", "evsparse.h")).read()
    doc = header.split("evs_status evs_context_set_algorithm(")[0].rsplit("/**", 1)[1]
    found = {}
    for family, rest in re.findall(r"^ \* - `(\w+)`(.*)$", doc, re.M):
        found[family] = re.findall(r"`([a-z0-9_]+)`", rest.split(":", 1)[1])
    return found


ALGORITHMS = algorithms()
VARIANTS = False


def measure(evs, family, fn, verify=None, graph=False):
    """[(plan, ms, chosen, graph ms or None)]: the chooser's pick, then with --variants every
    other algorithm of the family forced in turn (those that cannot run the call are left out).
    `verify` checks each variant's result; `graph` adds the per-call time of a CUDA graph of
    GRAPH_CALLS captured calls, for calls of at most GRAPH_MS_MAX."""
    def time_both(fn):
        ms = timed(fn)
        return ms, graphed(evs, fn) if graph and ms <= GRAPH_MS_MAX else None

    evs.force(family + ":auto")
    fn()
    chosen = evs.last_plan()
    results = [(chosen, *time_both(fn), True)]
    if verify:
        verify(chosen)
    for alg in ALGORITHMS[family] if VARIANTS else []:
        plan = f"{family}:{alg}"
        if plan == chosen:
            continue
        evs.force(plan)
        try:
            fn()
        except evsparse.NotSupportedError:  # the variant does not apply to this call
            continue
        results.append((plan, *time_both(fn), False))
        if verify:
            verify(plan)
    evs.force(family + ":auto")
    return results


def timed(fn):
    """Median milliseconds of REPS runs of fn on the current stream, after WARMUP."""
    for _ in range(WARMUP):
        fn()
    times = []
    for _ in range(REPS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def timed_baseline(evs, fn):
    """(event ms, graph ms or None) of a baseline call: its CUDA graph of GRAPH_CALLS captured
    calls too, so that a row compares GPU time with GPU time as well as call with call (None
    where the baseline cannot be captured)."""
    ms = timed(fn)
    try:
        return ms, graphed(evs, fn) if ms <= GRAPH_MS_MAX else None
    except RuntimeError:  # a baseline that synchronises or allocates outside the graph's pool
        torch.cuda.synchronize()
        return ms, None


GRAPH_CALLS = 100
GRAPH_MS_MAX = 2.0  # slower variants (thread_per_row on wide B: 12 ms) would take minutes to replay


def graphed(evs, fn):
    """Per-call ms of a CUDA graph of GRAPH_CALLS captured calls of fn (GPU time without the
    host's launch gaps), median of REPS replays. fn runs on evs.stream, which is pointed at the
    capture stream meanwhile."""
    graph, main = torch.cuda.CUDAGraph(), evs.stream
    evs.stream = evs.capture_stream
    try:
        with torch.cuda.stream(evs.capture_torch):
            fn()  # anything built lazily is built before the capture
        torch.cuda.synchronize()
        with torch.cuda.graph(graph, stream=evs.capture_torch):
            for _ in range(GRAPH_CALLS):
                fn()
    finally:
        evs.stream = main
    return timed(graph.replay) / GRAPH_CALLS


class Table:
    def __init__(self, bandwidth, tflops):
        self.bandwidth, self.tflops, self.rows = bandwidth, tflops, []

    def add(self, workload, ours, baseline, base_ms, nbytes=None, flops=None):
        """One row per entry of `ours` (from `measure`), each beside the same baseline. base_ms
        may be (event ms, graph ms or None) (`timed_baseline`): then the baseline and speed-up
        cells add the graph-replayed ones, GPU time beside GPU time."""
        base_ms, base_graph_ms = base_ms if isinstance(base_ms, tuple) else (base_ms, None)
        for plan, ours_ms, graph_ms, chosen in ours:
            if flops is not None:  # the FLOP time, or the byte time where given and longer
                achieved = f"{flops / ours_ms / 1e9:.1f} TFLOP/s"
                floor_ms = max(flops / (self.tflops * 1e12), (nbytes or 0) / (self.bandwidth * 1e9)) * 1e3
            else:
                achieved = f"{nbytes / ours_ms / 1e6:.0f} GB/s"
                floor_ms = nbytes / (self.bandwidth * 1e9) * 1e3
            mark = "*" if chosen and len(ours) > 1 else ""
            graph = "—" if graph_ms is None else f"{graph_ms * 1e3:.2f}"
            base, speedup = f"{base_ms * 1e3:.1f}", f"{base_ms / ours_ms:.2f}x"
            if base_graph_ms is not None and graph_ms is not None:
                base += f" (graph {base_graph_ms * 1e3:.1f})"
                speedup += f" (graph {base_graph_ms / graph_ms:.2f}x)"
            row = (workload, plan + mark, f"{ours_ms * 1e3:.1f}", graph, baseline, base, speedup, achieved,
                   f"{100 * floor_ms / ours_ms:.1f}%")
            self.rows.append(row)
            print(" | ".join(row), flush=True)

    HEAD = ("workload", "plan", "evsparse µs", "graph µs/call", "baseline", "baseline µs", "speed-up", "evsparse achieved",
            "% of floor")

    def markdown(self):
        lines = ["| " + " | ".join(self.HEAD) + " |", "|" + "---|" * len(self.HEAD)]
        lines += ["| " + " | ".join(r) + " |" for r in self.rows]
        return "\n".join(lines)

    def records(self):
        """The rows as dicts keyed by the table's column names (the JSON beside the table)."""
        return [dict(zip(self.HEAD, r)) for r in self.rows]


def ceilings():
    """Measured device-to-device copy bandwidth (GB/s, read + write) and bf16 cuBLAS TFLOP/s."""
    src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda").random_()
    dst = torch.empty_like(src)
    copy_ms = timed(lambda: dst.copy_(src))
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    mm_ms = timed(lambda: a @ b)
    return 2 * src.numel() / copy_ms / 1e6, 2 * 8192 ** 3 / mm_ms / 1e9


def random_csr(m, k, per_row, index=torch.int32):
    """Fixed entries per row, uniform random columns (sorted within rows, as cuSPARSE prefers)."""
    crow = torch.arange(0, (m + 1) * per_row, per_row, device="cuda", dtype=torch.int64).to(index)
    col = torch.randint(0, k, (m, per_row), device="cuda", dtype=torch.int32).sort(dim=1).values.reshape(-1)
    return crow, col


def transpose(m, k, crow, col):
    """CSR structure of Aᵀ as a user would keep it: column pointers and row indices (int32), and
    the CSR position of each of its entries (to permute weights)."""
    order = torch.argsort(col, stable=True)
    rows = torch.repeat_interleave(torch.arange(m, device="cuda", dtype=torch.int32), crow.diff().long())
    rowind = rows[order]
    del rows
    colptr = torch.zeros(k + 1, device="cuda", dtype=torch.int64)
    colptr[1:] = torch.bincount(col, minlength=k).cumsum(0)
    return colptr.int(), rowind, order


def csr_bytes(m, nnz, weights=True):
    return 4 * (m + 1) + 4 * nnz + (4 * nnz if weights else 0)


def spmm_n_row(evs, tab, label, a, hb, hc, C_, ref, tol, baseline, nbytes):
    """The spmm N row of spmm_rows: C_ = A B checked against ref, beside `baseline`."""
    ours = measure(evs, "spmm_n", lambda: evsparse.spmm(a, hb, hc, op=OP_N, events=FLOAT, alpha=1.0, beta=0.0, stream=evs.stream),
                   lambda plan: check(f"spmm N {plan}", C_, ref, tol), graph=True)
    tab.add(f"spmm N {label}", ours, "torch CSR @ (cuSPARSE)", timed_baseline(evs, baseline), nbytes)


def spmm_rows(evs, tab, label, a, m, k, crow, col, w, n, nz=0.1, ops=("N", "T")):
    """spmm N and T (those of `ops`) of one matrix (k x n B, `nz` of its entries non-zero; B
    and C of w's dtype) beside cuSPARSE on A (N) and on a stored Aᵀ (T)."""
    dt = w.dtype
    B = torch.randn(k, n, device="cuda")
    if nz < 1:
        B *= torch.rand(k, n, device="cuda") < nz
    B = B.to(dt)
    C_ = torch.empty(m, n, device="cuda", dtype=dt)
    hb, hc = evs.dense(B), evs.dense(C_)
    nbytes = csr_bytes(m, col.numel()) + B.element_size() * (k + m) * n
    tol = 1e-3 if dt == torch.float32 else 5e-3 if dt == torch.float16 else 3e-2
    if "N" in ops:
        At = torch.sparse_csr_tensor(crow.long(), col.long(), w, (m, k))
        spmm_n_row(evs, tab, label, a, hb, hc, C_, At @ B, tol, lambda: At @ B, nbytes)
        del At
    if "T" not in ops:
        return
    Bt = B if k == m else torch.randn(m, n, device="cuda", dtype=dt)
    Ct = C_ if k == m else torch.empty(k, n, device="cuda", dtype=dt)
    hbt, hct = (hb, hc) if k == m else (evs.dense(Bt), evs.dense(Ct))
    colptr, rowind, order = transpose(m, k, crow, col)  # the transpose a torch user would keep, untimed
    Att = torch.sparse_csr_tensor(colptr, rowind, w[order], (k, m))
    ref = Att @ Bt
    a.analyse(evs.stream)
    ours = measure(evs, "spmm_t", lambda: evsparse.spmm(a, hbt, hct, op=OP_T, events=FLOAT, alpha=1.0, beta=0.0, stream=evs.stream),
                   lambda plan: check(f"spmm T {plan}", Ct, ref, tol), graph=True)
    tab.add(f"spmm T {label}", ours, "torch CSR of Aᵀ @", timed_baseline(evs, lambda: Att @ Bt), nbytes)


def bench_spmm(evs, tab, quick):
    """B 10 % nonzero and dense, 32 to 256 columns; rows of 200 and 1000; B larger than L2
    (200,000 rows of 128 columns, 102 MB); f16 and bf16 (A, B and C)."""
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    cases = [(10000, 200, f32, [(128, 0.1), (64, 0.1), (32, 0.1), (256, 0.1), (128, 1.0), (64, 1.0), (32, 1.0), (256, 1.0)]),
             (10000, 1000, f32, [(128, 0.1)]), (200_000, 50, f32, [(128, 0.1), (128, 1.0)]),
             (10000, 200, f16, [(128, 0.1), (128, 1.0)]), (10000, 200, bf16, [(128, 0.1), (128, 1.0)])]
    for m, per_row, dt, shapes in cases:
        crow, col = random_csr(m, m, per_row)
        w = torch.rand(col.numel(), device="cuda", dtype=dt)
        a = evs.csr(m, m, crow, col, w)
        for n, nz in shapes:
            share = "10% nz" if nz < 1 else "dense"
            kind = "" if dt == f32 else f", {str(dt)[6:]}"
            spmm_rows(evs, tab, f"{m:,}² ×{per_row}/row, B {n} cols ({share}{kind})".replace("10,000", "10000"), a, m, m,
                      crow, col, w, n, nz)
        a.close()
        if (m, per_row, dt) == (10000, 200, f32):  # created from host arrays, as evs_csr_create does:
            owned = evsparse.CSR(crow.cpu(), col.cpu(), w.cpu(), shape=(m, m), ctx=evs.ctx)  # T reads a CSC copy
            for n, nz in [(128, 0.1), (64, 0.1), (128, 1.0)]:
                share = "10% nz" if nz < 1 else "dense"
                spmm_rows(evs, tab, f"10000² ×200/row, B {n} cols ({share}, owned weights)", owned, m, m, crow, col, w, n,
                          nz, ops=("T",))
            owned.close()


def power_law_csr(m, k, mean, longest, shape=1.67):
    """Row lengths of a Pareto law (as node degrees in real graphs and cortical models), scaled
    to the mean and capped at `longest`, rows shuffled; uniform random columns, sorted within
    rows."""
    q = (torch.arange(m, device="cuda", dtype=torch.float64) + 0.5) / m
    raw = q.pow(-1.0 / shape)
    for _ in range(20):  # rescale until the capped lengths have the mean asked for
        lengths = (raw * mean / raw.mean()).round().clamp(max=longest)
        raw = raw * mean / lengths.mean()
    lengths = lengths.long()[torch.randperm(m, device="cuda")]
    crow = torch.zeros(m + 1, device="cuda", dtype=torch.int64)
    crow[1:] = lengths.cumsum(0)
    nnz = int(crow[-1])
    rows = torch.repeat_interleave(torch.arange(m, device="cuda"), lengths)
    col = torch.randint(0, k, (nnz,), device="cuda", dtype=torch.int32)
    col = col[torch.argsort(rows * k + col.long())]  # sorted within rows, rows in order
    return crow.int(), col, int(lengths.max())


def bench_skewed(evs, tab, quick):
    m, n = 100_000, 64
    crow, col, longest = power_law_csr(m, m, 50, 20_000)
    w = torch.rand(col.numel(), device="cuda")
    a = evs.csr(m, m, crow, col, w)
    label = f"{m:,}² power-law rows (mean {col.numel() / m:.0f}, max {longest:,}), B {n} dense cols"
    spmm_rows(evs, tab, label, a, m, m, crow, col, w, n, nz=1.0)
    a.close()


def bench_spmv(evs, tab, quick):
    """spmv N with float x: very short uniform rows (road-network-like graphs) and the
    power-law rows of the skewed workload."""
    m = 2_000_000
    crow, col = random_csr(m, m, 4)
    cases = [(f"{m:,}² ×4/row", m, crow, col, 4)]
    crow2, col2, longest = power_law_csr(100_000, 100_000, 50, 20_000)
    cases.append((f"100,000² power-law rows (mean 50, max {longest:,})", 100_000, crow2, col2, None))
    for label, m, crow, col, per_row in cases[:1] if quick else cases:
        w = torch.rand(col.numel(), device="cuda")
        a = evs.csr(m, m, crow, col, w)
        x, y = torch.randn(m, device="cuda"), torch.empty(m, device="cuda")
        hx, hy = evs.dense(x), evs.dense(y)
        At = torch.sparse_csr_tensor(crow.long(), col.long(), w, (m, m))
        ref = At @ x
        ours = measure(evs, "spmm_n", lambda: evsparse.spmv(a, hx, hy, op=OP_N, events=FLOAT, alpha=1.0, beta=0.0, stream=evs.stream),
                       lambda plan: check(f"spmv N {plan}", y, ref))
        tab.add(f"spmv N {label}", ours, "torch CSR @ (cuSPARSE)", timed(lambda: At @ x),
                csr_bytes(m, col.numel()) + 8 * m)
        a.close()


def spmv_n_event_rows(evs, tab, a, At, per_row, rate):
    """spmv N on an event vector and on its spike list (A m x m, hetero f32) beside torch's CSR
    product on float spikes."""
    m = At.shape[0]
    spikes = torch.rand(m, device="cuda") < rate
    y = torch.empty(m, device="cuda")
    hs, hy = evs.dense(spikes), evs.dense(y)
    xs = spikes.float()
    ref = At @ xs
    ours = measure(evs, "spmm_n", lambda: evsparse.spmv(a, hs, hy, op=OP_N, events=EVENTS, alpha=1.0, beta=0.0, stream=evs.stream),
                   lambda plan: check(f"spmv N events {plan}", y, ref), graph=True)
    base = timed(lambda: At @ xs)
    label = f"{m:,}² ×{per_row}/row, {rate * 100:g}% active"
    active_entries = int(spikes.sum()) * per_row  # the active columns' entries: rows, weights, y
    moved = 16 * active_entries + 4 * m  # what must move beside the input: as on the spike list
    tab.add(f"spmv N events {label}", ours, "torch CSR @ float spikes", base, m + moved)
    spikes_list, list_tensors = spike_list(evs, hs, m)
    a.analyse(evs.stream)
    ours = measure(evs, "spmm_n", lambda: evsparse.spmv(a, spikes_list, hy, op=OP_N, stream=evs.stream),
                   lambda plan: check(f"spmv N spike list {plan}", y, ref), graph=True)
    tab.add(f"spmv N spike list {label}", ours, "torch CSR @ float spikes", base, 4 * int(spikes.sum()) + moved)


def spike_list(evs, spikes_handle, n):
    """The spike list of a bool spike vector (by evsparse.compact_events) on wrapped handles, and
    their tensors (which the caller keeps alive while it uses the list)."""
    idx = torch.empty(n, device="cuda", dtype=torch.int32)
    count = torch.empty(1, device="cuda", dtype=torch.int32)
    return evsparse.compact_events(spikes_handle, evs.dense(idx), evs.dense(count), stream=evs.stream), (idx, count)


def bench_spmv_events(evs, tab, quick):
    cases = [(500_000, 2000, 0.004), (4000, 80, 0.005), (400_000, 80, 0.005)]
    for n, per_row, rate in cases[1:] if quick else cases:
        crow, col = random_csr(n, n, per_row)
        a = evs.csr(n, n, crow, col, None, 1.0)
        spikes = torch.rand(n, device="cuda") < rate
        y = torch.empty(n, device="cuda")
        hs, hy = evs.dense(spikes), evs.dense(y)
        # baseline: cuSPARSE SpMV (torch) on the stored transpose, with the homogeneous weight
        # stored as values and the spikes as floats
        colptr, rowind, order = transpose(n, n, crow, col)
        del order
        At = torch.sparse_csr_tensor(colptr, rowind, torch.ones(rowind.numel(), device="cuda"), (n, n))
        xs = spikes.float()
        ref = At @ xs
        a.analyse(evs.stream)
        ours = measure(evs, "spmm_t", lambda: evsparse.spmv(a, hs, hy, op=OP_T, events=EVENTS, alpha=1.0, beta=0.0, stream=evs.stream),
                       lambda plan: check(f"spmv T events {plan}", y, ref), graph=True)
        # the same step from the spike list that compaction makes of these spikes
        spikes_list, list_tensors = spike_list(evs, hs, n)
        ours_list = measure(evs, "spmm_t", lambda: evsparse.spmv(a, spikes_list, hy, op=OP_T, stream=evs.stream),
                            lambda plan: check(f"spmv T spike list {plan}", y, ref), graph=True)
        a.close()
        del crow, col
        base = timed(lambda: At @ xs)
        active = int(spikes.sum())
        nbytes = n + active * (8 + per_row * 4) + 4 * n  # spikes, the active rows, y written once
        tab.add(f"spmv T events {n:,} neurons ×{per_row}/row, {rate * 100:g}% active (bool, homo)", ours,
                "torch CSR of Aᵀ @ (cuSPARSE)", base, nbytes)
        tab.add(f"spmv T spike list {n:,} neurons ×{per_row}/row, {rate * 100:g}% active (homo)", ours_list,
                "torch CSR of Aᵀ @ (cuSPARSE)", base, nbytes - n + 4 * active)
        del At, colptr, rowind, ref
        torch.cuda.empty_cache()
    m, per_row = 10000, 200
    crow, col = random_csr(m, m, per_row)
    w = torch.rand(col.numel(), device="cuda")
    a = evs.csr(m, m, crow, col, w)
    At = torch.sparse_csr_tensor(crow.long(), col.long(), w, (m, m))
    spmv_n_event_rows(evs, tab, a, At, per_row, 0.01)
    crow_l, col_l = random_csr(400000, 400000, 80)
    w_l = torch.rand(col_l.numel(), device="cuda")
    a_l = evs.csr(400000, 400000, crow_l, col_l, w_l)
    spmv_n_event_rows(evs, tab, a_l, torch.sparse_csr_tensor(crow_l.long(), col_l.long(), w_l, (400000, 400000)), 80, 0.005)
    a_l.close()
    del crow_l, col_l, w_l
    torch.cuda.empty_cache()
    # spmm on events: B 10000 x 128 bool, 10 % active, N and T (torch multiplies floats)
    B = torch.rand(m, 128, device="cuda") < 0.10
    Cm = torch.empty(m, 128, device="cuda")
    hb, hc = evs.dense(B), evs.dense(Cm)
    Bf = B.float()
    colptr, rowind, order = transpose(m, m, crow, col)
    AtT = torch.sparse_csr_tensor(colptr, rowind, w[order], (m, m))
    homo = evs.csr(m, m, crow, col, None, 0.5)
    for op, family, base_a, what in [(OP_N, "spmm_n", At, "N"), (OP_T, "spmm_t", AtT, "T")]:
        for ours_a, scale, weights in [(a, 1.0, "hetero"), (homo, 0.5, "homo")]:
            ones = torch.sparse_csr_tensor(base_a.crow_indices(), base_a.col_indices(), torch.ones_like(w), (m, m))
            ref = (base_a @ Bf) if weights == "hetero" else scale * (ones @ Bf)
            ours = measure(evs, family,
                           lambda: evsparse.spmm(ours_a, hb, hc, op=op, events=EVENTS, alpha=1.0, beta=0.0, stream=evs.stream),
                           lambda plan: check(f"spmm {what} events {weights} {plan}", Cm, ref), graph=True)
            tab.add(f"spmm {what} events {m}² ×{per_row}/row, B {m}×128 bool 10% active, {weights}", ours,
                    "torch CSR @ float B (cuSPARSE)", timed(lambda: base_a @ Bf),
                    csr_bytes(m, col.numel(), weights == "hetero") + B.numel() + 4 * Cm.numel())
    # narrow B (64 columns: quarter-warps per entry), N, hetero
    B64 = B[:, :64].contiguous()
    C64 = torch.empty(m, 64, device="cuda")
    hb64, hc64 = evs.dense(B64), evs.dense(C64)
    ref = At @ B64.float()
    ours = measure(evs, "spmm_n", lambda: evsparse.spmm(a, hb64, hc64, op=OP_N, events=EVENTS, alpha=1.0, beta=0.0, stream=evs.stream),
                   lambda plan: check(f"spmm N events 64 cols {plan}", C64, ref), graph=True)
    tab.add(f"spmm N events {m}² ×{per_row}/row, B {m}×64 bool 10% active, hetero", ours,
            "torch CSR @ float B (cuSPARSE)", timed(lambda: At @ B64.float()),
            csr_bytes(m, col.numel()) + B64.numel() + 4 * C64.numel())
    a.close()
    homo.close()
    # event compaction of 500,000 neurons at 0.4 %
    n = 500_000
    spikes = torch.rand(n, device="cuda") < 0.004
    idx, count = torch.empty(n, device="cuda", dtype=torch.int32), torch.empty(1, device="cuda", dtype=torch.int32)
    hs, hi, hn = evs.dense(spikes), evs.dense(idx), evs.dense(count)
    ref = spikes.nonzero().flatten().int()

    def check_compact(plan):
        got = idx[: int(count.item())]
        if got.numel() != ref.numel() or not torch.equal(got, ref):
            MISMATCHES.append(f"compact {plan}: indices differ from torch.nonzero")

    ours = measure(evs, "compact", lambda: evsparse.compact_events(hs, hi, hn, stream=evs.stream), check_compact,
                   graph=True)
    tab.add(f"event compaction {n:,} neurons, 0.4% active", ours, "torch.nonzero (syncs the host)",
            timed(lambda: spikes.nonzero()), n + 4 * ref.numel() + 4)
    # dense event mv: W 10000² f32, 1 % of the inputs active; the floor reads the active columns
    W = torch.randn(m, m, device="cuda")
    s_ = torch.rand(m, device="cuda") < 0.01
    c = torch.empty(m, device="cuda")
    hw, hs, hc = evs.dense(W), evs.dense(s_), evs.dense(c)
    sf = s_.float()
    for op in (OP_N, OP_T):
        Wop = W if op == OP_N else W.t()
        ref = Wop @ sf
        ours = measure(evs, "dense_mm", lambda: evsparse.dense_mv(hw, hs, hc, op=op, events=EVENTS, alpha=1.0, beta=0.0, stream=evs.stream),
                       lambda plan: check(f"dense mv events {'N' if op == OP_N else 'T'} {plan}", c, ref), graph=True)
        tab.add(f"dense event mv {'N' if op == OP_N else 'T'} W {m}² f32, 1% active", ours,
                "cuBLAS gemv (torch W @ float s)", timed(lambda: Wop @ sf), 4 * m * int(s_.sum()) + m + 4 * m)


def bench_yw2y(evs, tab, quick):
    """yw2y plain (the issue's seed workload) and batched (8 rows of y sharing A's weights: the
    floor reads the weights and indices once and writes every batch's out)."""
    cases = [(100_000, 1000, OP_N, 1), (100_000, 1000, OP_T, 1), (200_000, 1000, OP_N, 1), (200_000, 1000, OP_T, 1),
             (10_000, 200, OP_T, 1), (1_000_000, 20, OP_T, 1), (100_000, 100, OP_N, 8), (100_000, 100, OP_T, 8)]
    for n, per_row, op, batches in cases[: 1 if quick else len(cases)]:
        crow, col = random_csr(n, n, per_row)
        w = torch.rand(col.numel(), device="cuda")
        a = evs.csr(n, n, crow, col, w)
        y = torch.rand(n, device="cuda") if batches == 1 else torch.rand(batches, n, device="cuda")
        out = torch.empty(y.shape[:-1] + (col.numel(),), device="cuda")
        hy, ho = evs.dense(y), evs.dense(out)
        src = torch.repeat_interleave(torch.arange(n, device="cuda"), per_row) if op == OP_N else col.long()
        ref = w * y[..., src]
        ours = measure(evs, "yw2y", lambda: evsparse.yw2y(a, hy, ho, op=op, stream=evs.stream),
                       lambda plan: check(f"yw2y {plan}", out, ref), graph=True)
        base = timed(lambda: w * y[..., src])
        # weights once (T also the indices), every batch's out written, y and indptr read
        nbytes = (4 if op == OP_N else 8) * col.numel() + 4 * batches * col.numel() + 4 * batches * n + 4 * (n + 1)
        label = f"yw2y {'N' if op == OP_N else 'T'} {n:,}² ×{per_row}/row" + (f", {batches} batches" if batches > 1 else "")
        tab.add(label, ours, "torch gather-multiply", base, nbytes)
        a.close()
        del out, ref, src, y


def bench_dense(evs, tab, quick):
    """Dense W times events: N (W m x m, C = W·S) for every case, T (C = Wᵀ·S) for every case of
    W 10000²; beside cuBLAS (f32 with TF32 off, and on as a second
    baseline) and the torch workaround that gathers the columns (N) or rows (T) of W that the
    events select. The floor moves the bytes of W that the events select (N: columns whose row
    of S has an event)."""
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    cases = [(10000, 100, 0.01, f32), (5000, 100, 0.01, f32), (20000, 100, 0.01, f32), (10000, 10, 0.01, f32),
             (10000, 256, 0.01, f32), (10000, 100, 0.10, f32), (10000, 100, 0.001, f32), (10000, 100, 0.01, f16),
             (10000, 100, 0.01, bf16), (10000, 10, 0.01, f16)]
    torch.backends.cuda.matmul.allow_tf32 = False
    for m, n, rate, dt in cases[:2] if quick else cases:
        W = torch.randn(m, m, device="cuda", dtype=dt)
        S = torch.rand(m, n, device="cuda") < rate
        Cm = torch.empty(m, n, device="cuda", dtype=dt)
        hw, hs, hc = evs.dense(W), evs.dense(S), evs.dense(Cm)
        Sf = S.to(dt)
        tol = 1e-6 if dt == f32 else 5e-3 if dt == f16 else 3e-2
        name = "cuBLAS f32 (TF32 off)" if dt == f32 else f"cuBLAS {str(dt)[6:]}"
        label = f"{m}², S {m}×{n} bool {rate * 100:g}% active, {str(dt)[6:]}"
        live = S.any(dim=1)
        for op in (OP_N, OP_T) if m == 10000 else (OP_N,):
            Wop = W if op == OP_N else W.t()
            # f32 against a float64 product (the 1e-6), half precision against f32 sums
            ref = Wop.double() @ S.double() if dt == f32 else Wop.float() @ S.float()
            ours = measure(evs, "dense_mm", lambda: evsparse.dense_mm(hw, hs, hc, op=op, events=EVENTS, alpha=1.0, beta=0.0, stream=evs.stream),
                           lambda plan: check(f"dense mm {'N' if op == OP_N else 'T'} {label} {plan}", Cm.float(), ref, tol=tol),
                           graph=True)
            nbytes = int(W.numel() * live.float().mean().item()) * W.element_size() + S.numel() + Cm.numel() * Cm.element_size()
            row = f"dense event mm {'N' if op == OP_N else 'T'} W {label}"
            tab.add(row, ours, name, timed(lambda: Wop @ Sf), nbytes)
            if dt == f32:
                torch.backends.cuda.matmul.allow_tf32 = True
                tab.add(row, ours[:1], "cuBLAS TF32", timed(lambda: Wop @ Sf), nbytes)
                torch.backends.cuda.matmul.allow_tf32 = False
            gather = (lambda: W[:, live.nonzero().squeeze(1)] @ Sf[live]) if op == OP_N else \
                (lambda: W[live].t() @ Sf[live])
            tab.add(row, ours[:1], "torch gather + matmul", timed(gather), nbytes)
        for h in (hw, hs, hc):
            h.close()


def plasticity_case(evs, n, per_row, rate):
    """A CSR plasticity workload: A n x n (per_row random columns, hetero f32 weights w, analysed),
    bool spikes at `rate` and a trace, with the spikes' and trace's handles."""
    crow, col = random_csr(n, n, per_row)
    w = torch.rand(col.numel(), device="cuda")
    a = evs.csr(n, n, crow, col, w)
    a.analyse(evs.stream)
    spikes = torch.rand(n, device="cuda") < rate
    trace = torch.rand(n, device="cuda") * 1e-3
    return a, col, w, spikes, trace, evs.dense(spikes), evs.dense(trace)


def bench_plasticity(evs, tab, quick):
    for n, per_row, rate in [(5000, 500, 0.10), (100_000, 1000, 0.01)][: 1 if quick else 2]:
        a, col, w, spikes, trace, hs, ht = plasticity_case(evs, n, per_row, rate)
        spikes_list, list_tensors = spike_list(evs, hs, n)
        rows = torch.repeat_interleave(torch.arange(n, device="cuda"), per_row)
        colsl = col.long()
        touched = int(spikes.sum()) * per_row
        for rule, mask_of, tr_of in [("pre", rows, colsl), ("post", colsl, rows)]:
            update = getattr(evsparse, "csr_plasticity_" + rule)
            ours = measure(evs, "csr_plasticity", lambda: update(a, hs, ht, w_min=0.0, w_max=1.0, stream=evs.stream),
                           graph=True)

            def masked(mask_of=mask_of, tr_of=tr_of):
                mask = spikes[mask_of]
                w.copy_(torch.where(mask, (w + trace[tr_of]).clamp(0.0, 1.0), w))

            base = timed(masked)
            extra = touched * 4 if rule == "post" else 0  # post reaches entries through the CSC permutation
            nbytes = n + touched * 16 + extra + 4 * n
            tab.add(f"plasticity {rule} {n:,}² ×{per_row}/row, {rate * 100:g}% active", ours, "torch masked update", base, nbytes)
            ours = measure(evs, "csr_plasticity",
                           lambda: update(a, spikes_list, ht, w_min=0.0, w_max=1.0, stream=evs.stream), graph=True)
            tab.add(f"plasticity {rule} spike list {n:,}² ×{per_row}/row, {rate * 100:g}% active", ours,
                    "torch masked update", base, 4 * int(spikes.sum()) + touched * 16 + extra)
        a.close()
    # dense weights, W 10000² f32, 1 % active: pre rewrites the active rows (read and write), post
    # the active columns (each element its own 32-byte sector); torch updates the same slices
    n = 10000
    W = torch.rand(n, n, device="cuda")
    spikes = torch.rand(n, device="cuda") < 0.01
    trace = torch.rand(n, device="cuda") * 1e-3
    hw, hs, ht = evs.dense(W), evs.dense(spikes), evs.dense(trace)
    idx = spikes.nonzero().squeeze(1)
    active = idx.numel()
    for rule, torch_update, nbytes in [
            ("pre", lambda: W.index_copy_(0, idx, (W[idx] + trace).clamp(0.0, 1.0)), 8 * n * active + 5 * n),
            ("post", lambda: W.index_copy_(1, idx, (W[:, idx] + trace[:, None]).clamp(0.0, 1.0)), 64 * n * active + 5 * n)]:
        update = getattr(evsparse, "dense_plasticity_" + rule)
        ours = measure(evs, "dense_plasticity", lambda: update(hw, hs, ht, w_min=0.0, w_max=1.0, stream=evs.stream),
                       graph=True)
        tab.add(f"dense plasticity {rule} W {n}² f32, 1% active", ours, "torch index_copy_ of the updated slices",
                timed(torch_update), nbytes)
    for h in (hw, hs, ht):
        h.close()


def step_network(evs, n):
    """The simulated step of bench_step on n neurons: (calls, baseline, nbytes, handles), where
    calls are the step's six calls in order as (name, fn) pairs, baseline torch's two spmv T on
    the same spikes, nbytes the step's bytes, and handles what the caller closes afterwards."""
    n_e, per_row, rate = n * 4 // 5, 80, 0.005
    net = {}
    for name, rows in [("E", n_e), ("I", n - n_e)]:
        crow, col = random_csr(rows, n, per_row)
        w = torch.rand(col.numel(), device="cuda")
        a = evs.csr(rows, n, crow, col, w)
        a.analyse(evs.stream)
        spikes = torch.rand(rows, device="cuda") < rate
        hs = evs.dense(spikes)
        spikes_list, list_tensors = spike_list(evs, hs, rows)
        colptr, rowind, order = transpose(rows, n, crow, col)
        base_a = torch.sparse_csr_tensor(colptr, rowind, w[order], (n, rows))
        net[name] = (a, hs, spikes_list, spikes.float(), base_a, (w, crow, col, list_tensors))
    y, trace = torch.empty(n, device="cuda"), torch.rand(n, device="cuda") * 1e-3
    hy, ht, ht_e = evs.dense(y), evs.dense(trace), evs.dense(trace[:n_e])
    (ae, hse, le, xe, be, keep_e), (ai, hsi, li, xi, bi, keep_i) = net["E"], net["I"]
    calls = [
        ("compact E", lambda: evsparse.compact_events(hse, *le, stream=evs.stream)),
        ("compact I", lambda: evsparse.compact_events(hsi, *li, stream=evs.stream)),
        ("spmv T E (beta 0)", lambda: evsparse.spmv(ae, le, hy, op=OP_T, stream=evs.stream)),
        ("spmv T I (beta 1)", lambda: evsparse.spmv(ai, li, hy, op=OP_T, alpha=-4.0, beta=1.0, stream=evs.stream)),
        ("plasticity pre", lambda: evsparse.csr_plasticity_pre(ae, le, ht, w_min=0.0, w_max=1.0, stream=evs.stream)),
        ("plasticity post", lambda: evsparse.csr_plasticity_post(ae, le, ht_e, w_min=0.0, w_max=1.0, stream=evs.stream)),
    ]
    active = int(xe.sum() + xi.sum())
    nbytes = n + active * (8 + per_row * 4) + 4 * n + int(xe.sum()) * per_row * 24
    return calls, lambda: (be @ xe, bi @ xi), nbytes, (ae, ai, keep_e, keep_i, y, trace)


def bench_step(evs, tab, quick):
    """A whole simulated step as a simulator on spike lists runs it, graph-replayed: compact the
    excitatory and the inhibitory spikes, propagate each through its matrix (spmv T on the
    lists), plasticity pre and post on the excitatory synapses. 80 % of the neurons are
    excitatory, 80 synapses each, 0.5 % spiking; the baseline is torch's two spmv T alone."""
    for n in [4000, 400_000][: 1 if quick else 2]:
        calls, baseline, nbytes, handles = step_network(evs, n)

        def step():
            for _, call in calls:
                call()

        ours = [("compact ×2, spmv T spike lists ×2, plasticity pre + post", timed(step), graphed(evs, step), True)]
        tab.add(f"whole step {n:,} neurons ×80/row, 0.5% spiking (spike lists)", ours,
                "torch: the two spmv T alone (cuSPARSE)", timed(baseline), nbytes)
        for a in handles[:2]:
            a.close()


def bench_bsrmm(evs, tab, quick):
    try:
        from torch.sparse._triton_ops import bsr_dense_mm
    except ImportError:
        bsr_dense_mm = None
    square = [(8192, 8192, 8192, bs, density, torch.bfloat16)
              for bs in (64, 128) for density in ((0.015,) if quick else (0.015, 0.10, 0.25, 0.50))]
    more = [(8192, 8192, 8192, 32, 0.10, torch.bfloat16), (8192, 8192, 8192, 16, 0.10, torch.bfloat16),
            (8192, 8192, 8192, 128, 0.25, torch.float16), (8192, 8192, 8192, 64, 0.10, torch.float16),
            (4096, 14336, 8192, 64, 0.10, torch.bfloat16), (16384, 16384, 1024, 128, 0.10, torch.bfloat16)]
    for m, k, n, bs, density, dtype in square + ([] if quick else more):
        B = torch.randn(k, n, device="cuda", dtype=dtype)
        Cm = torch.empty(m, n, device="cuda", dtype=dtype)
        hb, hc = evs.dense(B), evs.dense(Cm)
        mb, kb = m // bs, k // bs
        mask = torch.rand(mb, kb, device="cuda") < density
        A = torch.randn(m, k, device="cuda", dtype=dtype) * mask.repeat_interleave(bs, 0).repeat_interleave(bs, 1)
        bsr = A.to_sparse_bsr((bs, bs))
        crow, col = bsr.crow_indices().int(), bsr.col_indices().int()
        values = bsr.values().contiguous()
        a = evsparse.BSR(values, col, crow, shape=(m, k), ctx=evs.ctx, validate=False)
        ref = (A @ B).float()
        ours = measure(evs, "bsrmm", lambda: evsparse.bsrmm(a, hb, hc, stream=evs.stream),
                       lambda plan: check(f"bsrmm {plan}", Cm.float(), ref, tol=2e-2), graph=True)
        del ref
        flops = 2 * col.numel() * bs * bs * n
        # A's blocks, the rows of B they reference, C written once
        nbytes = 2 * (col.numel() * bs * bs + int(mask.any(0).sum()) * bs * n + m * n)
        shape = f"{m}³" if m == k == n else f"{m}×{k}×{n}"
        label = f"bsrmm {shape} {'bf16' if dtype == torch.bfloat16 else 'f16'}, blocks {bs}, {density * 100:g}% blocks"
        tab.add(label, ours, "cuBLAS dense", timed(lambda: A @ B), nbytes=nbytes, flops=flops)
        if bsr_dense_mm is not None:
            tab.add(label, ours[:1], "torch bsr_dense_mm (triton)", timed(lambda: bsr_dense_mm(bsr, B)), nbytes=nbytes,
                    flops=flops)
        for h in (hb, hc):
            h.close()
        a.close()
        del A, B, Cm, bsr, values


MISMATCHES = []


def check(what, got, ref, tol=1e-3):
    """Relative error of evsparse against the baseline's result; mismatches are listed under the table."""
    err = (got.float() - ref.float()).norm() / max(ref.float().norm().item(), 1e-30)
    if not err <= tol:
        MISMATCHES.append(f"{what}: relative error {err:.3g} against the baseline")
        print("MISMATCH", MISMATCHES[-1], flush=True)


def host_overhead(evs):
    """µs per spmv call on a 64-row matrix, mean of 10,000 calls from Python without a sync:
    through the binding (evsparse.spmv on wrapped handles), and through the bare ctypes function
    it ends in."""
    import time
    crow, col = random_csr(64, 64, 4)
    a = evs.csr(64, 64, crow, col, None, 1.0)
    hx, hy = evs.dense(torch.rand(64, device="cuda")), evs.dense(torch.empty(64, device="cuda"))
    bare = evsparse._lib.get().evs_spmv
    calls = {"binding": lambda: evsparse.spmv(a, hx, hy, stream=evs.stream),
             "ctypes": lambda: bare(evs.stream, 0, 0, 1.0, a, hx, 0.0, hy)}
    per_call = {}
    for name, fn in calls.items():
        for _ in range(100):
            fn()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(10_000):
            fn()
        per_call[name] = (time.perf_counter() - t0) / 10_000 * 1e6
        torch.cuda.synchronize()
    return per_call


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--variants", action="store_true", help="time every algorithm of each workload's family")
    ap.add_argument("--only", default=None, help="comma-separated sections (spmm,skewed,spmv,spmv_events,step,yw2y,dense,"
                                                 "plasticity,bsrmm)")
    args = ap.parse_args()
    global VARIANTS
    VARIANTS = args.variants
    torch.manual_seed(0)
    stream = torch.cuda.Stream()
    torch.cuda.set_stream(stream)
    evs = Evs(stream)
    bandwidth, tflops = ceilings()
    device = torch.cuda.get_device_name()
    print(f"{device}: device-to-device copy {bandwidth:.0f} GB/s, bf16 cuBLAS {tflops:.0f} TFLOP/s", flush=True)
    tab = Table(bandwidth, tflops)
    failures = []
    sections = (bench_spmm, bench_skewed, bench_spmv, bench_spmv_events, bench_step, bench_yw2y, bench_dense, bench_plasticity,
                bench_bsrmm)
    only = args.only.split(",") if args.only else None
    for section in sections:
        if only and section.__name__[len("bench_"):] not in only:
            continue
        try:
            section(evs, tab, args.quick)
        except Exception as e:  # keep the other sections' rows; the failure is reported below
            failures.append(f"{section.__name__}: {type(e).__name__}: {e}")
            print("FAILED", failures[-1], flush=True)
        torch.cuda.empty_cache()
    overhead = host_overhead(evs)
    text = (f"## {datetime.date.today()} — {device}, torch {torch.__version__}\n\n"
            f"Ceilings measured in the same run: device-to-device copy {bandwidth:.0f} GB/s (read + write), "
            f"bf16 cuBLAS 8192³ {tflops:.0f} TFLOP/s. Median of {REPS} CUDA-event timings after {WARMUP} warm-ups.\n\n"
            + tab.markdown() +
            f"\n\nHost overhead: {overhead['binding']:.2f} µs per `evsparse.spmv` call from Python on wrapped "
            f"handles, {overhead['ctypes']:.2f} µs of it in the bare ctypes call of `evs_spmv` (64-row matrix, mean "
            f"of 10,000 calls, no synchronisation between calls).\n"
            + "".join(f"\n**Result mismatch:** {m}\n" for m in MISMATCHES)
            + "".join(f"\n**Section failed:** {f}\n" for f in failures))
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
        # the same rows as JSON beside the table, for bench/plot.py
        with open(os.path.splitext(args.out)[0] + ".json", "w") as f:
            json.dump({"date": str(datetime.date.today()), "device": device, "torch": torch.__version__,
                       "ceilings": {"copy_gb_s": bandwidth, "bf16_tflop_s": tflops}, "rows": tab.records()}, f, indent=1)
    return 1 if failures or MISMATCHES else 0


if __name__ == "__main__":
    sys.exit(main())
