#!/usr/bin/env python3
"""Segmentation masks: conversion with masks against without, and the reader's
GB/s with masks against a same-run memcpy of the same bytes.

Inputs: `imgpack sample-data --masks` pairs, photo-sized (--source, about
640x480, each varying by +-25%; three JPEGs to one PNG) with their PNG label
maps, the masks moved beside the images. In every repeat, interleaved:

  convert         the images alone (the reference)
  convert masks   the same images with --masks: each mask read, decoded,
                  checked and resampled (nearest) with its image's geometry
  and both again with K=4 augmented variants (--augment), whose masks are
  warped with their images' affine maps;
  imgpack bench   the reader over the converted datasets, with masks and
                  without: its GB/s counts images and masks, against memcpy
                  of the same mapped bytes in the same run.

A conversion is timed by its conversion time (report.json timings.convert_s)
and its CPU time (user + system). What the masks cost is the difference, as
a fraction of the conversion without them (mostly JPEG decoding), per repeat.

Prints a Markdown table and writes OUT/results.json (or --json FILE).

usage: run.py COUNT OUT [--source 640x480] [--size 224] [--threads 0] [--repeat 3]
"""
import argparse
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import benchlib  # noqa: E402

SPEC = "hflip,rotate=15,shift=0.1,zoom=0.9:1.2,crop_scale=0.35:1,aspect=0.75:1.33"


def make_pairs(out, count, source):
    """COUNT image/mask pairs: OUT/pairs-WxH-N/images (class folders) and .../masks."""
    root = os.path.join(out, "pairs-%s-%d" % (source, count))
    images, masks = os.path.join(root, "images"), os.path.join(root, "masks")
    if os.path.isdir(masks):
        return images, masks
    classes = 8
    per_class = max(1, count // classes)
    benchlib.say("masks", "generating %d image/mask pairs of about %s" % (per_class * classes,
                                                                          source))
    if os.path.exists(root):
        shutil.rmtree(root)
    benchlib.run([benchlib.imgpack_binary(), "sample-data", images, "--classes", classes,
                  "--groups", 16, "--per-class", per_class, "--size", source, "--seed", 3,
                  "--masks", "--quiet"])
    os.rename(os.path.join(images, "masks"), masks)
    return images, masks


def convert(imgpack, images, masks, out, size, threads, variants):
    command = [imgpack, "convert", images, out, "--size", size, "--threads", threads, "--seed", 1,
               "--overwrite", "--quiet", "--json"]
    if masks:
        command += ["--masks", masks]
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
            "threads": report["threads"], "command": " ".join(map(str, command))}


def bench(imgpack, dataset, threads, batch, epochs):
    report = benchlib.run_json([imgpack, "bench", dataset, "--batch", batch, "--threads", threads,
                                "--epochs", epochs, "--json", "--quiet"])
    return {"gb_per_s": report["gb_per_s"], "memcpy_gb_per_s": report["memcpy_gb_per_s"],
            "images_per_s": report["images_per_s"], "ratio": report["gb_per_s"] /
            report["memcpy_gb_per_s"], "mask_bytes": report["mask_bytes"],
            "bytes": report["bytes"]}


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("count", type=int, help="image/mask pairs to generate")
    parser.add_argument("out", help="scratch and result directory")
    parser.add_argument("--source", default="640x480")
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--threads", type=int, default=0, help="0 = all cores")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", help="result file (default OUT/results.json)")
    args = parser.parse_args(argv)

    os.makedirs(args.out, exist_ok=True)
    imgpack = benchlib.imgpack_binary()
    threads = args.threads or os.cpu_count() or 1
    images, masks = make_pairs(args.out, args.count, args.source)
    image_bytes = benchlib.warm(benchlib.files_under(images))
    mask_bytes = benchlib.warm(benchlib.files_under(masks))

    runs = {key: [] for key in ("plain", "masks", "plain_k4", "masks_k4")}
    readers = {"plain": [], "masks": []}
    datasets = {key: os.path.join(args.out, "data-" + key) for key in runs}
    for repeat in range(args.repeat):
        for key in runs:
            variants = 4 if key.endswith("k4") else 1
            runs[key].append(convert(imgpack, images, masks if key.startswith("masks") else None,
                                     datasets[key], args.size, threads, variants))
        for key in readers:
            readers[key].append(bench(imgpack, datasets[key], threads, args.batch, args.epochs))
        benchlib.say("masks", "repeat %d/%d: convert %.2f s, with masks %.2f s; K=4 %.2f s, "
                     "with masks %.2f s; reader %.2f GB/s (memcpy %.2f), with masks %.2f GB/s "
                     "(memcpy %.2f)" % (
                         repeat + 1, args.repeat, runs["plain"][-1]["convert_s"],
                         runs["masks"][-1]["convert_s"], runs["plain_k4"][-1]["convert_s"],
                         runs["masks_k4"][-1]["convert_s"], readers["plain"][-1]["gb_per_s"],
                         readers["plain"][-1]["memcpy_gb_per_s"], readers["masks"][-1]["gb_per_s"],
                         readers["masks"][-1]["memcpy_gb_per_s"]))

    def conversion(plain, masked):
        a, b = runs[plain], runs[masked]
        return {
            "variants": 4 if plain.endswith("k4") else 1,
            "samples": a[0]["samples"], "records": a[0]["records"], "threads": a[0]["threads"],
            "plain_s": benchlib.summary([x["convert_s"] for x in a]),
            "masks_s": benchlib.summary([x["convert_s"] for x in b]),
            "plain_cpu_s": benchlib.summary([x["cpu_s"] for x in a]),
            "masks_cpu_s": benchlib.summary([x["cpu_s"] for x in b]),
            "time_ratio": benchlib.summary(benchlib.ratios([x["convert_s"] for x in b],
                                                           [x["convert_s"] for x in a])),
            "cpu_ratio": benchlib.summary(benchlib.ratios([x["cpu_s"] for x in b],
                                                          [x["cpu_s"] for x in a])),
            # What the masks cost, as a fraction of converting the images alone.
            "mask_cpu_share": benchlib.summary([(y["cpu_s"] - x["cpu_s"]) / x["cpu_s"]
                                                for x, y in zip(a, b)]),
            "mask_cpu_ms_per_image": benchlib.summary([
                (y["cpu_s"] - x["cpu_s"]) * 1000 / x["samples"] for x, y in zip(a, b)]),
            "image_cpu_ms_per_image": benchlib.summary([x["cpu_s"] * 1000 / x["samples"]
                                                        for x in a]),
            "commands": [a[0]["command"], b[0]["command"]],
        }

    def reader(key):
        rs = readers[key]
        return {k: benchlib.summary([r[k] for r in rs])
                for k in ("gb_per_s", "memcpy_gb_per_s", "images_per_s", "ratio")} | {
            "bytes": rs[0]["bytes"], "mask_bytes": rs[0]["mask_bytes"]}

    results = {
        "pairs": runs["plain"][0]["samples"], "source": args.source, "size": args.size,
        "threads": threads, "batch": args.batch, "epochs": args.epochs, "repeat": args.repeat,
        "image_bytes": image_bytes, "mask_file_bytes": mask_bytes, "spec": SPEC,
        "convert": conversion("plain", "masks"),
        "convert_k4": conversion("plain_k4", "masks_k4"),
        "reader": {"plain": reader("plain"), "masks": reader("masks"),
                   "images_per_s_ratio": benchlib.summary(benchlib.ratios(
                       [r["images_per_s"] for r in readers["masks"]],
                       [r["images_per_s"] for r in readers["plain"]]))},
    }
    for key in datasets.values():
        shutil.rmtree(key, ignore_errors=True)
    with open(args.json or os.path.join(args.out, "results.json"), "w") as f:
        json.dump(results, f, indent=2)

    def mmm(s, digits=2):
        return "%.*f (%.*f-%.*f)" % (digits, s["median"], digits, s["min"], digits, s["max"])

    print("%d pairs of about %s (%.1f MB of images, %.1f MB of masks) -> %dx%d, %d threads, "
          "%d repeats: median (min-max)\n" % (results["pairs"], args.source, image_bytes / 1e6,
                                              mask_bytes / 1e6, args.size, args.size, threads,
                                              args.repeat))
    print("| conversion | without masks s | with masks s | time ratio | CPU ratio | masks' CPU "
          "per image | images' CPU per image |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, key in (("K=1", "convert"), ("K=4", "convert_k4")):
        c = results[key]
        print("| %s | %s | %s | %s | %s | %s ms | %s ms |" % (
            name, mmm(c["plain_s"]), mmm(c["masks_s"]), mmm(c["time_ratio"]),
            mmm(c["cpu_ratio"]), mmm(c["mask_cpu_ms_per_image"]),
            mmm(c["image_cpu_ms_per_image"])))
    print("\n| reader | GB/s | memcpy GB/s (same bytes, same run) | reader / memcpy | images/s |")
    print("|---|---:|---:|---:|---:|")
    for key in ("plain", "masks"):
        r = results["reader"][key]
        print("| %s | %s | %s | %s | %s |" % (key, mmm(r["gb_per_s"]), mmm(r["memcpy_gb_per_s"]),
                                             mmm(r["ratio"]), mmm(r["images_per_s"], 0)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
