# spmv N on an event vector, 10000² x 200/row (hetero f32), at 0.1 %, 1 % and 20 % active: graph
# µs of csc_scatter (census, then the active columns or the rows, decided on the device) beside
# warp_per_row and the spike-list csc_scatter, results checked (python3 bench/probe_spmv_n.py on
# the GPU machine, EVS_LIBRARY set, TAG naming the build).
import os, torch
import bench
from bench import evsparse
stream = torch.cuda.Stream(); torch.cuda.set_stream(stream)
evs = bench.Evs(stream)
m, per_row = 10000, 200
crow, col = bench.random_csr(m, m, per_row)
w = torch.rand(col.numel(), device="cuda")
a = evs.csr(m, m, crow, col, w)
a.analyse(evs.stream)
At = torch.sparse_csr_tensor(crow.long(), col.long(), w, (m, m))
out = []
for rate in (0.001, 0.01, 0.2):
    spikes = torch.rand(m, device="cuda") < rate
    y = torch.full((m,), float("nan"), device="cuda")
    hs, hy = evs.dense(spikes), evs.dense(y)
    ref = At @ spikes.float()
    for alg in ("csc_scatter", "warp_per_row"):
        evs.force(f"spmm_n:{alg}")
        f = lambda: evsparse.spmv(a, hs, hy, op=bench.OP_N, events=bench.EVENTS, alpha=1.0, beta=0.0, stream=evs.stream)
        f(); torch.cuda.synchronize()
        err = ((y - ref).norm() / ref.norm()).item()
        out.append(f"{rate:g} {alg} {bench.graphed(evs, f) * 1e3:.2f} (err {err:.0e})")
    evs.force("spmm_n:auto")
    lst, keep = bench.spike_list(evs, hs, m)
    f = lambda: evsparse.spmv(a, lst, hy, op=bench.OP_N, stream=evs.stream)
    out.append(f"{rate:g} list {bench.graphed(evs, f) * 1e3:.2f}")
print(os.environ.get("TAG", ""), " | ".join(out), flush=True)
