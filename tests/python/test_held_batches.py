"""Batches kept alive by a training loop (LoaderOptions::prefetch): the labels
of 2 x prefetch batches kept as views, without clones, for metrics (the last
ones, or the first ones through the epoch), as a loop over DataLoader batches
would keep them. The ring grows rather than stop, delivers what a loop
releasing every batch gets, and refuses only one batch more."""
import collections

import numpy as np
import pytest
import torch

import imgpack

PREFETCH = 4
OPTIONS = dict(batch_size=4, prefetch=PREFETCH, threads=2, seed=11)


def released_epoch(dataset_dir, epoch):
    """(labels, records) of every batch of `epoch`, each batch copied and released."""
    loader = imgpack.Loader(dataset_dir, **OPTIONS)
    loader.set_epoch(epoch)
    return [(np.from_dlpack(b.labels).copy(), np.from_dlpack(b.records).copy()) for b in loader]


def test_labels_of_eight_batches_kept_as_views_with_prefetch_four(dataset_dir):
    loader = imgpack.Loader(dataset_dir, **OPTIONS)
    assert len(loader) > 2 * PREFETCH + 2
    for epoch in (0, 1):
        expected = released_epoch(dataset_dir, epoch)
        loader.set_epoch(epoch)
        kept = collections.deque(maxlen=2 * PREFETCH)  # metrics over the last 8 batches
        records = []
        for batch in loader:  # the loop variable holds the batch while the next is asked for
            labels = torch.from_dlpack(batch.labels)  # a view of the slot: no clone
            assert labels.data_ptr() == np.from_dlpack(batch.labels).ctypes.data
            kept.append((batch.index, labels))
            records.append(np.from_dlpack(batch.records).copy())
            # Every kept view still shows what its batch was delivered with.
            for index, view in kept:
                assert np.array_equal(view.numpy(), expected[index][0])
        assert len(records) == len(expected)
        for got, (_, want) in zip(records, expected):
            assert np.array_equal(got, want)
        del batch, labels, kept
    assert loader.stats()["added_slots"] == PREFETCH + 1


def test_labels_of_the_first_eight_batches_kept_through_the_epoch(dataset_dir):
    # Kept for the whole epoch while a for loop goes on: 8 kept, the loop's
    # variable holding a ninth while it asks for a tenth.
    loader = imgpack.Loader(dataset_dir, **OPTIONS)
    expected = released_epoch(dataset_dir, 0)
    loader.set_epoch(0)
    kept = []
    for batch in loader:
        if len(kept) < 2 * PREFETCH:
            kept.append(torch.from_dlpack(batch.labels))
    assert batch.index == len(expected) - 1
    for index, labels in enumerate(kept):
        assert np.array_equal(labels.numpy(), expected[index][0])
    assert loader.stats()["added_slots"] == PREFETCH + 2


def test_one_batch_more_than_twice_prefetch_and_the_one_in_use_is_refused(dataset_dir):
    loader = imgpack.Loader(dataset_dir, **OPTIONS)
    it = iter(loader)
    kept = [torch.from_dlpack(next(it).labels) for _ in range(2 * PREFETCH + 2)]
    with pytest.raises(imgpack.Error,
                       match=r"at most 2 x prefetch = 8 batches alive besides the one it is using"):
        next(it)
    del kept[0]  # one view gone: its slot returns to the ring
    assert next(it).index == 2 * PREFETCH + 2
