#!/usr/bin/env python3
"""Writes COUNT photo-like JPEGs (default 1024x768, quality 90) into OUT/cK/img_NNNNNN.jpg.

Each image is a deterministic function of its index: multi-scale value noise
(texture at every frequency, as in foliage, fabric or gravel), a smooth
lighting field, hard-edged shapes, and per-pixel sensor noise, so the JPEGs
have the entropy and file size of camera photos rather than of flat colour.
Files that already exist are kept, so a larger COUNT only adds images.

usage: make_photos.py COUNT OUT [--width W] [--height H] [--quality Q] [--jobs N] [--classes K]
"""
import argparse
import multiprocessing
import os
import sys

import cv2
import numpy as np

TEXTURE_SCALES = (3, 12, 48, 192)  # feature sizes in pixels


def texture_bank(width, height, seed=12345, count=6):
    """Large tileable-enough textures shared by all images (built once per process)."""
    rng = np.random.default_rng(seed)
    bank = []
    for _ in range(count):
        field = np.zeros((height * 2, width * 2, 3), np.float32)
        for scale, weight in zip(TEXTURE_SCALES, (0.35, 0.3, 0.2, 0.15)):
            small = rng.random((height * 2 // scale + 2, width * 2 // scale + 2, 3), np.float32)
            field += weight * cv2.resize(small, (width * 2, height * 2),
                                         interpolation=cv2.INTER_CUBIC)
        bank.append(field)
    return bank


_BANK = None


def make_photo(index, width, height):
    global _BANK
    if _BANK is None:
        _BANK = texture_bank(width, height)
    rng = np.random.default_rng(1_000_003 * (index + 1))
    # Two textures, randomly placed, blended.
    image = np.zeros((height, width, 3), np.float32)
    for weight in (0.6, 0.4):
        tex = _BANK[int(rng.integers(len(_BANK)))]
        y = int(rng.integers(tex.shape[0] - height))
        x = int(rng.integers(tex.shape[1] - width))
        patch = tex[y:y + height, x:x + width]
        if rng.random() < 0.5:
            patch = patch[:, ::-1]
        image += weight * patch
    # Colour cast and lighting: a smooth field from a tiny random grid.
    light = cv2.resize(rng.random((4, 5, 3), np.float32), (width, height),
                       interpolation=cv2.INTER_CUBIC)
    image = (image - 0.5) * (80 + 60 * rng.random()) + light * 200 + 10
    # Objects: filled ellipses and rectangles with their own texture.
    canvas = np.clip(image, 0, 255).astype(np.uint8)
    for _ in range(int(rng.integers(3, 9))):
        colour = tuple(int(c) for c in rng.integers(0, 256, 3))
        centre = (int(rng.integers(width)), int(rng.integers(height)))
        axes = (int(rng.integers(20, width // 4)), int(rng.integers(20, height // 4)))
        if rng.random() < 0.5:
            cv2.ellipse(canvas, centre, axes, float(rng.integers(180)), 0, 360, colour, -1,
                        cv2.LINE_AA)
        else:
            cv2.rectangle(canvas, (centre[0] - axes[0], centre[1] - axes[1]),
                          (centre[0] + axes[0], centre[1] + axes[1]), colour, -1)
    for _ in range(int(rng.integers(2, 6))):
        p1 = (int(rng.integers(width)), int(rng.integers(height)))
        p2 = (int(rng.integers(width)), int(rng.integers(height)))
        cv2.line(canvas, p1, p2, tuple(int(c) for c in rng.integers(0, 256, 3)),
                 int(rng.integers(1, 6)), cv2.LINE_AA)
    # Re-texture the objects a little and add sensor noise.
    detail = _BANK[int(rng.integers(len(_BANK)))][:height, :width] - 0.5
    noise = rng.normal(0, 5, (height, width, 3)).astype(np.float32)
    out = canvas.astype(np.float32) + detail * 40 + noise
    return np.clip(out, 0, 255).astype(np.uint8)


def write_one(job):
    index, path, width, height, quality = job
    if os.path.exists(path):
        return 0
    cv2.setNumThreads(1)
    image = make_photo(index, width, height)
    tmp = path + ".tmp.jpg"
    if not cv2.imwrite(tmp, image, [cv2.IMWRITE_JPEG_QUALITY, quality]):
        raise RuntimeError("cannot write " + tmp)
    os.replace(tmp, path)
    return os.path.getsize(path)


def photo_path(out, index, classes):
    return os.path.join(out, "c%d" % (index % classes), "img_%06d.jpg" % index)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("count", type=int)
    parser.add_argument("out")
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--height", type=int, default=768)
    parser.add_argument("--quality", type=int, default=90)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    for k in range(args.classes):
        os.makedirs(os.path.join(args.out, "c%d" % k), exist_ok=True)
    jobs = [(i, photo_path(args.out, i, args.classes), args.width, args.height, args.quality)
            for i in range(args.count)]
    todo = [j for j in jobs if not os.path.exists(j[1])]
    written = 0
    if todo:
        with multiprocessing.Pool(args.jobs) as pool:
            for size in pool.imap_unordered(write_one, todo, chunksize=8):
                written += 1 if size else 0
    print("make_photos: %d images in %s (%d new)" % (args.count, args.out, written),
          file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
