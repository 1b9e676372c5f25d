"""Online crop and flip from Python (Loader's crop, crop_mode, hflip, vflip):
every delivered image is a window of its record as h5py reads it, centered
for validation, fresh every epoch and the same for any thread count."""
import numpy as np
import torch
import pytest

import imgpack


def window_of(image, record):
    """(top, left, hflip, vflip) of `image` inside `record` (H, W, C), or None."""
    h, w = image.shape[:2]
    for top in range(record.shape[0] - h + 1):
        for left in range(record.shape[1] - w + 1):
            cut = record[top:top + h, left:left + w]
            for hflip in (False, True):
                for vflip in (False, True):
                    view = cut[:, ::-1] if hflip else cut
                    view = view[::-1] if vflip else view
                    if np.array_equal(view, image):
                        return top, left, hflip, vflip
    return None


def windows(loader, reference):
    found = {}
    for batch in loader:
        images = np.from_dlpack(batch.images)
        for image, record in zip(images, np.from_dlpack(batch.records)):
            window = window_of(image, reference.image(int(record)))
            assert window is not None, "record %d is no window of itself" % record
            found[int(record)] = window
    return found


def test_random_windows_and_flips(dataset_dir, reference):
    loader = imgpack.Loader(dataset_dir, batch_size=7, crop=(12, 16), hflip=0.5, seed=3)
    loader.set_epoch(0)
    first = windows(loader, reference)
    assert {np.from_dlpack(b.images).shape[1:] for b in loader} == {(12, 16, 3)}
    assert len({(t, l) for t, l, _, _ in first.values()}) > 10
    flips = sum(h for _, _, h, _ in first.values())
    assert 0 < flips < len(first)
    assert not any(v for _, _, _, v in first.values())
    loader.set_epoch(0)
    assert windows(loader, reference) == first  # a pure function of (seed, epoch, record)
    single = imgpack.Loader(dataset_dir, batch_size=7, crop=(12, 16), hflip=0.5, seed=3, threads=1)
    single.set_epoch(0)
    assert windows(single, reference) == first
    loader.set_epoch(1)
    later = windows(loader, reference)
    assert sum(later[r] != first[r] for r in first) > len(first) // 2


def test_validation_takes_the_center(dataset_dir, reference):
    loader = imgpack.Loader(dataset_dir, split="cv3", fold=0, role="val", batch_size=8, crop=10)
    found = windows(loader, reference)
    assert found and set(found.values()) == {(5, 7, False, False)}  # 20x24 records


@pytest.mark.parametrize("kwargs, message", [
    (dict(crop=(30, 10)), "larger than the dataset"),
    (dict(crop=0), "crop"),
    (dict(crop=(10, 10, 3)), "height, width"),
    (dict(crop_mode="middle"), "middle"),
    (dict(hflip=1.5), "hflip"),
    (dict(vflip=-0.1), "vflip"),
])
def test_bad_crops_are_value_errors(dataset_dir, kwargs, message):
    with pytest.raises(ValueError, match=message):
        imgpack.Loader(dataset_dir, **kwargs)


@pytest.mark.parametrize("kwargs", [dict(crop="10"), dict(crop=10.0), dict(hflip="often"),
                                    dict(vflip=None), dict(hflip=np.array([0.5])),
                                    dict(hflip=np.complex64(0.5)), dict(vflip=0.5j)])
def test_bad_crop_types_are_type_errors(dataset_dir, kwargs):
    with pytest.raises(TypeError):
        imgpack.Loader(dataset_dir, **kwargs)


def test_flip_probabilities_take_what_stands_for_a_number(dataset_dir):
    # NumPy's scalars (a config read with NumPy, a sweep's value), 0-d arrays.
    for value in (np.float32(0.5), np.float64(1.0), np.int64(0), np.array(0.25), True,
                  np.bool_(False), torch.tensor(0.5)):
        imgpack.Loader(dataset_dir, hflip=value, vflip=value)
    with pytest.raises(ValueError, match="hflip"):
        imgpack.Loader(dataset_dir, hflip=np.float32(1.5))
