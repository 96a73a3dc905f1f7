#!/usr/bin/env python3
"""Line and branch coverage per folder from gcovr's --json-summary output.

usage: coverage_summary.py build-cov/coverage.json

Prints one row per source folder (engines/diskann_sector, harness, ...) and
the total: lines covered / lines, branches covered / branches, percentages.
"""
import json
import os
import sys


def main():
    with open(sys.argv[1]) as f:
        summary = json.load(f)
    folders = {}
    for entry in summary["files"]:
        folder = os.path.dirname(entry["filename"]) or "."
        row = folders.setdefault(folder, [0, 0, 0, 0])
        row[0] += entry["line_covered"]
        row[1] += entry["line_total"]
        row[2] += entry["branch_covered"]
        row[3] += entry["branch_total"]

    def pct(a, b):
        return "%5.1f%%" % (100.0 * a / b) if b else "   - "

    print("%-28s %15s %7s %17s %7s" % ("folder", "lines", "", "branches", ""))
    total = [0, 0, 0, 0]
    for folder in sorted(folders):
        r = folders[folder]
        total = [t + v for t, v in zip(total, r)]
        print("%-28s %7d/%-7d %s %8d/%-8d %s" % (folder, r[0], r[1], pct(r[0], r[1]), r[2], r[3],
                                                 pct(r[2], r[3])))
    print("%-28s %7d/%-7d %s %8d/%-8d %s" % ("total", total[0], total[1], pct(total[0], total[1]),
                                             total[2], total[3], pct(total[2], total[3])))


if __name__ == "__main__":
    main()
