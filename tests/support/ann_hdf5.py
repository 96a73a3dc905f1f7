#!/usr/bin/env python3
"""Write ann-benchmarks HDF5 files with h5py, the way the real files were written.

usage: ann_hdf5.py SPEC.json

SPEC: {"train": F, "test": F, "neighbors": F, "n": N, "nq": NQ, "dim": D, "k": K,
       "files": [{"out": PATH, ...variant...}, ...]}
train/test are raw little-endian float32 rows, neighbors raw int64 rows.

A variant (every key optional):
  "layout":    "modern"  as ann_benchmarks.datasets.write_output (2023-): attributes
                         type="dense", distance, dimension, point_type="float" (h5py
                         writes Python str as variable-length UTF-8), neighbors int64
                         (dtype=int), distances float64 (dtype=float)
               "legacy"  the files published until 2023: only the distance attribute,
                         neighbors int32, distances float32
               "binary"  a hamming set: point_type "bit", uint8 0/1 train and test
               "sparse"  a jaccard set: type "sparse", train/test 1-D concatenated
                         item ids with size_train/size_test
  "distance":  "euclidean" (default) | "angular" | "jaccard" | "hamming" | ...
  "strings":   how string attributes are stored: "vlen-utf8" (h5py's str, default),
               "vlen-ascii", "fixed-ascii" (numpy bytes), "fixed-utf8"
  "omit":      a dataset or attribute name left out ("test", "distance", ...)
  "dimension": the dimension attribute's value (default: the real one)
  "float64":   train and test stored as float64
Distances are computed here as ann-benchmarks does: euclidean |a-b|, angular 1-cos.
"""
import json
import sys

import h5py
import numpy as np


def put_str(attrs, name, value, strings):
    if strings == "vlen-utf8":
        attrs[name] = value
    elif strings == "vlen-ascii":
        attrs.create(name, value.encode("ascii"), dtype=h5py.string_dtype("ascii"))
    elif strings == "fixed-ascii":
        attrs[name] = np.bytes_(value)
    elif strings == "fixed-utf8":
        attrs.create(name, value.encode("utf-8"), dtype=h5py.string_dtype("utf-8", len(value.encode("utf-8"))))
    else:
        raise SystemExit("unknown strings style %r" % strings)


def distances_of(train, test, neighbors, distance):
    out = np.zeros(neighbors.shape, dtype=np.float64)
    for q in range(neighbors.shape[0]):
        rows = train[neighbors[q]].astype(np.float64)
        x = test[q].astype(np.float64)
        if distance == "angular":
            nx = np.linalg.norm(x)
            nr = np.linalg.norm(rows, axis=1)
            out[q] = 1 - rows.dot(x) / (nr * nx)
        else:
            out[q] = np.sqrt(((rows - x) ** 2).sum(axis=1))
    return out


def write(spec, v, train, test, neighbors):
    layout = v.get("layout", "modern")
    distance = v.get("distance", "euclidean")
    strings = v.get("strings", "vlen-utf8")
    omit = v.get("omit", "")
    dim = spec["dim"]
    with h5py.File(v["out"], "w") as f:
        if layout == "sparse":
            put_str(f.attrs, "type", "sparse", strings)
            put_str(f.attrs, "distance", distance, strings)
            f.attrs["dimension"] = dim
            put_str(f.attrs, "point_type", "bit", strings)
            sets = [np.flatnonzero(r > 0) for r in train]
            tsets = [np.flatnonzero(r > 0) for r in test]
            f.create_dataset("train", data=np.concatenate(sets))
            f.create_dataset("test", data=np.concatenate(tsets))
            f.create_dataset("size_train", data=[len(s) for s in sets])
            f.create_dataset("size_test", data=[len(s) for s in tsets])
            f.create_dataset("neighbors", data=neighbors.astype(int))
            f.create_dataset("distances", data=np.zeros(neighbors.shape))
            return
        if layout in ("modern", "binary"):
            if omit != "type":
                put_str(f.attrs, "type", "dense", strings)
        if omit != "distance":
            put_str(f.attrs, "distance", distance, strings)
        if layout in ("modern", "binary"):
            if omit != "dimension":
                f.attrs["dimension"] = v.get("dimension", dim)
            if omit != "point_type":
                put_str(f.attrs, "point_type", "bit" if layout == "binary" else "float", strings)
        if layout == "binary":
            train_out, test_out = (train > 0).astype(np.uint8), (test > 0).astype(np.uint8)
        elif v.get("float64"):
            train_out, test_out = train.astype(np.float64), test.astype(np.float64)
        else:
            train_out, test_out = train, test
        if omit != "train":
            f.create_dataset("train", data=train_out)
        if omit != "test":
            f.create_dataset("test", data=test_out)
        if layout == "legacy":
            f.create_dataset("neighbors", data=neighbors.astype(np.int32))
        else:
            f.create_dataset("neighbors", (len(test), spec["k"]), dtype=int)[:] = neighbors
        if omit != "distances":
            d = distances_of(train, test, neighbors, distance) if layout != "binary" else np.zeros(neighbors.shape)
            if layout == "legacy":
                f.create_dataset("distances", data=d.astype(np.float32))
            else:
                f.create_dataset("distances", (len(test), spec["k"]), dtype=float)[:] = d


def main():
    spec = json.load(open(sys.argv[1]))
    n, nq, dim, k = spec["n"], spec["nq"], spec["dim"], spec["k"]
    train = np.fromfile(spec["train"], dtype="<f4").reshape(n, dim)
    test = np.fromfile(spec["test"], dtype="<f4").reshape(nq, dim)
    neighbors = np.fromfile(spec["neighbors"], dtype="<i8").reshape(nq, k)
    for v in spec["files"]:
        write(spec, v, train, test, neighbors)


if __name__ == "__main__":
    main()
