#!/usr/bin/python3
"""Conversion benchmark: imgpack convert against a straightforward Python packer.

usage: bench/convert/run.py COUNT WORKDIR [--rss-counts 2000,8000] [--imgpack PATH]
                            [--repeat R] [--size 224]

Generates (once; later runs reuse them) max(COUNT, RSS counts) photo-like
1024x768 JPEGs under WORKDIR/photos with make_photos.py (about 200 KB each:
8000 photos take 1.6 GB and, on two cores, about ten minutes to make), then
in one run, on
the first COUNT of them converted to SIZE x SIZE (centre crop):

  imgpack      imgpack convert (DCT-scaled JPEG decoding, all cores)
  no-dct       imgpack convert --no-dct-scaling (full-size decode, then resize)
  python       baseline.py: cv2.imread + cv2.resize + h5py, one process per core

and prints images/s of each (end-to-end wall time, including start-up and
the final fsyncs; best of --repeat runs), the ratio imgpack / python, the
DCT-scaling gain imgpack / no-dct, and the peak RSS of imgpack convert
(/usr/bin/time -v) at each of the RSS counts. Input files are read once
beforehand so every contender starts with them in the page cache. The
results also go to WORKDIR/results.json.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PYTHON = "/usr/bin/python3"


def photo_paths(photos, count, classes=10):
    return [os.path.join(photos, "c%d" % (i % classes), "img_%06d.jpg" % i) for i in range(count)]


def input_set(workdir, photos, count):
    """WORKDIR/set-COUNT: class folders holding hard links to the first COUNT photos."""
    target = os.path.join(workdir, "set-%d" % count)
    marker = os.path.join(target, ".complete")
    if os.path.exists(marker):
        return target
    shutil.rmtree(target, ignore_errors=True)
    for path in photo_paths(photos, count):
        rel = os.path.relpath(path, photos)
        dest = os.path.join(target, rel)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        try:
            os.link(path, dest)
        except OSError:
            os.symlink(path, dest)
    open(marker, "w").close()
    return target


def warm(paths):
    for path in paths:
        with open(path, "rb") as f:
            while f.read(1 << 20):
                pass


def timed(command):
    """Runs command under /usr/bin/time -v: (wall seconds, peak RSS KiB, stdout)."""
    start = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-v"] + command, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit("failed (%d): %s\n%s" % (proc.returncode, " ".join(command), proc.stderr))
    match = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
    return seconds, int(match.group(1)) if match else -1, proc.stdout


def imgpack_command(binary, src, out, size, extra=()):
    return [binary, "convert", src, out, "--size", str(size), "--quiet", "--overwrite"] + list(extra)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("count", type=int)
    parser.add_argument("workdir")
    parser.add_argument("--rss-counts", default=None,
                        help="comma-separated input counts for the peak-RSS runs "
                             "(default: COUNT and 4*COUNT)")
    parser.add_argument("--imgpack", default=os.path.join(ROOT, "build", "tools", "imgpack"))
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--size", type=int, default=224)
    args = parser.parse_args(argv)
    rss_counts = ([int(c) for c in args.rss_counts.split(",")] if args.rss_counts
                  else [args.count, 4 * args.count])
    os.makedirs(args.workdir, exist_ok=True)
    photos = os.path.join(args.workdir, "photos")
    total = max([args.count] + rss_counts)
    subprocess.run([PYTHON, os.path.join(HERE, "make_photos.py"), str(total), photos], check=True)

    src = input_set(args.workdir, photos, args.count)
    out = os.path.join(args.workdir, "out")
    warm(photo_paths(photos, total))
    input_bytes = sum(os.path.getsize(p) for p in photo_paths(photos, args.count))

    contenders = {
        "imgpack": lambda: imgpack_command(args.imgpack, src, out, args.size),
        "no-dct": lambda: imgpack_command(args.imgpack, src, out, args.size, ["--no-dct-scaling"]),
        "python": lambda: [PYTHON, os.path.join(HERE, "baseline.py"), src,
                           os.path.join(args.workdir, "baseline.h5"), "--size", str(args.size)],
    }
    best = {}
    rss = {}
    for _ in range(args.repeat):
        for name, command in contenders.items():
            seconds, peak, _ = timed(command())
            if name not in best or seconds < best[name]:
                best[name] = seconds
            if name == "imgpack":
                rss[args.count] = max(rss.get(args.count, 0), peak)
    for count in rss_counts:
        if count in rss:
            continue
        _, peak, _ = timed(imgpack_command(args.imgpack, input_set(args.workdir, photos, count),
                                           out, args.size))
        rss[count] = peak
    shutil.rmtree(out, ignore_errors=True)

    rate = {name: args.count / seconds for name, seconds in best.items()}
    results = {
        "images": args.count,
        "input_mb": input_bytes / 1e6,
        "size": args.size,
        "cpus": os.cpu_count(),
        "images_per_s": rate,
        "ratio_vs_python": rate["imgpack"] / rate["python"],
        "dct_scaling_gain": rate["imgpack"] / rate["no-dct"],
        "peak_rss_mib": {str(c): rss[c] / 1024 for c in sorted(rss)},
    }
    with open(os.path.join(args.workdir, "results.json"), "w") as f:
        json.dump(results, f, indent=2)

    print("convert %d photo-like 1024x768 JPEGs (%.0f MB) to %dx%d, %d CPUs, best of %d"
          % (args.count, input_bytes / 1e6, args.size, args.size, os.cpu_count(), args.repeat))
    print("%-34s %10s" % ("", "images/s"))
    print("%-34s %10.1f" % ("imgpack convert", rate["imgpack"]))
    print("%-34s %10.1f" % ("imgpack convert --no-dct-scaling", rate["no-dct"]))
    print("%-34s %10.1f" % ("python (cv2 + h5py, %d procs)" % os.cpu_count(), rate["python"]))
    print("imgpack / python: %.2fx   DCT-scaling gain: %.2fx"
          % (results["ratio_vs_python"], results["dct_scaling_gain"]))
    for count in sorted(rss):
        print("peak RSS of imgpack convert at %6d inputs: %7.1f MiB" % (count, rss[count] / 1024))


if __name__ == "__main__":
    main(sys.argv[1:])
