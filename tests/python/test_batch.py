"""imgpack.Batch and imgpack.Array (python/src/batch_binding.cpp): zero-copy
DLPack views whose lifetime holds the loader's slot."""
import gc
import threading

import numpy as np
import pytest
import torch

import imgpack


def test_arrays_describe_the_batch(dataset_dir, reference):
    loader = imgpack.Loader(dataset_dir, batch_size=16, order="sequential")
    batch = next(iter(loader))
    assert len(batch) == 16 and batch.padding == 0 and batch.epoch == 0 and batch.index == 0
    assert batch.device == "cpu"
    assert repr(batch).startswith("<imgpack.Batch epoch=0 index=0 size=16")
    images = batch.images
    assert images.shape == (16, 20, 24, 3) and images.dtype == np.uint8
    assert images.device == "cpu" and images.nbytes == 16 * 20 * 24 * 3 and len(images) == 16
    assert images.__dlpack_device__() == (1, 0)
    assert repr(images) == "<imgpack.Array uint8[16, 20, 24, 3] on cpu>"
    for name, dtype in (("labels", np.int32), ("samples", np.int64), ("records", np.uint64)):
        column = getattr(batch, name)
        assert column.shape == (16,) and column.dtype == dtype and column.device == "cpu"
    records = np.asarray(batch.records)
    assert np.array_equal(np.asarray(batch.images), reference.images(records))


def test_views_share_the_slots_memory(dataset_dir):
    loader = imgpack.Loader(dataset_dir, batch_size=8)
    batch = next(iter(loader))
    tensor = torch.from_dlpack(batch.images)
    array = np.from_dlpack(batch.images)
    viewed = np.asarray(batch.images)
    assert tensor.data_ptr() == array.ctypes.data == viewed.ctypes.data
    labels = torch.from_dlpack(batch.labels)
    assert labels.data_ptr() == np.asarray(batch.labels).ctypes.data
    tensor[0, 0, 0, 0] = 255 - int(tensor[0, 0, 0, 0])  # one memory: every view sees it
    assert int(array[0, 0, 0, 0]) == int(tensor[0, 0, 0, 0]) == int(viewed[0, 0, 0, 0])


def test_held_tensors_stay_intact_while_later_batches_are_read(dataset_dir, reference):
    # 20 batches held across epochs: if a slot went back to the ring while a
    # tensor still viewed it, the later batches would be written over them.
    loader = imgpack.Loader(dataset_dir, batch_size=4, prefetch=24, threads=3, seed=7)
    held = []
    for batch in loader:  # epoch 0: 15 batches
        held.append((torch.from_dlpack(batch.images), torch.from_dlpack(batch.labels),
                     np.asarray(batch.records).copy()))
    it = iter(loader)  # epoch 1
    for _ in range(5):
        batch = next(it)
        held.append((torch.from_dlpack(batch.images), torch.from_dlpack(batch.labels),
                     np.asarray(batch.records).copy()))
    del batch
    assert len(held) == 20
    snapshots = [(images.clone(), labels.clone()) for images, labels, _ in held]
    later = 0
    for _ in range(3):  # three more epochs, through the 4 free slots
        for batch in loader:
            later += 1
            assert torch.from_dlpack(batch.images).sum() >= 0
    assert later == 3 * 15

    def check():
        for (images, labels, records), (image_copy, label_copy) in zip(held, snapshots):
            assert torch.equal(images, image_copy) and torch.equal(labels, label_copy)
            assert np.array_equal(images.numpy(), reference.images(records))
            assert labels.tolist() == [reference.label(r) for r in records]
    check()
    del it
    del loader
    gc.collect()
    check()  # the slots outlive the loader
    # Another loader reading meanwhile cannot take their memory either.
    other = imgpack.Loader(dataset_dir, batch_size=4, prefetch=24, threads=3)
    for _ in range(2):
        for batch in other:
            pass
    check()


def test_a_kept_tensor_holds_its_slot_and_dropping_it_frees_the_slot(dataset_dir):
    loader = imgpack.Loader(dataset_dir, batch_size=4, prefetch=2)
    it = iter(loader)
    first = next(it)
    labels = torch.from_dlpack(first.labels)  # only the labels are kept
    del first
    # The ring grows for kept batches: 2 x prefetch + 2 may be alive at once.
    others = [next(it) for _ in range(5)]
    with pytest.raises(imgpack.Error, match="prefetch slots are held.*tensor.clone"):
        next(it)
    del labels  # the last view of the first batch: its slot returns to the ring
    after = next(it)
    assert (others[-1].index, after.index) == (5, 6)


def test_unconsumed_and_consumed_capsules(dataset_dir):
    loader = imgpack.Loader(dataset_dir, batch_size=4, prefetch=2)
    it = iter(loader)
    batch = next(it)
    capsule = batch.images.__dlpack__()
    assert type(capsule).__name__ == "PyCapsule"
    del batch
    others = [next(it) for _ in range(5)]  # a full grown ring: 2 x prefetch + 2
    with pytest.raises(imgpack.Error):
        next(it)  # the capsule alone holds the first slot
    del capsule  # never consumed: its destructor frees the tensor and the slot
    del others
    batch = next(it)
    capsule = batch.labels.__dlpack__()
    tensor = torch.from_dlpack(capsule)  # consumed: the tensor owns it now
    del batch, capsule
    others = [next(it) for _ in range(5)]
    with pytest.raises(imgpack.Error):
        next(it)
    assert tensor.shape == (4,)
    del tensor
    assert next(it).index == 12


def test_for_loop_holding_the_previous_batch_grows_a_ring_of_one(dataset_dir):
    # `for batch in loader` holds the previous batch while it asks for the next:
    # with prefetch 1 the loader adds a slot for it.
    loader = imgpack.Loader(dataset_dir, batch_size=30, prefetch=1)
    assert [batch.index for batch in loader] == [0, 1]
    it = iter(loader)
    held = [next(it), next(it)]  # an epoch's two batches, both kept
    it = iter(loader)
    held += [next(it), next(it)]  # 2 x prefetch + 2 alive: the most the ring grows to
    it = iter(loader)
    with pytest.raises(imgpack.Error, match="all 4 prefetch slots"):
        next(it)
    del held


def test_dlpack_arguments(dataset_dir):
    loader = imgpack.Loader(dataset_dir, batch_size=4)
    array = next(iter(loader)).labels
    for kwargs in ({}, {"stream": None}, {"max_version": (1, 0)}, {"dl_device": (1, 0)},
                   {"copy": False}, {"copy": None}):
        assert torch.from_dlpack(array.__dlpack__(**kwargs)).shape == (4,)
    with pytest.raises(BufferError, match="views"):
        array.__dlpack__(copy=True)
    with pytest.raises(BufferError, match="dl_device"):
        array.__dlpack__(dl_device=(2, 0))
    with pytest.raises(TypeError):
        array.__dlpack__(None)  # keyword-only, as the protocol has it
    assert np.asarray(array, dtype=np.int64).dtype == np.int64
    copied = np.asarray(array).copy()
    assert np.array_equal(array.__array__(copy=True), copied)
    # NumPy 2's protocol: copy=False is a view or a ValueError, never a copy.
    view = array.__array__(copy=False)
    assert view.ctypes.data == np.asarray(array).ctypes.data
    assert array.__array__(array.dtype, copy=False).ctypes.data == view.ctypes.data
    with pytest.raises(ValueError, match="copy=False"):
        array.__array__(np.float64, copy=False)
    converted = array.__array__(np.float64)
    assert converted.dtype == np.float64 and np.array_equal(converted, copied)


def test_batches_and_tensors_may_be_dropped_on_other_threads(dataset_dir):
    loader = imgpack.Loader(dataset_dir, batch_size=3, prefetch=4, threads=2)
    for _ in range(3):
        kept = []
        total = 0
        for batch in loader:
            total += len(batch)
            kept.append((batch, torch.from_dlpack(batch.images)))
            if len(kept) == 2:
                worker = threading.Thread(target=kept.clear)
                worker.start()
                worker.join()
            del batch
        kept.clear()
        assert total == 60
