#!/bin/bash
# Per-kernel GPU durations of the whole-step rows (ncu), next to their graph-replayed time.
set -e
export EVS_LIBRARY=$PWD/.gpu/libevsparse.so
ncu --cache-control none --clock-control none --metrics gpu__time_duration.sum --csv -k 'regex:compact|spmv|csr_|fill|spmm' --launch-skip 40 --launch-count 14 \
    python3 bench/bench.py --only step --quick > $OUT/ncu.csv 2> $OUT/ncu.err || true
python3 - <<'PY'
import csv, os
rows = list(csv.reader(open(os.environ["OUT"] + "/ncu.csv")))
head = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
names = rows[head]
for r in rows[head + 1:]:
    d = dict(zip(names, r))
    print(d.get("Kernel Name", "")[:50], d.get("Grid Size"), d.get("Block Size"), d.get("Metric Value"))
PY
python3 bench/bench.py --only step --quick | tail -8
