#!/usr/bin/env bash
cd "$(dirname "$0")/../.."
t0=$SECONDS
LIBS="head trig" ROUNDS=2 bench/ab.sh python3 bench/probe_lists.py quick > $OUT/q.txt 2>&1
sort -s -k4,5 $OUT/q.txt | grep -v "^=="
echo "quick $((SECONDS-t0)) s"
LIBS="share8 trig" ROUNDS=2 CASES=1 RATES=0.1,0.12,0.13,1.0 bench/ab.sh python3 bench/probe_lists.py > $OUT/c1.txt 2>&1
sort -s -k4,6 $OUT/c1.txt | grep -v "^=="
echo "c1 $((SECONDS-t0)) s"
