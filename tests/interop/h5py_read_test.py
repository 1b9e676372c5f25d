#!/usr/bin/env python3
"""Reads an imgpack dataset with h5py only, as a Python user would, and checks
shapes, labels and pixels against the source images decoded by OpenCV."""
import json
import os
import subprocess
import sys
import tempfile

try:
    import cv2
    import h5py
    import numpy as np
except ImportError as e:  # ctest treats 77 as skipped
    print(f"skipping: {e}")
    sys.exit(77)

IMGPACK = os.environ["IMGPACK"]


def run(*args):
    subprocess.run([IMGPACK, *args], check=True)


def strings(index, name):
    """A string table of a format 2 index.h5, read as docs/FORMAT.md says (two lines)."""
    data, offsets = index[name + "/bytes"][:], index[name + "/offsets"][:]
    return [data[a:b].tobytes().decode() for a, b in zip(offsets[:-1], offsets[1:])]


def main():
    with tempfile.TemporaryDirectory() as tmp:
        src, out = os.path.join(tmp, "src"), os.path.join(tmp, "out")
        run("sample-data", src, "--classes", "3", "--groups", "4", "--per-class", "7", "-q")
        # Lossless PNG so that pixel comparisons can be exact: re-encode one class.
        run("convert", src, out, "--size", "40x30", "--resize", "stretch", "--quiet",
            "--shard-size", "20K", "--no-dct-scaling")

        index = h5py.File(os.path.join(out, "index.h5"), "r")
        assert index.attrs["imgpack_format"] == 2
        height, width, channels = (int(index.attrs[k]) for k in ("height", "width", "channels"))
        assert (height, width, channels) == (30, 40, 3)
        paths = strings(index, "samples/path")
        labels = index["samples/label"][:]
        classes = strings(index, "classes/name")
        assert classes == sorted(classes) and len(classes) == 3
        shard_files = strings(index, "shards/file")
        assert len(shard_files) > 1, "expected several shards with --shard-size 20K"
        rec_shard, rec_row = index["records/shard"][:], index["records/row"][:]
        rec_sample = index["records/sample"][:]
        assert len(rec_shard) == len(paths) == 21

        shards = [h5py.File(os.path.join(out, f), "r") for f in shard_files]
        for s in shards:
            images = s["images"]
            assert images.dtype == np.uint8 and images.shape[1:] == (30, 40, 3)
            assert images.chunks is None and images.compression is None
            assert images.id.get_offset() % 4096 == 0
            assert s.attrs["dataset_uuid"] == index.attrs["dataset_uuid"]

        worst = 0.0
        for r in range(len(rec_shard)):
            shard = shards[rec_shard[r]]
            row = rec_row[r]
            sample = rec_sample[r]
            assert shard["sample"][row] == sample
            assert shard["labels"][row] == labels[sample]
            path = paths[sample]
            assert classes[labels[sample]] == path.split("/")[0]
            source = cv2.cvtColor(cv2.imread(os.path.join(src, path)), cv2.COLOR_BGR2RGB)
            expected = cv2.resize(source, (40, 30), interpolation=cv2.INTER_AREA)
            got = shard["images"][row]
            diff = np.abs(got.astype(np.int16) - expected.astype(np.int16)).mean()
            worst = max(worst, diff)
        assert worst < 0.5, f"pixels differ from OpenCV decode + resize by {worst:.2f} on average"
        # The splits live in splits.h5, beside index.h5 (none were made here).
        with h5py.File(os.path.join(out, "splits.h5"), "r") as splits:
            assert splits.attrs["dataset_uuid"] == index.attrs["dataset_uuid"]
            assert int(splits.attrs["samples"]) == len(paths)
        report = json.load(open(os.path.join(out, "report.json")))
        assert report["records"] == 21 and report["skipped"] == []
        assert "masks" not in index.attrs and all("masks" not in s for s in shards)
        print(f"ok: 21 records in {len(shards)} shards, worst mean abs diff {worst:.3f}")
        read_masks(tmp)


def read_masks(tmp):
    """A dataset with masks, read with h5py alone: each record's mask is its
    source label map resized with nearest neighbour, laid out like /images."""
    src, out = os.path.join(tmp, "msrc"), os.path.join(tmp, "mout")
    run("sample-data", src, "--classes", "3", "--per-class", "5", "--size", "48x36", "--masks",
        "-q")
    run("convert", src, out, "--size", "24x18", "--resize", "stretch", "--quiet", "--shard-size",
        "8K", "--masks", os.path.join(src, "masks"), "--mask-classes",
        os.path.join(src, "masks", "classes.txt"), "--no-dct-scaling")
    index = h5py.File(os.path.join(out, "index.h5"), "r")
    assert index.attrs["masks"] == 1 and index.attrs["mask_fill"] == 255
    names = strings(index, "mask_classes/name")
    assert names[0] == "background" and len(names) == 4
    paths = strings(index, "samples/path")
    shard_files = strings(index, "shards/file")
    rec_shard, rec_row = index["records/shard"][:], index["records/row"][:]
    rec_sample = index["records/sample"][:]
    shards = [h5py.File(os.path.join(out, f), "r") for f in shard_files]
    for s in shards:
        masks = s["masks"]
        assert masks.dtype == np.uint8 and masks.shape == (s["images"].shape[0], 18, 24)
        assert masks.chunks is None and masks.compression is None
        assert masks.id.get_offset() % 4096 == 0
        assert s["mask_checksum"].shape == (masks.shape[0],)
    for r in range(len(rec_shard)):
        path = paths[rec_sample[r]]
        source = cv2.imread(os.path.join(src, "masks", os.path.splitext(path)[0] + ".png"),
                            cv2.IMREAD_UNCHANGED)
        h, w = source.shape
        # Pixel centres of the output, in the source: nearest neighbour.
        ys = np.floor((np.arange(18) + 0.5) * h / 18).astype(int)
        xs = np.floor((np.arange(24) + 0.5) * w / 24).astype(int)
        expected = source[ys][:, xs]
        got = shards[rec_shard[r]]["masks"][rec_row[r]]
        np.testing.assert_array_equal(got, expected)
    print(f"ok: {len(rec_shard)} masks in {len(shards)} shards")


if __name__ == "__main__":
    main()
