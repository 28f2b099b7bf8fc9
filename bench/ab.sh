#!/usr/bin/env bash
# A/B of library builds on the GPU machine (builds nothing): runs a bench command once per
# library in .gpu/var/lib_*.so (EVS_LIBRARY set, TAG naming the build), ROUNDS rounds
# interleaved so that the machine's drift touches every build alike. Build the libraries where
# Rust is (bench/NOTES.md, "Variant builds") and carry .gpu/var.
#   ROUNDS=2 bench/ab.sh python3 bench/probe_dense.py time_small
# LIBS="main wide" picks .gpu/var/lib_main.so and lib_wide.so only.
set -uo pipefail
cd "$(dirname "$0")/.."
for round in $(seq "${ROUNDS:-2}"); do
    libs=(.gpu/var/lib_*.so)
    [ -n "${LIBS:-}" ] && libs=($(printf '.gpu/var/lib_%s.so ' $LIBS))
    for lib in "${libs[@]}"; do
        tag=$(basename "$lib" .so)
        echo "== round $round, ${tag#lib_}"
        EVS_LIBRARY=$PWD/$lib TAG=${tag#lib_} "$@"
    done
done
