"""imgpack.Dataset and imgpack.Split (python/src/dataset_binding.cpp) against
h5py's read of index.h5."""
import os
import pathlib
import shutil

import numpy as np
import pytest

import imgpack
from conftest import cli


def test_dataset_describes_the_index(dataset_dir, reference):
    ds = imgpack.Dataset(dataset_dir)
    assert len(ds) == ds.num_samples == 60
    assert ds.num_records == 180 and ds.variants == 3
    assert ds.num_shards == len(reference.files) > 1
    assert ds.shape == reference.shape == (20, 24, 3)
    assert ds.color == "rgb" and len(ds.uuid) > 0
    assert ds.path == dataset_dir
    assert ds.classes == reference.classes == ["circle", "square", "star", "triangle"]
    assert ds.groups == ["g%02d" % g for g in range(6)]
    assert ds.sample_paths.tolist() == reference.sample_path
    assert ds.sample_labels.dtype == np.int32 and ds.sample_groups.dtype == np.int32
    assert np.array_equal(ds.sample_labels, reference.sample_label)
    assert np.array_equal(ds.sample_groups, reference.sample_group)
    for path, label in zip(ds.sample_paths, ds.sample_labels):
        assert path.split("/")[0] == ds.classes[label]
    assert repr(ds).startswith("<imgpack.Dataset '%s' 60 samples, 180 records" % dataset_dir)


def test_sample_paths_are_read_on_demand(dataset_dir, reference):
    ds = imgpack.Dataset(dataset_dir)
    assert [ds.sample_path(s) for s in (0, 17, 59)] == [reference.sample_path[s]
                                                        for s in (0, 17, 59)]
    for outside in (60, -1):
        with pytest.raises(IndexError, match="sample %d of 60" % outside):
            ds.sample_path(outside)
    # Each access reads them anew: the arrays are the caller's.
    first, second = ds.sample_paths, ds.sample_paths
    assert first is not second and first.tolist() == second.tolist()


def test_splits(dataset_dir, reference):
    splits = imgpack.Dataset(dataset_dir).splits
    assert sorted(splits) == ["cv3", "hold"]
    cv3, hold = splits["cv3"], splits["hold"]
    assert (cv3.name, cv3.kind, cv3.folds, cv3.stratified, cv3.grouped) == (
        "cv3", "stratified-group", 3, True, True)
    assert cv3.test_fraction == pytest.approx(0.1) and cv3.val_fraction == 0
    assert (hold.kind, hold.folds) == ("holdout", 2)
    assert hold.val_fraction == pytest.approx(0.25)
    for split in (cv3, hold):
        attrs = reference.splits[split.name]
        assert split.seed == attrs["seed"] and split.created == attrs["created"]
        assert split.assign.dtype == np.int16
        assert np.array_equal(split.assign, attrs["assign"])
    assert (cv3.assign == -1).any() and "stratified-group" in repr(cv3)


def test_arrays_are_read_only_views_that_outlive_the_dataset(dataset_dir, reference):
    ds = imgpack.Dataset(pathlib.Path(dataset_dir))  # os.PathLike works too
    labels, assign = ds.sample_labels, ds.splits["cv3"].assign
    with pytest.raises(ValueError):
        labels[0] = 1
    with pytest.raises(ValueError):
        assign[0] = 1
    del ds
    assert np.array_equal(labels, reference.sample_label)
    assert np.array_equal(assign, reference.splits["cv3"]["assign"])


def test_verify_checksums_at_open(dataset_dir):
    assert len(imgpack.Dataset(dataset_dir, verify_checksums=True)) == 60


def test_names_that_are_not_utf8_come_back_as_os_fsdecode_gives_them(tmp_path):
    """A dataset keeps a file or folder name in another encoding (Latin-1) as its
    bytes; Python sees it surrogate-escaped, as os.listdir shows such names, and
    os.fsencode() gives the bytes back. Paths in that encoding open (and are the
    dataset's path), and a message naming one keeps the rest of its text."""
    src = tmp_path / "src"
    cli("sample-data", src, "--classes", 2, "--per-class", 3, "--size", "32x24", "--quiet")
    latin1_class = os.fsdecode(b"caf\xe9")
    latin1_file = os.fsdecode(b"cr\xe8me.jpg")
    first_class = sorted(p for p in os.listdir(src) if (src / p).is_dir())[0]
    image = sorted((src / first_class).iterdir())[0]
    (src / latin1_class).mkdir()
    shutil.copy(image, src / latin1_class / latin1_file)
    out = tmp_path / os.fsdecode(b"donn\xe9es")
    cli("convert", src, out, "--size", "16", "--quiet")

    for path in (out, os.fsencode(out), pathlib.Path(out)):
        dataset = imgpack.Dataset(path)
        assert latin1_class in dataset.classes
        paths = list(dataset.sample_paths)
        assert latin1_class + "/" + latin1_file in paths
        assert os.fsencode(latin1_class + "/" + latin1_file) == b"caf\xe9/cr\xe8me.jpg"
        assert dataset.sample_path(paths.index(latin1_class + "/" + latin1_file)) == \
            latin1_class + "/" + latin1_file
        assert "donn" in repr(dataset)
        assert dataset.path == str(out)
        assert os.fsencode(dataset.path) == os.fsencode(out)
    loader = imgpack.Loader(out, batch_size=2)
    assert sum(len(batch) for batch in loader) == len(paths)
    assert "donn" in repr(loader)
    assert loader.dataset.path == str(out)

    missing = tmp_path / os.fsdecode(b"nirgendw\xe4")
    with pytest.raises((imgpack.Error, ValueError)) as raised:
        imgpack.Dataset(missing)
    assert "nirgendw\\xe4" in str(raised.value)
