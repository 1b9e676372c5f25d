"""imgpack.Dataset and imgpack.Split (python/src/dataset_binding.cpp) against
h5py's read of index.h5."""
import pathlib

import numpy as np
import pytest

import imgpack


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
    with pytest.raises(IndexError):
        ds.sample_path(60)
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
