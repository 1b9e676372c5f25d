#!/usr/bin/env python3
"""Conversion in parts: N concurrent `imgpack convert --part I/N` processes and
`imgpack merge`, against one `imgpack convert` with the same total threads.

usage: bench/parts/run.py SRC WORKDIR [--parts 2,4] [--size 224] [--repeat R]
                          [--merge-images M] [--merge-variants V] [--merge-parts P]
                          [--json FILE] [--imgpack PATH]

Throughput: for each N of --parts, in every repeat and side by side (the
order alternates from one repeat to the next),

  one process    imgpack convert SRC OUT --threads N
  N parts        imgpack convert SRC OUT --part I/N --threads 1, for I = 0..N-1,
                 all started at once; the time runs until the last one ends
  merge          imgpack merge OUT, after the parts

and the throughput ratio of the parts to the one process, without and with
the merge. SRC's files are read once beforehand, so both start from the page
cache. The merged dataset must hold the one process's samples and records.

Merge at scale: M generated 16x16 PNGs (in WORKDIR/merge-src, made once)
converted once with --variants V into P parts (M x V records; the default
1,000,000); each repeat copies the parts into a fresh OUT and times
`imgpack merge OUT` (wall time of the command, start-up included, and the
time the merge reports for itself).

Prints a table (min / median / max over the repeats) and writes the samples
and their summaries to --json (default WORKDIR/results.json).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import benchlib  # noqa: E402

MERGE_CLASSES = 100
MERGE_DISTINCT = 256  # distinct image files; the rest repeat their bytes under other names


def convert_single(args, src, out, threads):
    shutil.rmtree(out, ignore_errors=True)
    command = [args.imgpack, "convert", src, out, "--size", str(args.size), "--seed", "1",
               "--threads", str(threads), "--quiet", "--json"]
    wall, _, _, stdout = benchlib.timed(command)
    return wall, json.loads(stdout), " ".join(command)


def convert_parts(args, src, out, parts):
    """Runs the N part conversions at once; returns the wall time until the last one ended."""
    shutil.rmtree(out, ignore_errors=True)
    commands = [[args.imgpack, "convert", src, out, "--size", str(args.size), "--seed", "1",
                 "--threads", "1", "--part", "%d/%d" % (i, parts), "--quiet"]
                for i in range(parts)]
    start = time.perf_counter()
    running = [subprocess.Popen(c, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
               for c in commands]
    failures = []
    for command, process in zip(commands, running):
        _, stderr = process.communicate()
        if process.returncode != 0:
            failures.append("%s: %s" % (" ".join(command), stderr.strip()[-2000:]))
    wall = time.perf_counter() - start
    if failures:
        raise benchlib.CommandFailed("part conversion failed:\n" + "\n".join(failures))
    return wall, " ".join(commands[0]).replace("0/%d" % parts, "I/%d" % parts)


def merge(args, out):
    command = [args.imgpack, "merge", out, "--json"]
    wall, peak_kib, _, stdout = benchlib.timed(command)
    return wall, peak_kib, json.loads(stdout), " ".join(command)


def throughput(args, src, results):
    images = len(benchlib.files_under(src))
    for parts in args.parts:
        seconds = {"single": [], "parts": [], "merge": []}
        for r in range(args.repeat):
            single_out = os.path.join(args.workdir, "single")
            parts_out = os.path.join(args.workdir, "parts")
            order = ("single", "parts") if r % 2 == 0 else ("parts", "single")
            for name in order:
                if name == "single":
                    wall, single, command = convert_single(args, src, single_out, parts)
                    seconds["single"].append(wall)
                    results["commands"]["single"] = command
                else:
                    wall, command = convert_parts(args, src, parts_out, parts)
                    seconds["parts"].append(wall)
                    results["commands"]["parts"] = command
                    wall, _, merged, command = merge(args, parts_out)
                    seconds["merge"].append(wall)
                    results["commands"]["merge"] = command
            if (merged["samples"], merged["records"]) != (single["samples"], single["records"]):
                raise benchlib.CommandFailed(
                    "the merged parts hold %d samples / %d records, one process %d / %d" % (
                        merged["samples"], merged["records"], single["samples"],
                        single["records"]))
            shutil.rmtree(single_out, ignore_errors=True)
            shutil.rmtree(parts_out, ignore_errors=True)
            benchlib.say("parts", "%d parts, repeat %d/%d: one process %.2f s, parts %.2f s, "
                         "merge %.2f s" % (parts, r + 1, args.repeat, seconds["single"][-1],
                                           seconds["parts"][-1], seconds["merge"][-1]))
        with_merge = [p + m for p, m in zip(seconds["parts"], seconds["merge"])]
        results["throughput"].append({
            "parts": parts,
            "images": images,
            "seconds": seconds,
            "images_per_s": {
                "single": benchlib.summary([images / s for s in seconds["single"]]),
                "parts": benchlib.summary([images / s for s in seconds["parts"]]),
                "parts_and_merge": benchlib.summary([images / s for s in with_merge])},
            "merge_s": benchlib.summary(seconds["merge"]),
            "ratio": benchlib.summary(benchlib.ratios(seconds["single"], seconds["parts"])),
            "ratio_with_merge": benchlib.summary(benchlib.ratios(seconds["single"], with_merge)),
        })


def make_merge_source(folder, count):
    """COUNT 16x16 PNGs in class folders, MERGE_DISTINCT distinct ones (made once)."""
    marker = folder + ".complete"
    if os.path.exists(marker):
        return
    import cv2
    import numpy as np
    shutil.rmtree(folder, ignore_errors=True)
    rng = np.random.default_rng(1)
    blobs = []
    for _ in range(MERGE_DISTINCT):
        ok, png = cv2.imencode(".png", rng.integers(0, 256, (16, 16, 3), dtype=np.uint8))
        assert ok
        blobs.append(png.tobytes())
    for c in range(MERGE_CLASSES):
        os.makedirs(os.path.join(folder, "c%02d" % c))
    for i in range(count):
        path = os.path.join(folder, "c%02d" % (i % MERGE_CLASSES), "i%07d.png" % i)
        with open(path, "wb") as f:
            f.write(blobs[i % MERGE_DISTINCT])
    open(marker, "w").close()


def merge_at_scale(args, results):
    src = os.path.join(args.workdir, "merge-src-%d" % args.merge_images)
    records = args.merge_images * args.merge_variants
    template = os.path.join(args.workdir, "merge-parts-%d" % records)
    benchlib.say("parts", "merge: %d images x %d variants in %d parts (made once, in %s)" % (
        args.merge_images, args.merge_variants, args.merge_parts, template))
    make_merge_source(src, args.merge_images)
    if not os.path.exists(template + ".complete"):
        shutil.rmtree(template, ignore_errors=True)
        for i in range(args.merge_parts):
            command = [args.imgpack, "convert", src, template, "--variants",
                       str(args.merge_variants), "--augment", "hflip=1", "--seed", "1",
                       "--part", "%d/%d" % (i, args.merge_parts), "--quiet"]
            benchlib.run(command)
        results["commands"]["merge_parts"] = " ".join(command).replace(
            "%d/%d" % (i, args.merge_parts), "I/%d" % args.merge_parts)
        open(template + ".complete", "w").close()
    out = os.path.join(args.workdir, "merge-out")
    wall, reported, rss, shards = [], [], [], None
    for r in range(args.repeat):
        shutil.rmtree(out, ignore_errors=True)
        shutil.copytree(template, out)  # a real copy: merge rewrites the part shards it moves
        benchlib.warm(benchlib.files_under(out))
        seconds, peak_kib, merged, command = merge(args, out)
        if merged["records"] != records:
            raise benchlib.CommandFailed("merge made %d records, not %d" % (
                merged["records"], records))
        wall.append(seconds)
        reported.append(merged["seconds"])
        rss.append(peak_kib / 1024)
        shards = merged["shards"]
        results["commands"]["merge_at_scale"] = command
        benchlib.say("parts", "merge of %d records, repeat %d/%d: %.2f s" % (
            records, r + 1, args.repeat, seconds))
    shutil.rmtree(out, ignore_errors=True)
    results["merge_at_scale"] = {
        "records": records, "images": args.merge_images, "variants": args.merge_variants,
        "parts": args.merge_parts, "shards": shards, "seconds": wall,
        "wall_s": benchlib.summary(wall), "reported_s": benchlib.summary(reported),
        "peak_rss_mib": benchlib.summary(rss)}


def fmt(s, digits=2):
    return "%.*f / %.*f / %.*f" % (digits, s["min"], digits, s["median"], digits, s["max"])


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("src")
    parser.add_argument("workdir")
    parser.add_argument("--parts", default="2,4",
                        type=lambda text: [int(n) for n in text.split(",")])
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--merge-images", type=int, default=250000)
    parser.add_argument("--merge-variants", type=int, default=4)
    parser.add_argument("--merge-parts", type=int, default=4)
    parser.add_argument("--imgpack", default=benchlib.imgpack_binary())
    parser.add_argument("--json", help="result file (default WORKDIR/results.json)")
    args = parser.parse_args(argv)
    os.makedirs(args.workdir, exist_ok=True)
    benchlib.warm(benchlib.files_under(args.src))

    results = {"size": args.size, "cpus": os.cpu_count(), "repeat": args.repeat,
               "throughput": [], "commands": {}}
    throughput(args, args.src, results)
    merge_at_scale(args, results)

    out = args.json or os.path.join(args.workdir, "results.json")
    with open(out, "w") as f:
        json.dump(results, f, indent=2)

    print("conversion in parts, %d CPUs; min / median / max of %d" % (os.cpu_count(),
                                                                      args.repeat))
    for row in results["throughput"]:
        print("%d parts x 1 thread against 1 process x %d threads, %d images:" % (
            row["parts"], row["parts"], row["images"]))
        print("  one process        %s images/s" % fmt(row["images_per_s"]["single"], 1))
        print("  parts              %s images/s" % fmt(row["images_per_s"]["parts"], 1))
        print("  parts + merge      %s images/s" % fmt(row["images_per_s"]["parts_and_merge"], 1))
        print("  parts / one process: %s   with the merge: %s" % (
            fmt(row["ratio"]), fmt(row["ratio_with_merge"])))
    m = results["merge_at_scale"]
    print("imgpack merge of %d records (%d parts, %d shards): %s s wall, %s s reported, "
          "peak RSS %s MiB" % (m["records"], m["parts"], m["shards"], fmt(m["wall_s"]),
                               fmt(m["reported_s"]), fmt(m["peak_rss_mib"], 0)))


if __name__ == "__main__":
    main(sys.argv[1:])
