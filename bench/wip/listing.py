# per-kernel times of the listing, the lists and the gather (run under ncu)
import os, torch
import bench
from bench import evsparse
stream = torch.cuda.Stream(); torch.cuda.set_stream(stream)
evs = bench.Evs(stream)
for m, per_row, n, rate, dt in [(10000, 200, 64, 0.12, torch.float32), (10000, 200, 128, 0.1, torch.float32),
                                (10000, 200, 128, 1.0, torch.float32), (10000, 200, 64, 1.0, torch.float32)]:
    crow, col = bench.random_csr(m, m, per_row)
    w = torch.rand(col.numel(), device="cuda", dtype=dt)
    a = evs.csr(m, m, crow, col, w); a.analyse(evs.stream)
    B = torch.randn(m, n, device="cuda")
    if rate < 1: B *= torch.rand(m, n, device="cuda") < rate
    B = B.to(dt); C = torch.empty((m, n), device="cuda", dtype=dt)
    hb, hc = evs.dense(B), evs.dense(C)
    for op, algs in (("N", ("nonzero_lists", "warp_per_row")), ("T", ("nonzero_lists", "csc_gather"))):
        for alg in algs:
            evs.force(("spmm_n:" if op == "N" else "spmm_t:") + alg)
            torch.cuda.nvtx.range_push(f"{n}c {rate} {op} {alg}")
            for _ in range(5):
                evsparse.spmm(a, hb, hc, op=op, events=bench.FLOAT, alpha=1.0, beta=0.0, stream=evs.stream)
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_pop()
            print(f"{n}c {rate} {op} {alg}", flush=True)
    hb.close(); hc.close(); a.close()
