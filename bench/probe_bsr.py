# Probe of bsrmm:wgmma on 8192³ bf16 (python3 bench/probe_bsr.py MODE, on the GPU machine,
# EVS_LIBRARY set; the bench's structures: blocks uniformly at random at a density).
# `time` prints graph µs, useful TFLOP/s and one call's CUDA-event µs of the bench's sm_90a
# rows, each result checked against torch; `ncu` runs each shape twice, untimed (for ncu -k
# regex:bsrmm_wgmma; four shapes unless BLOCKS or DENSITY pick them). BLOCKS and DENSITY keep
# only the shapes of those blocks and that density. `hold` runs each shape back to back for
# HOLD_S seconds (3), to read clocks and power beside it (nvidia-smi). Forces bsrmm:wgmma, or
# FORCE64 (e.g. bsrmm:wgmma_pairs) on the 64-row shapes.
import os, sys, time, torch
import bench
from bench import evsparse
stream = torch.cuda.Stream(); torch.cuda.set_stream(stream)
evs = bench.Evs(stream)
SHAPES = [(128, 0.10), (128, 0.25), (128, 0.50), (64, 0.10), (64, 0.25), (64, 0.50), (32, 0.10), (128, 0.015), (64, 0.015)]
out_dtype = {"bf16": torch.bfloat16, "f32": torch.float32}[os.environ.get("OUT_DTYPE", "bf16")]
beta = float(os.environ.get("BETA", "0"))
mode, n = sys.argv[1], 8192
torch.manual_seed(0)
B = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
hb = evs.dense(B)
out = []
only = int(os.environ.get("BLOCKS", "0"))  # only the shapes of these blocks
only_density = float(os.environ.get("DENSITY", "0"))  # and of this density
for bs, density in SHAPES if mode == "time" or only or only_density else SHAPES[:3] + SHAPES[5:6]:
    if (only and bs != only) or (only_density and density != only_density):
        continue
    evs.force(os.environ.get("FORCE64", "bsrmm:wgmma") if bs == 64 else "bsrmm:wgmma")
    mask = torch.rand(n // bs, n // bs, device="cuda") < density
    A = torch.randn(n, n, device="cuda", dtype=torch.bfloat16) * mask.repeat_interleave(bs, 0).repeat_interleave(bs, 1)
    bsr = A.to_sparse_bsr((bs, bs))
    crow, col = bsr.crow_indices().int(), bsr.col_indices().int()
    a = evsparse.BSR(bsr.values().contiguous(), col, crow, shape=(n, n), ctx=evs.ctx, validate=False)
    C0 = torch.randn(n, n, device="cuda").to(out_dtype)
    C = C0.clone() if beta else torch.full((n, n), float("nan"), device="cuda", dtype=out_dtype)
    hc = evs.dense(C)
    f = lambda: evsparse.bsrmm(a, hb, hc, alpha=1.0, beta=beta, stream=evs.stream)
    f(); torch.cuda.synchronize()
    plan = evs.last_plan().split(":")[-1]
    ref = (A.float() @ B.float()) + beta * C0.float()
    err = ((C.float() - ref).norm() / ref.norm()).item()
    if mode == "time":
        event_us = bench.timed(f) * 1e3
        us = bench.graphed(evs, f) * 1e3 if not beta else event_us
        tf = 2 * col.numel() * bs * bs * n / us / 1e6
        out.append(f"b{bs} {density * 100:g}% {plan}: {us:.1f} µs {tf:.0f} TF, event {event_us:.1f} (err {err:.0e})")
    elif mode == "hold":
        start = time.time()
        while time.time() - start < float(os.environ.get("HOLD_S", "3")):
            for _ in range(20):
                f()
            torch.cuda.synchronize()
        out.append(f"b{bs} {density * 100:g}% held {time.time() - start:.1f} s")
    else:
        f()
        out.append(f"b{bs} {density * 100:g}% err {err:.0e}")
    hc.close(); a.close()
    del A, bsr, C, C0, ref
print(os.environ.get("TAG", ""), " | ".join(out), flush=True)
