#!/usr/bin/env python3
"""The imgpack reader from Python: a loop taking every batch as torch tensors,
measured the way `imgpack bench` measures the C++ loop. Prints one JSON object.

usage: PYTHONPATH=build/python bench/python/consume.py DATASET [--batch 256] [--threads 2]
           [--prefetch 4] [--epochs 3] [--warmup-epochs 1] [--order random] [--seed 0]
           [--split S --fold F --role R] [--step-ms 0] [--device cpu|cuda:N]
           [--output uint8|float32|float16] [--boxes]

The loader is built first and reads --warmup-epochs untimed epochs: a fresh
process's first pass over the shard mappings pays a page fault per 4 KiB, and
imgpack bench takes those before it times its loop (its memcpy reference
reads the same mapping first). Then, for each timed epoch, set_epoch(e) and
every batch is taken: torch.from_dlpack() of its images and labels
(zero-copy views of the loader's slot), and for device batches the current
stream is synchronized (imgpack bench synchronizes each device batch too).
With --boxes every batch's boxes are taken too (boxes, box_classes and
box_offsets through torch.from_dlpack(), for a dataset converted with
--coco or --yolo). With --step-ms the loop sleeps that long per batch (a simulated training
step). images/s and GB/s are taken over the wall time of the timed epochs,
as imgpack bench takes them; starvation is the loader's over the timed
epochs: time waiting in next() / time from the first next() to the last.
"""
import argparse
import json
import time

import torch

import imgpack

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--prefetch", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--warmup-epochs", type=int, default=1)
    parser.add_argument("--order", default="random")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--split")
    parser.add_argument("--fold", type=int, default=0)
    parser.add_argument("--role", default="all")
    parser.add_argument("--step-ms", type=float, default=0)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--output", default="uint8")
    parser.add_argument("--boxes", action="store_true",
                        help="take every batch's boxes too (a dataset with boxes)")
    args = parser.parse_args()

    dataset = imgpack.Dataset(args.dataset)
    norm = {} if args.output == "uint8" else dict(mean=MEAN, std=STD)
    loader = imgpack.Loader(dataset, split=args.split, fold=args.fold, role=args.role,
                            batch_size=args.batch, order=args.order, seed=args.seed,
                            threads=args.threads, prefetch=args.prefetch, device=args.device,
                            output=args.output, **norm)
    cuda = loader.device.startswith("cuda")
    if args.boxes and not dataset.has_boxes:
        parser.error("%s: --boxes, but the dataset has no boxes" % args.dataset)

    def epoch(e, step):
        loader.set_epoch(e)
        count = 0
        for batch in loader:
            images = torch.from_dlpack(batch.images)
            labels = torch.from_dlpack(batch.labels)
            if cuda:
                torch.cuda.current_stream(images.device).synchronize()
            count += images.shape[0]
            assert labels.shape[0] == images.shape[0]
            if args.boxes:
                offsets = torch.from_dlpack(batch.box_offsets)
                boxes = torch.from_dlpack(batch.boxes)
                classes = torch.from_dlpack(batch.box_classes)
                assert offsets.shape[0] == images.shape[0] + 1
                assert boxes.shape[0] == classes.shape[0] == int(offsets[-1])
            if step > 0:
                time.sleep(step)
        return count

    # Untimed, and at the epochs after the timed ones: the timed epochs read
    # the orders imgpack bench reads (0, 1, ...).
    for e in range(args.warmup_epochs):
        epoch(args.epochs + e, 0)
    loader.reset_stats()
    images = 0
    start = time.perf_counter()
    for e in range(args.epochs):
        images += epoch(e, args.step_ms / 1000)
    seconds = time.perf_counter() - start
    stats = loader.stats()
    height, width, channels = dataset.shape
    print(json.dumps({
        "images_per_s": images / seconds, "gb_per_s": images * height * width * channels /
        seconds / 1e9, "starvation": stats["starvation"], "wait_seconds": stats["wait_seconds"],
        "seconds": seconds, "images": images, "batch": args.batch, "threads": args.threads,
        "prefetch": args.prefetch, "epochs": args.epochs, "warmup_epochs": args.warmup_epochs,
        "step_ms": args.step_ms, "boxes": args.boxes,
        "device": loader.device, "output": args.output, "torch": torch.__version__,
        "imgpack": imgpack.__version__}, indent=2))


if __name__ == "__main__":
    main()
