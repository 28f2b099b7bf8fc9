#!/usr/bin/env bash
# y_windows variants through bench/probe_yw2y_t.cu, on the GPU machine (nvcc there):
#   bench/probe_yw2y_t.sh [THREADS:STEPS ...]     default: 1024:2 (the library) 1024:3 1024:4
# Each variant is kernels/yw2y.cu with WINDOW_THREADS and RUN_STEPS set by sed (the launch bounds
# follow WINDOW_THREADS); WINDOWS="0 7" times each at the window sizes given (slices; 0: all
# that fit). Compiles in parallel, then runs one at a time.
set -u
cd "$(dirname "$0")/.."
variants=${*:-1024:2 1024:3 1024:4}
dir=$(mktemp -d /tmp/yw2y_t_XXXX)
for v in $variants; do
    IFS=: read -r threads steps <<< "$v"
    sed "s/constexpr int WINDOW_THREADS = 1024;/constexpr int WINDOW_THREADS = $threads;/;
         s/constexpr int RUN_STEPS = 2;/constexpr int RUN_STEPS = $steps;/" kernels/yw2y.cu > "$dir/yw2y_${threads}_$steps.cu"
    nvcc -O3 -std=c++17 -arch=sm_90a -DEVS_PROBE -I kernels -DYW2Y_SOURCE="\"$dir/yw2y_${threads}_$steps.cu\"" \
        -o "$dir/probe_${threads}_$steps" bench/probe_yw2y_t.cu > "$dir/build_${threads}_$steps.log" 2>&1 &
done
wait
for v in $variants; do
    IFS=: read -r threads steps <<< "$v"
    cat "$dir/build_${threads}_$steps.log"
    "$dir/probe_${threads}_$steps" ${WINDOWS:-0} | sed "s|$dir/||"
done
