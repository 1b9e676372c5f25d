#!/usr/bin/env python3
"""The straightforward Python way to pack an image folder: the reference for imgpack convert.

One worker process per core decodes each image with OpenCV (cv2.imread), scales
it to cover SIZE x SIZE with INTER_AREA, centre-crops, and hands the pixels
back; the main process writes them in order into one uncompressed h5py
dataset [n, SIZE, SIZE, 3] with labels from the class folders.

usage: baseline.py SRC OUT.h5 [--size 224] [--procs N]
"""
import argparse
import os
import sys
import time

import cv2
import h5py
import numpy as np
from multiprocessing import Pool

SIZE = 224


def init_worker():
    cv2.setNumThreads(1)  # one process per core already uses every core


def load(path):
    image = cv2.imread(path, cv2.IMREAD_COLOR)
    if image is None:
        return None
    h, w = image.shape[:2]
    scale = max(SIZE / w, SIZE / h)
    rw, rh = max(SIZE, round(w * scale)), max(SIZE, round(h * scale))
    image = cv2.resize(image, (rw, rh), interpolation=cv2.INTER_AREA)
    y, x = (rh - SIZE) // 2, (rw - SIZE) // 2
    image = image[y:y + SIZE, x:x + SIZE]
    return cv2.cvtColor(image, cv2.COLOR_BGR2RGB).tobytes()


def list_images(src):
    classes = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
    items = []
    for label, name in enumerate(classes):
        folder = os.path.join(src, name)
        for f in sorted(os.listdir(folder)):
            if f.lower().endswith((".jpg", ".jpeg", ".png")):
                items.append((os.path.join(folder, f), label))
    return items, classes


def main(argv):
    global SIZE
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("src")
    parser.add_argument("out")
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--procs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    SIZE = args.size
    start = time.perf_counter()
    items, classes = list_images(args.src)
    n = len(items)
    written = 0
    with h5py.File(args.out, "w") as f, Pool(args.procs, initializer=init_worker) as pool:
        images = f.create_dataset("images", (n, SIZE, SIZE, 3), dtype=np.uint8)
        labels = []
        batch, first = [], 0
        results = pool.imap(load, [p for p, _ in items], chunksize=16)
        for pixels, (_, label) in zip(results, items):
            if pixels is None:
                continue
            labels.append(label)
            batch.append(np.frombuffer(pixels, np.uint8).reshape(SIZE, SIZE, 3))
            if len(batch) == 256:
                images[first:first + len(batch)] = np.stack(batch)
                first += len(batch)
                batch = []
        if batch:
            images[first:first + len(batch)] = np.stack(batch)
            first += len(batch)
        written = first
        f.create_dataset("labels", data=np.array(labels, np.int32))
        f.create_dataset("classes", data=np.array(classes, dtype=h5py.string_dtype()))
    seconds = time.perf_counter() - start
    print('{"images": %d, "seconds": %.3f, "images_per_s": %.1f}' % (written, seconds,
                                                                      written / seconds))


if __name__ == "__main__":
    main(sys.argv[1:])
