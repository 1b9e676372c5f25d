"""Object boxes: --yolo and --coco as h5py reads them from the shards
(FORMAT.md), as Dataset names them, and in every batch (Batch.boxes,
box_classes, box_crowd, box_offsets, keypoints: zero-copy host arrays, one
block per batch with per-image offsets) through numpy and torch, moved with
the loader's flips."""
import json
import os

import h5py
import numpy as np
import pytest

import imgpack
from conftest import cli, h5_strings

# Per image (80 x 60 source, 40 x 30 records): its boxes as (class, x, y, w, h) in
# source pixels, and the keypoints (left_eye, right_eye) of the first one.
OBJECTS = {
    "a.png": [(1, 20, 16, 30, 24)],
    "b.png": [(0, 4, 6, 16, 12), (1, 44, 30, 28, 24)],
    "c.png": [],
}
EYES = {"a.png": [30, 20, 2, 40, 20, 1]}


def write_png(path, width, height):
    cv2 = pytest.importorskip("cv2")
    cv2.imwrite(path, np.zeros((height, width, 3), np.uint8))


@pytest.fixture(scope="module")
def boxes_dirs(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("boxes"))
    src = os.path.join(root, "src")
    os.makedirs(os.path.join(src, "c"))
    for name, objects in OBJECTS.items():
        write_png(os.path.join(src, "c", name), 80, 60)
        with open(os.path.join(src, "c", name[:-4] + ".txt"), "w") as f:
            for cls, x, y, w, h in objects:
                f.write("%d %.6f %.6f %.6f %.6f\n" % (cls, (x + w / 2) / 80, (y + h / 2) / 60,
                                                     w / 80, h / 60))
    with open(os.path.join(src, "classes.txt"), "w") as f:
        f.write("cat\ndog\n")
    yolo = os.path.join(root, "yolo")
    cli("convert", src, yolo, "--yolo", "--size", "40x30", "--resize", "stretch",
        "--variants", 2, "--augment", "hflip=1", "--quiet")
    coco = {
        "categories": [{"id": 1, "name": "person", "keypoints": ["left_eye", "right_eye"]}],
        "images": [{"id": n, "file_name": "c/" + name, "width": 80, "height": 60}
                   for n, name in enumerate(OBJECTS)],
        "annotations": [{"id": 100 + n, "image_id": n, "category_id": 1, "iscrowd": 0,
                         "bbox": [x, y, w, h], "keypoints": EYES.get(name, [0] * 6)}
                        for n, name in enumerate(OBJECTS) for (_, x, y, w, h) in OBJECTS[name][:1]],
    }
    listing = os.path.join(root, "coco.json")
    with open(listing, "w") as f:
        json.dump(coco, f)
    keyed = os.path.join(root, "coco")
    cli("convert", src, keyed, "--coco", listing, "--size", "40x30", "--resize", "stretch",
        "--quiet")
    return yolo, keyed


def expected(name, variant):
    """The record's boxes: half the source coordinates, mirrored in variant 1."""
    rows = []
    for _, x, y, w, h in OBJECTS[name]:
        x0, x1 = x / 2, (x + w) / 2
        if variant == 1:
            x0, x1 = 40 - x1, 40 - x0
        rows.append([x0, y / 2, x1, (y + h) / 2])
    return np.array(rows, np.float32).reshape(-1, 4)


def test_h5py_reads_the_ragged_tables(boxes_dirs):
    yolo, _ = boxes_dirs
    with h5py.File(os.path.join(yolo, "index.h5"), "r") as index:
        assert index.attrs["boxes"] == 1 and index.attrs["box_classes"] == 2
        assert h5_strings(index, "box_classes/name") == ["cat", "dog"]
        paths = h5_strings(index, "samples/path")
        shards = h5_strings(index, "shards/file")
    seen = 0
    for shard_file in shards:
        with h5py.File(os.path.join(yolo, shard_file), "r") as shard:
            offsets = shard["box_offsets"][()]
            boxes, classes = shard["boxes"][()], shard["box_class"][()]
            assert boxes.dtype == np.float32 and boxes.shape == (offsets[-1], 4)
            for row, (sample, variant) in enumerate(zip(shard["sample"][()],
                                                        shard["variant"][()])):
                name = os.path.basename(paths[sample])
                got = boxes[offsets[row]:offsets[row + 1]]
                np.testing.assert_allclose(got, expected(name, variant), atol=1e-4)
                assert classes[offsets[row]:offsets[row + 1]].tolist() == \
                    [o[0] for o in OBJECTS[name]]
                seen += 1
    assert seen == 6


def test_every_batch_carries_its_boxes_as_one_block(boxes_dirs):
    yolo, _ = boxes_dirs
    ds = imgpack.Dataset(yolo)
    assert ds.has_boxes and ds.box_classes == ["cat", "dog"] and ds.keypoint_names == []
    with h5py.File(os.path.join(yolo, "index.h5"), "r") as index:
        record_variant = index["records/variant"][()]
    loader = imgpack.Loader(ds, batch_size=4, variants="all", seed=3)
    entries = 0
    for batch in loader:
        offsets = np.asarray(batch.box_offsets)
        boxes = np.asarray(batch.boxes)
        assert offsets.shape == (len(batch) + 1,) and offsets[-1] == len(boxes)
        assert batch.keypoints is None
        variants = record_variant[np.asarray(batch.records)]
        for i, sample in enumerate(np.asarray(batch.samples)):
            name = os.path.basename(ds.sample_path(int(sample)))
            np.testing.assert_allclose(boxes[offsets[i]:offsets[i + 1]],
                                       expected(name, variants[i]), atol=1e-4)
            entries += 1
    assert entries == 6


def test_the_loaders_flip_moves_boxes_and_swaps_keypoints(boxes_dirs):
    torch = pytest.importorskip("torch")
    _, keyed = boxes_dirs
    ds = imgpack.Dataset(keyed)
    assert ds.keypoint_names == ["left_eye", "right_eye"] and ds.keypoint_flip == [1, 0]
    plain = next(iter(imgpack.Loader(ds, batch_size=3, order="sequential")))
    flipped = next(iter(imgpack.Loader(ds, batch_size=3, order="sequential", hflip=1.0)))
    a, b = torch.from_dlpack(plain.boxes), torch.from_dlpack(flipped.boxes)
    assert a.shape == (2, 4) and a.data_ptr() == torch.from_dlpack(plain.boxes).data_ptr()
    torch.testing.assert_close(b[:, 0], 40 - a[:, 2])
    torch.testing.assert_close(b[:, 2], 40 - a[:, 0])
    ka, kb = np.asarray(plain.keypoints), np.asarray(flipped.keypoints)
    a_row = [i for i, s in enumerate(np.asarray(plain.samples))
             if ds.sample_path(int(s)).endswith("a.png")][0]
    first = np.asarray(plain.box_offsets)[a_row]
    np.testing.assert_allclose(ka[first], [[15, 10, 2], [20, 10, 1]], atol=1e-4)
    # Mirrored: the left eye's slot holds what the right eye became.
    np.testing.assert_allclose(kb[first], [[20, 10, 1], [25, 10, 2]], atol=1e-4)
    per_image = torch.from_dlpack(plain.boxes).split(
        np.diff(np.asarray(plain.box_offsets)).tolist())
    names = [os.path.basename(ds.sample_path(int(s))) for s in np.asarray(plain.samples)]
    assert [len(t) for t in per_image] == [len(OBJECTS[n][:1]) for n in names]


def test_a_dataset_without_boxes_has_none(dataset_dir):
    ds = imgpack.Dataset(dataset_dir)
    assert not ds.has_boxes and ds.box_classes == []
    batch = next(iter(imgpack.Loader(ds, batch_size=4)))
    assert batch.boxes is None and batch.box_offsets is None and batch.keypoints is None
