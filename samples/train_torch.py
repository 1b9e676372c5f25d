#!/usr/bin/env python3
"""Trains a small CNN with PyTorch on one fold of an imgpack dataset, fed by imgpack.Loader.

usage: samples/train_torch.py DATASET [--split cv5] [--fold 0] [--epochs 6] [--batch-size 32]
                              [--device cpu|cuda|cuda:N] [--threads 2] [--lr 0.003] [--seed 0]
                              [--min-accuracy A]

The split must exist in DATASET (`imgpack split DATASET --name cv5 --kind
stratified-group --folds 5`). Training reads fold F's training part (one
augmented variant per image per epoch when the dataset stores variants) in a
new seeded order every epoch; evaluation reads fold F's validation part. The
loader converts the images to normalized float32 NCHW, on the GPU with
--device cuda (the batches arrive as CUDA tensors: no host copy, no upload in
the training loop). Unlabeled images (label -1) are left out of the loss and
the accuracy. Prints one line per epoch and the validation accuracy; exits 1
when it is below --min-accuracy or imgpack refuses the dataset, 2 on an
argument that does not fit it (a split or fold it lacks, no classes).

    bash scripts/build                     # builds the module into build/python
    build/tools/imgpack sample-data images/ --classes 4 --groups 8 --per-class 50
    build/tools/imgpack convert images/ data/ --size 32 --group-regex '/(g[0-9]+)_'
    build/tools/imgpack split data/ --name cv5 --kind stratified-group --folds 5
    PYTHONPATH=build/python samples/train_torch.py data/ --split cv5 --fold 0
"""
import argparse
import sys
import time

import torch
from torch import nn

import imgpack

MEAN = (0.5, 0.5, 0.5)
STD = (0.25, 0.25, 0.25)


def small_cnn(channels, classes):
    return nn.Sequential(
        nn.Conv2d(channels, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, classes))


UNLABELED = -1


def tensors(batch, device):
    """The batch's images and labels as torch tensors on `device`, padding left out.

    images: a zero-copy view of the loader's slot (a CUDA tensor for device
    batches, ordered after the upload on the current stream); labels: int32 in
    host memory, widened to int64 for the loss (UNLABELED where an image has
    no class)."""
    keep = len(batch) - batch.padding
    images = torch.from_dlpack(batch.images)[:keep]
    labels = torch.from_dlpack(batch.labels)[:keep].to(device, dtype=torch.int64,
                                                       non_blocking=True)
    return images, labels


def scored(logits, labels):
    """(correct predictions, labeled images) of a batch: unlabeled images count in neither."""
    labeled = labels != UNLABELED
    return int(((logits.argmax(1) == labels) & labeled).sum()), int(labeled.sum())


def evaluate(model, loader, device):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for batch in loader:
            images, labels = tensors(batch, device)
            right, labeled = scored(model(images), labels)
            correct += right
            total += labeled
    return correct / total if total else 0.0, total


class Refused(Exception):
    """An argument the dataset cannot serve (exit 2)."""


def main():
    try:
        return train()
    except (Refused, ValueError) as e:  # ValueError: a split or fold the dataset lacks
        print("train_torch.py: %s" % e, file=sys.stderr)
        return 2
    except imgpack.Error as e:  # a missing or damaged dataset, no CUDA device
        print("train_torch.py: %s" % e, file=sys.stderr)
        return 1


def train():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("--split", default="cv5")
    parser.add_argument("--fold", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=2, help="imgpack reader threads")
    parser.add_argument("--lr", type=float, default=0.003)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--min-accuracy", type=float, default=0.0)
    args = parser.parse_args()

    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    dataset = imgpack.Dataset(args.dataset)
    height, width, channels = dataset.shape
    classes = len(dataset.classes)
    if classes == 0:
        raise Refused("%s has no classes (converted with --labels none?): nothing to train a "
                      "classifier on" % args.dataset)
    common = dict(split=args.split, fold=args.fold, batch_size=args.batch_size,
                  threads=args.threads, device=device, output="float32",
                  mean=MEAN[:channels], std=STD[:channels])
    train = imgpack.Loader(dataset, role="train", seed=args.seed, **common)
    val = imgpack.Loader(dataset, role="val", order="sequential", **common)
    print("%s: %d classes, %dx%dx%d; fold %d of %s: %d training images, %d validation images, "
          "on %s" % (args.dataset, classes, height, width, channels, args.fold, args.split,
                     train.images_per_epoch, val.images_per_epoch, train.device), flush=True)

    model = small_cnn(channels, classes).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss(ignore_index=UNLABELED)
    for epoch in range(args.epochs):
        start = time.perf_counter()
        train.set_epoch(epoch)  # a new seeded order (and augmented variant) per epoch
        model.train()
        seen = loss_sum = correct = 0
        for batch in train:
            images, labels = tensors(batch, device)
            logits = model(images)
            right, labeled = scored(logits, labels)
            if labeled == 0:
                continue  # the loss over no labeled image is not a number
            loss = loss_fn(logits, labels)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            loss_sum += float(loss) * labeled
            correct += right
            seen += labeled
        if seen == 0:
            raise Refused("fold %d of %s holds no labeled training image" % (args.fold,
                                                                            args.split))
        accuracy, _ = evaluate(model, val, device)
        print("epoch %d: loss %.3f, train accuracy %.3f, validation accuracy %.3f, %.1f s" % (
            epoch, loss_sum / seen, correct / seen, accuracy, time.perf_counter() - start),
            flush=True)

    accuracy, total = evaluate(model, val, device)
    stats = train.stats()
    print("validation accuracy %.3f on %d labeled images (chance %.3f); training loader starvation "
          "%.1f%% (%.0f images/s delivered)" % (
              accuracy, total, 1.0 / classes, 100 * stats["starvation"],
              stats["images"] / stats["consumer_seconds"] if stats["consumer_seconds"] else 0))
    if accuracy < args.min_accuracy:
        print("validation accuracy %.3f is below --min-accuracy %.3f" % (
            accuracy, args.min_accuracy), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
