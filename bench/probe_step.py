# The whole step's calls one by one, graph µs per call (python3 bench/probe_step.py on the GPU
# machine, EVS_LIBRARY set, TAG naming the build): each of the six calls of bench.py's step alone
# (100 of it captured), then the step's prefixes (its first k calls, 100 times), so that each
# call's share of the chained step shows beside its cost alone. N=400000 runs the large step.
import os
import torch
import bench

stream = torch.cuda.Stream()
torch.cuda.set_stream(stream)
evs = bench.Evs(stream)
n = int(os.environ.get("N", "4000"))
calls, _, _, handles = bench.step_network(evs, n)
tag = os.environ.get("TAG", "")
print(f"| {tag} step {n:,}: call | alone | first k calls | k-th call's share |")
print("|---|---|---|---|")
before = 0.0
for k, (name, call) in enumerate(calls, 1):
    alone = bench.graphed(evs, call) * 1e3
    prefix = bench.graphed(evs, lambda: [c() for _, c in calls[:k]]) * 1e3
    print(f"| {name} | {alone:.2f} | {prefix:.2f} | {prefix - before:.2f} |", flush=True)
    before = prefix
for a in handles[:2]:
    a.close()
