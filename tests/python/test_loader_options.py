"""Loader keyword arguments (python/src/loader_options.cpp): every one maps
to its LoaderOptions field; wrong values are ValueError, wrong types TypeError."""
import numpy as np
import pytest
import torch

import imgpack


@pytest.mark.parametrize("kwargs, message", [
    (dict(batch_size=0), "batch_size must be at least 1, not 0"),
    # Past the type's largest value, that bound is named (not "at least 1").
    (dict(crop=(5, 2**32 + 3)), "crop width must be at most 4294967295, not 4294967299"),
    (dict(batch_size=-3), "batch_size"),
    (dict(threads=-1), "threads"),
    (dict(threads=5000), "threads"),
    (dict(prefetch=0), "prefetch must be between 1 and 4096, not 0"),
    (dict(seed=-1), "seed"),
    (dict(seed=2**64), "seed"),
    (dict(world_size=0), "world_size"),
    (dict(rank=2, world_size=2), "rank 2"),
    (dict(window_shards=0), "window_shards"),
    (dict(role="training"), "training"),
    (dict(variants="some"), "some"),
    (dict(order="shuffled"), "shuffled"),
    (dict(last_batch="keep"), "keep"),
    (dict(rank_policy="wrap"), "wrap"),
    (dict(drop_last=True, last_batch="pad"), "drop_last"),
    (dict(device="tpu"), "tpu"),
    (dict(device="cuda:x"), "cuda:x"),
    (dict(output="int8"), "int8"),
    (dict(output="float32", mean=(0.5, 0.5)), "mean needs 3"),
    (dict(output="float32", std=(0.5, 0.5, 0.5, 0.5)), "std needs 3"),
    (dict(output="float32", std=(0.5, 0.0, 0.5)), "stddev must be positive"),
    (dict(output="float32", std=(0.5, float("inf"), 0.5)), "stddev must be positive and finite"),
    (dict(output="float32", mean=(float("nan"), 0.0, 0.0)), "mean must be finite"),
    # Tiny: the output would hold inf (1 / 1e-8 passes float16's 65504, 1 / 1e-45 float32's).
    (dict(output="float16", std=(0.5, 1e-8, 0.5)),
     "stddev 1e-08 with mean 0 for channel 1 gives values up to 1e[+]08, past the largest float16"),
    (dict(output="float32", std=(1e-45, 0.5, 0.5)), "past the largest float32"),
    (dict(batch_size=2**62, world_size=4), "does not fit in 64 bits"),
    (dict(fold=3), "fold=3 needs a split"),
    (dict(crop_mode="center"), "crop_mode applies to a crop"),
    (dict(sampling="class-balanced", epoch_length=2**62), "epoch_length 4611686018427387904 would"),
    (dict(mean=(0.5, 0.5, 0.5)), "float output"),
    (dict(direct_upload=True), "direct upload needs a CUDA device"),
    (dict(direct_upload="on"), "direct upload needs a CUDA device"),
    (dict(direct_upload="sometimes"), "direct upload setting"),
    (dict(read_path="pread"), "read path"),
    (dict(direct_io="yes"), "direct I/O"),
    (dict(reads_in_flight=0), "reads_in_flight"),
])
def test_invalid_values_are_value_errors(dataset_dir, kwargs, message):
    with pytest.raises(ValueError, match=message):
        imgpack.Loader(dataset_dir, **kwargs)


@pytest.mark.parametrize("kwargs", [
    dict(batch_size="8"), dict(batch_size=8.0), dict(batch_size=True), dict(fold="0"),
    dict(role=1), dict(split=3), dict(drop_last=1), dict(pin_memory="yes"),
    dict(verify_checksums=None), dict(output="float32", mean="abc"),
])
def test_wrong_types_are_type_errors(dataset_dir, kwargs):
    with pytest.raises(TypeError):
        imgpack.Loader(dataset_dir, **kwargs)


def test_positional_options_are_refused(dataset_dir):
    with pytest.raises(TypeError):
        imgpack.Loader(dataset_dir, None)


def test_numpy_and_torch_values_stand_for_ints_and_sequences(dataset_dir):
    # What a PyTorch program has at hand: numpy integers, 0-d tensors, tensors of weights.
    loader = imgpack.Loader(dataset_dir, batch_size=np.int64(8), seed=np.uint32(3),
                            prefetch=torch.tensor(2), output="float32",
                            mean=torch.tensor([0.5, 0.5, 0.5]), std=np.array([0.25, 0.25, 0.25]))
    assert loader.batch_size == 8
    assert next(iter(loader)).images.shape[0] == 8
    samples = imgpack.Dataset(dataset_dir).num_samples
    weighted = imgpack.Loader(dataset_dir, batch_size=8, sampling="weighted",
                              weights=torch.ones(samples, dtype=torch.float64))
    assert sum(len(b) for b in weighted) == weighted.images_per_epoch
    for wrong in (np.bool_(True), np.float32(8.0), torch.tensor(8.0), torch.tensor(True),
                  torch.tensor([8]), np.array([8])):
        with pytest.raises(TypeError, match="batch_size must be an int"):
            imgpack.Loader(dataset_dir, batch_size=wrong)
    for crop in (np.int64(16), torch.tensor(16)):
        assert next(iter(imgpack.Loader(dataset_dir, batch_size=4, crop=crop))).images.shape[1:3] \
            == (16, 16)
    with pytest.raises(TypeError, match="weights must be a sequence of numbers"):
        imgpack.Loader(dataset_dir, sampling="weighted", weights=np.ones((samples, 1)))


def test_devices_by_name_and_torch_device(dataset_dir):
    # torch.device("cpu", 0) is "cpu:0" as text.
    for device in ("cpu", "host", torch.device("cpu"), torch.device("cpu", 0), "cpu:0"):
        assert imgpack.Loader(dataset_dir, device=device).device == "cpu"
    if imgpack.cuda_device_count() == 0:
        with pytest.raises(imgpack.Error, match="cuda"):
            imgpack.Loader(dataset_dir, device="cuda:0")


def test_every_option_is_accepted(dataset_dir):
    loader = imgpack.Loader(
        dataset_dir, split="cv3", fold=1, role="train", variants="rotate", batch_size=5,
        last_batch="pad", drop_last=False, order="shard-window", seed=2**64 - 1, window_shards=3,
        rank=1, world_size=2, rank_policy="drop", threads=3, prefetch=6, device="cpu",
        pin_memory=True, direct_upload=False, output="float16", mean=[0.1, 0.2, 0.3],
        std=(0.9, 0.8, 0.7), verify_checksums=True, read_path="read", reads_in_flight=3,
        direct_io="on")
    batches = list(b.images.shape for b in loader)
    assert batches and all(shape == (5, 3, 20, 24) for shape in batches)


def test_direct_upload_is_chosen_by_itself_and_says_why(dataset_dir):
    # Host delivery: whatever the setting, nothing is uploaded, and stats say so.
    for setting in ("auto", "off", False):
        stats = imgpack.Loader(dataset_dir, batch_size=5, direct_upload=setting).stats()
        assert stats["direct_upload"] is False
        assert stats["upload"] == "host delivery: nothing to upload"
    default = imgpack.Loader(dataset_dir, batch_size=5).stats()
    assert default["upload"] == "host delivery: nothing to upload"
    with pytest.raises(TypeError, match="direct_upload must be a str"):
        imgpack.Loader(dataset_dir, direct_upload=1)


def test_read_paths_deliver_the_same_batches(dataset_dir):
    def epoch(read_path, direct_io="auto"):
        loader = imgpack.Loader(dataset_dir, batch_size=7, threads=3, seed=5, read_path=read_path,
                                reads_in_flight=4, direct_io=direct_io)
        batches = [(torch.from_dlpack(b.images).clone(), torch.from_dlpack(b.labels).clone())
                   for b in loader]
        return batches, loader.stats()["records_read"]

    mapped, mapped_reads = epoch("mapped")
    assert mapped_reads == 0
    for direct_io in ("off", "on"):
        read, read_reads = epoch("read", direct_io)
        assert read_reads >= sum(len(labels) for _, labels in read)
        assert len(read) == len(mapped)
        for (a, la), (b, lb) in zip(mapped, read):
            assert torch.equal(a, b) and torch.equal(la, lb)
