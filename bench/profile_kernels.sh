#!/bin/bash
# Per-kernel GPU durations (ncu, warm caches, boost clocks) of one bench section's kernels:
#   bench/profile_kernels.sh SECTION KERNEL_REGEX [SKIP] [COUNT]
# e.g. bench/profile_kernels.sh step 'compact|spmv|csr_|scale' 40 14
set -e
export EVS_LIBRARY=${EVS_LIBRARY:-$PWD/.gpu/libevsparse.so}
ncu --cache-control none --clock-control none --metrics gpu__time_duration.sum --csv -k "regex:$2" \
    --launch-skip "${3:-0}" --launch-count "${4:-20}" python3 bench/bench.py --only "$1" > "$OUT/ncu.csv" 2> "$OUT/ncu.err" || true
python3 - <<'PY'
import csv, os
rows = list(csv.reader(open(os.environ["OUT"] + "/ncu.csv")))
head = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
names = rows[head]
for r in rows[head + 1:]:
    d = dict(zip(names, r))
    print(d.get("Kernel Name", "")[:40], d.get("Grid Size"), d.get("Block Size"), d.get("Metric Value"))
PY
