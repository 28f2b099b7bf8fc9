# spmv on an event vector, graph µs per call, results checked (python3 bench/probe_spmv_n.py on
# the GPU machine, EVS_LIBRARY set, TAG naming the build; SIZES=10000,... picks the matrices):
# - N, hetero f32, at 0.1 %, 1 %, 5 %, 10 % and 20 % active, on 10000² x 200/row, 100,000² x
#   100/row and 400,000² x 80/row: output_slices (one launch: the active columns' entries per
#   slice of y, or the rows, decided on the device; up to 16,384 columns), csc_scatter (census,
#   then the active columns or the rows), warp_per_row, and the spike list as chosen (auto) and
#   on csc_scatter;
# - T on 4,000 neurons x 80/row (homo bool, 0.5 %): csc_gather.
import os, torch
import bench
from bench import evsparse
stream = torch.cuda.Stream(); torch.cuda.set_stream(stream)
evs = bench.Evs(stream)
out = []
sizes = [int(v) for v in os.environ.get("SIZES", "10000,100000,400000").split(",")]
for m, per_row in [c for c in ((10000, 200), (100000, 100), (400000, 80)) if c[0] in sizes]:
    crow, col = bench.random_csr(m, m, per_row)
    w = torch.rand(col.numel(), device="cuda")
    a = evs.csr(m, m, crow, col, w)
    a.analyse(evs.stream)
    At = torch.sparse_csr_tensor(crow.long(), col.long(), w, (m, m))
    for rate in (0.001, 0.01, 0.05, 0.1, 0.2):
        spikes = torch.rand(m, device="cuda") < rate
        y = torch.full((m,), float("nan"), device="cuda")
        hs, hy = evs.dense(spikes), evs.dense(y)
        ref = At @ spikes.float()
        row = []
        for alg in ("output_slices", "csc_scatter", "warp_per_row"):
            if alg == "output_slices" and m > 16384:
                continue
            evs.force(f"spmm_n:{alg}")
            f = lambda: evsparse.spmv(a, hs, hy, op=bench.OP_N, events=bench.EVENTS, alpha=1.0, beta=0.0, stream=evs.stream)
            f(); torch.cuda.synchronize()
            err = ((y - ref).norm() / ref.norm()).item()
            assert err < 1e-5, (m, rate, alg, err)
            row.append(f"{alg} {bench.graphed(evs, f) * 1e3:.2f}")
        lst, keep = bench.spike_list(evs, hs, m)
        for alg in ("auto", "csc_scatter"):
            evs.force(f"spmm_n:{alg}")
            f = lambda: evsparse.spmv(a, lst, hy, op=bench.OP_N, stream=evs.stream)
            y.fill_(float("nan")); f(); torch.cuda.synchronize()
            err = ((y - ref).norm() / ref.norm()).item()
            assert err < 1e-5, (m, rate, "list", alg, err)
            row.append(f"list {alg} {bench.graphed(evs, f) * 1e3:.2f}")
        evs.force("spmm_n:auto")
        out.append(f"N {m}x{per_row} {rate:g}: " + ", ".join(row))
    a.close()
    del At, crow, col, w
    torch.cuda.empty_cache()
n, per_row = 4000, 80
crow, col = bench.random_csr(n, n, per_row)
a = evs.csr(n, n, crow, col, None, homo=1.0)
a.analyse(evs.stream)
spikes = torch.rand(n, device="cuda") < 0.005
y = torch.full((n,), float("nan"), device="cuda")
hs, hy = evs.dense(spikes), evs.dense(y)
ref = torch.sparse_csr_tensor(crow.long(), col.long(), torch.ones(col.numel(), device="cuda"), (n, n)).t() @ spikes.float()
evs.force("spmm_t:csc_gather")
f = lambda: evsparse.spmv(a, hs, hy, op=bench.OP_T, events=bench.EVENTS, alpha=1.0, beta=0.0, stream=evs.stream)
f(); torch.cuda.synchronize()
assert ((y - ref).norm() / ref.norm().clamp(min=1)).item() < 1e-5
out.append(f"T {n}x{per_row} 0.005: csc_gather {bench.graphed(evs, f) * 1e3:.2f}")
print(os.environ.get("TAG", ""), "\n  " + "\n  ".join(out), flush=True)
