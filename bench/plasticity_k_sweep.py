"""CSR post plasticity by rows across column counts (issue #8): post at 10 % live on A n² with 100
to 500 entries a row, n from 3,000 to 8,000 with and without a short last stretch of events (n
mod 16), graph µs per call (bench.py's harness). The mask copy and its tail show here, not in
the bench rows.
    EVS_LIBRARY=... TAG=name python3 bench/plasticity_k_sweep.py   (bench/ab.sh runs it per build)"""
import os

import torch

import bench
import evsparse

SHAPES = [(3000, 100), (3008, 100), (4000, 100), (4992, 100), (5000, 100), (5008, 100), (5500, 100), (6000, 100),
          (6500, 100), (8000, 100), (8000, 300), (7001, 200), (5000, 500)]


def main():
    torch.manual_seed(0)
    stream = torch.cuda.Stream()
    torch.cuda.set_stream(stream)
    evs = bench.Evs(stream)
    tag = os.environ.get("TAG", "")
    for n, per_row in SHAPES:
        a, col, w, spikes, trace, hs, ht = bench.plasticity_case(evs, n, per_row, 0.10)
        us = bench.graphed(evs, lambda: evsparse.csr_plasticity_post(a, hs, ht, w_min=0.0, w_max=1.0,
                                                                      stream=evs.stream)) * 1e3
        print(f"| k sweep post {n:,}² ×{per_row}, 10% | {tag} | {us:.2f} |", flush=True)
        a.close()


if __name__ == "__main__":
    main()
