"""Batches kept alive by a training loop (LoaderOptions::prefetch): the labels
of the last 2 x prefetch batches kept as views, without clones, for metrics,
as a loop over DataLoader batches would keep them. The ring grows rather than
stop, delivers what a loop releasing every batch gets, and refuses only one
batch more."""
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
    assert len(loader) > 2 * PREFETCH + 1
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
    added = loader.stats()
    if "added_slots" in added:  # exposed by the binding (LoaderStats::added_slots)
        assert added["added_slots"] == PREFETCH + 1


def test_one_batch_more_than_twice_prefetch_is_refused_with_the_bound(dataset_dir):
    loader = imgpack.Loader(dataset_dir, **OPTIONS)
    it = iter(loader)
    kept = [torch.from_dlpack(next(it).labels) for _ in range(2 * PREFETCH + 1)]
    with pytest.raises(imgpack.Error, match=r"at most 2 x prefetch = 8 batches alive"):
        next(it)
    del kept[0]  # one view gone: its slot returns to the ring
    assert next(it).index == 2 * PREFETCH + 1
