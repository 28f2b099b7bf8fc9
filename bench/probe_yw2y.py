"""yw2y T variants side by side (bench/NOTES.md, "yw2y T through windows of y"): y_windows and
entry_thread forced in turn on sorted random rows, checked against torch, timed by bench.py's
`timed` with REPS runs (REPS=1 under ncu); TAG labels the rows of one library among several,
NCASES keeps the first cases only.

    EVS_LIBRARY=path/to/libevsparse.so python3 bench/probe_yw2y.py
"""

import os

import torch

import bench
from bench import Evs, evsparse, random_csr

CASES = [(100_000, 1000), (200_000, 1000), (30_000, 300), (10_000, 200)][: int(os.environ.get("NCASES", "4"))]  # n (A n x n), entries a row
COPY_GBS = 2978  # device-to-device copy rate measured on the H100 (bench/RESULTS.md)


def main():
    torch.manual_seed(0)
    stream = torch.cuda.Stream()
    torch.cuda.set_stream(stream)
    evs = Evs(stream)
    bench.REPS, tag = int(os.environ.get("REPS", "15")), os.environ.get("TAG", "")
    for n, per_row in CASES:
        crow, col = random_csr(n, n, per_row)
        w = torch.rand(col.numel(), device="cuda")
        a = evs.csr(n, n, crow, col, w)
        y, out = torch.rand(n, device="cuda"), torch.empty(col.numel(), device="cuda")
        hy, ho = evs.dense(y), evs.dense(out)
        ref = w * y[col.long()]
        floor_us = 12 * col.numel() / (COPY_GBS * 1e3)  # index, weight and out: 12 bytes an entry
        for alg in ["y_windows", "entry_thread"]:
            evs.force("yw2y:" + alg)
            call = lambda: evsparse.yw2y(a, hy, ho, op="T", stream=evs.stream)  # noqa: E731
            call()
            torch.cuda.synchronize()
            assert torch.equal(out, ref), alg
            t = bench.timed(call) * 1000
            print(f"{tag:14s} T {n:>7,}x{per_row} {alg:13s} {t:8.1f} us  {100 * floor_us / t:5.1f}% of floor", flush=True)
        a.close()


if __name__ == "__main__":
    main()
