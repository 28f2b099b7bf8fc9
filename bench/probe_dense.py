# Probe of dense mm on events through dense_mm:wgmma (python3 bench/probe_dense.py MODE, on the
# GPU machine, EVS_LIBRARY set): `sweep` checks N's and T's errors against float64 over shapes;
# `time` prints event and graph µs per call of a few shapes (and torch's read of W); `time_t` the
# same for T (the plan's choice); `t_paths` T on the tensor cores beside the listed pairs
# (graph µs, errors checked) over columns, dtypes and densities (ALGS: the algorithms, comma-separated);
# `mv_n` mv N on W 10000² f32 at 1 % from events, a float vector and a spike list (graph µs,
# errors checked; ONCE=1: two untimed calls each, for ncu), beside the listing alone and torch's
# gather of W's live columns;
# `time_small` mv N / T, T with 10 columns and dense plasticity
# pre / post on W 10000² f32 at 1 % (the plan's choices, results checked; ONCE=1: untimed, for
# ncu); `time_n` f32 N over n (graph µs, errors); `ncu` runs two calls each of f32 and f16 W 10000² and f32 5000², n = 100 at 1 % (OP=T: T)
import os, sys, torch
import bench
from bench import evsparse
stream = torch.cuda.Stream(); torch.cuda.set_stream(stream)
evs = bench.Evs(stream)
def setup(m, k, n, dt, rate=0.01, op=bench.OP_N):
    W = torch.randn(*((m, k) if op == bench.OP_N else (k, m)), device="cuda", dtype=dt)
    S = torch.rand(k, n, device="cuda") < rate
    C = torch.full((m, n), float("nan"), device="cuda", dtype=dt)
    hw, hs, hc = evs.dense(W), evs.dense(S), evs.dense(C)
    return W, S, C, lambda: evsparse.dense_mm(hw, hs, hc, op=op, events=bench.EVENTS, alpha=1.0, beta=0.0, stream=evs.stream)
mode = sys.argv[1]
once = os.environ.get("ONCE") == "1"  # time_small: each call twice, untimed (for ncu)
def times(f):
    return "untimed" if once else f"{bench.timed(f) * 1e3:.1f} / {bench.graphed(evs, f) * 1e3:.1f} graph"
evs.force("dense_mm:auto" if mode in ("time_t", "time_small", "t_paths", "mv_n") else "dense_mm:wgmma")
if mode == "ncu":
    for m, dt in [(10000, torch.float32), (10000, torch.float16), (5000, torch.float32)]:
        W, S, C, f = setup(m, m, 100, dt, op=os.environ.get("OP", bench.OP_N))
        f(); f(); torch.cuda.synchronize()
elif mode == "time":
    out = []
    for m, n, dt in [(10000, 100, torch.float32), (10000, 100, torch.float16), (5000, 100, torch.float32), (20000, 100, torch.float32), (10000, 10, torch.float32)]:
        W, S, C, f = setup(m, m, n, dt)
        ev = bench.timed(f) * 1e3; gr = bench.graphed(evs, f) * 1e3; rd = bench.timed(lambda: W.sum()) * 1e3
        out.append(f"{m}² n={n} {str(dt)[6:]}: {ev:.1f} / {gr:.1f} graph (W.sum {rd:.1f})")
        del W, S, C
    print(os.environ.get("TAG", ""), " | ".join(out), flush=True)
elif mode == "time_n":
    # f32 N over n (the MMAs' width follows n between 64 and 128), errors checked
    out = []
    for m in (5000, 10000):
        for n in (64, 72, 100, 112, 128):
            W, S, C, f = setup(m, m, n, torch.float32)
            f(); torch.cuda.synchronize()
            ref = W.double() @ S.double()
            err = ((C.double() - ref).norm() / ref.norm()).item()
            out.append(f"{m}² n={n}: {bench.graphed(evs, f) * 1e3:.1f} ({err:.0e})")
            del W, S, C
    print(os.environ.get("TAG", ""), " | ".join(out), flush=True)
elif mode == "mv_n":
    n = 10000
    W = torch.randn(n, n, device="cuda")
    spikes = torch.rand(n, device="cuda") < 0.01
    floats = spikes.float() * torch.rand(n, device="cuda")
    indices, count = torch.empty(n, dtype=torch.int32, device="cuda"), torch.empty(1, dtype=torch.int32, device="cuda")
    hw, hs, hf, hi, hn = (evs.dense(t) for t in (W, spikes, floats, indices, count))
    listed = evsparse.compact_events(hs, hi, hn, stream=evs.stream)
    C = torch.full((n,), float("nan"), device="cuda")
    hc = evs.dense(C)
    out = []
    for name, x, events in [("events", hs, True), ("floats", hf, False), ("list", listed, True)]:
        f = lambda: evsparse.dense_mv(hw, x, hc, op=bench.OP_N, events=events, alpha=1.0, beta=0.0, stream=evs.stream)
        C.fill_(float("nan")); f(); torch.cuda.synchronize()
        ref = W.double() @ (spikes.double() if events else floats.double())
        err = ((C.double() - ref).norm() / ref.norm()).item()
        if once:  # for ncu: one more call of each input kind, untimed
            f(); torch.cuda.synchronize()
            continue
        out.append(f"{name} {bench.graphed(evs, f) * 1e3:.1f} ({err:.0e}, {evsparse.last_plan()})")
    if not once:
        out.append(f"listing {bench.graphed(evs, lambda: evsparse.compact_events(hs, hi, hn, stream=evs.stream)) * 1e3:.1f}")
        idx = spikes.nonzero().squeeze(1)
        out.append(f"torch W[:, idx].sum {bench.graphed(evs, lambda: W[:, idx].sum(1)) * 1e3:.1f}")
    print(os.environ.get("TAG", ""), " | ".join(out), flush=True)
elif mode == "time_small":
    n = 10000
    W = torch.randn(n, n, device="cuda")
    hw = evs.dense(W)
    out = []
    for name, cols in [("mv N", 0), ("mv T", 0), ("T n=10", 10)]:
        S = torch.rand(n, max(cols, 1), device="cuda") < 0.01
        S = S if cols else S[:, 0].contiguous()
        C = torch.full((n,) if not cols else (n, cols), float("nan"), device="cuda")
        hs, hc = evs.dense(S), evs.dense(C)
        op = bench.OP_N if name == "mv N" else bench.OP_T
        mv = evsparse.dense_mv if not cols else evsparse.dense_mm
        f = lambda: mv(hw, hs, hc, op=op, events=bench.EVENTS, alpha=1.0, beta=0.0, stream=evs.stream)
        f(); torch.cuda.synchronize()
        ref = (W.double() if op == bench.OP_N else W.double().t()) @ S.double()
        err = ((C.double() - ref).norm() / ref.norm()).item()
        f()
        out.append(f"{name}: {times(f)} (error {err:.1e})")
        for h in (hs, hc):
            h.close()
    spikes = torch.rand(n, device="cuda") < 0.01
    trace = torch.rand(n, device="cuda") * 1e-3
    hs, ht = evs.dense(spikes), evs.dense(trace)
    for rule in ("pre", "post"):
        W0 = W.clone()
        update = getattr(evsparse, "dense_plasticity_" + rule)
        f = lambda: update(hw, hs, ht, w_min=-10.0, w_max=10.0, stream=evs.stream)
        f(); torch.cuda.synchronize()
        idx = spikes.nonzero().squeeze(1)
        ref = W0.clone()
        if rule == "pre":
            ref[idx] += trace
        else:
            ref[:, idx] += trace[:, None]
        bad = (W - ref).abs().max().item()
        f()
        out.append(f"{rule}: {times(f)} (max error {bad:.1e})")
        W.copy_(W0)
    print(os.environ.get("TAG", ""), " | ".join(out), flush=True)
elif mode == "replays":
    # N on the tensor cores checked after one call, after back-to-back calls, after graph replays
    for n, dt in [(256, torch.float32), (100, torch.float32), (256, torch.float16), (129, torch.float32)]:
        W, S, C, f = setup(10000, 10000, n, dt)
        ref = W.double() @ S.double()
        err = lambda: f"{((C.double() - ref).norm() / ref.norm()).item():.1e}"
        f(); torch.cuda.synchronize(); once = err()
        for _ in range(30):
            f()
        torch.cuda.synchronize(); again = err()
        C.fill_(float("nan")); bench.graphed(evs, f); torch.cuda.synchronize(); graphed = err()
        print(f"n={n} {str(dt)[6:]}: once {once}, 30 calls {again}, graph replays {graphed}", flush=True)
        del W, S, C
elif mode == "race":
    # how often N on the tensor cores goes wrong: calls checked one at a time, then the last of
    # runs of 30 back-to-back calls
    W, S, C, f = setup(10000, 10000, 100, torch.float32)
    ref = W.double() @ S.double()
    bad = lambda: ((C.double() - ref).norm() / ref.norm()).item() > 1e-6
    calls, runs_n = int(os.environ.get("CALLS", "100")), int(os.environ.get("RUNS", "30"))
    single = 0
    for _ in range(calls):
        C.fill_(float("nan")); f(); torch.cuda.synchronize(); single += bad()
    runs = 0
    for _ in range(runs_n):
        C.fill_(float("nan"))
        for _ in range(30):
            f()
        torch.cuda.synchronize(); runs += bad()
    print(os.environ.get("TAG", ""), f"single calls wrong {single}/{calls}, runs of 30 wrong {runs}/{runs_n}", flush=True)
elif mode == "time_t":
    out = []
    for n, dt in [(10, torch.float32), (100, torch.float32), (100, torch.float16)]:
        W, S, C, f = setup(10000, 10000, n, dt, op=bench.OP_T)
        f(); torch.cuda.synchronize()
        ref = W.double().t() @ S.double()
        err = ((C.double() - ref).norm() / ref.norm()).item()
        out.append(f"T n={n} {str(dt)[6:]}: {bench.timed(f) * 1e3:.1f} / {bench.graphed(evs, f) * 1e3:.1f} graph (error {err:.1e})")
        del W, S, C
    print(os.environ.get("TAG", ""), " | ".join(out), flush=True)
elif mode == "t_paths":
    f32, f16, bf16 = torch.float32, torch.float16, torch.bfloat16
    cases = [(100, f32, 0.01), (100, f16, 0.01), (100, bf16, 0.01), (256, f32, 0.01), (256, f16, 0.01), (17, f32, 0.01),
             (100, f32, 0.001), (100, f32, 0.10), (100, f16, 0.001), (32, f32, 0.01)]
    for n, dt, rate in cases:
        W, S, C, f = setup(10000, 10000, n, dt, rate, op=bench.OP_T)
        ref = W.double().t() @ S.double()
        out = []
        for alg in os.environ.get("ALGS", "wgmma,event_lists").split(","):
            evs.force("dense_mm:" + alg)
            C.fill_(float("nan")); f(); torch.cuda.synchronize()
            err = ((C.double() - ref).norm() / ref.norm()).item()
            out.append(f"{alg} {bench.graphed(evs, f) * 1e3:.1f} (error {err:.1e})")
        print(f"T 10000² n={n} {str(dt)[6:]} {rate * 100:g}%: " + " | ".join(out), flush=True)
        del W, S, C
else:
    for m, k, n in [(10000, 10000, 256), (10000, 10000, 200), (2000, 10000, 256), (10000, 2000, 256), (10000, 10000, 129),
                    (10000, 10000, 100), (4000, 10000, 256), (10000, 5000, 256), (300, 1000, 100), (200, 512, 300)]:
        for dt in (torch.float32, torch.float16, torch.bfloat16):
            for op in (bench.OP_N, bench.OP_T):
                W, S, C, f = setup(m, k, n, dt, op=op)
                try:
                    f(); torch.cuda.synchronize()
                except evsparse.errors.NotSupportedError:  # rows off 16 bytes: no tensor map
                    print(f"{op} {m}x{k}x{n} {str(dt)[6:]}: W's rows off 16 bytes, skipped", flush=True)
                    continue
                ref = (W.double() if op == bench.OP_N else W.double().t()) @ S.double()
                err = ((C.double() - ref).norm() / ref.norm()).item()
                bad = "" if err < (1e-6 if dt == torch.float32 else 1e-2) else "  BAD"
                print(f"{op} {m}x{k}x{n} {str(dt)[6:]}: error {err:.2e}{bad}", flush=True)
