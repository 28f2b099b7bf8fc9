"""CSR plasticity on event vectors in one launch (windowed_lines when written, `line_parts` since:
src/cuda/ops.rs runs it up to LINE_PARTS_MAX_LINES) against what listing first costs (compaction
into a spike list, then the list kernel), graph µs a call, beside the list kernel alone. On the
GPU machine:
    EVS_LIBRARY=.gpu/libevsparse.so python3 bench/probe_windowed.py
"""
import sys

import torch

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import bench  # noqa: E402
import evsparse  # noqa: E402

torch.manual_seed(0)
stream = torch.cuda.Stream()
torch.cuda.set_stream(stream)
evs = bench.Evs(stream)
for n, per_row, rate in [(5000, 500, 0.10), (8000, 500, 0.10), (15_000, 300, 0.05), (21_000, 500, 0.10),
                         (21_000, 100, 0.01)]:
    a, _, _, _, _, hs, ht = bench.plasticity_case(evs, n, per_row, rate)
    idx = torch.empty(n, device="cuda", dtype=torch.int32)
    count = torch.empty(1, device="cuda", dtype=torch.int32)
    hi, hc = evs.dense(idx), evs.dense(count)
    out = []
    for rule in ("pre", "post"):
        update = getattr(evsparse, "csr_plasticity_" + rule)
        lst = evsparse.compact_events(hs, hi, hc, stream=evs.stream)
        windowed = bench.graphed(evs, lambda: update(a, hs, ht, w_min=0.0, w_max=1.0, stream=evs.stream))
        listed = bench.graphed(evs, lambda: (evsparse.compact_events(hs, hi, hc, stream=evs.stream),
                                             update(a, lst, ht, w_min=0.0, w_max=1.0, stream=evs.stream)))
        alone = bench.graphed(evs, lambda: update(a, lst, ht, w_min=0.0, w_max=1.0, stream=evs.stream))
        out.append(f"{rule}: windowed {windowed * 1e3:.2f}, compact + list {listed * 1e3:.2f}, list {alone * 1e3:.2f}")
    print(f"{n:,}² x{per_row} {rate:.0%}:", " | ".join(out), flush=True)
    a.close()
