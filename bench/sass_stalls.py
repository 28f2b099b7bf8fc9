"""Where a kernel's warps wait, from ncu's SASS source page (bench/profile_sass.sh writes it):
the stall reasons summed over the kernel, then the instructions that hold the most samples, each
with its own leading reasons and the instructions before it (what it waits on is usually a few
lines up). Several profiled launches of one kernel are summed instruction by instruction.
    python3 bench/sass_stalls.py OUT/spmv_n_slices_sass.csv [TOP]
"""
import collections
import csv
import sys


def read(path):
    """Per instruction index: its SASS text and its summed counters (every launch in the file)."""
    text, counters = {}, collections.defaultdict(collections.Counter)
    header, index = None, 0
    for row in csv.reader(open(path)):
        if row and row[0] == "Kernel Name":
            header, index = None, 0
        elif row and row[0] == "Address":
            header = row
        elif header and len(row) == len(header):
            text[index] = row[header.index("Source")].strip()
            for name, value in zip(header, row):
                issued_stall = name.startswith("stall_") and "(Not Issued)" not in name
                if issued_stall or name in ("Warp Stall Sampling (All Samples)", "Instructions Executed"):
                    counters[index][name] += float(value.replace(",", "") or 0)
            index += 1
    return text, counters


def main():
    path, top = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 12
    text, counters = read(path)
    samples = sum(c["Warp Stall Sampling (All Samples)"] for c in counters.values()) or 1
    reasons = collections.Counter()
    for c in counters.values():
        reasons.update({k: v for k, v in c.items() if k.startswith("stall_")})
    print(f"{len(text)} instructions, {samples:.0f} samples, "
          f"{sum(c['Instructions Executed'] for c in counters.values()):.0f} warp instructions executed")
    print("reasons: " + ", ".join(f"{k[6:]} {v / samples:.0%}" for k, v in reasons.most_common(6)))
    hot = sorted(counters, key=lambda i: -counters[i]["Warp Stall Sampling (All Samples)"])[:top]
    for i in sorted(hot):
        c = counters[i]
        lead = sorted(((v, k[6:]) for k, v in c.items() if k.startswith("stall_") and v), reverse=True)[:2]
        print(f"\n{i:5d} {c['Warp Stall Sampling (All Samples)'] / samples:5.1%} executed {c['Instructions Executed']:.0f} "
              f"({', '.join(f'{k} {v:.0f}' for v, k in lead)})")
        for j in range(max(0, i - 3), i + 1):
            print(f"      {'>' if j == i else ' '} {j:5d} {text[j][:100]}")


if __name__ == "__main__":
    main()
