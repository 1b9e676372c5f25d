#!/usr/bin/env python3
"""Conversion benchmark: imgpack convert against its decode bound and a straightforward Python packer.

usage: bench/convert/run.py COUNT WORKDIR [--sources 640x480,1024x768,2048x1536]
                            [--rss-counts 2000,8000] [--rss-source 1024x768] [--repeat R]
                            [--size 224] [--json FILE] [--photos DIR] [--imgpack PATH]
                            [--decode-bound PATH] [--threads 1,2,4] [--no-peers]
                            [--eighths] [--against PATH] [--shard-size SIZE]

For each source size WxH, generates (once; later runs reuse them) COUNT
photo-like WxH JPEGs under WORKDIR/photos-WxH (or DIR/photos-WxH) with
make_photos.py (1024x768: about 200 KB each; 8000 of them take 1.6 GB and, on
two cores, about ten minutes to make), and converts them to SIZE x SIZE
(centre crop) with

  decode       the decode bound (imgpack_decode_bound, built in bench/): the same
               files read and decoded with TurboJPEG at the DCT scale the
               conversion picks, on as many threads as the conversion, and
               nothing else (no resize, checksum or shard)
  imgpack      imgpack convert (DCT-scaled JPEG decoding, all cores)
  no-dct       imgpack convert --no-dct-scaling (full-size decode, then resize)
  eighths      with --eighths: imgpack convert --dct-scales eighths (3/8 and 5/8
               too, as datasets converted before halvings were); the default
               over it is the halvings gain
  against      with --against PATH: imgpack convert of another build (an earlier
               commit, say); the default over it is the against gain
  python       baseline.py: cv2.imread + cv2.resize + h5py, one process per core

R times, interleaved in every repeat so that each repeat's ratios compare runs
made side by side. Then, on 1024x768 sources (else the first size), the scaling by threads: for
each count of --threads (default: 1, 2, 4, ... up to the CPUs), R alternated
pairs of the decode bound and `imgpack convert --threads T`. Times are end-to-end wall times, including
start-up and, for imgpack, the final fsyncs (the baseline does not fsync).
Then the peak RSS of imgpack convert (/usr/bin/time -v) at each of the RSS
counts of the --rss-source photos, R times each (--rss-counts none: no RSS
runs). All inputs are read once
beforehand so every contender starts with them in the page cache.

--no-peers leaves the baseline out: its rates and imgpack's ratio to it are
null in the JSON.

Prints a table (min / median / max over the repeats) and writes the samples
and their summaries to --json (default WORKDIR/results.json).
"""
import argparse
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import benchlib  # noqa: E402

CONTENDERS = ("decode", "imgpack", "against", "eighths", "no-dct", "python")
PEERS = ("python",)


def parse_source(text):
    w, h = text.lower().split("x")
    return int(w), int(h)


def imgpack_command(binary, src, out, size, extra=(), shard_size=None):
    return ([binary, "convert", src, out, "--size", str(size), "--quiet", "--overwrite"] +
            (["--shard-size", shard_size] if shard_size else []) + list(extra))


def decode_bound_command(args, src, threads):
    return [args.decode_bound, src, "--size", str(args.size), "--threads", str(threads)]


def default_decode_bound(imgpack):
    """build/bench/imgpack_decode_bound beside build/tools/imgpack."""
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(imgpack))), "bench",
                        "imgpack_decode_bound")


def thread_counts(cpus):
    counts = [1]
    while counts[-1] * 2 <= cpus:
        counts.append(counts[-1] * 2)
    if counts[-1] != cpus:
        counts.append(cpus)
    return counts


def contender_command(name, args, src, workdir):
    out = os.path.join(workdir, "out")
    if name == "decode":
        return decode_bound_command(args, src, args.cpus)
    if name == "imgpack":
        return imgpack_command(args.imgpack, src, out, args.size, shard_size=args.shard_size)
    if name == "against":
        return imgpack_command(args.against, src, out, args.size, shard_size=args.shard_size)
    if name == "no-dct":
        return imgpack_command(args.imgpack, src, out, args.size, ["--no-dct-scaling"],
                               args.shard_size)
    if name == "eighths":
        return imgpack_command(args.imgpack, src, out, args.size, ["--dct-scales", "eighths"],
                               args.shard_size)
    return [benchlib.PYTHON, os.path.join(HERE, "baseline.py"), src,
            os.path.join(workdir, "baseline.h5"), "--size", str(args.size)]


def clean(workdir):
    shutil.rmtree(os.path.join(workdir, "out"), ignore_errors=True)
    try:
        os.remove(os.path.join(workdir, "baseline.h5"))
    except FileNotFoundError:
        pass


def fmt(s, digits=1):
    if s is None:
        return "-"
    return "%.*f / %.*f / %.*f" % (digits, s["min"], digits, s["median"], digits, s["max"])


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("count", type=int)
    parser.add_argument("workdir")
    parser.add_argument("--sources", default="1024x768",
                        help="comma-separated source sizes WxH of the generated JPEGs")
    parser.add_argument("--rss-counts", default=None,
                        help="comma-separated input counts for the peak-RSS runs "
                             "(default: COUNT and 4*COUNT; none: no such runs)")
    parser.add_argument("--rss-source", default="1024x768")
    parser.add_argument("--imgpack", default=benchlib.imgpack_binary())
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--json", help="result file (default WORKDIR/results.json)")
    parser.add_argument("--photos", help="where the generated photos are kept (default WORKDIR)")
    parser.add_argument("--decode-bound", default=None,
                        help="the decode-bound program (default: bench/imgpack_decode_bound "
                             "of the build that holds --imgpack)")
    parser.add_argument("--threads", default=None,
                        help="comma-separated thread counts of the scaling pairs "
                             "(default: 1, 2, 4, ... up to the CPUs)")
    parser.add_argument("--eighths", action="store_true",
                        help="also measure --dct-scales eighths (the halvings gain)")
    parser.add_argument("--against", default=None,
                        help="another imgpack binary (an earlier build) to alternate with")
    parser.add_argument("--shard-size", default=None,
                        help="--shard-size for every imgpack convert (default: its own)")
    parser.add_argument("--no-peers", action="store_true",
                        help="measure imgpack only, not the Python baseline")
    args = parser.parse_args(argv)
    args.decode_bound = args.decode_bound or default_decode_bound(args.imgpack)
    # The CPUs this process may use, which is what imgpack convert's default uses.
    args.cpus = len(os.sched_getaffinity(0))
    threads = ([int(t) for t in args.threads.split(",")] if args.threads
               else thread_counts(args.cpus))
    contenders = [n for n in CONTENDERS
                  if not (args.no_peers and n in PEERS) and (args.eighths or n != "eighths")
                  and (args.against or n != "against")]
    sources = [parse_source(s) for s in args.sources.split(",")]
    rss_counts = ([] if args.rss_counts == "none"
                  else [int(c) for c in args.rss_counts.split(",")] if args.rss_counts
                  else [args.count, 4 * args.count])
    rss_w, rss_h = parse_source(args.rss_source)
    os.makedirs(args.workdir, exist_ok=True)

    benchlib.say("convert", "generating photo-like JPEGs (cached in %s)" % args.workdir)
    photos = args.photos or args.workdir
    rss_sets = {c: benchlib.photo_set(photos, rss_w, rss_h, c) for c in sorted(rss_counts)}
    sets = {(w, h): benchlib.photo_set(photos, w, h, args.count) for w, h in sources}
    for folder in list(sets.values()) + list(rss_sets.values()):
        benchlib.warm(benchlib.files_under(folder))

    results = {"images": args.count, "size": args.size, "cpus": args.cpus,
               "repeat": args.repeat, "sources": [], "commands": {}}
    for (w, h), src in sets.items():
        paths = [p for p in benchlib.files_under(src) if p.endswith(".jpg")]
        seconds = {name: [] for name in CONTENDERS}
        for r in range(args.repeat):
            for name in contenders:
                command = contender_command(name, args, src, args.workdir)
                wall, _, _, _ = benchlib.timed(command)
                seconds[name].append(wall)
                results["commands"][name] = " ".join(command)
                clean(args.workdir)
            benchlib.say("convert", "%dx%d repeat %d/%d: %s" % (
                w, h, r + 1, args.repeat,
                ", ".join("%s %.0f images/s" % (n, len(paths) / seconds[n][-1])
                          for n in contenders)))
        rates = {n: [len(paths) / s for s in seconds[n]] for n in CONTENDERS}
        results["sources"].append({
            "source": "%dx%d" % (w, h),
            "images": len(paths),
            "input_mb": sum(os.path.getsize(p) for p in paths) / 1e6,
            "seconds": seconds,
            "images_per_s": {n: benchlib.summary(rates[n]) for n in CONTENDERS},
            "ratio_vs_python": benchlib.summary(benchlib.ratios(rates["imgpack"], rates["python"])),
            "ratio_vs_decode": benchlib.summary(benchlib.ratios(rates["imgpack"],
                                                                rates["decode"])),
            "dct_scaling_gain": benchlib.summary(benchlib.ratios(rates["imgpack"],
                                                                 rates["no-dct"])),
            "halvings_gain": benchlib.summary(benchlib.ratios(rates["imgpack"],
                                                              rates["eighths"])),
            "ratio_vs_decode_against": benchlib.summary(benchlib.ratios(rates["against"],
                                                                        rates["decode"])),
            "against_gain": benchlib.summary(benchlib.ratios(rates["imgpack"],
                                                             rates["against"])),
        })

    # Scaling by threads, on 1024x768 sources where measured (else the first
    # size): alternated pairs.
    (w, h), src = next(((size, folder) for size, folder in sets.items() if size == (1024, 768)),
                       next(iter(sets.items())))
    paths = [p for p in benchlib.files_under(src) if p.endswith(".jpg")]
    rows = []
    for t in threads:
        rates = {"decode": [], "imgpack": []}
        for r in range(args.repeat):
            for name in ("decode", "imgpack"):
                command = (decode_bound_command(args, src, t) if name == "decode" else
                           imgpack_command(args.imgpack, src, os.path.join(args.workdir, "out"),
                                           args.size, ["--threads", str(t)], args.shard_size))
                wall, _, _, _ = benchlib.timed(command)
                rates[name].append(len(paths) / wall)
                results["commands"]["scaling " + name] = " ".join(command)
                clean(args.workdir)
        benchlib.say("convert", "%dx%d at %d threads: decode bound %.0f, imgpack %.0f images/s"
                     % (w, h, t, rates["decode"][-1], rates["imgpack"][-1]))
        rows.append({"threads": t,
                     "images_per_s": {n: benchlib.summary(v) for n, v in rates.items()},
                     "ratio_vs_decode": benchlib.summary(benchlib.ratios(rates["imgpack"],
                                                                         rates["decode"]))})
    results["scaling"] = {"source": "%dx%d" % (w, h), "images": len(paths), "rows": rows}

    rss = {}
    for r in range(args.repeat):
        for count, src in rss_sets.items():
            command = imgpack_command(args.imgpack, src, os.path.join(args.workdir, "out"),
                                      args.size)
            _, peak_kib, _, _ = benchlib.timed(command)
            rss.setdefault(str(count), []).append(peak_kib / 1024)
            results["commands"]["rss"] = " ".join(command)
            clean(args.workdir)
    results["peak_rss"] = {"source": args.rss_source, "samples_mib": rss,
                           "mib": {c: benchlib.summary(v) for c, v in rss.items()}}

    out = args.json or os.path.join(args.workdir, "results.json")
    with open(out, "w") as f:
        json.dump(results, f, indent=2)

    print("convert COUNT=%d photo-like JPEGs to %dx%d, %d CPUs; min / median / max of %d"
          % (args.count, args.size, args.size, args.cpus, args.repeat))
    for s in results["sources"]:
        print("%s (%.0f MB):" % (s["source"], s["input_mb"]))
        print("  %-34s %s images/s" % ("decode bound (TurboJPEG only)",
                                       fmt(s["images_per_s"]["decode"])))
        print("  %-34s %s images/s" % ("imgpack convert", fmt(s["images_per_s"]["imgpack"])))
        if args.against:
            print("  %-34s %s images/s" % ("--against " + os.path.basename(args.against),
                                           fmt(s["images_per_s"]["against"])))
            print("  against / decode bound: %s   imgpack / against: %s"
                  % (fmt(s["ratio_vs_decode_against"], 2), fmt(s["against_gain"], 2)))
        if args.eighths:
            print("  %-34s %s images/s" % ("imgpack convert --dct-scales eighths",
                                           fmt(s["images_per_s"]["eighths"])))
            print("  halvings gain (default / eighths): %s" % fmt(s["halvings_gain"], 2))
        print("  %-34s %s images/s" % ("imgpack convert --no-dct-scaling",
                                       fmt(s["images_per_s"]["no-dct"])))
        print("  %-34s %s images/s" % ("python (cv2 + h5py, %d procs)" % os.cpu_count(),
                                       fmt(s["images_per_s"]["python"])))
        print("  imgpack / decode bound: %s   imgpack / python: %s   DCT-scaling gain: %s"
              % (fmt(s["ratio_vs_decode"], 2), fmt(s["ratio_vs_python"], 2),
                 fmt(s["dct_scaling_gain"], 2)))
    sc = results["scaling"]
    print("scaling by threads, %s:" % sc["source"])
    for row in sc["rows"]:
        print("  %2d threads: decode bound %s, imgpack %s images/s, ratio %s" % (
            row["threads"], fmt(row["images_per_s"]["decode"], 0),
            fmt(row["images_per_s"]["imgpack"], 0), fmt(row["ratio_vs_decode"], 2)))
    for count, s in results["peak_rss"]["mib"].items():
        print("peak RSS of imgpack convert at %6s inputs: %s MiB" % (count, fmt(s)))


if __name__ == "__main__":
    main(sys.argv[1:])
