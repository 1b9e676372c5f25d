#!/usr/bin/env python3
"""The usual PyTorch input pipelines, the peers of the imgpack reader. Prints one JSON object.

Sources (--source):
  jpeg SRC      torchvision ImageFolder over the source images: PIL decodes each
                file, Resize(SIZE) scales the shorter side to SIZE, CenterCrop(SIZE)
                crops (what `imgpack convert --size SIZE` stores), PILToTensor
                keeps uint8 like the reader's output.
  h5py DATASET  a torch Dataset over an imgpack dataset's shards read with h5py,
                one `images[row]` per sample (the way such a Dataset is usually
                written), each worker opening the files itself.
Both are batched by a torch DataLoader in shuffled order (seed 0).

Modes:
  throughput --configs B:W,...  images/s for each batch size B and worker count W,
      in steady state: the first W batches (worker start-up, and the batches the
      other workers made meanwhile) are not counted; at least --max-images images
      (and 4 batches after those) are read.
  starvation --batch B --workers W --steps-ms S,...  a simulated training loop:
      the consumer sleeps S ms per batch (its training step) and the time it
      waits in next() is measured. The first W * prefetch_factor + 1 batches
      (start-up, and what the workers prefetch meanwhile) are not counted; then
      N batches are, with N = clamp(--budget-s / max(S, B / --rate), --min-batches,
      --max-batches). starvation = wait / (wait + steps).

usage: torch_loaders.py MODE --source jpeg|h5py PATH [options]
"""
import argparse
import json
import math
import os
import sys
import time

import h5py
import numpy as np
import torch
import torchvision
from torch.utils.data import DataLoader, Dataset, RandomSampler
from torchvision import transforms

PREFETCH_FACTOR = 2  # the DataLoader default


def strings(index, name):
    """A string table of index.h5: bytes and offsets (format 2), or HDF5 strings (format 1)."""
    if isinstance(index[name], h5py.Group):
        data, offsets = index[name + "/bytes"][()], index[name + "/offsets"][()]
        return [data[a:b].tobytes().decode() for a, b in zip(offsets[:-1], offsets[1:])]
    return [s.decode() if isinstance(s, bytes) else s for s in index[name][()]]


class H5Records(Dataset):
    """Records of an imgpack dataset read with h5py, one sample at a time."""

    def __init__(self, path):
        with h5py.File(os.path.join(path, "index.h5"), "r") as index:
            self.shard_of = index["/records/shard"][()]
            self.row_of = index["/records/row"][()]
            sample = index["/records/sample"][()]
            self.label_of = index["/samples/label"][()][sample]
            self.files = [os.path.join(path, f) for f in strings(index, "/shards/file")]
        self.images = None
        self.pid = None

    def __len__(self):
        return len(self.shard_of)

    def __getitem__(self, i):
        if self.pid != os.getpid():  # h5py handles must not cross a fork
            self.images = [h5py.File(f, "r")["/images"] for f in self.files]
            self.pid = os.getpid()
        image = self.images[self.shard_of[i]][self.row_of[i]]
        return torch.from_numpy(image), int(self.label_of[i])


def make_dataset(source, path, size):
    if source == "jpeg":
        transform = transforms.Compose([transforms.Resize(size), transforms.CenterCrop(size),
                                        transforms.PILToTensor()])
        return torchvision.datasets.ImageFolder(path, transform=transform)
    return H5Records(path)


def make_loader(dataset, batch, workers, samples):
    generator = torch.Generator().manual_seed(0)
    sampler = RandomSampler(dataset, num_samples=samples, generator=generator)
    return DataLoader(dataset, batch_size=batch, sampler=sampler, num_workers=workers,
                      drop_last=True)


def throughput(dataset, batch, workers, max_images):
    skip = max(1, workers)
    batches = max(skip + 4, math.ceil(max_images / batch) + skip)
    loader = make_loader(dataset, batch, workers, batches * batch)
    start = time.perf_counter()
    it = iter(loader)
    for _ in range(skip):
        next(it)
    first = time.perf_counter()
    images = 0
    for images_batch, _ in it:
        images += images_batch.shape[0]
    end = time.perf_counter()
    return {"batch": batch, "workers": workers, "images": images, "seconds": end - first,
            "startup_seconds": first - start, "images_per_s": images / (end - first)}


def starvation(dataset, batch, workers, step_ms, rate, budget_s, min_batches, max_batches):
    step = step_ms / 1000
    per_batch = max(step, batch / rate) if rate > 0 else step
    count = int(min(max_batches, max(min_batches, math.ceil(budget_s / max(per_batch, 1e-4)))))
    skip = workers * PREFETCH_FACTOR + 1 if workers > 0 else 1
    loader = make_loader(dataset, batch, workers, (skip + count) * batch)
    it = iter(loader)
    for _ in range(skip):
        next(it)
    wait = 0.0
    start = time.perf_counter()
    for _ in range(count):
        before = time.perf_counter()
        next(it)
        wait += time.perf_counter() - before
        time.sleep(step)
    total = time.perf_counter() - start
    del it
    return {"step_ms": step_ms, "batches": count, "wait_seconds": wait, "seconds": total,
            "starvation": wait / total if total > 0 else 0.0}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["throughput", "starvation"])
    parser.add_argument("--source", nargs=2, metavar=("KIND", "PATH"), required=True)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--configs", default="256:2", help="throughput: B:W pairs")
    parser.add_argument("--max-images", type=int, default=3072)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--steps-ms", default="100")
    parser.add_argument("--rate", type=float, default=0, help="starvation: images/s estimate")
    parser.add_argument("--budget-s", type=float, default=6)
    parser.add_argument("--min-batches", type=int, default=8)
    parser.add_argument("--max-batches", type=int, default=200)
    args = parser.parse_args()
    kind, path = args.source
    if kind not in ("jpeg", "h5py"):
        parser.error("--source KIND must be jpeg or h5py")
    dataset = make_dataset(kind, path, args.size)
    result = {"source": kind, "path": path, "records": len(dataset), "size": args.size,
              "torch": torch.__version__, "torchvision": torchvision.__version__,
              "h5py": h5py.__version__, "numpy": np.__version__}
    if args.mode == "throughput":
        runs = []
        for config in args.configs.split(","):
            batch, workers = (int(x) for x in config.split(":"))
            runs.append(throughput(dataset, batch, workers, args.max_images))
            print("torch %s batch %d workers %d: %.0f images/s" % (
                kind, batch, workers, runs[-1]["images_per_s"]), file=sys.stderr)
        result["runs"] = runs
    else:
        points = []
        for step in (float(s) for s in args.steps_ms.split(",")):
            points.append(starvation(dataset, args.batch, args.workers, step, args.rate,
                                     args.budget_s, args.min_batches, args.max_batches))
            print("torch %s step %.1f ms: starvation %.1f%%" % (
                kind, step, 100 * points[-1]["starvation"]), file=sys.stderr)
        result.update(batch=args.batch, workers=args.workers, points=points)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
