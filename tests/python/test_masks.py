"""Batch.masks: each record's segmentation mask beside its image, zero-copy
from the loader's slot (DLPack and numpy), cut with the image's crop and
flips, as h5py reads it from the shards; Dataset's mask properties."""
import os

import h5py
import numpy as np
import pytest

import imgpack
from conftest import cli, h5_strings


@pytest.fixture(scope="module")
def masked_dir(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("masks"))
    src, out = os.path.join(root, "src"), os.path.join(root, "data")
    cli("sample-data", src, "--classes", 3, "--per-class", 6, "--size", "48x40", "--masks",
        "--quiet")
    cli("convert", src, out, "--size", "32x24", "--masks", os.path.join(src, "masks"),
        "--mask-classes", os.path.join(src, "masks", "classes.txt"), "--variants", 2,
        "--augment", "hflip,rotate=20", "--shard-size", "8K", "--quiet")
    return out


def shard_masks(path):
    """Every record's mask, by record id, read with h5py alone."""
    with h5py.File(os.path.join(path, "index.h5"), "r") as index:
        shard, row = index["records/shard"][()], index["records/row"][()]
        files = h5_strings(index, "shards/file")
        assert index.attrs["masks"] == 1 and index.attrs["mask_fill"] == 255
    masks = [h5py.File(os.path.join(path, f), "r")["masks"][()] for f in files]
    return [masks[s][r] for s, r in zip(shard, row)]


def test_the_dataset_says_it_has_masks(masked_dir):
    ds = imgpack.Dataset(masked_dir)
    assert ds.has_masks
    assert ds.mask_fill == 255
    assert ds.mask_classes == ["background", "circle", "square", "triangle"]


def test_every_batch_carries_its_masks_zero_copy(masked_dir):
    expected = shard_masks(masked_dir)
    ds = imgpack.Dataset(masked_dir)
    loader = imgpack.Loader(ds, batch_size=5, role="all", variants="all", seed=1)
    seen = 0
    for batch in loader:
        masks = batch.masks
        assert masks.shape == (len(batch), 24, 32) and masks.dtype == np.uint8
        assert masks.device == "cpu"
        view = np.asarray(masks)
        again = np.from_dlpack(masks)
        assert view.__array_interface__["data"][0] == again.__array_interface__["data"][0]
        for i, record in enumerate(np.asarray(batch.records)):
            np.testing.assert_array_equal(view[i], expected[record])
            labels = set(np.unique(view[i]))
            assert labels <= {0, int(np.asarray(batch.labels)[i]) + 1, 255}
        seen += len(batch)
    assert seen == ds.num_records


def test_masks_follow_the_crop_and_flips_of_their_images(masked_dir):
    ds = imgpack.Dataset(masked_dir)
    whole = imgpack.Loader(ds, batch_size=4, role="all", seed=2)
    cropped = imgpack.Loader(ds, batch_size=4, role="all", seed=2, crop=(16, 20), hflip=0.5,
                             vflip=0.5)
    flipped = 0
    for full, cut in zip(whole, cropped):
        images, masks = np.asarray(full.images), np.asarray(full.masks)
        cut_images, cut_masks = np.asarray(cut.images), np.asarray(cut.masks)
        assert cut_masks.shape == (len(cut), 16, 20)
        for i in range(len(cut)):
            # The window and flips that give the image give the mask.
            found = False
            for top in range(24 - 16 + 1):
                for left in range(32 - 20 + 1):
                    for h in (False, True):
                        for v in (False, True):
                            window = images[i, top:top + 16, left:left + 20]
                            mask = masks[i, top:top + 16, left:left + 20]
                            if h:
                                window, mask = window[:, ::-1], mask[:, ::-1]
                            if v:
                                window, mask = window[::-1], mask[::-1]
                            if not found and np.array_equal(window, cut_images[i]):
                                np.testing.assert_array_equal(mask, cut_masks[i])
                                found = True
                                flipped += h or v
            assert found
    assert flipped > 0


def test_float_output_leaves_masks_as_labels(masked_dir):
    ds = imgpack.Dataset(masked_dir)
    expected = shard_masks(masked_dir)
    loader = imgpack.Loader(ds, batch_size=7, role="all", output="float32",
                            mean=(0.5, 0.5, 0.5), std=(0.25, 0.25, 0.25))
    batch = next(iter(loader))
    assert np.asarray(batch.images).dtype == np.float32
    masks = np.asarray(batch.masks)
    assert masks.dtype == np.uint8
    for i, record in enumerate(np.asarray(batch.records)):
        np.testing.assert_array_equal(masks[i], expected[record])


def test_a_dataset_without_masks_has_none(dataset_dir):
    ds = imgpack.Dataset(dataset_dir)
    assert not ds.has_masks and ds.mask_fill is None and ds.mask_classes == []
    batch = next(iter(imgpack.Loader(ds, batch_size=4)))
    assert batch.masks is None


def test_torch_takes_the_masks_as_targets(masked_dir):
    torch = pytest.importorskip("torch")
    ds = imgpack.Dataset(masked_dir)
    batch = next(iter(imgpack.Loader(ds, batch_size=6, role="all")))
    targets = torch.from_dlpack(batch.masks).long()
    assert targets.shape == (6, 24, 32)
    logits = torch.zeros(6, 4, 24, 32)
    loss = torch.nn.functional.cross_entropy(logits, targets, ignore_index=ds.mask_fill)
    assert torch.isfinite(loss)
