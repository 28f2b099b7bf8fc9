# spmm on float B by B's density, graph µs per call, results checked (python3 bench/probe_lists.py
# on the GPU machine, EVS_LIBRARY set, TAG naming the build): N and T with `nonzero_lists`
# forced beside the gathers (`warp_per_row`, `csc_gather`) and the plan's own choice, on
# uniform rows (10000² x 200 and x 1000, 200,000² x 50) with B 32 to 256 columns from 2 % to all
# non-zero, and calls of 500,000 entries (`LISTS_NNZ_MIN`). The crossover density sets the
# device's choice between the lists and the gather. DTYPE=float16 / bfloat16 / float64 runs
# the first case in that dtype (A and B alike; checked against float64), or the CASES given.
# OWNED=1 creates A from host copies (evsparse owns its weights) instead of wrapping torch's
# arrays. CASES=1,2 picks cases by index, RATES=0.1,0.2 the densities each case runs (under ncu:
# -k regex:spmm_n_lists -c 1).
import os, sys, torch
import bench
from bench import evsparse
stream = torch.cuda.Stream(); torch.cuda.set_stream(stream)
evs = bench.Evs(stream)
ALGS = {"N": ("nonzero_lists", "warp_per_row", "auto"), "T": ("nonzero_lists", "csc_gather", "auto")}
CASES = [(10000, 200, 128, (0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 1.0)), (10000, 200, 64, (0.05, 0.1, 0.2, 1.0)),
         (10000, 200, 32, (0.1, 0.2, 1.0)), (10000, 200, 256, (0.1, 0.2, 1.0)), (10000, 1000, 128, (0.1, 0.2)),
         (200_000, 50, 128, (0.1, 0.2, 1.0)), (10000, 50, 128, (0.1, 1.0)), (2500, 200, 128, (0.1, 1.0))]
quick = len(sys.argv) > 1 and sys.argv[1] == "quick"
RATES = [float(r) for r in os.environ["RATES"].split(",")] if os.environ.get("RATES") else None  # RATES=0.1
if os.environ.get("CASES"):  # CASES=1,2 runs those of CASES (0 is quick's)
    CASES = [CASES[int(i)] for i in os.environ["CASES"].split(",")]
dt = getattr(torch, os.environ.get("DTYPE", "float32"))
tol = 1e-5 if dt in (torch.float32, torch.float64) else 2e-2
if dt != torch.float32 and not os.environ.get("CASES"):  # the first case, densities about the crossover
    CASES = [(10000, 200, 128, (0.02, 0.05, 0.1, 0.12, 0.15, 1.0))]
for m, per_row, n, rates in CASES[:1] if quick else CASES:
    crow, col = bench.random_csr(m, m, per_row)
    w = torch.rand(col.numel(), device="cuda", dtype=dt)
    if os.environ.get("OWNED"):  # copied from host arrays: evsparse owns the weights (T may read a CSC-ordered copy)
        a = evsparse.CSR(crow.cpu(), col.cpu(), w.cpu(), shape=(m, m), ctx=evs.ctx)
    else:
        a = evs.csr(m, m, crow, col, w)
    a.analyse(evs.stream)
    At = torch.sparse_csr_tensor(crow.long(), col.long(), w.double(), (m, m))
    for rate in RATES or rates:
        B = torch.randn(m, n, device="cuda")
        if rate < 1:
            B *= torch.rand(m, n, device="cuda") < rate
        B = B.to(dt)
        C = torch.full((m, n), float("nan"), device="cuda", dtype=dt)
        hb, hc = evs.dense(B), evs.dense(C)
        row = []
        for op in ("N", "T"):
            ref = (At @ B.double()) if op == "N" else (At.to_dense().t() @ B.double() if m <= 10000 else None)
            for alg in ALGS[op]:
                family = "spmm_n" if op == "N" else "spmm_t"
                evs.force(f"{family}:{alg}")
                f = lambda: evsparse.spmm(a, hb, hc, op=op, events=bench.FLOAT, alpha=1.0, beta=0.0, stream=evs.stream)
                C.fill_(float("nan"))
                f(); torch.cuda.synchronize()
                if ref is not None:
                    err = ((C.double() - ref).norm() / ref.norm()).item()
                    assert err < tol, (m, n, rate, op, alg, err)
                ran = evs.last_plan().split(":")[1]
                row.append(f"{op} {ran if alg == 'auto' else alg[:5]} {bench.graphed(evs, f) * 1e3:.1f}")
            del ref
        print(os.environ.get("TAG", ""), str(dt)[6:], f"{m}² x{per_row} n={n} {rate:.0%}:", " | ".join(row), flush=True)
        for h in (hb, hc):
            h.close()
    a.close()
    del At
