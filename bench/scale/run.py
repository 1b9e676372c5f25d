#!/usr/bin/python3
"""Times what grows with the sample count: `split --list`, `inspect` and
`split --name` of every kind, on synthetic datasets of one-pixel records
(make_dataset.py, one group per image unless --groups says otherwise).

usage: bench/scale/run.py IMGPACK WORKDIR N... [--groups G|per-sample] [--repeat R]

Prints one JSON object per (N, command): the best wall time of R runs and,
for split --name, the CLI's own read/compute/write timings of that run.
Datasets are made once per N in WORKDIR and reused.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
KINDS = ["random", "stratified", "group", "stratified-group"]


def timed(command):
    start = time.perf_counter()
    result = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit("%s failed: %s" % (" ".join(command), result.stderr))
    return seconds, result.stdout


def best(command, repeat):
    runs = [timed(command) for _ in range(repeat)]
    return min(runs, key=lambda run: run[0])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("imgpack")
    parser.add_argument("workdir")
    parser.add_argument("sizes", type=int, nargs="+")
    parser.add_argument("--groups", default="per-sample")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    for n in args.sizes:
        dataset = os.path.join(args.workdir, "scale-%d-%s" % (n, args.groups))
        if not os.path.exists(os.path.join(dataset, "index.h5")):
            subprocess.run([sys.executable, os.path.join(HERE, "make_dataset.py"), dataset,
                            str(n), "--groups", args.groups], check=True)
        for kind in KINDS:
            seconds, out = best([args.imgpack, "split", dataset, "--name", kind, "--kind", kind,
                                 "--folds", "5", "--force", "--json"], args.repeat)
            print(json.dumps({"samples": n, "command": "split --kind " + kind,
                              "seconds": round(seconds, 3),
                              "timings": json.loads(out)["timings"]}), flush=True)
        for command in (["split", dataset, "--list"], ["inspect", dataset]):
            seconds, _ = best([args.imgpack] + command, args.repeat)
            print(json.dumps({"samples": n, "command": command[0] + " " + " ".join(command[2:]),
                              "seconds": round(seconds, 3)}), flush=True)


if __name__ == "__main__":
    main()
