#!/usr/bin/env python3
"""Writes a synthetic imgpack dataset of N one-pixel records, to time what
grows with the sample count (index reads, splits, the reader's open) without
the pixels.

usage: bench/scale/make_dataset.py OUT N [--classes C] [--groups G|per-sample|size:S] [--seed S]

index.h5 is written in index format 1 (variable-length strings, no splits),
as h5py writes it; `imgpack upgrade` turns a copy into format 2 (run.py does).
One shard holds the N 1x1 gray records, each with the XXH3-64 of its pixel
(from libxxhash), so `imgpack verify` passes. Groups: one per image
(per-sample, the default), G groups drawn at random, or groups of exactly S
images (size:S).
"""
import argparse
import ctypes
import os

import h5py
import numpy as np


def pixel_checksum():
    """XXH3-64 (seed 0) of the one zero byte every record holds."""
    lib = ctypes.CDLL("libxxhash.so.0")
    lib.XXH3_64bits.restype = ctypes.c_uint64
    lib.XXH3_64bits.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    return lib.XXH3_64bits(bytes([0]), 1)


def write_index(out, n, labels, groups, num_classes, num_groups):
    strings = h5py.string_dtype("utf-8")
    with h5py.File(os.path.join(out, "index.h5.tmp"), "w", libver=("v110", "v110")) as f:
        f.attrs["imgpack_format"] = np.int64(1)
        f.attrs["dataset_uuid"] = "synthetic-scale-%d" % n
        for name, value in (("height", 1), ("width", 1), ("channels", 1), ("variants", 1)):
            f.attrs[name] = np.int64(value)
        f.attrs["color"] = "gray"
        f.attrs["convert_options"] = "{}"
        f.attrs["created_by"] = "bench/scale/make_dataset.py"
        paths = np.array(["class-%03d/image-%09d.png" % (labels[i], i) for i in range(n)],
                         dtype=object)
        f.create_dataset("samples/path", data=paths, dtype=strings)
        f.create_dataset("samples/label", data=labels)
        f.create_dataset("samples/group", data=groups)
        f.create_dataset("classes/name", data=np.array(
            ["class-%03d" % c for c in range(num_classes)], dtype=object), dtype=strings)
        f.create_dataset("groups/name", data=np.array(
            ["group-%09d" % g for g in range(num_groups)], dtype=object), dtype=strings)
        f.create_dataset("records/shard", data=np.zeros(n, np.uint32))
        f.create_dataset("records/row", data=np.arange(n, dtype=np.uint32))
        f.create_dataset("records/sample", data=np.arange(n, dtype=np.int64))
        f.create_dataset("records/variant", data=np.zeros(n, np.uint16))
        f.create_dataset("shards/file", data=np.array(["shard-00000.h5"], dtype=object),
                         dtype=strings)
        f.create_dataset("shards/records", data=np.array([n], np.uint64))
        f.create_group("splits")
    os.replace(os.path.join(out, "index.h5.tmp"), os.path.join(out, "index.h5"))


def write_shard(out, n, labels, uuid):
    path = os.path.join(out, "shard-00000.h5")
    with h5py.File(path, "w", libver=("v110", "v110"), alignment_threshold=4096,
                   alignment_interval=4096) as f:
        f.attrs["imgpack_format"] = np.int64(1)
        f.attrs["dataset_uuid"] = uuid
        f.attrs["shard_index"] = np.int64(0)
        f.create_dataset("images", data=np.zeros((n, 1, 1, 1), np.uint8))
        f.create_dataset("labels", data=labels)
        f.create_dataset("sample", data=np.arange(n, dtype=np.int64))
        f.create_dataset("variant", data=np.zeros(n, np.uint16))
        f.create_dataset("checksum", data=np.full(n, pixel_checksum(), np.uint64))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out")
    parser.add_argument("n", type=int)
    parser.add_argument("--classes", type=int, default=100)
    parser.add_argument("--groups", default="per-sample",
                        help="per-sample (one group per image), G groups, or size:S")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    n = args.n
    labels = rng.integers(0, args.classes, n, dtype=np.int32)
    if args.groups == "per-sample":
        num_groups = n
        groups = rng.permutation(n).astype(np.int32)
    elif args.groups.startswith("size:"):
        size = int(args.groups[5:])
        num_groups = (n + size - 1) // size
        groups = (rng.permutation(n) // size).astype(np.int32)
    else:
        num_groups = int(args.groups)
        groups = rng.integers(0, num_groups, n, dtype=np.int32)
    os.makedirs(args.out, exist_ok=True)
    write_shard(args.out, n, labels, "synthetic-scale-%d" % n)
    write_index(args.out, n, labels, groups, args.classes, num_groups)


if __name__ == "__main__":
    main()
