#!/usr/bin/python3
"""The usual PyTorch input pipeline over the source images: torchvision
ImageFolder decoding with PIL, resizing the shorter side to SIZE and centre
cropping (what `imgpack convert --size SIZE` stores), batched by a DataLoader
with WORKERS worker processes in shuffled order. Prints one JSON object.

  torch_imagefolder.py SRC [--size 224] [--batch 256] [--workers 2] [--max-images N]
"""
import argparse
import json
import sys
import time

import torch
import torchvision
from torchvision import transforms


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("src")
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--max-images", type=int, default=3072)
    args = parser.parse_args()

    transform = transforms.Compose([transforms.Resize(args.size), transforms.CenterCrop(args.size),
                                    transforms.PILToTensor()])  # uint8, like the reader's output
    dataset = torchvision.datasets.ImageFolder(args.src, transform=transform)
    generator = torch.Generator().manual_seed(0)
    loader = torch.utils.data.DataLoader(dataset, batch_size=args.batch, shuffle=True,
                                         num_workers=args.workers, generator=generator)
    images = 0
    start = time.perf_counter()
    first = None
    for batch, labels in loader:
        if first is None:
            first = time.perf_counter()  # worker start-up excluded from the steady rate
        images += batch.shape[0]
        if images >= args.max_images:
            break
    end = time.perf_counter()
    steady_images = images - args.batch if images > args.batch else images
    steady_seconds = end - first if images > args.batch else end - start
    result = {"images": images, "seconds": end - start,
              "images_per_s": steady_images / steady_seconds if steady_seconds > 0 else 0,
              "images_per_s_including_startup": images / (end - start),
              "workers": args.workers, "batch": args.batch, "size": args.size,
              "torch": torch.__version__, "torchvision": torchvision.__version__}
    print(f"torch DataLoader: {result['images_per_s']:.0f} images/s", file=sys.stderr)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
