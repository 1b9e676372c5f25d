"""Many epochs of small batches, every batch taken every way the module
offers, leave no slot, capsule or Python object behind and do not grow the
process's memory."""
import gc
import resource
import tracemalloc

import numpy as np
import pytest
import torch

import imgpack

PREFETCH = 3


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def take_every_way(loader):
    """One epoch; every view of every batch, and a capsule nobody consumes."""
    images = 0
    for batch in loader:
        views = (torch.from_dlpack(batch.images), torch.from_dlpack(batch.labels),
                 np.from_dlpack(batch.samples), np.asarray(batch.records))
        batch.images.__dlpack__()  # dropped unconsumed: its destructor frees it
        assert all(len(v) == len(batch) for v in views)
        images += len(batch)
    return images


def run_epochs(loader, pairs, epochs):
    for _ in range(epochs):
        assert take_every_way(loader) == 60
        assert sum(x.shape[0] for x, _ in pairs) == 60


def test_two_hundred_epochs_leak_nothing(dataset_dir):
    loader = imgpack.Loader(dataset_dir, batch_size=4, prefetch=PREFETCH, threads=2,
                            output="float32")
    pairs = loader.pairs(torch.from_dlpack)
    run_epochs(loader, pairs, 10)  # 20 epochs of warm-up: allocator pools, torch caches
    gc.collect()
    rss_before = rss_bytes()
    tracemalloc.start()
    traced_before = tracemalloc.get_traced_memory()[0]
    run_epochs(loader, pairs, 90)  # 180 more: 200 epochs in all
    gc.collect()
    traced_growth = tracemalloc.get_traced_memory()[0] - traced_before
    tracemalloc.stop()
    rss_growth = rss_bytes() - rss_before
    # 180 epochs x 15 batches x ~10 objects: one leaked object per batch would
    # be more than 100 KiB of Python memory.
    print("Python memory growth %d bytes, RSS growth %d bytes" % (traced_growth, rss_growth))
    assert traced_growth < 64 * 1024, "Python memory grew by %d bytes" % traced_growth
    assert rss_growth < 8 * 2**20, "RSS grew by %d bytes" % rss_growth
    stats = loader.stats()
    assert stats["batches"] == 200 * 15

    # No slot leaked: 2 x PREFETCH + 2 batches can be held at once (the ring
    # grows for batches kept alive), and not one more.
    it = iter(loader)
    held = [next(it) for _ in range(2 * PREFETCH + 2)]
    with pytest.raises(imgpack.Error, match="all %d prefetch slots" % (2 * PREFETCH + 2)):
        next(it)
    del held
    assert next(it).index == 2 * PREFETCH + 2


def test_loaders_made_and_dropped_leave_nothing(dataset_dir):
    def cycle():
        loader = imgpack.Loader(dataset_dir, batch_size=16, prefetch=2, threads=2)
        kept = torch.from_dlpack(next(iter(loader)).images)  # outlives its loader
        del loader
        return int(kept.sum())
    for _ in range(20):
        cycle()
    gc.collect()
    before = rss_bytes()
    for _ in range(200):
        cycle()
    gc.collect()
    assert rss_bytes() - before < 8 * 2**20
