"""Object boxes: --yolo and --coco as h5py reads them from the shards
(FORMAT.md: every table, the record checksums recomputed), as Dataset names them, and in every batch (Batch.boxes,
box_classes, box_crowd, box_offsets, keypoints: zero-copy host arrays, one
block per batch with per-image offsets) through numpy and torch, moved with
the loader's flips."""
import ctypes
import ctypes.util
import itertools
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
CROWD = {"b.png"}  # whose first object is a crowd in the COCO file


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
        "categories": [{"id": 1, "name": "person", "keypoints": ["left_eye", "right_eye"],
                        "skeleton": [[1, 2]]}],
        "images": [{"id": n, "file_name": "c/" + name, "width": 80, "height": 60}
                   for n, name in enumerate(OBJECTS)],
        "annotations": [{"id": 100 + n, "image_id": n, "category_id": 1,
                         "bbox": [x, y, w, h], "keypoints": EYES.get(name, [0] * 6),
                         "iscrowd": int(name in CROWD)}
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


def box_records(dataset):
    """Every record of DATASET's shards as h5py reads them: its shard file and
    row, its sample's file name, its variant, the shard's tables by name
    (read once per shard, the pixels left out) and its rows of the box
    tables as a slice."""
    with h5py.File(os.path.join(dataset, "index.h5"), "r") as index:
        paths = h5_strings(index, "samples/path")
        shards = h5_strings(index, "shards/file")
    for shard_file in shards:
        with h5py.File(os.path.join(dataset, shard_file), "r") as shard:
            tables = {name: shard[name][()] for name in shard
                      if name not in ("images", "masks") and isinstance(shard[name], h5py.Dataset)}
        offsets = tables["box_offsets"]
        for row, (sample, variant) in enumerate(zip(tables["sample"], tables["variant"])):
            yield shard_file, row, os.path.basename(paths[sample]), variant, tables, \
                slice(offsets[row], offsets[row + 1])


def test_h5py_reads_the_ragged_tables(boxes_dirs):
    yolo, _ = boxes_dirs
    with h5py.File(os.path.join(yolo, "index.h5"), "r") as index:
        assert index.attrs["boxes"] == 1 and index.attrs["box_classes"] == 2
        assert h5_strings(index, "box_classes/name") == ["cat", "dog"]
    seen = 0
    for _, _, name, variant, tables, rows in box_records(yolo):
        boxes = tables["boxes"]
        assert boxes.dtype == np.float32 and boxes.shape == (tables["box_offsets"][-1], 4)
        np.testing.assert_allclose(boxes[rows], expected(name, variant), atol=1e-4)
        assert tables["box_class"][rows].tolist() == [o[0] for o in OBJECTS[name]]
        seen += 1
    assert seen == 6


def xxh3(data):
    """XXH3-64 with seed 0, FORMAT.md's record checksum, by the system's libxxhash."""
    lib = ctypes.CDLL(ctypes.util.find_library("xxhash") or "libxxhash.so.0")
    lib.XXH3_64bits.restype = ctypes.c_uint64
    lib.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    return lib.XXH3_64bits(data, len(data))


def test_h5py_reads_crowd_keypoints_and_the_box_checksums(boxes_dirs):
    _, keyed = boxes_dirs
    with h5py.File(os.path.join(keyed, "index.h5"), "r") as index:
        assert index.attrs["keypoints"] == 2 and index.attrs["box_min_visible"] == 0.3
        assert h5_strings(index, "keypoints/name") == ["left_eye", "right_eye"]
        flip = index["keypoints/flip"][()]
        assert flip.dtype == np.int32 and flip.tolist() == [1, 0]
        skeleton = index["keypoints/skeleton"][()]
        assert skeleton.dtype == np.int32 and skeleton.tolist() == [[0, 1]]
        assert index.attrs["keypoint_edges"] == 1
    seen = 0
    for shard_file, row, name, _, tables, rows in box_records(keyed):
        boxes, total = tables["boxes"], tables["box_offsets"][-1]
        crowd, keypoints, sums = tables["box_crowd"], tables["keypoints"], tables["box_checksum"]
        assert crowd.dtype == np.uint8 and crowd.shape == (total,)
        assert keypoints.dtype == np.float32 and keypoints.shape == (total, 2, 3)
        assert sums.dtype == np.uint64 and sums.shape == tables["sample"].shape
        count = rows.stop - rows.start
        assert count == len(OBJECTS[name][:1])
        assert crowd[rows].tolist() == [int(name in CROWD)] * count
        if name in EYES:
            np.testing.assert_allclose(keypoints[rows.start], [[15, 10, 2], [20, 10, 1]],
                                       atol=1e-4)
        else:
            assert not keypoints[rows].any()
        record = b"".join(t[rows].tobytes() for t in (boxes, tables["box_class"], crowd, keypoints))
        assert xxh3(record) == sums[row], (shard_file, row)
        seen += 1
    assert seen == 3


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
    assert ds.keypoint_skeleton == [(0, 1)]
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
    assert not ds.has_boxes and ds.box_classes == [] and ds.keypoint_skeleton == []
    batch = next(iter(imgpack.Loader(ds, batch_size=4)))
    assert batch.boxes is None and batch.box_offsets is None and batch.keypoints is None


# Online crop and flips against the pixels: three discs of pure red, green and
# blue (the keypoints left_eye, right_eye, nose at their centres) show where
# each delivered window lies in its record and whether it is mirrored; the
# stored boxes and keypoints through that window are what the batch must hold.
DISCS = [(30, 30), (60, 30), (45, 50)]  # continuous centres in the 96 x 72 image
PARTNER = [1, 0, 2]


def marked_dataset(root):
    cv2 = pytest.importorskip("cv2")
    src = os.path.join(root, "src")
    os.makedirs(src)
    ys, xs = np.mgrid[0:72, 0:96] + 0.5
    coco = {"categories": [{"id": 1, "name": "person",
                            "keypoints": ["left_eye", "right_eye", "nose"]},
                           {"id": 2, "name": "ball"}],
            "images": [], "annotations": []}
    shifts = {}
    for n in range(4):
        dx, dy = 6 * n - 9, 4 * (n % 2) - 2
        rgb = np.zeros((72, 96, 3), np.uint8)
        keypoints = []
        for c, (x, y) in enumerate(DISCS):
            rgb[..., c][np.hypot(xs - x - dx, ys - y - dy) <= 5] = 255
            keypoints += [x + dx, y + dy, 2]
        name = "m%d.png" % n
        cv2.imwrite(os.path.join(src, name), rgb[..., ::-1])
        shifts[name] = (dx, dy)
        coco["images"].append({"id": n, "file_name": name, "width": 96, "height": 72})
        coco["annotations"] += [
            {"id": 10 * n, "image_id": n, "category_id": 1, "iscrowd": 0,
             "bbox": [20 + dx, 20 + dy, 50, 40], "keypoints": keypoints},
            {"id": 10 * n + 1, "image_id": n, "category_id": 2, "iscrowd": 0,
             "bbox": [78, 8 * n, 18, 14]}]
    listing = os.path.join(root, "marked.json")
    with open(listing, "w") as f:
        json.dump(coco, f)
    out = os.path.join(root, "marked")
    cli("convert", src, out, "--coco", listing, "--labels", "none", "--size", "96x72",
        "--resize", "stretch", "--quiet")
    return out, coco, shifts


def disc_centres(image):
    """Each channel's disc centre in a delivered H x W x 3 image, or None where
    a disc is not wholly inside (any of it on the outer rows or columns)."""
    centres = []
    for c in range(3):
        v = image[..., c].astype(np.float64)
        if not v.any() or v[0].any() or v[-1].any() or v[:, 0].any() or v[:, -1].any():
            return None
        ys, xs = np.mgrid[0:v.shape[0], 0:v.shape[1]] + 0.5
        centres.append(((v * xs).sum() / v.sum(), (v * ys).sum() / v.sum()))
    return centres


def test_the_online_crop_and_flips_move_boxes_and_keypoints_as_the_pixels(tmp_path):
    out, coco, shifts = marked_dataset(str(tmp_path))
    ds = imgpack.Dataset(out)
    w, h = 72, 54
    measured = mirrored = compared = dropped = 0
    for seed in range(16):
        loader = imgpack.Loader(ds, batch_size=4, order="sequential", crop=(h, w),
                                crop_mode="random", hflip=0.5, vflip=0.5, seed=seed)
        for batch in loader:
            images = np.asarray(batch.images)
            offsets = np.asarray(batch.box_offsets)
            boxes, classes = np.asarray(batch.boxes), np.asarray(batch.box_classes)
            keypoints = np.asarray(batch.keypoints)
            for i, sample in enumerate(np.asarray(batch.samples)):
                name = ds.sample_path(int(sample))
                seen = disc_centres(images[i])
                if seen is None:
                    continue
                measured += 1
                dx, dy = shifts[name]
                source = [(x + dx, y + dy) for x, y in DISCS]
                # Red left of green, blue below red in the image: the window's
                # mirrors and corner follow from where they show.
                hflip, vflip = seen[0][0] > seen[1][0], seen[2][1] < seen[0][1]
                left = round(source[0][0] - (w - seen[0][0] if hflip else seen[0][0]))
                top = round(source[0][1] - (h - seen[0][1] if vflip else seen[0][1]))
                mirrored += hflip != vflip

                def move(x, y):
                    x, y = x - left, y - top
                    return (w - x if hflip else x), (h - y if vflip else y)

                rows = slice(offsets[i], offsets[i + 1])
                got_boxes, got_classes = boxes[rows], classes[rows].tolist()
                for cls, annotation in enumerate(
                        a for a in coco["annotations"] if a["image_id"] == int(name[1])):
                    x, y, bw, bh = annotation["bbox"]
                    (ax, ay), (bx, by) = move(x, y), move(x + bw, y + bh)
                    x0, x1 = sorted((ax, bx))
                    y0, y1 = sorted((ay, by))
                    clipped = [min(max(x0, 0), w), min(max(y0, 0), h),
                               min(max(x1, 0), w), min(max(y1, 0), h)]
                    share = ((clipped[2] - clipped[0]) * (clipped[3] - clipped[1]) /
                             ((x1 - x0) * (y1 - y0)))
                    if share < 0.3:
                        assert cls not in got_classes, (name, seed, share)
                        dropped += 1
                        continue
                    row = got_classes.index(cls)
                    np.testing.assert_allclose(got_boxes[row], clipped, atol=1e-3)
                    compared += 1
                    if cls != 0:
                        assert not keypoints[offsets[i] + row].any()
                        continue
                    for j in range(3):
                        k = PARTNER[j] if hflip != vflip else j
                        point = keypoints[offsets[i] + row][j]
                        np.testing.assert_allclose(point, [*move(*source[k]), 2], atol=1e-3)
                        # and within half a pixel of where its disc shows
                        assert np.hypot(point[0] - seen[k][0], point[1] - seen[k][1]) <= 0.5
    assert measured >= 24 and mirrored >= 6 and compared >= 30 and dropped >= 4, \
        (measured, mirrored, compared, dropped)


def test_masks_and_boxes_move_together_through_the_crop_and_flips(tmp_path):
    """sample-data's shapes with their masks and exact boxes: in every delivered
    window the box holds the shape's mask pixels (and, where the window cut
    neither, ends within a pixel and a half of them), and a box left out
    leaves little of its shape in the window."""
    src, out = str(tmp_path / "src"), str(tmp_path / "out")
    cli("sample-data", src, "--classes", 3, "--per-class", 4, "--size", "96x72", "--masks",
        "--boxes", "--quiet")
    cli("convert", src, out, "--masks", os.path.join(src, "masks"), "--yolo",
        "--yolo-keypoints", "left,right", "--size", "64x48", "--resize", "stretch",
        "--quiet")
    ds = imgpack.Dataset(out)
    with h5py.File(os.path.join(out, "index.h5"), "r") as index:
        shard_of, row_of = index["records/shard"][()], index["records/row"][()]
        shards = h5_strings(index, "shards/file")
    stored = {}  # shard -> (masks, box offsets, boxes)
    for s, name in enumerate(shards):
        with h5py.File(os.path.join(out, name), "r") as shard:
            stored[s] = (shard["masks"][()], shard["box_offsets"][()], shard["boxes"][()])
    kept = whole_in = dropped = 0
    for seed, (h, w) in itertools.product(range(4), [(40, 56), (24, 32)]):
        loader = imgpack.Loader(ds, batch_size=6, order="sequential", crop=(h, w),
                                crop_mode="random", hflip=0.5, vflip=0.5, seed=seed)
        for batch in loader:
            masks, offsets = np.asarray(batch.masks), np.asarray(batch.box_offsets)
            boxes = np.asarray(batch.boxes)
            for i, record in enumerate(np.asarray(batch.records)):
                shape = (masks[i] != 0) & (masks[i] != 255)
                if offsets[i + 1] == offsets[i]:
                    # Left out: less than 0.3 of the record's box was in the
                    # window, so the shape inside it shows no more than that
                    # (and the pixels along the window's edges).
                    _, box_offsets, record_boxes = stored[int(shard_of[record])]
                    row = int(row_of[record])
                    assert box_offsets[row + 1] - box_offsets[row] == 1
                    bx0, by0, bx1, by1 = record_boxes[box_offsets[row]]
                    assert shape.sum() <= 0.3 * (bx1 - bx0) * (by1 - by0) + w + h, \
                        (record, seed)
                    dropped += 1
                    continue
                assert offsets[i + 1] - offsets[i] == 1
                x0, y0, x1, y1 = boxes[offsets[i]]
                ys, xs = np.nonzero(shape)
                assert len(xs) > 0, (record, seed)
                # Every shape pixel's centre inside the box; where the window
                # cut neither (the box clear of its edges), the box at most a
                # pixel and a half past the shape's extent on each side (a
                # shape cut on one side may end short of the box on another).
                assert x0 <= xs.min() + 0.51 and y0 <= ys.min() + 0.51
                assert x1 >= xs.max() + 0.49 and y1 >= ys.max() + 0.49
                kept += 1
                if x0 > 0 and y0 > 0 and x1 < w and y1 < h:
                    assert abs(x0 - xs.min()) <= 1.5 and abs(y0 - ys.min()) <= 1.5
                    assert abs(x1 - xs.max() - 1) <= 1.5 and abs(y1 - ys.max() - 1) <= 1.5
                    whole_in += 1
    assert kept >= 40 and whole_in >= 10 and dropped >= 5, (kept, whole_in, dropped)
