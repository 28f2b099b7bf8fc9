# Probe of dense mm N on events through dense_mm:wgmma (python3 bench/probe_dense.py MODE, on the
# GPU machine, EVS_LIBRARY set): `sweep` checks errors against float64 over shapes;
# `time` prints event and graph µs per call of a few shapes (and torch's read of W); `time_t` the
# same for T (the plan's choice); `ncu` runs one call each of f32 and f16 W 10000² x 100 at 1 %
import os, sys, torch
sys.path.insert(0, os.path.dirname(__file__))
import bench
stream = torch.cuda.Stream(); torch.cuda.set_stream(stream)
evs = bench.Evs(os.environ["EVS_LIBRARY"], stream)
def setup(m, k, n, dt, rate=0.01, op=bench.OP_N):
    W = torch.randn(m, k, device="cuda", dtype=dt)
    S = torch.rand(k, n, device="cuda") < rate
    C = torch.full((m, n), float("nan"), device="cuda", dtype=dt)
    hw, hs, hc = evs.dense(W), evs.dense(S), evs.dense(C)
    return W, S, C, lambda: evs.call("evs_dense_mm", evs.stream, op, bench.EVENTS, 1.0, hw, hs, 0.0, hc)
mode = sys.argv[1]
evs.force("dense_mm:auto" if mode == "time_t" else "dense_mm:wgmma")
if mode == "ncu":
    for dt in (torch.float32, torch.float16):
        W, S, C, f = setup(10000, 10000, 100, dt)
        f(); f(); torch.cuda.synchronize()
elif mode == "time":
    out = []
    for m, n, dt in [(10000, 100, torch.float32), (10000, 100, torch.float16), (5000, 100, torch.float32), (20000, 100, torch.float32), (10000, 10, torch.float32)]:
        W, S, C, f = setup(m, m, n, dt)
        ev = bench.timed(f) * 1e3; gr = bench.graphed(evs, f) * 1e3; rd = bench.timed(lambda: W.sum()) * 1e3
        out.append(f"{m}² n={n} {str(dt)[6:]}: {ev:.1f} / {gr:.1f} graph (W.sum {rd:.1f})")
        del W, S, C
    print(os.path.basename(os.environ["EVS_LIBRARY"]), " | ".join(out), flush=True)
elif mode == "time_t":
    out = []
    for n, dt in [(10, torch.float32), (100, torch.float32), (100, torch.float16)]:
        W, S, C, f = setup(10000, 10000, n, dt, op=bench.OP_T)
        f(); torch.cuda.synchronize()
        ref = W.double().t() @ S.double()
        err = ((C.double() - ref).norm() / ref.norm()).item()
        out.append(f"T n={n} {str(dt)[6:]}: {bench.timed(f) * 1e3:.1f} / {bench.graphed(evs, f) * 1e3:.1f} graph (error {err:.1e})")
        del W, S, C
    print(os.path.basename(os.environ["EVS_LIBRARY"]), " | ".join(out), flush=True)
else:
    for m, k, n in [(10000, 10000, 256), (10000, 10000, 200), (2000, 10000, 256), (10000, 2000, 256), (10000, 10000, 129),
                    (10000, 10000, 100), (4000, 10000, 256), (10000, 5000, 256), (300, 1000, 100), (200, 512, 300)]:
        for dt in (torch.float32, torch.float16, torch.bfloat16):
            W, S, C, f = setup(m, k, n, dt)
            f(); torch.cuda.synchronize()
            ref = W.double() @ S.double()
            err = ((C.double() - ref).norm() / ref.norm()).item()
            bad = "" if err < (1e-6 if dt == torch.float32 else 1e-2) else "  BAD"
            print(f"{m}x{k}x{n} {str(dt)[6:]}: error {err:.2e}{bad}", flush=True)
