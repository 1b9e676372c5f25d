"""The host half of test_cuda.py's checks, on host loaders, so that it runs
on every machine: test_cuda.py skips without a CUDA device, and its helpers
once kept every host batch alive (epoch_tensors kept images.cpu(), which of
a host tensor is the tensor itself) without any run noticing."""
import numpy as np
import pytest
import torch

import imgpack
from cuda_checks import COMPARED, MEAN, STD, epoch_tensors, normalized

PREFETCH = 2


@pytest.mark.parametrize("output", ["uint8", "float32", "float16"])
def test_epoch_tensors_of_a_host_loader_hold_no_slot(dataset_dir, reference, output):
    # test_cuda.py's host side with a smaller batch and ring: more batches
    # than the ring can hold, even grown for kept batches (2 x prefetch + 2),
    # so that a helper keeping views of the slots fails here.
    norm = {} if output == "uint8" else dict(mean=MEAN, std=STD)
    loader = imgpack.Loader(dataset_dir, **dict(COMPARED, batch_size=3), prefetch=PREFETCH,
                            output=output, **norm)
    assert len(loader) > 2 * PREFETCH + 2
    tensors = epoch_tensors(loader)
    assert len(tensors) == len(loader)
    delivered = []
    for images, labels, records, device in tensors:
        assert device.type == "cpu"
        # Intact after the whole epoch went through the ring: copies, not views.
        assert np.array_equal(images.numpy(), normalized(reference.images(records), output))
        assert labels.tolist() == [int(reference.label(r)) for r in records]
        delivered += records.tolist()
    again = epoch_tensors(imgpack.Loader(dataset_dir, **dict(COMPARED, batch_size=3)))
    assert delivered == [r for _, _, records, _ in again for r in records.tolist()]


def test_epoch_tensors_of_the_compared_host_loader(dataset_dir, reference):
    # The very host loader test_cuda.py compares device batches with.
    tensors = epoch_tensors(imgpack.Loader(dataset_dir, **COMPARED))
    assert len(tensors) > 4  # the default prefetch: more than 4 batches
    for images, labels, records, device in tensors:
        assert device.type == "cpu" and images.dtype == torch.uint8
        assert np.array_equal(images.numpy(), reference.images(records))


def test_host_batch_arrays_under_the_device_tests_calls(dataset_dir):
    # test_cuda.py's calls on a device batch, made on a host batch: the
    # images are host memory and the DLPack stream argument means nothing.
    loader = imgpack.Loader(dataset_dir, batch_size=8, output="float16", mean=MEAN, std=STD)
    batch = next(iter(loader))
    assert batch.device == "cpu" and batch.images.device == "cpu"
    assert batch.images.__dlpack_device__() == (1, 0)
    assert batch.labels.device == "cpu"
    view = np.asarray(batch.images)
    for stream in (None, 1, 2, -1):
        tensor = torch.from_dlpack(batch.images.__dlpack__(stream=stream))
        assert tensor.device.type == "cpu" and tensor.data_ptr() == view.ctypes.data
