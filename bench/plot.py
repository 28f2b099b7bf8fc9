#!/usr/bin/env python3
"""Renders a benchmark table as a roofline-style chart: for each workload, the share of the
hardware floor (the row's bytes at the measured copy bandwidth, or its FLOPs at the measured
bf16 tensor-core rate) that evsparse's chosen plan and the baseline reach, side by side.

    python3 bench/plot.py [SOURCE] [--out bench/results.png]

SOURCE is a bench.json that `bench/bench.py --out X.md` writes beside its table, or a markdown
file holding such tables (the newest whole table is used, not a run of one section): default
bench/RESULTS.md, so any committed result can be drawn on a machine without a GPU (`make plot`).
"""
import argparse
import json
import re
import sys

COLUMNS = ("workload", "plan", "evsparse µs", "graph µs/call", "baseline", "baseline µs", "speed-up",
           "evsparse achieved", "% of floor")


def tables_of_markdown(text):
    """Every table with the bench's columns, newest (first) first, each with the heading above it."""
    tables, title, rows = [], "", None
    for line in text.splitlines() + [""]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else None
        if line.startswith("## "):
            title = line[3:].strip()
        if cells and tuple(cells) == COLUMNS:
            rows = []
        elif rows is not None and cells and len(cells) == len(COLUMNS) and not set(line) <= set("|-"):
            rows.append(dict(zip(COLUMNS, cells)))
        elif rows is not None and not cells:
            tables.append((title, rows))
            rows = None
    return tables


def whole_table(text):
    """The newest of the tables with the most workloads (a partial run, one section of the
    bench, is skipped for the whole check before it)."""
    tables = tables_of_markdown(text)
    if not tables:
        return "", []
    most = max(len(chosen(rows)) for _, rows in tables)
    return next((t, rows) for t, rows in tables if len(chosen(rows)) == most)


def load(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if path.endswith(".json"):
        data = json.loads(text)
        return f"{data['date']} — {data['device']}", data["rows"]
    return whole_table(text)


def chosen(rows):
    """One row per workload: the plan the chooser picked (marked *), or the only one."""
    picked = {}
    for r in rows:
        if r["plan"].endswith("*") or r["workload"] not in picked:
            picked[r["workload"]] = r
    return list(picked.values())


FLOOR_MIN = 1e-4  # the chart's left edge


def number(text):
    """The cell's first number: "164.7 (graph 130.8)" is 164.7, as the cells of the spmm rows read."""
    return float(re.findall(r"[0-9.]+", text.replace(",", ""))[0])


def shares(row):
    """(evsparse, baseline) fractions of the floor; the baseline moves the same bytes or FLOPs."""
    ours = max(number(row["% of floor"]) / 100, FLOOR_MIN)  # the table rounds to 0.1 %
    return ours, max(ours * number(row["evsparse µs"]) / number(row["baseline µs"]), FLOOR_MIN)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("source", nargs="?", default="bench/RESULTS.md")
    ap.add_argument("--out", default="bench/results.png")
    ap.add_argument("--check", action="store_true", help="read the table and its numbers only (no matplotlib)")
    args = ap.parse_args()
    title, rows = load(args.source)
    rows = chosen(rows)
    if not rows:
        sys.exit(f"plot: no benchmark table in {args.source}")
    if args.check:
        for row in rows:
            ours, base = shares(row)
            assert 0 < ours <= 1.5 and 0 < base, f"plot: {row['workload']}: floor shares {ours}, {base}"
        print(f"plot: {len(rows)} workloads of {title.split(',')[0]} read from {args.source}")
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    height = 0.32
    fig, ax = plt.subplots(figsize=(11, 0.34 * len(rows) + 1.6))
    for i, row in enumerate(reversed(rows)):
        ours, base = shares(row)
        ax.barh(i + height / 2, ours, height, color="#1f77b4", label="evsparse (chosen plan)" if i == 0 else None)
        ax.barh(i - height / 2, base, height, color="#bbbbbb", label="baseline (cuSPARSE, cuBLAS, torch)" if i == 0 else None)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([f"{r['workload']}  [{number(r['speed-up']):.2f}x]" for r in reversed(rows)], fontsize=6.5)
    ax.set_xscale("log")
    ax.set_xlim(FLOOR_MIN, 1.5)
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xlabel("share of the floor reached (bytes at the measured copy bandwidth, or FLOPs at bf16 cuBLAS's rate)",
                  fontsize=8)
    ax.set_title(f"evsparse against the library a user has ({title.split(',')[0]})", fontsize=9)
    ax.legend(loc="lower right", fontsize=7)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"plot: {len(rows)} workloads from {args.source} -> {args.out}")


if __name__ == "__main__":
    main()
