"""Folds the output of `bench/ab.sh python3 bench/bench.py ...` into one short table: a line per
bench row, a column per build, each cell the row's graph µs per call (event-timed µs where the
row has no graph column) in every round, so that builds compare within one run at a glance.
    LIBS="main new" ROUNDS=2 bench/ab.sh python3 bench/bench.py --only step | python3 bench/ab_table.py
"""
import collections
import re
import sys

cells = collections.defaultdict(lambda: collections.defaultdict(list))  # row -> build -> times
build = None
for line in sys.stdin:
    sys.stderr.write(line)  # the whole output stays visible
    header = re.match(r"== round \d+, (\S+)", line)
    if header:
        build = header.group(1)
        continue
    fields = [f.strip() for f in line.split(" | ")]
    if build is None or line.startswith("|") or len(fields) != 9:
        continue
    workload, plan, event_us, graph_us = fields[:4]
    cells[f"{workload} [{plan}]"][build].append(graph_us if graph_us != "—" else event_us + "e")
builds = list(dict.fromkeys(b for row in cells.values() for b in row))
print("| row | " + " | ".join(builds) + " |")
print("|---|" + "---|" * len(builds))
for row, by_build in cells.items():
    print(f"| {row} | " + " | ".join(" / ".join(by_build.get(b, [])) for b in builds) + " |")
