#!/usr/bin/env python3
"""Runs every imgpack benchmark against its peers and writes the results page.

usage: bench/run-all [--quick [--peers]] [--work DIR] [--repeat N] [--only SECTION,...]
                     [--report-only] [--docs DIR]

Sections (in this order): convert, parts, augment, splits, reader, cold, python,
verify, scale, masks, boxes, growth, startup, training. Each runs a script under
bench/ that measures imgpack and its peers side by side in one run, repeated --repeat times (3 in full mode, 1 with --quick), and
leaves WORK/results/SECTION.json. The peers are the reference implementations
imgpack is compared with (the Python OpenCV + h5py packer, scikit-learn's
splitters, h5py reads, torch DataLoaders). Inputs are generated
deterministically and cached in WORK (default out/bench; --quick:
out/bench-quick), so a second run skips the generation. --quick keeps its
photo-like JPEGs in the user's cache instead ($IMGPACK_BENCH_PHOTOS, else
$XDG_CACHE_HOME/imgpack/bench-photos/KEY, else ~/.cache/...; KEY a digest of
the generator), so that a run in a fresh clone (CI's) reuses them too.

Full mode then rewrites docs/BENCHMARKS.md and docs/bench/*.png (or --docs
DIR). It takes tens of minutes on two cores (the first run longer: it
generates about 25,000 photo-like JPEGs) and is not run in CI.

--quick uses small inputs and one repeat and finishes in a few minutes. It
runs every imgpack code path but no peer (the sections' scripts get
--no-peers) unless --peers asks for them. It writes the page to WORK/report/
(never docs/) and checks that every benchmark produced its figures (present,
finite, positive; the peers' only where they ran), not that targets are met,
so noise cannot fail it. Exit status: 0, or 1 when a benchmark failed or a
figure is missing.

--only runs the named sections; the page is rendered from every result
present in WORK/results. --report-only renders the page from them without
running anything.
"""
import argparse
import datetime
import hashlib
import json
import os
import shlex
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import benchlib  # noqa: E402
import report  # noqa: E402

SECTIONS = ("convert", "parts", "augment", "splits", "reader", "cold", "python", "verify", "scale",
            "masks", "boxes", "growth", "startup",
            "training")

# Sizes: the full mode measures what the issues' targets are defined on.
FULL = {
    "repeat": 3,
    "convert_count": 2000,
    # Enough images that a part's start-up (about 0.15 s) is small beside its work, as it is
    # in real use; merge: 1,000,000 records.
    "parts_images": 6000,
    "parts_args": ["--parts", "2,4", "--merge-images", "250000", "--merge-variants", "4",
                   "--merge-parts", "4"],
    "convert_sources": "640x480,1024x768,2048x1536",
    "rss_counts": "2000,8000",
    "augment_count": 2000,
    "splits": {"samples": 50000, "groups": 2000, "classes": 100, "folds": 5},
    "splits_large": {"samples": 1000000, "groups": 20000, "classes": 1000, "folds": 5},
    "splits_adversarial": 216,
    "reader_records": 14400,  # 14,400 x 224x224x3 = 2.02 GiB
    "reader_args": ["--batches", "16,64,256,1024", "--threads", "1,2,3,4",
                    "--jpeg-configs", "16:2,64:2,256:1,256:2,256:4",
                    "--h5py-configs", "16:2,64:2,256:1,256:2,256:4,1024:2",
                    "--epochs", "3", "--h5py-max-images", "20000", "--torch-max-images", "3072"],
    "python_args": ["--batches", "64,256", "--epochs", "3", "--torch-max-images", "3072"],
    # The reader's photos with two variants each: 28,800 x 224x224x3 = 4.04 GiB, in shards
    # of 256 MiB (17): under a limit of half the dataset, windows of 2 shards fit.
    "cold_variants": 2,
    "cold_args": ["--threads", "1,2,4", "--orders", "random,shard-window", "--windows", "4",
                  "--read-paths", "auto,mapped", "--epochs", "2", "--memory-limit", "0.5x",
                  "--limit-windows", "2", "--limit-read-paths", "auto"],
    "training_args": ["--batch", "256", "--steps-ms", "2000,1000,500,200,100,50,20,10,5,2,1",
                      "--budget-s", "6", "--min-batches", "10", "--rate-images", "2048"],
    # Synthetic datasets of one-pixel records: about 5 GB of files at 10M.
    "scale_sizes": [100000, 1000000, 10000000],
    # Image/mask pairs of about 640x480 (sample-data --masks).
    "masks_pairs": 2000,
    "masks_args": ["--batch", "256", "--epochs", "3"],
    # Photo-sized images with a COCO file of 8 boxes each (5,000 images, 40,000 boxes).
    "boxes_images": 5000,
    "boxes_args": ["--batch", "256", "--epochs", "20"],
    # Appends of 1% and 10% onto 100,000 samples: small images (where the fixed scan shows
    # most) and photo-like 500x375 JPEGs (5,000 unique, the rest hard links).
    "growth_count": 100000,
    "growth_photos": ["--photos", "500x375", "--unique", "5000"],
    # Alternated runs of each command that touches no image, and of /bin/true.
    "startup_runs": 60,
}
QUICK = {
    "repeat": 1,
    "convert_count": 48,
    "parts_images": 48,
    "parts_args": ["--parts", "2", "--merge-images", "2000", "--merge-variants", "2",
                   "--merge-parts", "2"],
    "convert_sources": "320x240,640x480,1024x768",
    "rss_counts": "48,96",
    "augment_count": 48,
    "splits": {"samples": 5000, "groups": 200, "classes": 20, "folds": 5},
    "splits_large": {"samples": 100000, "groups": 2000, "classes": 100, "folds": 5},
    "splits_adversarial": 27,
    "reader_records": 256,
    # Each rate imgpack bench times alone: a fifth of a second, not a second (a smoke of
    # the code path; its figures are not results).
    "reader_args": ["--batches", "16,64", "--threads", "1,2", "--jpeg-configs", "16:2,256:1",
                    "--h5py-configs", "16:2,256:1", "--epochs", "2", "--h5py-max-images", "256",
                    "--torch-max-images", "96", "--measure-seconds", "0.2"],
    "python_args": ["--batches", "64,256", "--epochs", "2", "--torch-max-images", "96",
                    "--measure-seconds", "0.2"],
    "cold_variants": 2,
    "cold_args": ["--threads", "1,2", "--orders", "random,shard-window", "--windows", "1",
                  "--read-paths", "auto,mapped", "--epochs", "1", "--batch", "64",
                  "--measure-seconds", "0.2"],
    "training_args": ["--batch", "16", "--steps-ms", "50,2", "--budget-s", "0.5",
                      "--min-batches", "3", "--rate-images", "96", "--measure-seconds", "0.2"],
    "scale_sizes": [10000, 100000],
    "masks_pairs": 48,
    "masks_args": ["--batch", "16", "--epochs", "1"],
    "boxes_images": 48,
    "boxes_args": ["--batch", "16", "--epochs", "1"],
    "growth_count": 1000,
    "growth_photos": ["--photos", "320x240", "--unique", "40"],
    "startup_runs": 10,
}
READER_SOURCE = (640, 480)  # about the mean size of an ImageNet photo


def script(*parts):
    return os.path.join(HERE, *parts)


def quick_photo_cache():
    """Where --quick keeps its photo-like JPEGs: a folder named by a digest of what they are
    made from (the generator and the class count), so that a changed generator starts a set
    of its own rather than reusing photos it would no longer make."""
    configured = os.environ.get("IMGPACK_BENCH_PHOTOS")
    if configured:
        return configured
    digest = hashlib.sha256()
    with open(script("convert", "make_photos.py"), "rb") as f:
        digest.update(f.read())
    digest.update(b"classes %d" % benchlib.PHOTO_CLASSES)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "imgpack", "bench-photos", digest.hexdigest()[:16])


class Runner:
    def __init__(self, args, sizes):
        self.args = args
        self.sizes = sizes
        self.work = os.path.abspath(args.work)
        self.results = os.path.join(self.work, "results")
        self.photos = quick_photo_cache() if args.quick else os.path.join(self.work, "photos")
        self.repeat = str(args.repeat or sizes["repeat"])
        self.peers = args.peers or not args.quick
        self.imgpack = benchlib.imgpack_binary()
        for d in (self.results, self.photos):
            os.makedirs(d, exist_ok=True)

    def scratch(self, name):
        path = os.path.join(self.work, name)
        os.makedirs(path, exist_ok=True)
        return path

    def peer_args(self):
        """What a script that measures peers is given when they are left out."""
        return [] if self.peers else ["--no-peers"]

    def mode_flags(self):
        """The options of bench/run-all that reproduce this run's sizes and peers."""
        if not self.args.quick:
            return ""
        return " --quick --peers" if self.peers else " --quick"

    def run_script(self, section, command, result_file, accept=(0,)):
        """Runs one benchmark script; its stdout (the table) goes to WORK/SECTION.log."""
        benchlib.say("run-all", "%s: %s" % (section, " ".join(shlex.quote(str(c))
                                                              for c in command)))
        import subprocess
        log = os.path.join(self.work, section + ".log")
        with open(log, "a") as out:
            done = subprocess.run([str(c) for c in command], stdout=out, stderr=sys.stderr)
        if done.returncode not in accept:
            raise benchlib.CommandFailed("%s exited with %d (output in %s)" % (
                command[1] if len(command) > 1 else command[0], done.returncode, log))
        with open(result_file) as f:
            return json.load(f)

    def convert(self):
        out = self.scratch("convert")
        result = os.path.join(out, "results.json")
        command = [benchlib.PYTHON, script("convert", "run.py"), self.sizes["convert_count"], out,
                   "--sources", self.sizes["convert_sources"], "--rss-counts",
                   self.sizes["rss_counts"], "--rss-source", "1024x768", "--repeat", self.repeat,
                   "--photos", self.photos, "--json", result] + self.peer_args()
        return [command], self.run_script("convert", command, result)

    def parts(self):
        out = self.scratch("parts")
        src = benchlib.photo_set(self.photos, READER_SOURCE[0], READER_SOURCE[1],
                                 self.sizes["parts_images"])
        result = os.path.join(out, "results.json")
        command = [benchlib.PYTHON, script("parts", "run.py"), src, out, "--repeat",
                   self.repeat, "--json", result] + self.sizes["parts_args"]
        return [command], self.run_script("parts", command, result)

    def augment(self):
        out = self.scratch("augment")
        images = benchlib.photo_set(self.photos, 1024, 768, self.sizes["augment_count"])
        result = os.path.join(out, "results.json")
        command = [benchlib.PYTHON, script("augment", "run.py"), images, out, "--repeat",
                   self.repeat, "--json", result]
        return [command], self.run_script("augment", command, result)

    def splits(self):
        out = self.scratch("splits")
        commands, data = [], {}
        for name, sizes, extra in (("kinds", self.sizes["splits"], []),
                                   ("large", self.sizes["splits_large"],
                                    ["--kinds", "stratified-group"])):
            folder = os.path.join(out, name)
            command = [benchlib.PYTHON, script("splits", "bench_splits.py"), "--repeats",
                       self.repeat, "--out", folder] + extra + self.peer_args()
            for key, value in sizes.items():
                command += ["--" + key, value]
            commands.append(command)
            # Exit status 3: imgpack worse than scikit-learn on a judged figure; reported.
            data[name] = self.run_script("splits", command, os.path.join(folder, "splits.json"),
                                         accept=(0, 3))
        # Wins, ties and losses against scikit-learn on generated adversarial layouts.
        folder = os.path.join(out, "adversarial")
        command = [benchlib.PYTHON, script("splits", "adversarial.py"), "--layouts",
                   self.sizes["splits_adversarial"], "--out", folder] + self.peer_args()
        commands.append(command)
        data["adversarial"] = self.run_script("splits", command,
                                              os.path.join(folder, "adversarial.json"),
                                              accept=(0, 3))
        return commands, data

    def reader_inputs(self):
        """Photo-like 640x480 JPEGs and the imgpack dataset converted from them."""
        count = self.sizes["reader_records"]
        src = benchlib.photo_set(self.photos, READER_SOURCE[0], READER_SOURCE[1], count)
        dataset = os.path.join(self.scratch("reader"), "data-%d" % count)
        if not os.path.exists(os.path.join(dataset, "index.h5")):
            benchlib.say("run-all", "converting %d photos for the reader" % count)
            benchlib.run([self.imgpack, "convert", src, dataset, "--size", "224", "--seed", "1",
                          "--overwrite", "--quiet"])
        return src, dataset

    def reader(self):
        src, dataset = self.reader_inputs()
        out = self.scratch("reader")
        command = [benchlib.PYTHON, script("reader", "run.py"), dataset, src, out, "--repeat",
                   self.repeat] + self.sizes["reader_args"] + self.peer_args()
        return [command], self.run_script("reader", command, os.path.join(out, "results.json"))

    def cold(self):
        src, _ = self.reader_inputs()
        variants = self.sizes["cold_variants"]
        dataset = os.path.join(self.scratch("cold"), "data-%d-x%d-256M" % (
            self.sizes["reader_records"], variants))
        if not os.path.exists(os.path.join(dataset, "index.h5")):
            benchlib.say("run-all", "converting the reader's photos with %d variants" % variants)
            benchlib.run([self.imgpack, "convert", src, dataset, "--size", "224", "--seed", "1",
                          "--variants", variants, "--augment", "hflip=1", "--shard-size", "256M",
                          "--overwrite", "--quiet"])
        out = self.scratch("cold")
        command = [benchlib.PYTHON, script("cold", "run.py"), dataset, out, "--repeat",
                   self.repeat] + self.sizes["cold_args"]
        return [command], self.run_script("cold", command, os.path.join(out, "results.json"))

    def python(self):
        _, dataset = self.reader_inputs()
        out = self.scratch("python")
        command = [benchlib.PYTHON, script("python", "run.py"), dataset, out, "--repeat",
                   self.repeat] + self.sizes["python_args"] + self.peer_args()
        return [command], self.run_script("python", command, os.path.join(out, "results.json"))

    def verify(self):
        _, dataset = self.reader_inputs()
        out = self.scratch("verify")
        command = [benchlib.PYTHON, script("verify", "run.py"), dataset, out, "--repeat",
                   self.repeat]
        return [command], self.run_script("verify", command, os.path.join(out, "results.json"))

    def scale(self):
        out = self.scratch("scale")
        result = os.path.join(out, "results.json")
        command = [benchlib.PYTHON, script("scale", "run.py"), self.imgpack, out] + \
            self.sizes["scale_sizes"] + ["--repeat", self.repeat, "--json", result]
        return [command], self.run_script("scale", command, result)

    def masks(self):
        out = self.scratch("masks")
        command = [benchlib.PYTHON, script("masks", "run.py"), self.sizes["masks_pairs"], out,
                   "--repeat", self.repeat] + self.sizes["masks_args"]
        return [command], self.run_script("masks", command, os.path.join(out, "results.json"))

    def boxes(self):
        out = self.scratch("boxes")
        command = [benchlib.PYTHON, script("boxes", "run.py"), self.sizes["boxes_images"], out,
                   "--repeat", self.repeat] + self.sizes["boxes_args"]
        return [command], self.run_script("boxes", command, os.path.join(out, "results.json"))

    def growth(self):
        commands, data = [], {}
        for regime, extra in (("small", []), ("photos", self.sizes["growth_photos"])):
            out = self.scratch(os.path.join("growth", regime))
            result = os.path.join(out, "results.json")
            command = [benchlib.PYTHON, script("growth", "run.py"), self.sizes["growth_count"],
                       out, "--repeat", self.repeat, "--json", result] + extra
            commands.append(command)
            data[regime] = self.run_script("growth", command, result)
        return commands, data

    def startup(self):
        out = self.scratch("startup")
        command = [benchlib.PYTHON, script("startup", "run.py"), out, "--runs",
                   self.sizes["startup_runs"], "--repeat", self.repeat]
        return [command], self.run_script("startup", command, os.path.join(out, "results.json"))

    def training(self):
        src, dataset = self.reader_inputs()
        out = self.scratch("training")
        command = [benchlib.PYTHON, script("training", "run.py"), dataset, src, out, "--repeat",
                   self.repeat] + self.sizes["training_args"] + self.peer_args()
        return [command], self.run_script("training", command, os.path.join(out, "results.json"))

    def section(self, name):
        log = os.path.join(self.work, name + ".log")
        if os.path.exists(log):
            os.remove(log)
        load_before = benchlib.loadavg()
        start = time.time()
        commands, data = getattr(self, name)()
        record = {
            "section": name,
            "started": datetime.datetime.fromtimestamp(start).isoformat(timespec="seconds"),
            "seconds": time.time() - start,
            "load_before": load_before,
            "load_after": benchlib.loadavg(),
            "quick": self.args.quick,
            "peers": self.peers,
            "commit": benchlib.commit(),
            "repeat": int(self.repeat),
            "run_all": "bench/run-all%s --only %s" % (self.mode_flags(), name),
            "commands": [" ".join(shlex.quote(os.path.relpath(str(c), benchlib.ROOT)
                                              if str(c).startswith(benchlib.ROOT) else str(c))
                                  for c in command) for command in commands],
            "data": data,
        }
        with open(os.path.join(self.results, name + ".json"), "w") as f:
            json.dump(record, f, indent=2)
        benchlib.say("run-all", "%s done in %.0f s (load %.1f -> %.1f)" % (
            name, record["seconds"], load_before[0], record["load_after"][0]))


def main():
    parser = argparse.ArgumentParser(
        prog="bench/run-all", description=__doc__.splitlines()[0],
        epilog="\n".join(__doc__.splitlines()[2:]), formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="small inputs, 1 repeat, no peers; page in WORK/report, checks "
                             "figures only")
    parser.add_argument("--peers", action="store_true",
                        help="with --quick, measure the peers too (full mode always does)")
    parser.add_argument("--work", help="inputs, scratch and results (default out/bench, "
                                       "out/bench-quick with --quick)")
    parser.add_argument("--repeat", type=int, help="repeats per measurement (3; --quick: 1)")
    parser.add_argument("--only", help="comma-separated sections: " + ", ".join(SECTIONS))
    parser.add_argument("--report-only", action="store_true",
                        help="render the page from WORK/results without running anything")
    parser.add_argument("--docs", help="where the page goes (default docs/; --quick: WORK/report)")
    parser.add_argument("--no-build", action="store_true",
                        help="measure ./build as it is (bench/run-all builds it first "
                             "otherwise)")
    args = parser.parse_args()
    if args.repeat is not None and args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.work is None:
        args.work = os.path.join(benchlib.ROOT, "out", "bench-quick" if args.quick else "bench")
    sections = SECTIONS
    if args.only:
        sections = tuple(s for s in args.only.split(",") if s)
        unknown = [s for s in sections if s not in SECTIONS]
        if unknown:
            parser.error("unknown section %s; sections: %s" % (", ".join(unknown),
                                                                ", ".join(SECTIONS)))
    docs = args.docs or (os.path.join(args.work, "report") if args.quick
                         else os.path.join(benchlib.ROOT, "docs"))
    if args.quick and os.path.realpath(docs) == os.path.realpath(os.path.join(benchlib.ROOT,
                                                                              "docs")):
        parser.error("--quick never writes docs/: its figures are not results")
    runner = Runner(args, QUICK if args.quick else FULL)
    if not args.report_only and not os.access(runner.imgpack, os.X_OK):
        sys.exit("bench/run-all: %s not found: build first (scripts/build)" % runner.imgpack)

    failed = []
    if not args.report_only:
        with open(os.path.join(runner.results, "machine.json"), "w") as f:
            json.dump(benchlib.machine(), f, indent=2)
        for name in sections:
            try:
                runner.section(name)
            except (benchlib.CommandFailed, OSError, KeyError, ValueError) as error:
                benchlib.say("run-all", "%s FAILED: %s" % (name, error))
                failed.append(name)
                stale = os.path.join(runner.results, name + ".json")
                if os.path.exists(stale):
                    os.remove(stale)  # never render an older run's figures as this run's

    problems = report.write(runner.results, docs, quick=args.quick,
                            expect=() if args.report_only else sections)
    for problem in problems:
        benchlib.say("run-all", "missing or invalid figure: " + problem)
    benchlib.say("run-all", "page written to %s" % os.path.join(docs, "BENCHMARKS.md"))
    if failed or problems:
        what = failed + (["figures"] if problems else [])
        benchlib.say("run-all", "FAILED: %s" % ", ".join(what))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
