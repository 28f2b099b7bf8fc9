"""Whether the CPU gathers should walk B in L2-sized blocks on this machine: spmm N and T on
A 10000² (PER entries a row, sorted random columns) times B 10000 x 128 f32, `input_blocks`
against the plain row gather (`row_ranges` / `csc_gather`) and torch's CSR product, in one
process, ROUNDS rounds (bench/NOTES.md, "CPU: spmm's one-thread ceiling on the EPYC VM").

    EVS_LIBRARY=path/to/libevsparse.so T=1 PER=200 .tools/bench/bin/python bench/probe_cpu_blocks.py
"""
import os
import sys

os.environ["EVS_NUM_THREADS"] = os.environ.get("T", "1")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpu  # noqa: E402 (bench/cpu.py: its timing, and the binding in this tree)
from cpu import evsparse  # noqa: E402

threads, per = int(os.environ["EVS_NUM_THREADS"]), int(os.environ.get("PER", "200"))
torch.set_num_threads(threads)
rng = np.random.default_rng(1)
m = k = 10000
n = 128
indptr = np.arange(0, m * per + 1, per, dtype=np.int64)
idx = np.sort(rng.integers(0, k, size=(m, per)), axis=1).astype(np.int32).ravel()
a = sp.csr_matrix((rng.random(m * per, dtype=np.float32), idx, indptr), shape=(m, k))
a.sum_duplicates()
b = rng.random((k, n), dtype=np.float32)
c = np.empty((m, n), dtype=np.float32)
ctx = evsparse.Context("cpu")
st = ctx.stream()
ha = evsparse.CSR(a.indptr, a.indices, a.data, shape=a.shape, ctx=ctx, validate=False, copy=True)
ha.analyse(st)
hb, hc = ctx.wrap(b, st), ctx.wrap(c, st)
ta = torch.sparse_csr_tensor(torch.from_numpy(a.indptr.astype(np.int64)), torch.from_numpy(a.indices.astype(np.int64)),
                             torch.from_numpy(a.data), size=a.shape)
tat = ta.t().to_sparse_csr()
tb = torch.from_numpy(b)

print(f"{threads} thread(s), {per} a row, ms (cpu.py's timing: median of {cpu.REPS} after {cpu.WARMUP})")
for rnd in range(int(os.environ.get("ROUNDS", "3"))):
    out = []
    for op, algs in (("N", ("input_blocks", "row_ranges")), ("T", ("input_blocks", "csc_gather"))):
        family = "spmm_" + op.lower()
        for alg in algs:
            ctx.set_algorithm(f"{family}:{alg}")
            out.append(f"{op} {alg} {cpu.timed(lambda: evsparse.spmm(ha, hb, hc, op=op, events=False, stream=st)) * 1e3:.1f}")
        ctx.set_algorithm(f"{family}:auto")
        evsparse.spmm(ha, hb, hc, op=op, events=False, stream=st)
        out.append(f"auto: {evsparse.last_plan()}")
        out.append(f"torch {op} {cpu.timed(lambda: ta @ tb if op == 'N' else tat @ tb) * 1e3:.1f}")
    print(f"round {rnd}: " + " | ".join(out), flush=True)
