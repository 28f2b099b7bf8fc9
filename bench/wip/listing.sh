#!/usr/bin/env bash
cd "$(dirname "$0")/../.."
export EVS_LIBRARY=$PWD/.gpu/var/lib_head.so
PYTHONPATH=$PWD/bench ncu --cache-control none --clock-control none --metrics gpu__time_duration.sum,sm__warps_active.avg.pct_of_peak_sustained_active,dram__bytes.sum,lts__t_bytes.sum --csv -k 'regex:list_nonzeros|spmm_n|spmm_t|csc' python3 bench/wip/listing.py > $OUT/ncu.csv 2> $OUT/ncu.err
python3 - <<'PY'
import csv, os, collections
rows = list(csv.reader(open(os.environ["OUT"] + "/ncu.csv")))
head = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
names = rows[head]
out = collections.OrderedDict()
for r in rows[head + 1:]:
    d = dict(zip(names, r))
    key = (d["ID"], d["Kernel Name"][:36], d["Grid Size"])
    out.setdefault(key, {})[d["Metric Name"]] = d["Metric Value"]
for k, v in out.items(): print(*k, *(f"{n.split('__')[1][:12]}={x}" for n, x in v.items()))
PY
