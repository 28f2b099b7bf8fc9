#!/usr/bin/env bash
export EVS_TEST_DEVICE=cuda EVS_TEST_POISON_SCRATCH=1
cd "$(dirname "$0")/../.."
t0=$SECONDS
.gpu/var/tests_scat8/backends spmv_and_spmm scatters bad_spike_lists 2>&1 | tail -4
compute-sanitizer --tool memcheck .gpu/var/tests_scat8/backends spmv_and_spmm scatters 2>&1 | tail -3
echo "tests $((SECONDS-t0)) s"
LIBS="head scat8" ROUNDS=2 bench/ab.sh python3 bench/bench.py --quick --only spmv_events,step > $OUT/scat8.txt 2>&1
python3 bench/ab_table.py < $OUT/scat8.txt 2>/dev/null | tail -30 || tail -40 $OUT/scat8.txt
echo "scat8 $((SECONDS-t0)) s"
for d in float32 float16 bfloat16 float64; do
  DTYPE=$d LIBS="head share8" ROUNDS=2 CASES=1 RATES=0.1,0.115,0.12,0.13 bench/ab.sh python3 bench/probe_lists.py > $OUT/share8_$d.txt 2>&1
  echo "== $d"; tail -20 $OUT/share8_$d.txt
  echo "share8 $d $((SECONDS-t0)) s"
done
