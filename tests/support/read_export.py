#!/usr/bin/env python3
"""Read `annlab export` output back the way each tool reads its own results.

usage: read_export.py ann-benchmarks EXPORT_DIR BUNDLE_DIR DATASET COUNT
       read_export.py big-ann FILE.csv
       read_export.py vectordbbench FILE.json

Prints one JSON document on stdout.

ann-benchmarks: walks EXPORT_DIR/results/DATASET/COUNT as
ann_benchmarks.results.load_all_results does (h5py, mode "r+", skipping files
whose batch_mode differs from False), and computes the plotting metrics with
ann_benchmarks/plotting/metrics.py's rules: k-nn recall from the run's
distances against the dataset's true k-th distance + 1e-3, qps =
1 / best_search_time, p50 = percentile 50 of times in ms, distcomps =
dist_comps / (run_count * nq), build, indexsize, candidates.  The dataset's
true distances are those ann-benchmarks stores: Euclidean distance or 1 - cos
of the ground-truth neighbours (computed here from the bundle's files).

big-ann: csv.DictReader rows, numbers as floats.

vectordbbench: the TestResult JSON, checked for the fields VectorDBBench's
TestResult.read_file and Metric need.
"""
import csv
import json
import os
import sys

import h5py
import numpy as np


def read_bin(path, dtype):
    with open(path, "rb") as f:
        n, d = np.frombuffer(f.read(8), dtype="<u4")
        return np.frombuffer(f.read(int(n) * int(d) * np.dtype(dtype).itemsize), dtype=dtype).reshape(n, d)


def true_distances(bundle, distance, nq, count):
    base = read_bin(os.path.join(bundle, "base.fbin"), "<f4").astype(np.float64)
    query = read_bin(os.path.join(bundle, "query.fbin"), "<f4").astype(np.float64)
    gt = read_bin(os.path.join(bundle, "gt.ibin"), "<i4")
    out = np.zeros((nq, count))
    for q in range(nq):
        rows = base[gt[q, :count]]
        if distance == "angular":
            out[q] = 1 - rows.dot(query[q]) / (np.linalg.norm(rows, axis=1) * np.linalg.norm(query[q]))
        else:
            out[q] = np.sqrt(((rows - query[q]) ** 2).sum(axis=1))
    return out


def knn_recall(dataset_distances, run_distances, count, epsilon=1e-3):
    # ann_benchmarks/plotting/metrics.py get_recall_values with knn_threshold
    recalls = np.zeros(len(run_distances))
    for i in range(len(run_distances)):
        t = dataset_distances[i][count - 1] + epsilon
        recalls[i] = sum(1 for d in run_distances[i][:count] if d <= t)
    return float(np.mean(recalls) / float(count))


def ann_benchmarks(export_dir, bundle, dataset, count):
    out = []
    root = os.path.join(export_dir, "results", dataset, str(count))
    for dirpath, _, files in os.walk(root):
        for fn in sorted(files):
            if os.path.splitext(fn)[-1] != ".hdf5":
                continue
            with h5py.File(os.path.join(dirpath, fn), "r+") as f:
                properties = dict(f.attrs)
                if False != properties["batch_mode"]:
                    continue
                run_distances = np.array(f["distances"])
                times = np.array(f["times"])
                nq = len(run_distances)
                dd = true_distances(bundle, properties["distance"], nq, int(properties["count"]))
                out.append({
                    "file": os.path.relpath(os.path.join(dirpath, fn), export_dir),
                    "algo": properties["algo"],
                    "name": properties["name"],
                    "dataset": properties["dataset"],
                    "distance": properties["distance"],
                    "count": int(properties["count"]),
                    "k-nn": knn_recall(dd, run_distances, int(properties["count"])),
                    "qps": 1.0 / properties["best_search_time"],
                    "p50": float(np.percentile(times, 50.0) * 1000.0),
                    "distcomps": properties.get("dist_comps", 0) / (properties["run_count"] * nq),
                    "build": float(properties["build_time"]),
                    "indexsize": float(properties.get("index_size", 0)),
                    "candidates": float(properties["candidates"]),
                    "neighbors_dtype": str(f["neighbors"].dtype),
                    "first_neighbors": [int(v) for v in f["neighbors"][0]],
                    "nq": nq,
                })
    out.sort(key=lambda r: r["file"])
    return out


def big_ann(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        for k in ("count", "qps", "distcomps", "build", "indexsize", "mean_ssd_ios", "mean_latency", "recall"):
            r[k] = float(r[k]) if r[k] != "" else None
    return rows


def vectordbbench(path):
    with open(path) as f:
        d = json.load(f)
    for key in ("run_id", "task_label", "results", "file_fmt"):
        assert key in d, key
    for r in d["results"]:
        m, t = r["metrics"], r["task_config"]
        for key in ("qps", "serial_latency_p99", "recall", "ndcg", "load_duration"):
            assert isinstance(m[key], (int, float)), key
        for key in ("db", "db_config", "db_case_config", "case_config"):
            assert key in t, key
        assert "case_id" in t["case_config"] and "k" in t["case_config"]
        assert r["label"] in (":)", "x", "?")
    return d


def main():
    kind = sys.argv[1]
    if kind == "ann-benchmarks":
        res = ann_benchmarks(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
    elif kind == "big-ann":
        res = big_ann(sys.argv[2])
    else:
        res = vectordbbench(sys.argv[2])
    json.dump(res, sys.stdout)


if __name__ == "__main__":
    main()
