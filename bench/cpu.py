"""CPU benchmark: evsparse's CPU backend (through its Python binding, python/evsparse, on numpy
arrays wrapped zero-copy)
beside scipy.sparse and torch's CPU products, in the same run, with one thread and with every
core (EVS_NUM_THREADS is read when a context is created; torch.set_num_threads for torch; scipy's
sparse products are single-threaded).

Each row: median of REPS runs after WARMUP (wall clock; CPU calls return when done). The floor
column is the bytes that must move (A's structure and weights, B once, C once; for dense event
products the W entries the events select and C) over the measured memory bandwidth of the same
thread count (a large copy). GFLOP/s counts the dense product's FLOPs for dense rows. Per-call costs of the small
simulator steps come from bench/cpu_step.c (ctypes adds microseconds to every call).

    EVS_LIBRARY=path/to/libevsparse.so python3 bench/cpu.py [--quick]
"""

import argparse
import os
import platform
import statistics
import sys
import time

# torch's OpenMP threads otherwise spin after each of its calls, taking the cores from the next
# evsparse call timed beside it
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# numpy's OpenBLAS (used here only for the reference results; scipy's sparse products and torch,
# on MKL, do not use it) spins its threads after each call in the same way: a reference product
# made the next two-thread evsparse row 1.6x slower (bench/NOTES.md)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
import scipy.sparse as sp
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import evsparse  # noqa: E402 (the binding in this tree, not an installed one)

WARMUP, REPS = 2, 21
OP_N, OP_T = "N", "T"
FLOAT, EVENTS = False, True


class Evs:
    """A CPU context with a thread count (EVS_NUM_THREADS is read when a context is made) and
    a stream of it."""

    def __init__(self, threads):
        os.environ["EVS_NUM_THREADS"] = str(threads)
        self.ctx = evsparse.Context("cpu")
        self.stream = self.ctx.stream()

    def dense(self, a):
        return self.ctx.wrap(a, self.stream)

    def csr(self, a):
        # copied into evsparse, as evs_csr_create makes a matrix from a C program's arrays: T then
        # reads the weights from a column-order copy (wrapped arrays, whose weights the caller may
        # change at any time, are read through the transpose's permutation)
        h = evsparse.CSR(a.indptr, a.indices, a.data, shape=a.shape, ctx=self.ctx, validate=False, copy=True)
        h.analyse(self.stream)
        return h

    def force(self, spec):
        self.ctx.set_algorithm(spec)

    def plan(self):
        return evsparse.last_plan()


def variants(evs, family, run, out, want):
    """[(plan, seconds)]: the chooser's pick, then the reference forced, each result checked
    against `want` (relative to its largest element) before it is timed."""
    results = []
    for alg in ("auto", "reference"):
        evs.force(f"{family}:{alg}")
        run()
        plan = evs.plan()
        err = np.abs(out - want).max() / max(np.abs(want).max(), 1e-30)
        assert err < 1e-5, f"{plan}: relative error {err}"
        results.append((plan, timed(run)))
    evs.force(f"{family}:auto")
    return results


def timed(fn):
    """Median seconds of REPS runs after WARMUP."""
    for _ in range(WARMUP):
        fn()
    times = []
    for _ in range(REPS):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bandwidth(threads):
    """Copy bandwidth (GB/s, read + write) of a 256 MB array: numpy with one thread, torch's
    parallel copy with several."""
    src = np.random.rand(1 << 25)
    dst = np.empty_like(src)
    if threads == 1:
        return 2 * src.nbytes / timed(lambda: np.copyto(dst, src)) / 1e9
    torch.set_num_threads(threads)
    s, d = torch.from_numpy(src), torch.from_numpy(dst)
    return 2 * src.nbytes / timed(lambda: d.copy_(s)) / 1e9


def random_csr(m, k, per_row, rng):
    """Fixed entries per row, uniform random columns (sorted within rows), f32 weights."""
    indptr = np.arange(0, (m + 1) * per_row, per_row, dtype=np.int32)
    indices = np.sort(rng.integers(0, k, (m, per_row), dtype=np.int32), axis=1).reshape(-1)
    data = rng.random(m * per_row, dtype=np.float32)
    return sp.csr_matrix((data, indices, indptr), shape=(m, k))


def dense_event_rows(evs, threads, gbs, rng):
    """dense event mm, N and T: W 2000² f32, S 2000 x 100 bool with 1% active, beside torch's
    dense W @ S (BLAS) on S as 0/1 floats, as a user without evsparse would call it."""
    rows = []
    m = k = 2000
    n = 100
    w = rng.random((m, k), dtype=np.float32)
    s = (rng.random((k, n)) < 0.01).astype(np.uint8)
    sf = s.astype(np.float32)
    c = np.empty((m, n), dtype=np.float32)
    hw, hs, hc = evs.dense(w), evs.dense(s), evs.dense(c)
    tw, ts = torch.from_numpy(w), torch.from_numpy(sf)
    for op, name in ((OP_N, "N"), (OP_T, "T")):
        run = lambda: evsparse.dense_mm(hw, hs, hc, op=op, events=EVENTS, stream=evs.stream)
        want = w @ sf if op == OP_N else w.T @ sf
        for plan, ours in variants(evs, "dense_mm", run, c, want):
            base = timed(lambda: tw @ ts if op == OP_N else tw.T @ ts)
            touched = int(s.sum()) * m * 4  # the W entries the events select
            rows.append((f"dense event mm {name} W 2000² f32, S 2000×100 bool 1%", threads, plan, ours,
                         "torch W @ S (BLAS, S as f32)", base, 2 * m * k * n / ours / 1e9,
                         (touched + c.nbytes) / gbs / 1e9 / ours))
            print(" | ".join(str(x) for x in rows[-1]), flush=True)
    # dense floats: the GEMM path, against the same BLAS product
    x = rng.random((k, n), dtype=np.float32)
    hx, tx = evs.dense(x), torch.from_numpy(x)
    want = w @ x
    run = lambda: evsparse.dense_mm(hw, hx, hc, op=OP_N, events=FLOAT, stream=evs.stream)
    for plan, ours in variants(evs, "dense_mm", run, c, want):
        base = timed(lambda: tw @ tx)
        rows.append(("dense mm N W 2000² f32, S 2000×100 f32", threads, plan, ours, "torch W @ S (BLAS)", base,
                     2 * m * k * n / ours / 1e9, (w.nbytes + x.nbytes + c.nbytes) / gbs / 1e9 / ours))
        print(" | ".join(str(x) for x in rows[-1]), flush=True)
    return rows


def bsrmm_rows(evs, threads, gbs, rng):
    """bsrmm 2048³ f32, blocks 64 x 64, 10% of blocks, beside torch's dense A @ B (BLAS) on the
    same matrix stored dense, as a user without a block-sparse product would call it."""
    size, block, density = 2048, 64, 0.10
    nb = size // block
    mask = rng.random((nb, nb)) < density
    indptr = np.concatenate([[0], np.cumsum(mask.sum(axis=1))]).astype(np.int32)
    indices = np.nonzero(mask)[1].astype(np.int32)
    values = rng.random((len(indices), block, block), dtype=np.float32)
    dense_a = np.zeros((size, size), dtype=np.float32)
    for q, (i, j) in enumerate(zip(*np.nonzero(mask))):
        dense_a[i * block:(i + 1) * block, j * block:(j + 1) * block] = values[q]
    b = rng.random((size, size), dtype=np.float32)
    c = np.empty((size, size), dtype=np.float32)
    ha = evsparse.BSR(values, indices, indptr, shape=(size, size), ctx=evs.ctx, validate=False)
    hb, hc = evs.dense(b), evs.dense(c)
    ta, tb = torch.from_numpy(dense_a), torch.from_numpy(b)
    want = dense_a @ b
    rows = []
    run = lambda: evsparse.bsrmm(ha, hb, hc, stream=evs.stream)
    for plan, ours in variants(evs, "bsrmm", run, c, want):
        base = timed(lambda: ta @ tb)
        flops = 2 * len(indices) * block * block * size
        rows.append((f"bsrmm {size}³ f32, blocks {block}, {density:.0%} blocks", threads, plan, ours,
                     "torch dense A @ B (BLAS)", base, flops / ours / 1e9,
                     (values.nbytes + b.nbytes + c.nbytes) / gbs / 1e9 / ours))
        print(" | ".join(str(x) for x in rows[-1]), flush=True)
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    cores = os.cpu_count()
    rng = np.random.default_rng(1)
    print(f"CPU: {platform.processor() or platform.machine()}, {cores} cores; numpy {np.__version__}, "
          f"scipy {sp.__name__ and __import__('scipy').__version__}, torch {torch.__version__}")
    rows = []
    per_rows = [200] if args.quick else [200, 1000]
    for threads in sorted({1, cores}):
        evs = Evs(threads)
        torch.set_num_threads(threads)
        gbs = bandwidth(threads)
        for per_row in per_rows:
            m = k = 10000
            n = 128
            a = random_csr(m, k, per_row, rng)
            at = a.T.tocsr()
            b = rng.random((k, n), dtype=np.float32)
            c = np.empty((m, n), dtype=np.float32)
            ha, hb, hc = evs.csr(a), evs.dense(b), evs.dense(c)
            ta = torch.sparse_csr_tensor(torch.from_numpy(a.indptr.astype(np.int64)),
                                         torch.from_numpy(a.indices.astype(np.int64)), torch.from_numpy(a.data),
                                         size=a.shape)
            tat = ta.t().to_sparse_csr()
            tb = torch.from_numpy(b)
            nbytes = a.nnz * 8 + b.nbytes + c.nbytes
            for op, name in ((OP_N, "N"), (OP_T, "T")):
                run = lambda: evsparse.spmm(ha, hb, hc, op=op, events=FLOAT, stream=evs.stream)
                want = a @ b if op == OP_N else a.T @ b
                for plan, ours in variants(evs, f"spmm_{name.lower()}", run, c, want):
                    if threads == 1:
                        base, base_name = timed(lambda: a @ b if op == OP_N else at @ b), "scipy " + (
                            "A @ B" if op == OP_N else "A.T @ B (CSR of Aᵀ)")
                    else:
                        base, base_name = timed(lambda: ta @ tb if op == OP_N else tat @ tb), "torch " + (
                            "A @ B" if op == OP_N else "Aᵀ @ B (CSR of Aᵀ)")
                    rows.append((f"spmm {name} 10000² ×{per_row}/row, B 128 f32", threads, plan, ours, base_name, base,
                                 2 * a.nnz * n / ours / 1e9, nbytes / gbs / 1e9 / ours))
                    print(" | ".join(str(x) for x in rows[-1]), flush=True)
        rows += dense_event_rows(evs, threads, gbs, rng)
        rows += bsrmm_rows(evs, threads, gbs, rng)
    print()
    head = ("workload", "threads", "plan", "evsparse ms", "baseline", "baseline ms", "speed-up", "GFLOP/s", "% of floor")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for w, t, plan, ours, bname, base, gflops, floor in rows:
        print(f"| {w} | {t} | {plan} | {ours * 1e3:.1f} | {bname} | {base * 1e3:.1f} | {base / ours:.2f}x | "
              f"{gflops:.1f} | {100 * floor:.0f}% |")


if __name__ == "__main__":
    main()
