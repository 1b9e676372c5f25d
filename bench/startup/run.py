#!/usr/bin/env python3
"""How long imgpack's commands that touch no image take, against starting a process at all.

usage: bench/startup/run.py OUT [--runs N] [--repeat R]

Makes a small dataset in OUT (sample-data, 40 images converted to 32x32), then
runs, alternately and N times per repeat: /bin/true (the floor: fork, exec and
exit of a process that loads nothing but libc), `imgpack --version`,
`imgpack inspect`, `imgpack split --list` and `imgpack verify` of that dataset,
and `--version` and `inspect` of imgpack-complete (the whole CLI, which imgpack
hands the image commands to) when it is beside imgpack.
Each run is timed from the parent's fork to its exit (wall clock), output to
/dev/null. Also counts the shared objects `imgpack --version` initialises
(LD_DEBUG=libs), the part of start-up a binary's linking decides. Writes
OUT/results.json and prints a table (milliseconds, median of every run).
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


def timed(command):
    start = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def libraries_initialised(imgpack):
    """Shared objects the dynamic loader initialises for `imgpack --version`."""
    env = dict(os.environ, LD_DEBUG="libs")
    done = subprocess.run([imgpack, "--version"], capture_output=True, text=True, env=env,
                          check=True)
    return sum(1 for line in done.stderr.splitlines() if "calling init:" in line)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--runs", type=int, default=60, help="runs of each command per repeat")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    imgpack = benchlib.imgpack_binary()
    os.makedirs(args.out, exist_ok=True)
    src, dataset = os.path.join(args.out, "src"), os.path.join(args.out, "dataset")
    for path in (src, dataset):
        shutil.rmtree(path, ignore_errors=True)
    benchlib.run([imgpack, "sample-data", src, "--per-class", 10, "--size", "64x64", "-q"])
    benchlib.run([imgpack, "convert", src, dataset, "--size", 32, "-q"])
    true = shutil.which("true") or "/bin/true"
    commands = {
        "true": [true],
        "--version": [imgpack, "--version"],
        "inspect": [imgpack, "inspect", dataset],
        "split --list": [imgpack, "split", dataset, "--list"],
        "verify": [imgpack, "verify", dataset, "--quiet"],
    }
    # The complete CLI (every command, the image pipeline linked), which imgpack hands
    # the image commands to: what the commands above would cost without the split.
    complete = os.path.join(os.path.dirname(os.path.abspath(imgpack)), "imgpack-complete")
    if os.access(complete, os.X_OK):
        commands["imgpack-complete --version"] = [complete, "--version"]
        commands["imgpack-complete inspect"] = [complete, "inspect", dataset]
    for command in commands.values():  # page in the binaries and the libraries
        timed(command)
    runs = {name: [] for name in commands}
    for repeat in range(args.repeat):
        for _ in range(args.runs):
            for name, command in commands.items():
                runs[name].append(timed(command) * 1000)
        benchlib.say("startup", "repeat %d/%d: %s" % (repeat + 1, args.repeat, ", ".join(
            "%s %.1f ms" % (name, benchlib.summary(v)["median"]) for name, v in runs.items())))
    results = {
        "imgpack": imgpack,
        "runs": args.runs * args.repeat,
        "repeat": args.repeat,
        "libraries": libraries_initialised(imgpack),
        "ms": {name: benchlib.summary(v) for name, v in runs.items()},
    }
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(results, f, indent=2)
    print("%d alternated runs of each; %d shared objects initialised by imgpack --version" % (
        results["runs"], results["libraries"]))
    print("| command | median ms | min ms | max ms |")
    print("|---|---:|---:|---:|")
    for name, s in results["ms"].items():
        print("| %s | %.1f | %.1f | %.1f |" % (name, s["median"], s["min"], s["max"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
