#!/usr/bin/env python3
"""Convert throughput with K=4 pre-augmented variants against K=1, in one run.

Decoding dominates a conversion, and the K variants of an image share one
decode (or two, when a zoomed-in variant needs more pixels than the reduced
JPEG decode of the clean image has), so K=4 must cost well under 4x K=1.
Three conversions of the same images, interleaved in every repeat:

  K=1           no augmentation (the reference)
  K=4 full      a typical training spec, with random resized crops and zoom-in
  K=4 no-zoom   flips, rotation, shift and colour only: never a second decode

Each run is timed by its conversion time (report.json timings.convert_s) and
its CPU time (user + system of the process); the ratios to K=1 are taken
per repeat and summarised as min / median / max.

Prints a Markdown table and writes OUT/results.json (or --json FILE).

usage: run.py IMAGES OUT [--size 224] [--threads 0] [--repeat 3] [--imgpack PATH]
  IMAGES  an image directory (any layout; converted with --labels none), or a
          number N: generate N photo-like 1024x768 JPEGs (make_photos.py) first
  OUT     scratch and result directory (datasets are deleted after each run)
"""
import argparse
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import benchlib  # noqa: E402

FULL_SPEC = ("hflip,rotate=15,shift=0.1,zoom=0.9:1.2,crop_scale=0.35:1,aspect=0.75:1.33,"
             "brightness=0.2,contrast=0.2,saturation=0.2,hue=0.05,gray=0.05")
NO_ZOOM_SPEC = "hflip,rotate=15,shift=0.1,brightness=0.2,contrast=0.2,saturation=0.2,hue=0.05"
RUNS = (("K=1", 1, ""), ("K=4 full", 4, FULL_SPEC), ("K=4 no-zoom", 4, NO_ZOOM_SPEC))


def convert_command(imgpack, images, out, size, threads, variants, spec):
    command = [imgpack, "convert", images, out, "--size", str(size), "--labels", "none",
               "--threads", str(threads), "--seed", "1", "--overwrite", "--quiet", "--json"]
    if variants > 1:
        command += ["--variants", str(variants), "--augment", spec]
    return command


def convert(command, out):
    wall, _, cpu, stdout = benchlib.timed(command)
    summary = json.loads(stdout)
    with open(os.path.join(out, "report.json")) as f:
        report = json.load(f)
    shutil.rmtree(out)
    return {"wall_s": wall, "cpu_s": cpu, "convert_s": report["timings"]["convert_s"],
            "samples": summary["samples"], "records": summary["records"],
            "threads": report["threads"]}


def fmt(s, digits=2):
    return "%.*f / %.*f / %.*f" % (digits, s["min"], digits, s["median"], digits, s["max"])


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("images", help="image directory, or a count of JPEGs to generate")
    parser.add_argument("out", help="scratch and result directory")
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--threads", type=int, default=0, help="0 = all cores")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--imgpack", default=benchlib.imgpack_binary())
    parser.add_argument("--json", help="result file (default OUT/results.json)")
    args = parser.parse_args(argv)

    os.makedirs(args.out, exist_ok=True)
    images = args.images
    if images.isdigit():
        benchlib.say("augment", "generating %s photo-like JPEGs" % images)
        images = benchlib.photo_set(args.out, 1024, 768, int(images))
    if not os.path.isdir(images):
        sys.exit("%s: not a directory" % images)
    input_bytes = benchlib.warm(benchlib.files_under(images))

    dataset = os.path.join(args.out, "dataset")
    samples = {name: [] for name, _, _ in RUNS}
    commands = {}
    for r in range(args.repeat):
        for name, variants, spec in RUNS:
            command = convert_command(args.imgpack, images, dataset, args.size, args.threads,
                                      variants, spec)
            commands[name] = " ".join(command)
            samples[name].append(convert(command, dataset))
        benchlib.say("augment", "repeat %d/%d: %s" % (r + 1, args.repeat, ", ".join(
            "%s %.2f s" % (n, samples[n][-1]["convert_s"]) for n, _, _ in RUNS)))

    reference = samples["K=1"]
    results = []
    for name, variants, spec in RUNS:
        runs = samples[name]
        results.append({
            "name": name, "variants": variants, "spec": spec,
            "samples": runs[0]["samples"], "records": runs[0]["records"],
            "threads": runs[0]["threads"], "command": commands[name], "runs": runs,
            "convert_s": benchlib.summary([x["convert_s"] for x in runs]),
            "cpu_s": benchlib.summary([x["cpu_s"] for x in runs]),
            "images_per_s": benchlib.summary([x["samples"] / x["convert_s"] for x in runs]),
            "records_per_s": benchlib.summary([x["records"] / x["convert_s"] for x in runs]),
            "time_vs_k1": benchlib.summary(benchlib.ratios(
                [x["convert_s"] for x in runs], [x["convert_s"] for x in reference])),
            "cpu_vs_k1": benchlib.summary(benchlib.ratios(
                [x["cpu_s"] for x in runs], [x["cpu_s"] for x in reference])),
        })

    print("%d images (%.1f MB) -> %dx%d, %d threads; min / median / max of %d\n" % (
        results[0]["samples"], input_bytes / 1e6, args.size, args.size, results[0]["threads"],
        args.repeat))
    print("| run | records | convert s | images/s | time vs K=1 | CPU s | CPU vs K=1 |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for r in results:
        print("| %s | %d | %s | %s | %s | %s | %s |" % (
            r["name"], r["records"], fmt(r["convert_s"]), fmt(r["images_per_s"], 0),
            fmt(r["time_vs_k1"]), fmt(r["cpu_s"]), fmt(r["cpu_vs_k1"])))
    print("\nK=4 (full spec) costs %.2fx the K=1 conversion time (%.2fx its CPU time), medians; "
          "decoding for every variant would cost about 4x." % (
              results[1]["time_vs_k1"]["median"], results[1]["cpu_vs_k1"]["median"]))
    with open(args.json or os.path.join(args.out, "results.json"), "w") as f:
        json.dump({"size": args.size, "input_bytes": input_bytes, "images": images,
                   "repeat": args.repeat, "runs": results}, f, indent=2)


if __name__ == "__main__":
    main(sys.argv[1:])
