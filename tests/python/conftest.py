"""Shared fixtures of the Python module's tests (run by ctest under CMake's
Python_EXECUTABLE).

ctest sets PYTHONPATH to the built module, IMGPACK to the CLI and
IMGPACK_LOADER_ORDER to tests/python/loader_order.cpp's helper. Datasets are
generated with the CLI (sample-data, convert, split), once per test file.
"""
import json
import os
import subprocess

import h5py
import numpy as np
import pytest

IMGPACK = os.environ.get("IMGPACK", "")
LOADER_ORDER = os.environ.get("IMGPACK_LOADER_ORDER", "")
SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def cli(*args):
    """Runs the imgpack CLI; returns its stdout."""
    done = subprocess.run([IMGPACK, *[str(a) for a in args]], capture_output=True, text=True)
    if done.returncode != 0:
        raise AssertionError("imgpack %s failed (%d): %s" % (
            " ".join(map(str, args)), done.returncode, done.stderr))
    return done.stdout


def make_dataset(root, classes=4, groups=6, per_class=15, size="24x20", variants=3,
                 shard_size="20K", seed=3):
    """A small multi-shard dataset with augmented variants, groups and two splits:
    cv3 (stratified-group, 3 folds, a test set) and hold (holdout)."""
    src, out = os.path.join(root, "src"), os.path.join(root, "data")
    cli("sample-data", src, "--classes", classes, "--groups", groups, "--per-class", per_class,
        "--size", "48x40", "--seed", seed, "--quiet")
    augment = ["--variants", variants, "--augment", "hflip,rotate=10"] if variants > 1 else []
    cli("convert", src, out, "--size", size, "--resize", "stretch", "--shard-size", shard_size,
        "--group-regex", "/(g[0-9]+)_", "--seed", seed, "--quiet", *augment)
    cli("split", out, "--name", "cv3", "--kind", "stratified-group", "--folds", 3, "--test", 0.1,
        "--json")
    cli("split", out, "--name", "hold", "--kind", "holdout", "--val", 0.25, "--json")
    return out


@pytest.fixture(scope="module")
def dataset_dir(tmp_path_factory):
    assert IMGPACK, "IMGPACK (the CLI) is not set; run through ctest"
    return make_dataset(str(tmp_path_factory.mktemp("dataset")))


def h5_strings(index, name):
    """A string table of index.h5: format 2 (bytes + offsets) or format 1 (strings)."""
    table = index[name]
    if isinstance(table, h5py.Group):
        data, offsets = table["bytes"][()], table["offsets"][()]
        return [data[a:b].tobytes().decode() for a, b in zip(offsets[:-1], offsets[1:])]
    return [s.decode() if isinstance(s, bytes) else s for s in table[()]]


class Reference:
    """An imgpack dataset read with h5py alone: the oracle the module is checked against."""

    def __init__(self, path):
        with h5py.File(os.path.join(path, "index.h5"), "r") as index:
            self.record_shard = index["records/shard"][()]
            self.record_row = index["records/row"][()]
            self.record_sample = index["records/sample"][()]
            self.record_variant = index["records/variant"][()]
            self.sample_label = index["samples/label"][()]
            self.sample_group = index["samples/group"][()]
            self.sample_path = h5_strings(index, "samples/path")
            self.classes = h5_strings(index, "classes/name")
            files = h5_strings(index, "shards/file")
            splits_file = os.path.join(path, "splits.h5")
            with h5py.File(splits_file if index.attrs["imgpack_format"] >= 2 else
                           os.path.join(path, "index.h5"), "r") as splits:
                self.splits = {name: dict(group.attrs) | {"assign": group["assign"][()]}
                               for name, group in splits["splits"].items()}
            self.shape = tuple(int(index.attrs[k]) for k in ("height", "width", "channels"))
        self.files = [os.path.join(path, f) for f in files]
        self.shards = []
        for f in self.files:
            with h5py.File(f, "r") as shard:
                self.shards.append({k: shard[k][()] for k in ("images", "labels", "sample")})

    def image(self, record):
        return self.shards[self.record_shard[record]]["images"][self.record_row[record]]

    def label(self, record):
        return self.shards[self.record_shard[record]]["labels"][self.record_row[record]]

    def sample(self, record):
        return self.shards[self.record_shard[record]]["sample"][self.record_row[record]]

    def images(self, records):
        return np.stack([self.image(r) for r in records])


@pytest.fixture(scope="module")
def reference(dataset_dir):
    return Reference(dataset_dir)


def cpp_order(dataset, epochs=(0,), **options):
    """The batches (lists of record ids) and paddings the C++ Loader delivers
    (loader_order helper) for the same options, per epoch."""
    assert LOADER_ORDER, "IMGPACK_LOADER_ORDER is not set; run through ctest"
    args = [LOADER_ORDER, dataset, "--epochs", ",".join(str(e) for e in epochs)]
    for key, value in options.items():
        args += ["--" + key.replace("_", "-"), str(value)]
    done = subprocess.run(args, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)["epochs"]


def pytest_sessionfinish(session, exitstatus):
    """A run whose every test was skipped (test_cuda.py without a device, a
    whole file skipped at import) exits 77, which ctest reports as skipped
    rather than passed. pytest exits 5 when a file skipped at import left no
    test collected."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if exitstatus in (0, 5) and reporter is not None and reporter.stats.get("skipped") and \
            not reporter.stats.get("passed") and not reporter.stats.get("failed"):
        session.exitstatus = 77
