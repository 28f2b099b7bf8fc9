#!/bin/bash
# Where one kernel's warps wait (ncu's full set, warm caches, boost clocks), COUNT launches of it
# in one bench section summed instruction by instruction: writes $OUT/KERNEL_sass.csv (ncu's SASS
# source page) and prints bench/sass_stalls.py's reading of it. One launch of a small kernel holds
# a few hundred samples; 20 give a reading.
#   bench/profile_sass.sh SECTION KERNEL_REGEX [COUNT] [SKIP]
# e.g. bench/profile_sass.sh spmv_events spmv_n_slices 20 10
set -e
export EVS_LIBRARY=${EVS_LIBRARY:-$PWD/.gpu/libevsparse.so} PYTHONPATH=$PWD/bench
name=$(echo "$2" | tr -c 'A-Za-z0-9_\n' _)
ncu --cache-control none --clock-control none -k "regex:$2" --launch-skip "${4:-0}" --launch-count "${3:-20}" \
    --set full --import-source no -f -o "$OUT/$name" python3 bench/bench.py --quick --only "$1" > "$OUT/$name.log" 2>&1
ncu -i "$OUT/$name.ncu-rep" --page source --csv --print-source sass > "$OUT/${name}_sass.csv"
rm -f "$OUT/$name.ncu-rep"  # too large to come back from the GPU machine
python3 bench/sass_stalls.py "$OUT/${name}_sass.csv"
