"""Errors (python/src/module.cpp): imgpack.Error, a RuntimeError naming the
file and the problem, for damaged data; ValueError for bad requests."""
import os
import shutil

import numpy as np
import pytest

import imgpack
from conftest import make_dataset


@pytest.fixture()
def damaged(tmp_path, dataset_dir):
    copy = str(tmp_path / "copy")
    shutil.copytree(dataset_dir, copy)
    return copy


def test_error_is_a_runtime_error():
    assert issubclass(imgpack.Error, RuntimeError)
    assert "names what failed" in imgpack.Error.__doc__


def test_missing_dataset_names_the_path(tmp_path):
    missing = str(tmp_path / "nowhere")
    with pytest.raises(imgpack.Error, match="nowhere"):
        imgpack.Dataset(missing)
    with pytest.raises(imgpack.Error, match="nowhere"):
        imgpack.Loader(missing)


def test_missing_index_names_index_h5(damaged):
    os.remove(os.path.join(damaged, "index.h5"))
    with pytest.raises(imgpack.Error, match=r"index\.h5.*not a complete imgpack dataset"):
        imgpack.Dataset(damaged)


def test_truncated_shard_names_the_shard(damaged):
    shard = os.path.join(damaged, "shard-00001.h5")
    os.truncate(shard, os.path.getsize(shard) // 2)
    with pytest.raises(imgpack.Error, match=r"shard-00001\.h5"):
        imgpack.Dataset(damaged)


def test_flipped_pixel_names_the_shard_and_row(damaged, reference):
    # The first record of shard 2: flip one byte of its pixels in the file.
    import h5py
    shard = os.path.join(damaged, "shard-00002.h5")
    with h5py.File(shard, "r") as f:
        offset = f["images"].id.get_offset()
    with open(shard, "r+b") as f:
        f.seek(offset + 5)
        value = f.read(1)[0]
        f.seek(offset + 5)
        f.write(bytes([value ^ 0xFF]))
    with pytest.raises(imgpack.Error, match=r"shard-00002\.h5.*row 0"):
        imgpack.Dataset(damaged, verify_checksums=True)
    # Opening without the check succeeds; a loader that verifies names the record.
    loader = imgpack.Loader(damaged, batch_size=8, order="sequential", verify_checksums=True)
    with pytest.raises(imgpack.Error, match=r"shard-00002\.h5: row 0 \(sample \d+\) does not "
                                            r"match its stored checksum"):
        for batch in loader:
            pass
    # Without verification the damaged byte is delivered as stored.
    plain = imgpack.Loader(damaged, batch_size=180, order="sequential", variants="all")
    batch = next(iter(plain))
    assert np.asarray(batch.images).shape[0] == 180


def test_bad_requests_are_value_errors(dataset_dir):
    with pytest.raises(ValueError, match="nope.*cv3"):
        imgpack.Loader(dataset_dir, split="nope", role="train")
    with pytest.raises(ValueError, match="fold"):
        imgpack.Loader(dataset_dir, split="cv3", fold=3, role="val")
    with pytest.raises(ValueError):
        imgpack.Loader(dataset_dir, role="train")  # no split
    assert not issubclass(ValueError, imgpack.Error)
