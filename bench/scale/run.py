#!/usr/bin/env python3
"""What grows with the sample count, at several sizes: opening a dataset (time
and the reader's anonymous memory), inspect, split --list, every split kind
(one group per image, and groups of 40), verify and imgpack upgrade, on
synthetic datasets of one-pixel records (make_dataset.py), so that the index,
not the pixels, is the work.

usage: bench/scale/run.py IMGPACK WORKDIR N... [--repeat R] [--json OUT]

Per size N it makes (once, cached in WORKDIR) a dataset of index format 1,
then a hard-linked copy upgraded to format 2 with `imgpack upgrade` (timed),
and the same with groups of 40 images. Format 2 is what imgpack writes; format
1, what it wrote before, is measured in the same run as the reference for
open, inspect, split --list and a split. Every figure is the min / median /
max of R runs. Prints one line per figure and writes them all to OUT as JSON.

  --probe DATASET    (internal) opens DATASET with the Python module in this
                     process and prints the open time and anonymous memory
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

KINDS = ["random", "stratified", "group", "stratified-group"]
GROUP_KINDS = ["group", "stratified-group"]


def rss_anon():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
    return 0


def probe(dataset):
    """Dataset::open through the Python module: seconds, anonymous bytes it
    added, and those a Loader adds once it has delivered its first batch."""
    import imgpack
    base = rss_anon()
    start = time.perf_counter()
    ds = imgpack.Dataset(dataset)
    open_s = time.perf_counter() - start
    opened = rss_anon()
    loader = imgpack.Loader(ds, batch_size=256, threads=1, prefetch=2, order="random")
    start = time.perf_counter()
    next(iter(loader))
    first_batch_s = time.perf_counter() - start
    print(json.dumps({"open_s": open_s, "open_anon_bytes": opened - base,
                      "loader_anon_bytes": rss_anon() - base, "first_batch_s": first_batch_s,
                      "samples": len(ds)}))


def make(workdir, n, groups, imgpack):
    """The format 1 dataset and its format 2 upgrade (made once); the upgrade's seconds."""
    tag = "scale-%d-%s" % (n, groups.replace(":", ""))
    old = os.path.join(workdir, tag + "-format1")
    new = os.path.join(workdir, tag)
    if not os.path.exists(os.path.join(old, "index.h5")):
        benchlib.say("scale", "writing %s" % old)
        subprocess.run([benchlib.PYTHON, os.path.join(HERE, "make_dataset.py"), old, str(n),
                        "--groups", groups], check=True)
    upgrade = None
    if not os.path.exists(os.path.join(new, "splits.h5")):
        shutil.rmtree(new, ignore_errors=True)
        # Hard links: the upgrade renames a new index.h5 into place, never
        # writing into the format 1 dataset's files.
        subprocess.run(["cp", "-al", old, new], check=True)
        upgrade = benchlib.run_json([imgpack, "upgrade", new, "--json"])["seconds"]
    return old, new, upgrade


class Figures:
    def __init__(self, repeat):
        self.repeat = repeat
        self.rows = []

    def add(self, n, what, runs, unit="s", **extra):
        row = {"samples": n, "what": what, "unit": unit, "runs": runs,
               "summary": benchlib.summary(runs)}
        row.update(extra)
        self.rows.append(row)
        s = row["summary"]
        print("%10d  %-42s %10.3f %s (%.3f-%.3f)" % (n, what, s["median"], unit, s["min"],
                                                    s["max"]), flush=True)

    def time(self, n, what, command, **extra):
        runs = []
        for _ in range(self.repeat):
            seconds, _, _, _ = benchlib.timed(command)
            runs.append(seconds)
        self.add(n, what, runs, **extra)


def measure(args, n, figures):
    imgpack = args.imgpack
    old, new, upgrade = make(args.workdir, n, "per-sample", imgpack)
    _, new40, _ = make(args.workdir, n, "size:40", imgpack)
    if upgrade is not None:
        figures.add(n, "upgrade (format 1 -> 2)", [upgrade])
    probe_command = [benchlib.PYTHON, os.path.abspath(__file__), "--probe"]
    for fmt, dataset in (("format 2", new), ("format 1", old)):
        benchlib.warm(benchlib.files_under(dataset))
        probes = [benchlib.run_json(probe_command + [dataset], env=benchlib.python_env())
                  for _ in range(figures.repeat)]
        figures.add(n, "open, %s" % fmt, [p["open_s"] for p in probes])
        figures.add(n, "reader memory after open, %s" % fmt,
                    [p["open_anon_bytes"] / n for p in probes], unit="B/sample")
        if fmt == "format 2":
            figures.add(n, "reader memory with a Loader, %s" % fmt,
                        [p["loader_anon_bytes"] / n for p in probes], unit="B/sample")
        figures.time(n, "inspect, %s" % fmt, [imgpack, "inspect", dataset])
        figures.time(n, "split --list, %s" % fmt, [imgpack, "split", dataset, "--list"])
    for kind in KINDS:
        figures.time(n, "split %s, one group per image" % kind,
                     [imgpack, "split", new, "--name", kind, "--kind", kind, "--folds", "5",
                      "--force", "--json"])
    for kind in GROUP_KINDS:
        figures.time(n, "split %s, groups of 40" % kind,
                     [imgpack, "split", new40, "--name", kind, "--kind", kind, "--folds", "5",
                      "--force", "--json"])
    # Format 1 keeps its splits in index.h5, which a split rewrites whole.
    figures.time(n, "split random, format 1",
                 [imgpack, "split", old, "--name", "random", "--kind", "random", "--folds", "5",
                  "--force", "--json"])
    runs = []
    for _ in range(figures.repeat):
        report = benchlib.run_json([imgpack, "verify", new, "--json", "--threads", "2"])
        if not report["ok"]:
            raise benchlib.CommandFailed("verify found %s damaged" % new)
        runs.append(report)
    figures.add(n, "verify", [r["seconds"] for r in runs])
    figures.add(n, "verify: index and structure", [r["structure_seconds"] for r in runs])
    figures.add(n, "verify: checksums", [r["checksum_seconds"] for r in runs])
    index_bytes = os.path.getsize(os.path.join(new, "index.h5"))
    figures.rows.append({"samples": n, "what": "files", "index_bytes": index_bytes,
                         "format1_index_bytes": os.path.getsize(os.path.join(old, "index.h5")),
                         "shard_bytes": os.path.getsize(os.path.join(new, "shard-00000.h5"))})


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--probe":
        probe(sys.argv[2])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("imgpack")
    parser.add_argument("workdir")
    parser.add_argument("sizes", type=int, nargs="+")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", help="write every figure here")
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    figures = Figures(args.repeat)
    for n in args.sizes:
        measure(args, n, figures)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"sizes": args.sizes, "repeat": args.repeat, "rows": figures.rows}, f,
                      indent=1)


if __name__ == "__main__":
    main()
