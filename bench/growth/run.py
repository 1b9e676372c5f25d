#!/usr/bin/env python3
"""Datasets that grow: appending 1% and 10% more images to a dataset against
converting the grown collection in full.

Inputs: COUNT `imgpack sample-data` images (small, so that a 100k-sample
dataset is quick to make), in class folders with groups; or, with --photos
WxH, COUNT photo-like JPEGs of that size (bench/convert/make_photos.py), of
which --unique are generated and the rest are hard links to them under names
of their own (the decode costs the same per input; the page cache holds the
unique ones), converted to --size (default 32 for sample-data, 112 for
photos) with one variant fewer so that the datasets fit on disk. For each fraction p
the old collection is every image but one in 1/p (hard links, so the new
images spread over every class and group), converted once with the same
options as the full conversion (a 5-fold stratified-group split, two
variants). In every repeat, interleaved, page-cached:

  convert         the whole collection, from nothing (the reference)
  append p        `convert SRC OUT --append` onto a fresh copy of the old
                  dataset: scans SRC, converts the new images into new
                  shards, extends the split, rewrites index.h5 and splits.h5.

  append p list   the same append given the new images' paths (--files LIST, as
                  the step that brought them in can write it: `rsync
                  --out-format=%n`, `cp -v`): SRC is not walked.

Ratios are per repeat, append over full conversion, of wall time. The
target: appending p of the samples costs about p of a conversion plus the
index rewrite, so ratio_without_index leaves out the append's commit stage
(extending the splits, writing splits.h5 and index.h5). Also checks that the append read none of the old shards
(their access times are left alone on a noatime mount, so instead it checks
the bytes: every old shard unchanged) and that the extended split kept every
old assignment.

Prints a Markdown table and writes OUT/results.json (or --json FILE).

usage: run.py COUNT OUT [--fractions 0.01,0.1] [--threads 2] [--repeat 3]
              [--photos WxH [--unique 5000]] [--size N]
"""
import argparse
import hashlib
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import benchlib  # noqa: E402

def conversion_options(size, photos):
    """The conversion's options: two variants of small images, one of photos."""
    variants = ["--variants", "1"] if photos else ["--variants", "2", "--augment", "hflip"]
    return ["--size", str(size)] + variants + [
        "--group-regex", "/(g[0-9]+)_", "--split", "cv:stratified-group:5", "-q"]


def make_collection(out, count):
    src = os.path.join(out, "src-%d" % count)
    if not os.path.isdir(src):
        classes = 10
        benchlib.run([benchlib.imgpack_binary(), "sample-data", src, "--classes", classes,
                      "--groups", 50, "--per-class", (count + classes - 1) // classes,
                      "--size", "48x40", "-q"])
    return src


def make_photo_collection(out, count, width, height, unique):
    """COUNT photo names in 10 class folders with 50 groups (g00_...), hard links to
    UNIQUE generated photos."""
    src = os.path.join(out, "photos-%dx%d-%d" % (width, height, count))
    marker = src + ".complete"
    if os.path.exists(marker):
        return src
    photos = os.path.join(out, "photos-%dx%d" % (width, height))
    benchlib.make_photos(photos, unique, width, height)
    originals = benchlib.photo_paths(photos, unique)
    shutil.rmtree(src, ignore_errors=True)
    for i in range(count):
        target = os.path.join(src, "c%d" % (i % 10), "g%02d_%07d.jpg" % (i % 50, i))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        os.link(originals[i % unique], target)
    open(marker, "w").close()
    return src


def old_collection(out, src, fraction):
    """SRC without one image in every 1/fraction (sorted by path), as hard links."""
    old = os.path.join(out, "old-%s-%g" % (os.path.basename(src), fraction))
    if os.path.isdir(old):
        return old
    step = round(1 / fraction)
    images = [p for p in benchlib.files_under(src) if not p.endswith(".csv")]
    for i, path in enumerate(images):
        if i % step == step - 1:
            continue
        target = os.path.join(old, os.path.relpath(path, src))
        os.makedirs(os.path.dirname(target), exist_ok=True)
        os.link(path, target)
    return old


def new_files_list(out, src, old, fraction):
    """A list of the images in SRC but not in OLD, relative to SRC, one per line."""
    path = os.path.join(out, "new-%s-%g.txt" % (os.path.basename(src), fraction))
    if not os.path.exists(path):
        with open(path + ".tmp", "w") as f:
            for image in benchlib.files_under(src):
                rel = os.path.relpath(image, src)
                if not image.endswith(".csv") and not os.path.exists(os.path.join(old, rel)):
                    f.write(rel + "\n")
        os.replace(path + ".tmp", path)
    return path


def digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("count", type=int)
    parser.add_argument("out")
    parser.add_argument("--fractions", default="0.01,0.1")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", default=None)
    parser.add_argument("--photos", default=None, help="WxH: photo-like JPEGs of that size")
    parser.add_argument("--unique", type=int, default=5000)
    parser.add_argument("--size", type=int, default=None)
    args = parser.parse_args()
    size = args.size or (112 if args.photos else 32)
    OPTIONS = conversion_options(size, args.photos)
    imgpack = benchlib.imgpack_binary()
    os.makedirs(args.out, exist_ok=True)
    fractions = [float(f) for f in args.fractions.split(",")]
    threads = ["--threads", str(args.threads)]

    if args.photos:
        width, height = (int(v) for v in args.photos.split("x"))
        src = make_photo_collection(args.out, args.count, width, height, args.unique)
    else:
        src = make_collection(args.out, args.count)
    benchlib.warm(benchlib.files_under(src))
    bases, lists = {}, {}
    for fraction in fractions:
        old = old_collection(args.out, src, fraction)
        lists[fraction] = new_files_list(args.out, src, old, fraction)
        base = os.path.join(args.out, "base-%s-%g" % (os.path.basename(src), fraction))
        if not os.path.exists(os.path.join(base, "index.h5")):
            shutil.rmtree(base, ignore_errors=True)
            benchlib.run([imgpack, "convert", old, base] + OPTIONS + threads)
        bases[fraction] = base

    full_s, append_s = [], {f: [] for f in fractions}
    full_parts, append_parts = [], {f: [] for f in fractions}
    listed_s, listed_parts = {f: [] for f in fractions}, {f: [] for f in fractions}
    added, checks = {}, {}
    for r in range(args.repeat):
        full = os.path.join(args.out, "full")
        shutil.rmtree(full, ignore_errors=True)
        seconds, _, _, _ = benchlib.timed([imgpack, "convert", src, full] + OPTIONS + threads)
        full_s.append(seconds)
        with open(os.path.join(full, "report.json")) as f:
            timings = json.load(f)["timings"]
        full_parts.append({"plan_s": timings["plan_s"], "convert_s": timings["convert_s"]})
        benchlib.say("growth", "repeat %d: full conversion %.2f s" % (r, seconds))
        for fraction in fractions:
            grown = os.path.join(args.out, "grown-%g" % fraction)
            shutil.rmtree(grown, ignore_errors=True)
            shutil.copytree(bases[fraction], grown)
            os.sync()  # the copy's dirty pages are not the append's to write
            old_index = benchlib.run_json([imgpack, "inspect", grown, "--json"])
            shards = sorted(f for f in os.listdir(grown) if f.startswith("shard-"))
            before = {f: digest(os.path.join(grown, f)) for f in shards}
            benchlib.warm([os.path.join(grown, "index.h5"), os.path.join(grown, "splits.h5")])
            seconds, _, _, stdout = benchlib.timed(
                [imgpack, "convert", src, grown, "--append", "--json"] + threads)
            result = json.loads(stdout)
            append_s[fraction].append(seconds)
            append_parts[fraction].append(result["timings"])
            added[fraction] = result["added"]
            unchanged = all(digest(os.path.join(grown, f)) == d for f, d in before.items())
            grown_index = benchlib.run_json([imgpack, "inspect", grown, "--json"])
            checks[fraction] = {"old_shards_unchanged": unchanged,
                                "old_samples": old_index["samples"],
                                "samples_after": grown_index["samples"],
                                "generation": grown_index["generation"]}
            benchlib.say("growth", "repeat %d: append %g (%d images) %.2f s" %
                         (r, fraction, result["added"], seconds))
            # The same append with the new files listed: nothing walked.
            shutil.rmtree(grown)
            shutil.copytree(bases[fraction], grown)
            os.sync()
            benchlib.warm([os.path.join(grown, "index.h5"), os.path.join(grown, "splits.h5")])
            seconds, _, _, stdout = benchlib.timed(
                [imgpack, "convert", src, grown, "--append", "--files", lists[fraction],
                 "--json"] + threads)
            listed = json.loads(stdout)
            if listed["added"] != result["added"]:
                sys.exit("growth: the listed append added %d images, the walking one %d" %
                         (listed["added"], result["added"]))
            listed_s[fraction].append(seconds)
            listed_parts[fraction].append(listed["timings"])
            benchlib.say("growth", "repeat %d: append %g from a list %.2f s" %
                         (r, fraction, seconds))

    rows = []
    results = {"count": args.count, "threads": args.threads, "repeat": args.repeat,
               "inputs": ("photo-like %s JPEGs (%d unique)" % (args.photos, args.unique)
                          if args.photos else "sample-data 48x40 images"),
               "options": OPTIONS, "full_s": benchlib.summary(full_s),
               "full_plan_s": benchlib.summary([p["plan_s"] for p in full_parts]),
               "fractions": {}}
    for fraction in fractions:
        ratio = benchlib.summary(benchlib.ratios(append_s[fraction], full_s))
        # The target's own measure: the append without the index rewrite (extending the
        # split, writing splits.h5 and index.h5) against the full conversion.
        without_index = benchlib.summary(benchlib.ratios(
            [a - p["commit_s"] for a, p in zip(append_s[fraction], append_parts[fraction])],
            full_s))
        # The conversion stage alone (decode, resize, write), append against full.
        convert_ratio = benchlib.summary(benchlib.ratios(
            [p["convert_s"] for p in append_parts[fraction]], [p["convert_s"] for p in full_parts]))
        parts = {key: benchlib.summary([p[key] for p in append_parts[fraction]])
                 for key in ("plan_s", "convert_s", "commit_s")}
        listed_ratio = benchlib.summary(benchlib.ratios(listed_s[fraction], full_s))
        listed_without_index = benchlib.summary(benchlib.ratios(
            [a - p["commit_s"] for a, p in zip(listed_s[fraction], listed_parts[fraction])],
            full_s))
        listed_split = {key: benchlib.summary([p[key] for p in listed_parts[fraction]])
                        for key in ("plan_s", "convert_s", "commit_s")}
        results["fractions"][str(fraction)] = {
            "added": added[fraction], "append_s": benchlib.summary(append_s[fraction]),
            "ratio": ratio, "ratio_without_index": without_index,
            "convert_ratio": convert_ratio, "append_parts": parts,
            "listed": {"append_s": benchlib.summary(listed_s[fraction]), "ratio": listed_ratio,
                       "ratio_without_index": listed_without_index,
                       "append_parts": listed_split},
            "checks": checks[fraction]}
        rows.append("| append %g%% (%d images) | %.2f s (scan %.2f, convert %.2f, index %.2f) | "
                    "%.2f s (scan %.2f) | %.3f (%.3f-%.3f) | %.3f | %s |" % (
                        fraction * 100, added[fraction],
                        benchlib.summary(append_s[fraction])["median"], parts["plan_s"]["median"],
                        parts["convert_s"]["median"], parts["commit_s"]["median"],
                        results["full_s"]["median"],
                        benchlib.summary([p["plan_s"] for p in full_parts])["median"],
                        ratio["median"], ratio["min"], ratio["max"], convert_ratio["median"],
                        "yes" if checks[fraction]["old_shards_unchanged"] else "NO"))
        rows.append("| append %g%% from a list (--files) | %.2f s (scan %.2f, convert %.2f, "
                    "index %.2f) | | %.3f (%.3f-%.3f) | | |" % (
                        fraction * 100, benchlib.summary(listed_s[fraction])["median"],
                        listed_split["plan_s"]["median"], listed_split["convert_s"]["median"],
                        listed_split["commit_s"]["median"], listed_ratio["median"],
                        listed_ratio["min"], listed_ratio["max"]))
    results["full_parts"] = full_parts
    print("| change | append (wall) | full conversion of %d | ratio of wall times (median, "
          "range) | ratio of the conversion stages | old shards byte for byte |" % args.count)
    print("|---|---:|---:|---:|---:|---|")
    print("\n".join(rows))
    with open(args.json or os.path.join(args.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
