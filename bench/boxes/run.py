#!/usr/bin/env python3
"""Object boxes: conversion with a COCO file of boxes against the same
conversion without, and the reader's images/s with boxes against without.

Inputs: `imgpack sample-data` images, photo-sized (--source, about 640x480,
each varying by +-25%), and a COCO-style JSON giving every image --boxes
boxes (random, inside the image, one category in eight a crowd; one
category with two keypoints). In every repeat, interleaved:

  convert         the images alone (the reference)
  convert boxes   the same images with --coco: every box moved through its
                  record's geometry and written to the shard's box tables
  and both again with K=4 augmented variants (--augment);
  imgpack bench   the reader over the K=1 datasets, with boxes and without
                  (each batch's boxes gathered into one block).

A conversion is timed by its conversion time (report.json timings.convert_s)
and its CPU time (user + system); ratios are per repeat, boxes over plain.

Prints a Markdown table and writes OUT/results.json (or --json FILE).

usage: run.py COUNT OUT [--source 640x480] [--boxes 8] [--size 224] [--threads 0] [--repeat 3]
"""
import argparse
import json
import os
import random
import shutil
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import benchlib  # noqa: E402

SPEC = "hflip,rotate=15,shift=0.1,zoom=0.9:1.2,crop_scale=0.35:1,aspect=0.75:1.33"


def image_size(path):
    """(width, height) from a JPEG's SOF or a PNG's IHDR."""
    with open(path, "rb") as f:
        data = f.read(1 << 16)
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return struct.unpack(">II", data[16:24])
    i = 2
    while i + 9 < len(data):
        marker, length = data[i + 1], struct.unpack(">H", data[i + 2:i + 4])[0]
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height, width = struct.unpack(">HH", data[i + 5:i + 9])
            return width, height
        i += 2 + length
    raise ValueError("%s: no image size found" % path)


def make_inputs(out, count, source, boxes):
    """COUNT images under OUT/boxes-WxH-N/images and their COCO file."""
    root = os.path.join(out, "boxes-%s-%d-%d" % (source, count, boxes))
    images, coco = os.path.join(root, "images"), os.path.join(root, "coco.json")
    if os.path.exists(coco):
        return images, coco
    classes = 8
    per_class = max(1, count // classes)
    benchlib.say("boxes", "generating %d images of about %s with %d boxes each" % (
        per_class * classes, source, boxes))
    if os.path.exists(root):
        shutil.rmtree(root)
    benchlib.run([benchlib.imgpack_binary(), "sample-data", images, "--classes", classes,
                  "--groups", 16, "--per-class", per_class, "--size", source, "--seed", 5,
                  "--quiet"])
    rng = random.Random(5)
    listing = {"images": [], "annotations": [],
               "categories": [{"id": c + 1, "name": "object%d" % c} for c in range(classes)]}
    listing["categories"][0]["keypoints"] = ["left", "right"]
    for n, path in enumerate(sorted(benchlib.files_under(images))):
        if not path.endswith((".jpg", ".png")):
            continue
        width, height = image_size(path)
        listing["images"].append({"id": n, "file_name": os.path.relpath(path, images),
                                  "width": width, "height": height})
        for b in range(boxes):
            w, h = rng.uniform(0.05, 0.6) * width, rng.uniform(0.05, 0.6) * height
            x, y = rng.uniform(0, width - w), rng.uniform(0, height - h)
            category = rng.randrange(classes) + 1
            annotation = {"id": len(listing["annotations"]), "image_id": n,
                          "category_id": category, "bbox": [x, y, w, h],
                          "iscrowd": int(b % 8 == 7)}
            if category == 1:
                annotation["keypoints"] = [x + w / 4, y + h / 2, 2, x + 3 * w / 4, y + h / 2, 2]
            listing["annotations"].append(annotation)
    with open(coco, "w") as f:
        json.dump(listing, f)
    return images, coco


def convert(imgpack, images, coco, out, size, threads, variants):
    command = [imgpack, "convert", images, out, "--size", size, "--threads", threads, "--seed", 1,
               "--overwrite", "--quiet", "--json"]
    if coco:
        command += ["--coco", coco]
    if variants > 1:
        command += ["--variants", variants, "--augment", SPEC]
    wall, _, cpu, stdout = benchlib.timed(command)
    summary = json.loads(stdout)
    with open(os.path.join(out, "report.json")) as f:
        report = json.load(f)
    if summary["skipped"]:
        raise benchlib.CommandFailed("%s: %d inputs skipped" % (out, summary["skipped"]))
    return {"wall_s": wall, "cpu_s": cpu, "convert_s": report["timings"]["convert_s"],
            "samples": summary["samples"], "records": summary["records"],
            "command": " ".join(map(str, command))}


def bench(imgpack, dataset, threads, batch, epochs):
    report = benchlib.run_json([imgpack, "bench", dataset, "--batch", batch, "--threads", threads,
                                "--epochs", epochs, "--json", "--quiet"])
    return {"images_per_s": report["images_per_s"], "gb_per_s": report["gb_per_s"]}


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("count", type=int, help="images to generate")
    parser.add_argument("out", help="scratch and result directory")
    parser.add_argument("--source", default="640x480")
    parser.add_argument("--boxes", type=int, default=8, help="boxes per image")
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--threads", type=int, default=0, help="0 = all cores")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--epochs", type=int, default=20,
                        help="epochs per reader run (the datasets are small: enough to time)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", help="result file (default OUT/results.json)")
    args = parser.parse_args(argv)

    os.makedirs(args.out, exist_ok=True)
    imgpack = benchlib.imgpack_binary()
    threads = args.threads or os.cpu_count() or 1
    images, coco = make_inputs(args.out, args.count, args.source, args.boxes)
    image_bytes = benchlib.warm(benchlib.files_under(images))
    benchlib.warm([coco])

    runs = {key: [] for key in ("plain", "boxes", "plain_k4", "boxes_k4")}
    readers = {"plain": [], "boxes": []}
    datasets = {key: os.path.join(args.out, "data-" + key) for key in runs}
    for repeat in range(args.repeat):
        for key in runs:
            variants = 4 if key.endswith("k4") else 1
            runs[key].append(convert(imgpack, images, coco if key.startswith("boxes") else None,
                                     datasets[key], args.size, threads, variants))
        for key in readers:
            readers[key].append(bench(imgpack, datasets[key], threads, args.batch, args.epochs))
        benchlib.say("boxes", "repeat %d/%d: convert %.2f s, with boxes %.2f s; K=4 %.2f s, "
                     "with boxes %.2f s; reader %.0f images/s, with boxes %.0f" % (
                         repeat + 1, args.repeat, runs["plain"][-1]["convert_s"],
                         runs["boxes"][-1]["convert_s"], runs["plain_k4"][-1]["convert_s"],
                         runs["boxes_k4"][-1]["convert_s"], readers["plain"][-1]["images_per_s"],
                         readers["boxes"][-1]["images_per_s"]))

    def conversion(plain, boxed):
        a, b = runs[plain], runs[boxed]
        return {
            "variants": 4 if plain.endswith("k4") else 1,
            "samples": a[0]["samples"], "records": a[0]["records"],
            "plain_s": benchlib.summary([x["convert_s"] for x in a]),
            "boxes_s": benchlib.summary([x["convert_s"] for x in b]),
            "time_ratio": benchlib.summary(benchlib.ratios([x["convert_s"] for x in b],
                                                           [x["convert_s"] for x in a])),
            "cpu_ratio": benchlib.summary(benchlib.ratios([x["cpu_s"] for x in b],
                                                          [x["cpu_s"] for x in a])),
            "commands": [a[0]["command"], b[0]["command"]],
        }

    results = {
        "images": runs["plain"][0]["samples"], "boxes_per_image": args.boxes,
        "source": args.source, "size": args.size, "threads": threads, "batch": args.batch,
        "epochs": args.epochs, "repeat": args.repeat, "image_bytes": image_bytes,
        "convert": conversion("plain", "boxes"),
        "convert_k4": conversion("plain_k4", "boxes_k4"),
        "reader": {key: benchlib.summary([r["images_per_s"] for r in readers[key]])
                   for key in readers} | {
            "images_per_s_ratio": benchlib.summary(benchlib.ratios(
                [r["images_per_s"] for r in readers["boxes"]],
                [r["images_per_s"] for r in readers["plain"]]))},
    }
    for key in datasets.values():
        shutil.rmtree(key, ignore_errors=True)
    with open(args.json or os.path.join(args.out, "results.json"), "w") as f:
        json.dump(results, f, indent=2)

    def mmm(s, digits=2):
        return "%.*f (%.*f-%.*f)" % (digits, s["median"], digits, s["min"], digits, s["max"])

    print("%d images of about %s (%.1f MB), %d boxes each, -> %dx%d, %d threads, %d repeats: "
          "median (min-max)\n" % (results["images"], args.source, image_bytes / 1e6, args.boxes,
                                  args.size, args.size, threads, args.repeat))
    print("| conversion | without boxes s | with boxes s | time ratio | CPU ratio |")
    print("|---|---:|---:|---:|---:|")
    for name, key in (("K=1", "convert"), ("K=4", "convert_k4")):
        c = results[key]
        print("| %s | %s | %s | %s | %s |" % (name, mmm(c["plain_s"]), mmm(c["boxes_s"]),
                                              mmm(c["time_ratio"]), mmm(c["cpu_ratio"])))
    r = results["reader"]
    print("\n| reader, batch %d | without boxes images/s | with boxes images/s | ratio |"
          % args.batch)
    print("|---|---:|---:|---:|")
    print("| imgpack bench | %s | %s | %s |" % (mmm(r["plain"], 0), mmm(r["boxes"], 0),
                                                mmm(r["images_per_s_ratio"])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
