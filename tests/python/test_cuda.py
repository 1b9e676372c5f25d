"""The module on a CUDA device: device batches as torch CUDA tensors, the
DLPack stream protocol, normalization on the GPU. Skipped without a device
(and without a CUDA build of torch); test_cuda_host.py runs the host half of
these checks everywhere."""
import numpy as np
import pytest
import torch

import imgpack
from cuda_checks import COMPARED, MEAN, STD, epoch_tensors

pytestmark = pytest.mark.skipif(
    not (torch.cuda.is_available() and imgpack.cuda_device_count() > 0),
    reason="needs a CUDA device visible to both torch (%s) and imgpack (%d)" % (
        torch.cuda.is_available(), imgpack.cuda_device_count()))


@pytest.mark.parametrize("output", ["uint8", "float32", "float16"])
@pytest.mark.parametrize("direct_upload", [False, True, "auto"])
def test_device_batches_equal_host_batches(dataset_dir, output, direct_upload):
    norm = {} if output == "uint8" else dict(mean=MEAN, std=STD)
    options = dict(COMPARED, output=output, **norm)
    host = epoch_tensors(imgpack.Loader(dataset_dir, **options))
    device = epoch_tensors(imgpack.Loader(dataset_dir, device="cuda:0",
                                          direct_upload=direct_upload, **options))
    assert len(host) == len(device) > 0
    for (h_images, h_labels, h_records, h_dev), (d_images, d_labels, d_records, d_dev) in zip(
            host, device):
        assert h_dev.type == "cpu" and d_dev == torch.device("cuda", 0)
        assert np.array_equal(h_records, d_records)
        assert torch.equal(h_labels, d_labels)
        assert h_images.dtype == d_images.dtype
        assert torch.equal(h_images, d_images)  # bit for bit: same arithmetic on both


def test_device_batch_arrays(dataset_dir):
    loader = imgpack.Loader(dataset_dir, batch_size=8, device="cuda:0", output="float16",
                            mean=MEAN, std=STD)
    batch = next(iter(loader))
    assert batch.device == "cuda:0" and batch.images.device == "cuda:0"
    assert batch.images.__dlpack_device__() == (2, 0)
    assert batch.labels.device == "cpu"  # labels, samples and records stay in host memory
    with pytest.raises(TypeError, match="cuda:0"):
        np.asarray(batch.images)
    with pytest.raises(ValueError, match="ambiguous"):
        batch.images.__dlpack__(stream=0)
    # The legacy default stream, the per-thread default stream, no synchronization.
    for stream in (None, 1, 2, -1):
        assert torch.from_dlpack(batch.images.__dlpack__(stream=stream)).is_cuda


def test_slot_is_recycled_only_after_the_consumer_streams_work(dataset_dir, reference):
    # The consumer queues a long GPU sleep, then a copy of the batch, on its
    # own stream, and drops the tensor at once. The slot goes back to the ring
    # then, but its next upload must wait for that copy: otherwise later
    # batches would overwrite the memory before the copy reads it.
    loader = imgpack.Loader(dataset_dir, batch_size=8, prefetch=2, device="cuda:0",
                            order="sequential", variants="all", threads=2)
    it = iter(loader)
    side = torch.cuda.Stream()
    copies = []
    for _ in range(3):
        batch = next(it)
        expected = reference.images(np.asarray(batch.records))
        with torch.cuda.stream(side):
            torch.cuda._sleep(200_000_000)  # about 0.1 s of GPU time on `side`
            view = torch.from_dlpack(batch.images)  # `side` waits for the upload
            copies.append((view.clone(), expected))  # queued after the sleep
        del view, batch  # the slot is reused only after the clone on `side`
    for _ in range(12):  # later batches cycle through both slots
        batch = next(it)
        torch.from_dlpack(batch.images).float().sum()
        del batch
    torch.cuda.synchronize()
    for copy, expected in copies:
        assert np.array_equal(copy.cpu().numpy(), expected)


def test_exports_to_two_streams_both_finish_before_reuse(dataset_dir, reference):
    loader = imgpack.Loader(dataset_dir, batch_size=8, prefetch=2, device="cuda:0",
                            order="sequential", variants="all")
    it = iter(loader)
    first, second = torch.cuda.Stream(), torch.cuda.Stream()
    batch = next(it)
    expected = reference.images(np.asarray(batch.records))
    with torch.cuda.stream(first):
        torch.cuda._sleep(300_000_000)
        a = torch.from_dlpack(batch.images).clone()
    with torch.cuda.stream(second):
        b = torch.from_dlpack(batch.images).clone()
    del batch
    for _ in range(8):
        next(it)
    torch.cuda.synchronize()
    assert np.array_equal(a.cpu().numpy(), expected)
    assert np.array_equal(b.cpu().numpy(), expected)


def test_consumer_stream_waits_for_the_upload(dataset_dir, reference):
    loader = imgpack.Loader(dataset_dir, batch_size=180, variants="all", device="cuda:0",
                            output="float32", mean=MEAN, std=STD, prefetch=3)
    host = imgpack.Loader(dataset_dir, batch_size=180, variants="all", output="float32",
                          mean=MEAN, std=STD)
    side = torch.cuda.Stream()
    for epoch in range(3):
        host.set_epoch(epoch)
        expected = [torch.from_dlpack(b.images).clone() for b in host]
        loader.set_epoch(epoch)
        for batch, want in zip(loader, expected):
            with torch.cuda.stream(side):  # read at once on another stream than torch's default
                got = torch.from_dlpack(batch.images).clone()
            side.synchronize()
            assert torch.equal(got.cpu(), want)


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two CUDA devices")
def test_the_programs_current_device_is_kept(dataset_dir):
    torch.cuda.set_device(1)
    loader = imgpack.Loader(dataset_dir, batch_size=8, device="cuda:0")
    for batch in loader:
        torch.from_dlpack(batch.images)
        assert torch.cuda.current_device() == 1
    del loader
    assert torch.cuda.current_device() == 1


def test_automatic_upload_is_direct_for_a_small_dataset_and_staged_with_crop(dataset_dir):
    plain = imgpack.Loader(dataset_dir, device="cuda:0", batch_size=8).stats()
    assert plain["direct_upload"] is True, plain["upload"]
    assert plain["upload"].startswith("direct (direct_upload auto)")
    cropped = imgpack.Loader(dataset_dir, device="cuda:0", batch_size=8, crop=8).stats()
    assert cropped["direct_upload"] is False
    assert "online crop or flip" in cropped["upload"]
