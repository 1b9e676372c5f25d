"""Loader checkpoints from Python (state() / restore()) and class-balanced
sampling: the C++ LoaderState and Sampling through the module."""
import collections

import numpy as np
import pytest

import imgpack


def records_of(batches):
    """The records of `batches`, padding entries left out."""
    out = []
    for b in batches:
        records = [int(r) for r in np.from_dlpack(b.records)]
        out += records[:len(records) - b.padding]
    return out


def test_restore_continues_the_epoch_where_the_checkpoint_was(dataset_dir):
    options = dict(batch_size=6, seed=3, threads=2)
    loader = imgpack.Loader(dataset_dir, **options)
    loader.set_epoch(2)
    it = iter(loader)
    before = records_of(next(it) for _ in range(3))
    saved = loader.state()
    assert isinstance(saved, bytes) and saved
    rest = records_of(it)
    assert len(before) + len(rest) == loader.images_per_epoch

    resumed = imgpack.Loader(dataset_dir, **options)
    resumed.restore(saved)
    assert resumed.epoch == 2
    resumed.set_epoch(2)  # as a training loop does: keeps the restored position
    assert records_of(resumed) == rest

    # On two ranks with the same global batch (2 x 3), the ranks together
    # deliver exactly the rest of the epoch.
    delivered = []
    for rank in range(2):
        elastic = imgpack.Loader(dataset_dir, batch_size=3, seed=3, rank=rank, world_size=2)
        elastic.restore(saved)
        delivered += records_of(elastic)
    assert sorted(delivered) == sorted(rest)
    with pytest.raises(ValueError, match="batch_size"):
        imgpack.Loader(dataset_dir, batch_size=6, seed=3, world_size=2).restore(saved)


def test_restore_refuses_other_options_and_damaged_bytes(dataset_dir):
    saved = imgpack.Loader(dataset_dir, batch_size=4, seed=1).state()
    with pytest.raises(ValueError, match="seed"):
        imgpack.Loader(dataset_dir, batch_size=4, seed=2).restore(saved)
    with pytest.raises(imgpack.Error):
        imgpack.Loader(dataset_dir, batch_size=4, seed=1).restore(saved[:-3] + b"xyz")


def test_class_balanced_sampling_draws_classes_equally(dataset_dir):
    loader = imgpack.Loader(dataset_dir, batch_size=50, sampling="class-balanced",
                            epoch_length=3000, seed=5)
    counts = collections.Counter(int(label) for b in loader for label in np.from_dlpack(b.labels))
    assert sum(counts.values()) == 3000
    share = 3000 / len(counts)
    for label, count in counts.items():
        assert abs(count - share) < 5 * (share ** 0.5), (label, count, counts)
    with pytest.raises(ValueError):
        imgpack.Loader(dataset_dir, sampling="often")
    with pytest.raises(TypeError):
        imgpack.Loader(dataset_dir, sampling="weighted", weights="heavy")
