"""CSR plasticity on event vectors across activity (issue #8): pre and post on 5,000² x 500 and
8,000² x 100 at 1, 2.5, 5, 7.5, 10 and 40 % live, graph µs per call (bench.py's harness). The bench
rows hold only 10 %; this covers the shares where the kernels choose their branches.
    EVS_LIBRARY=... TAG=name python3 bench/plasticity_sweep.py   (bench/ab.sh runs it per build)"""
import os

import torch

import bench
import evsparse


def main():
    torch.manual_seed(0)
    stream = torch.cuda.Stream()
    torch.cuda.set_stream(stream)
    evs = bench.Evs(stream)
    tag = os.environ.get("TAG", "")
    for n, per_row in [(5000, 500), (8000, 100)]:
        for rate in [0.01, 0.025, 0.05, 0.075, 0.10, 0.40]:
            a, col, w, spikes, trace, hs, ht = bench.plasticity_case(evs, n, per_row, rate)
            for rule in ["pre", "post"]:
                update = getattr(evsparse, "csr_plasticity_" + rule)
                us = bench.graphed(evs, lambda: update(a, hs, ht, w_min=0.0, w_max=1.0, stream=evs.stream)) * 1e3
                print(f"| sweep {rule} {n:,}² ×{per_row}, {rate * 100:g}% | {tag} | {us:.2f} |", flush=True)
            a.close()


if __name__ == "__main__":
    main()
