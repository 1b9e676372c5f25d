"""Targets beyond one class: --csv-multilabel and --csv-targets as h5py reads
them from index.h5 (FORMAT.md), as Dataset shows them, and in every batch
(Batch.multilabel, Batch.targets: zero-copy host arrays, rows of the batch's
samples), through numpy and torch."""
import csv
import math
import os

import h5py
import numpy as np
import pytest

import imgpack
from conftest import cli, h5_strings

TAGS = ["cat;outdoor", "", "dog", "dog; cat"]


@pytest.fixture(scope="module")
def targets_dir(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("targets"))
    src, out = os.path.join(root, "src"), os.path.join(root, "data")
    cli("sample-data", src, "--classes", 3, "--per-class", 7, "--size", "40x32", "--quiet")
    images = sorted(os.path.relpath(os.path.join(d, f), src)
                    for d, _, files in os.walk(src) for f in files if not f.endswith(".csv"))
    assert len(images) == 21
    listing = os.path.join(root, "list.csv")
    with open(listing, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["path", "tags", "age", "score"])
        for n, path in enumerate(images):
            writer.writerow([path, TAGS[n % 4], "" if n % 5 == 2 else n * 1.25, -n])
    cli("convert", src, out, "--csv", listing, "--csv-multilabel", "tags", "--csv-targets",
        "age,score", "--size", "24x20", "--variants", 2, "--augment", "hflip",
        "--shard-size", "8K", "--quiet")
    return out, images


def expected_rows(path, images):
    n = images.index(path)
    tags = {t.strip() for t in TAGS[n % 4].split(";") if t.strip()}
    multi_hot = [1 if name in tags else 0 for name in ["cat", "dog", "outdoor"]]
    age = math.nan if n % 5 == 2 else n * 1.25
    return multi_hot, [age, -n]


def test_h5py_reads_the_tables_as_the_format_says(targets_dir):
    out, images = targets_dir
    with h5py.File(os.path.join(out, "index.h5"), "r") as index:
        assert index.attrs["multilabel_classes"] == 3 and index.attrs["targets"] == 2
        assert h5_strings(index, "multilabel_classes/name") == ["cat", "dog", "outdoor"]
        assert h5_strings(index, "targets/name") == ["age", "score"]
        paths = h5_strings(index, "samples/path")
        multilabel = index["samples/multilabel"][()]
        targets = index["samples/targets"][()]
    assert multilabel.dtype == np.uint8 and multilabel.shape == (21, 3)
    assert targets.dtype == np.float32 and targets.shape == (21, 2)
    for s, path in enumerate(paths):
        multi_hot, values = expected_rows(path, images)
        assert multilabel[s].tolist() == multi_hot, path
        np.testing.assert_array_equal(targets[s], np.array(values, dtype=np.float32))


def test_the_dataset_shows_them_read_only(targets_dir):
    out, _ = targets_dir
    ds = imgpack.Dataset(out)
    assert ds.multilabel_classes == ["cat", "dog", "outdoor"]
    assert ds.target_names == ["age", "score"]
    assert ds.sample_multilabel.shape == (21, 3) and ds.sample_multilabel.dtype == np.uint8
    assert ds.sample_targets.shape == (21, 2) and ds.sample_targets.dtype == np.float32
    with pytest.raises(ValueError):
        ds.sample_targets[0, 0] = 1.0
    with h5py.File(os.path.join(out, "index.h5"), "r") as index:
        np.testing.assert_array_equal(ds.sample_multilabel, index["samples/multilabel"][()])
        np.testing.assert_array_equal(ds.sample_targets, index["samples/targets"][()])


def test_every_batch_carries_the_rows_of_its_samples(targets_dir):
    out, _ = targets_dir
    ds = imgpack.Dataset(out)
    loader = imgpack.Loader(ds, batch_size=4, variants="all", seed=2, threads=2)
    entries = 0
    for epoch in range(2):
        loader.set_epoch(epoch)
        for batch in loader:
            samples = np.asarray(batch.samples)
            multilabel, targets = batch.multilabel, batch.targets
            assert multilabel.shape == (len(batch), 3) and multilabel.dtype == np.uint8
            assert targets.shape == (len(batch), 2) and targets.device == "cpu"
            np.testing.assert_array_equal(np.asarray(multilabel), ds.sample_multilabel[samples])
            np.testing.assert_array_equal(np.asarray(targets), ds.sample_targets[samples])
            entries += len(batch)
    assert entries == 2 * 42


def test_torch_takes_them_zero_copy(targets_dir):
    torch = pytest.importorskip("torch")
    out, _ = targets_dir
    ds = imgpack.Dataset(out)
    loader = imgpack.Loader(ds, batch_size=8, seed=1)
    batch = next(iter(loader))
    y = torch.from_dlpack(batch.multilabel)
    t = torch.from_dlpack(batch.targets)
    assert y.shape == (len(batch), 3) and y.dtype == torch.uint8
    assert t.dtype == torch.float32
    assert y.data_ptr() == torch.from_dlpack(batch.multilabel).data_ptr()  # a view, not a copy
    samples = torch.from_dlpack(batch.samples).numpy()
    np.testing.assert_array_equal(y.numpy(), ds.sample_multilabel[samples])
    loss = torch.nn.functional.binary_cross_entropy_with_logits(torch.zeros(y.shape), y.float())
    assert math.isfinite(loss.item())


def test_a_dataset_without_them_has_none(dataset_dir):
    ds = imgpack.Dataset(dataset_dir)
    assert ds.multilabel_classes == [] and ds.target_names == []
    assert ds.sample_multilabel is None and ds.sample_targets is None
    batch = next(iter(imgpack.Loader(ds, batch_size=4)))
    assert batch.multilabel is None and batch.targets is None


def test_a_stratified_split_balances_every_multilabel_class(targets_dir, tmp_path):
    out, _ = targets_dir
    data = str(tmp_path / "data")
    cli("convert", out + "/../src", data, "--csv", out + "/../list.csv", "--csv-multilabel",
        "tags", "--size", "24x20", "--labels", "none", "--quiet")
    cli("split", data, "--name", "ml", "--kind", "stratified", "--folds", 3, "--json")
    ds = imgpack.Dataset(data)
    with h5py.File(os.path.join(data, "splits.h5"), "r") as splits:
        assign = splits["splits/ml/assign"][()]
    multilabel = ds.sample_multilabel
    for c, name in enumerate(ds.multilabel_classes):
        members = assign[multilabel[:, c] == 1]
        counts = [int((members == f).sum()) for f in range(3)]
        # Every class's members spread over the folds within one of an even share.
        assert max(counts) - min(counts) <= 1, (name, counts)
    # Every fold within one image of its share (the promise beside the labels' balance).
    sizes = [int((assign == f).sum()) for f in range(3)]
    assert all(abs(size - len(assign) / 3) <= 1 for size in sizes), sizes
