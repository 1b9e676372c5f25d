#!/usr/bin/env python3
"""Per-sample reads of an imgpack dataset's shards with h5py, in the same
random order the reader uses by default: the fastest of several ways is the
peer figure (bench/reader/run.sh). Prints one JSON object.

  h5py_read.py DATASET [--batch 256] [--max-images N] [--seconds S]
"""
import argparse
import json
import os
import sys
import time

import h5py
import numpy as np


def strings(index, name):
    """A string table of index.h5: bytes and offsets (format 2), or HDF5 strings (format 1)."""
    if isinstance(index[name], h5py.Group):
        data, offsets = index[name + "/bytes"][()], index[name + "/offsets"][()]
        return [data[a:b].tobytes().decode() for a, b in zip(offsets[:-1], offsets[1:])]
    return [s.decode() if isinstance(s, bytes) else s for s in index[name][()]]


def open_dataset(path):
    with h5py.File(os.path.join(path, "index.h5"), "r") as index:
        shard_of = index["/records/shard"][()]
        row_of = index["/records/row"][()]
        files = strings(index, "/shards/file")
        shape = (int(index.attrs["height"]), int(index.attrs["width"]), int(index.attrs["channels"]))
    shards = [h5py.File(os.path.join(path, f), "r") for f in files]
    return shards, shard_of, row_of, shape


def method_getitem(images, order, shard_of, row_of, out, batch):
    """images[k][row]: h5py's plain indexing, one new array per sample."""
    for i, r in enumerate(order):
        out[i % batch] = images[shard_of[r]][row_of[r]]


def method_read_direct(images, order, shard_of, row_of, out, batch):
    """Dataset.read_direct into the preallocated batch: no per-sample array."""
    for i, r in enumerate(order):
        j = i % batch
        images[shard_of[r]].read_direct(out, np.s_[row_of[r]:row_of[r] + 1], np.s_[j:j + 1])


def method_lowlevel(images, order, shard_of, row_of, out, batch):
    """The low-level API with reused dataspaces: a hyperslab per sample."""
    spaces = [d.id.get_space() for d in images]
    record = out.shape[1:]
    mspace = h5py.h5s.create_simple((1,) + record)
    count = (1,) + record
    for i, r in enumerate(order):
        k = shard_of[r]
        fspace = spaces[k]
        fspace.select_hyperslab((int(row_of[r]), 0, 0, 0), count)
        j = i % batch
        images[k].id.read(mspace, fspace, out[j:j + 1])


METHODS = {"getitem": method_getitem, "read_direct": method_read_direct,
           "lowlevel": method_lowlevel}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("dataset")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--max-images", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    shards, shard_of, row_of, shape = open_dataset(args.dataset)
    images = [f["/images"] for f in shards]
    n = min(len(shard_of), args.max_images)
    rng = np.random.default_rng(args.seed)
    out = np.empty((args.batch,) + shape, dtype=np.uint8)
    record_bytes = int(np.prod(shape))
    results = {}
    for name, method in METHODS.items():
        order = rng.permutation(len(shard_of))[:n]
        method(images, order[: min(n, 256)], shard_of, row_of, out, args.batch)  # warm-up
        start = time.perf_counter()
        method(images, order, shard_of, row_of, out, args.batch)
        seconds = time.perf_counter() - start
        results[name] = {"images": int(n), "seconds": seconds, "images_per_s": n / seconds,
                         "gb_per_s": n * record_bytes / seconds / 1e9}
        print(f"h5py {name}: {n / seconds:.0f} images/s", file=sys.stderr)
    best = max(results, key=lambda k: results[k]["images_per_s"])
    print(json.dumps({"best_method": best, "images_per_s": results[best]["images_per_s"],
                      "gb_per_s": results[best]["gb_per_s"], "methods": results,
                      "h5py": h5py.__version__, "hdf5": h5py.version.hdf5_version}, indent=2))


if __name__ == "__main__":
    main()
