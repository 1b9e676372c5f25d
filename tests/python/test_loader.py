"""imgpack.Loader (python/src/loader_binding.cpp): what it delivers, in which
order, per epoch, against h5py's read of the same records and the C++
Loader's order for the same options."""
import os
import signal

import numpy as np
import pytest
import torch

import imgpack
from conftest import cpp_order


def read_epoch(loader):
    """Every batch of one iteration as plain numpy copies."""
    out = []
    for batch in loader:
        out.append({
            "images": np.from_dlpack(batch.images).copy(),
            "labels": np.from_dlpack(batch.labels).copy(),
            "samples": np.from_dlpack(batch.samples).copy(),
            "records": np.asarray(batch.records).copy(),
            "padding": batch.padding, "epoch": batch.epoch, "index": batch.index,
        })
    return out


def test_every_batch_equals_h5py_read_of_its_records(dataset_dir, reference):
    loader = imgpack.Loader(dataset_dir, split="cv3", fold=1, role="train", batch_size=7,
                            seed=11, threads=3, prefetch=3)
    for epoch in range(3):
        loader.set_epoch(epoch)
        batches = read_epoch(loader)
        assert len(batches) == len(loader)
        seen = []
        for i, b in enumerate(batches):
            assert b["epoch"] == epoch and b["index"] == i
            records = b["records"]
            assert b["images"].shape == (len(records),) + reference.shape
            assert np.array_equal(b["images"], reference.images(records))
            assert b["labels"].tolist() == [reference.label(r) for r in records]
            assert b["samples"].tolist() == [reference.sample(r) for r in records]
            assert b["samples"].tolist() == reference.record_sample[records].tolist()
            seen.extend(b["samples"].tolist())
        # Training reads every training sample once per epoch (one augmented variant each).
        assign = reference.splits["cv3"]["assign"]
        train = sorted(int(s) for s in np.flatnonzero((assign >= 0) & (assign != 1)))
        assert sorted(seen) == train


def test_training_rotates_augmented_variants(dataset_dir, reference):
    loader = imgpack.Loader(dataset_dir, split="cv3", fold=0, role="train", batch_size=16)
    variants = {}
    for _ in range(2):  # two epochs: each of the two augmented variants once
        for batch in loader:
            for record, sample in zip(np.asarray(batch.records), np.asarray(batch.samples)):
                variants.setdefault(int(sample), []).append(int(reference.record_variant[record]))
    assert all(sorted(v) == [1, 2] for v in variants.values()), variants


@pytest.mark.parametrize("options", [
    dict(order="random", seed=5, batch_size=8),
    dict(order="sequential", batch_size=10, last_batch="drop"),
    dict(order="shard-window", window_shards=2, seed=9, batch_size=6, last_batch="pad"),
    dict(split="cv3", fold=2, role="train", variants="all", batch_size=9, seed=1),
    dict(split="cv3", fold=0, role="val", batch_size=4),
    dict(split="cv3", role="test", batch_size=3),
    dict(split="hold", role="train", batch_size=5, seed=3),
    dict(rank=1, world_size=3, batch_size=4, seed=2),
    dict(rank=2, world_size=4, rank_policy="drop", batch_size=5, last_batch="pad", seed=8),
])
def test_order_equals_the_cpp_loaders(dataset_dir, options):
    epochs = (0, 1, 7)
    names = {"batch_size": "batch", "window_shards": "window"}
    expected = cpp_order(dataset_dir, epochs, **{names.get(k, k): v for k, v in options.items()})
    loader = imgpack.Loader(dataset_dir, threads=2, prefetch=2, **options)
    for want in expected:
        loader.set_epoch(want["epoch"])
        got = read_epoch(loader)
        assert [b["records"].tolist() for b in got] == want["batches"]
        assert [b["padding"] for b in got] == want["padding"]


def test_thread_count_and_prefetch_never_change_the_order(dataset_dir):
    def records(threads, prefetch):
        loader = imgpack.Loader(dataset_dir, batch_size=5, seed=4, threads=threads,
                                prefetch=prefetch)
        return [b["records"].tolist() for b in read_epoch(loader)]
    assert records(1, 2) == records(4, 7) == records(2, 3)


def test_iteration_advances_the_epoch_unless_set_epoch_names_one(dataset_dir):
    loader = imgpack.Loader(dataset_dir, batch_size=16, seed=1)
    first = [b["records"].tolist() for b in read_epoch(loader)]
    assert loader.epoch == 0
    second = [b["records"].tolist() for b in read_epoch(loader)]
    assert loader.epoch == 1
    assert first != second  # a new order each epoch, as a shuffling DataLoader gives
    loader.set_epoch(0)
    assert loader.epoch == 0
    assert [b["records"].tolist() for b in read_epoch(loader)] == first
    loader.set_epoch(1)
    assert [b["records"].tolist() for b in read_epoch(loader)] == second
    # An abandoned iteration: the next one starts the next epoch from its first batch.
    it = iter(loader)
    assert next(it).epoch == 2
    assert [b["epoch"] for b in read_epoch(loader)] == [3] * len(loader)
    with pytest.raises(RuntimeError, match="stale"):
        next(it)


def test_set_epoch_takes_integers_in_range_only(dataset_dir):
    loader = imgpack.Loader(dataset_dir, batch_size=16, seed=1)
    for wrong in (1.0, "3", None, True):
        with pytest.raises(TypeError, match="set_epoch\\(epoch\\): epoch must be an int"):
            loader.set_epoch(wrong)
    # The last epoch has no next one: an iteration after it would repeat epoch 0.
    for wrong in (-1, 2**64 - 1, 2**64, 2**70):
        with pytest.raises(ValueError, match="epoch must be in 0..18446744073709551614, not"):
            loader.set_epoch(wrong)
    assert loader.epoch == 0
    loader.set_epoch(np.int64(3))
    assert loader.epoch == 3
    loader.set_epoch(2**64 - 2)
    assert next(iter(loader)).epoch == 2**64 - 2
    # Nor does an iteration go past it (it went on to 2**64 - 1, then epoch 0 again).
    loader.set_epoch(2**64 - 2)
    assert {b.epoch for b in loader} == {2**64 - 2}
    with pytest.raises(ValueError, match="has read epoch 18446744073709551614, the last"):
        iter(loader)
    loader.set_epoch(5)
    assert next(iter(loader)).epoch == 5


def test_epoch_end_keeps_raising_stop_iteration(dataset_dir):
    loader = imgpack.Loader(dataset_dir, batch_size=64)
    it = iter(loader)
    assert sum(len(b) for b in it) == loader.images_per_epoch == 60
    with pytest.raises(StopIteration):
        next(it)


def test_last_batch_policies(dataset_dir):
    sizes = {}
    for policy in ("partial", "drop", "pad"):
        loader = imgpack.Loader(dataset_dir, batch_size=16, last_batch=policy)
        sizes[policy] = [(len(b), b.padding) for b in loader]
    assert sizes["partial"] == [(16, 0)] * 3 + [(12, 0)]
    assert sizes["drop"] == [(16, 0)] * 3
    assert sizes["pad"] == [(16, 0)] * 3 + [(16, 4)]
    dropped = imgpack.Loader(dataset_dir, batch_size=16, drop_last=True)
    assert [len(b) for b in dropped] == [16] * 3
    assert len(dropped) == 3


def test_ranks_together_read_every_record_once(dataset_dir):
    seen = []
    for rank in range(3):
        loader = imgpack.Loader(dataset_dir, rank=rank, world_size=3, batch_size=7, seed=6)
        assert len(loader) == 3  # 60 / 3 = 20 per rank
        seen.extend(r for b in loader for r in np.asarray(b.records).tolist())
    assert sorted(seen) == sorted(set(seen)) and len(seen) == 60


def test_float_output_matches_a_numpy_oracle_of_the_stored_bytes(dataset_dir, reference):
    mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
    # The reader's arithmetic: (x - 255 * mean) * (1 / (255 * std)) in float32, no FMA.
    offset = np.array([np.float32(255.0 * np.float64(np.float32(m))) for m in mean], np.float32)
    scale = np.array([np.float32(1.0 / (255.0 * np.float64(np.float32(s)))) for s in std],
                     np.float32)
    for output, dtype in (("float32", torch.float32), ("float16", torch.float16)):
        loader = imgpack.Loader(dataset_dir, batch_size=11, output=output, mean=mean, std=std,
                                threads=2)
        count = 0
        for batch in loader:
            images = torch.from_dlpack(batch.images)
            assert images.dtype == dtype
            assert batch.images.shape == (len(batch), 3) + reference.shape[:2]
            stored = reference.images(np.asarray(batch.records)).astype(np.float32)
            expected = ((stored - offset) * scale).transpose(0, 3, 1, 2)
            if output == "float16":
                expected = expected.astype(np.float16)
            assert np.array_equal(images.numpy(), expected)
            count += len(batch)
        assert count == 60


def test_unit_range_without_mean_and_std(dataset_dir, reference):
    loader = imgpack.Loader(dataset_dir, batch_size=60, order="sequential", output="float32")
    batch = next(iter(loader))
    stored = reference.images(np.asarray(batch.records)).astype(np.float32)
    expected = ((stored - np.float32(0)) * np.float32(1 / 255.0)).transpose(0, 3, 1, 2)
    assert np.array_equal(np.from_dlpack(batch.images), expected)


def test_pairs_is_a_reiterable_of_images_and_labels(dataset_dir, reference):
    loader = imgpack.Loader(dataset_dir, batch_size=16, seed=2)
    pairs = loader.pairs(torch.from_dlpack)
    assert len(pairs) == 4
    for epoch in range(2):
        total = 0
        for images, labels in pairs:
            assert isinstance(images, torch.Tensor) and images.dtype == torch.uint8
            assert labels.dtype == torch.int32 and labels.shape == (images.shape[0],)
            total += images.shape[0]
        assert total == 60
        assert loader.epoch == epoch


def test_stats_count_what_was_delivered(dataset_dir):
    loader = imgpack.Loader(dataset_dir, batch_size=16, last_batch="pad")
    for _ in loader:
        pass
    s = loader.stats()
    assert (s["batches"], s["images"], s["padding"]) == (4, 64, 4)
    assert s["bytes"] == 64 * 24 * 20 * 3
    assert 0 <= s["wait_seconds"] <= s["consumer_seconds"]
    assert 0 <= s["starvation"] <= 1
    assert s["reader_busy_seconds"] > 0
    loader.reset_stats()
    assert loader.stats()["images"] == 0


def test_properties_and_context_manager(dataset_dir):
    dataset = imgpack.Dataset(dataset_dir)
    with imgpack.Loader(dataset, batch_size=8, prefetch=3, output="float16",
                        mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5)) as loader:
        assert loader.dataset.path == dataset.path
        assert (loader.batch_size, loader.device, loader.output) == (8, "cpu", "float16")
        assert loader.images_per_epoch == 60 and len(loader) == 8
        assert loader.ring_bytes == (3 * 8 * 24 * 20 * 3 * 2, 0)
        assert "batch_size=8" in repr(loader)
        batch = next(iter(loader))
    assert loader.closed and "closed" in repr(loader)
    assert np.from_dlpack(batch.images).shape == (8, 3, 20, 24)  # outlives the loader
    with pytest.raises(RuntimeError, match="closed"):
        iter(loader)
    with pytest.raises(RuntimeError, match="closed"):
        len(loader)
    loader.close()  # again: nothing to do


def test_empty_selection_is_refused(dataset_dir):
    # The split was made without --test: training on it would silently do nothing.
    with pytest.raises(ValueError, match="holds no records: every epoch would be empty"):
        imgpack.Loader(dataset_dir, split="hold", role="test")


def _in_child(work):
    """Runs `work` in a forked child; returns its exit status (124: it hung)."""
    pid = os.fork()
    if pid == 0:
        signal.alarm(30)  # a child that hangs dies of SIGALRM, never the suite
        try:
            code = work()
        except BaseException:  # noqa: BLE001 - the child must never return into pytest
            code = 99
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)


def test_a_loader_made_before_fork_refuses_work_in_the_child(dataset_dir):
    """Its reader threads stay in the parent: in the child, next() says so
    instead of waiting forever, and dropping the loader and its batches joins
    nothing (a torch DataLoader worker that inherits a loader ends cleanly)."""
    loader = imgpack.Loader(dataset_dir, batch_size=4, threads=2)
    held = next(iter(loader))

    def iterate():
        try:
            next(iter(loader))
        except imgpack.Error as e:
            return 0 if "made before the process forked" in str(e) else 2
        return 1

    def drop():
        nonlocal held, loader
        del held
        loader.close()
        del loader
        return 0

    assert _in_child(iterate) == 0
    assert _in_child(drop) == 0
    # The parent's loader goes on as if nothing happened.
    assert sum(len(b) for b in loader) > 0
    # One made in the child works there.
    assert _in_child(lambda: 0 if len(next(iter(imgpack.Loader(dataset_dir, batch_size=4)))) == 4
                     else 1) == 0


def test_a_child_forked_while_another_thread_opens_a_dataset_opens_one_too(dataset_dir):
    """HDF5 holds one global lock inside every call: a fork while another thread
    opens a dataset (an evaluation thread, say) waits until that thread is out
    of HDF5, so that a torch worker making its loader in the child does not
    wait for that lock forever."""
    import threading
    stop = threading.Event()

    def churn():
        while not stop.is_set():
            imgpack.Dataset(dataset_dir)

    thread = threading.Thread(target=churn)
    thread.start()
    try:
        statuses = [_in_child(lambda: 0 if len(imgpack.Loader(dataset_dir, batch_size=4)) > 0
                              else 1) for _ in range(8)]
    finally:
        stop.set()
        thread.join()
    assert statuses == [0] * 8, statuses


FIRST_OPEN_AND_FORK = r"""
import os, sys, threading
import imgpack
threading.Thread(target=imgpack.Dataset, args=(sys.argv[1],), daemon=True).start()
pid = os.fork()
if pid == 0:
    imgpack.Dataset(sys.argv[1])
    os._exit(0)
_, status = os.waitpid(pid, 0)
sys.exit(os.WEXITSTATUS(status))
"""


def test_a_fork_during_the_first_dataset_opened_in_the_process_leaves_a_working_child(
        dataset_dir):
    """The fork barrier is set up when the module loads, not by the first file
    opened: a fork while another thread set it up left the child waiting on
    the setup's guard forever."""
    import subprocess
    import sys
    for attempt in range(10):
        done = subprocess.run([sys.executable, "-c", FIRST_OPEN_AND_FORK, dataset_dir],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, (attempt, done.returncode, done.stderr)

