"""CSR plasticity on event vectors (issue #8), graph µs per call (bench.py's harness).
Default: pre and post on 5,000² x 500 and 8,000² x 100 at 1, 2.5, 5, 7.5, 10 and 40 % live (the
bench rows hold only 10 %; this covers the shares where the kernels choose their branches).
`k`: post at 10 % live on A n² with 100 to 500 entries a row, n from 3,000 to 8,000 with and
without a short last stretch of events (n mod 16): the mask copy and its tail show there.
    EVS_LIBRARY=... TAG=name python3 bench/plasticity_sweep.py [k]   (bench/ab.sh runs it per build)"""
import os
import sys

import torch

import bench
import evsparse

ACTIVITY_CASES = [(n, per_row, rate, ["pre", "post"]) for n, per_row in [(5000, 500), (8000, 100)]
                  for rate in [0.01, 0.025, 0.05, 0.075, 0.10, 0.40]]
COLUMN_CASES = [(n, per_row, 0.10, ["post"]) for n, per_row in [
    (3000, 100), (3008, 100), (4000, 100), (4992, 100), (5000, 100), (5008, 100), (5500, 100), (6000, 100),
    (6500, 100), (8000, 100), (8000, 300), (7001, 200), (5000, 500)]]


def main():
    torch.manual_seed(0)
    stream = torch.cuda.Stream()
    torch.cuda.set_stream(stream)
    evs = bench.Evs(stream)
    tag = os.environ.get("TAG", "")
    cases = COLUMN_CASES if sys.argv[1:] == ["k"] else ACTIVITY_CASES
    for n, per_row, rate, rules in cases:
        a, col, w, spikes, trace, hs, ht = bench.plasticity_case(evs, n, per_row, rate)
        for rule in rules:
            update = getattr(evsparse, "csr_plasticity_" + rule)
            us = bench.graphed(evs, lambda: update(a, hs, ht, w_min=0.0, w_max=1.0, stream=evs.stream)) * 1e3
            print(f"| sweep {rule} {n:,}² ×{per_row}, {rate * 100:g}% | {tag} | {us:.2f} |", flush=True)
        a.close()


if __name__ == "__main__":
    main()
