#!/usr/bin/python3
"""The reader on a dataset the page cache does not hold: `imgpack bench --cold`
(the dataset evicted before every epoch, the storage's own O_DIRECT reads over
the same files measured in the same run as the reference), by order, reader
threads and read path; and the same dataset page-cached against memcpy.

usage: bench/cold/run.py DATASET WORKDIR [--threads 1,2,4] [--orders random,shard-window]
                         [--read-paths auto,mapped] [--epochs 2] [--batch 256] [--repeat R]
                         [--json FILE] [--imgpack PATH]

Every cold run measures its own references: sequential reads of 4 MiB with 1
and 4 in flight, random record-sized reads with 1, 4, 16 and 32 in flight; the
ratios are the reader's GB/s over the best of each, within the run. The
page-cached runs (--read-path auto and mapped, 2 threads) give the reader's
ratio to memcpy over the same mapped bytes, as bench/reader does.

Prints a table (min / median / max over the repeats) and writes the samples
and their summaries to --json (default WORKDIR/results.json).
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import benchlib  # noqa: E402


def bench(args, extra):
    # Every variant is its own sample: each epoch reads every record of the dataset.
    command = [args.imgpack, "bench", args.dataset, "--variants", "all", "--batch",
               str(args.batch), "--epochs", str(args.epochs), "--json", "-q"] + extra
    return benchlib.run_json(command), " ".join(command)


def fmt(s, digits=2):
    return "%.*f / %.*f / %.*f" % (digits, s["min"], digits, s["median"], digits, s["max"])


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("workdir")
    parser.add_argument("--threads", default="1,2,4",
                        type=lambda text: [int(t) for t in text.split(",")])
    parser.add_argument("--orders", default="random,shard-window",
                        type=lambda text: text.split(","))
    parser.add_argument("--read-paths", default="auto,mapped", type=lambda text: text.split(","))
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--imgpack", default=benchlib.imgpack_binary())
    parser.add_argument("--json", help="result file (default WORKDIR/results.json)")
    args = parser.parse_args(argv)
    os.makedirs(args.workdir, exist_ok=True)

    samples = {}
    warm = {}
    results = {"batch": args.batch, "epochs": args.epochs, "repeat": args.repeat,
               "cpus": os.cpu_count(), "commands": {}}
    for r in range(args.repeat):
        for order in args.orders:
            for threads in args.threads:
                for path in args.read_paths:
                    j, command = bench(args, ["--cold", "--order", order, "--threads",
                                              str(threads), "--read-path", path])
                    results["commands"]["cold"] = command
                    results.setdefault("dataset", {
                        "records": j["records"], "shards": j["shards"],
                        "bytes": j["records"] * j["record_bytes"]})
                    seq = max(x["gb_per_s"] for x in j["storage"]["sequential"])
                    rnd = max(x["gb_per_s"] for x in j["storage"]["random"])
                    row = samples.setdefault("%s/%d/%s" % (order, threads, path), {
                        "order": order, "threads": threads, "read_path": path,
                        "gb_per_s": [], "sequential_gb_per_s": [], "random_gb_per_s": [],
                        "vs_sequential": [], "vs_random": [], "resident_after_eviction": [],
                        "records_read_fraction": [], "direct": j["storage"]["direct"]})
                    row["gb_per_s"].append(j["gb_per_s"])
                    row["sequential_gb_per_s"].append(seq)
                    row["random_gb_per_s"].append(rnd)
                    row["vs_sequential"].append(j["reader_vs_sequential"])
                    row["vs_random"].append(j["reader_vs_random"])
                    row["resident_after_eviction"].append(j["resident_after_eviction"])
                    row["records_read_fraction"].append(j["records_read"] / max(1, j["images"]))
                    benchlib.say("cold", "repeat %d/%d %s, %d threads, %s: %.2f GB/s (sequential "
                                 "%.2f, random %.2f)" % (r + 1, args.repeat, order, threads, path,
                                                         j["gb_per_s"], seq, rnd))
        for path in args.read_paths:
            j, command = bench(args, ["--threads", "2", "--read-path", path])
            results["commands"]["warm"] = command
            w = warm.setdefault(path, {"read_path": path, "gb_per_s": [], "memcpy_gb_per_s": [],
                                       "vs_memcpy": []})
            w["gb_per_s"].append(j["gb_per_s"])
            w["memcpy_gb_per_s"].append(j["memcpy_gb_per_s"])
            w["vs_memcpy"].append(j["reader_vs_memcpy"])
    results["cold"] = []
    for row in samples.values():
        summary = dict(row)
        for key in ("gb_per_s", "sequential_gb_per_s", "random_gb_per_s", "vs_sequential",
                    "vs_random", "resident_after_eviction", "records_read_fraction"):
            summary[key] = benchlib.summary(row[key])
            summary[key + "_samples"] = row[key]
        results["cold"].append(summary)
    results["warm"] = [{"read_path": w["read_path"], "gb_per_s": benchlib.summary(w["gb_per_s"]),
                        "memcpy_gb_per_s": benchlib.summary(w["memcpy_gb_per_s"]),
                        "vs_memcpy": benchlib.summary(w["vs_memcpy"])} for w in warm.values()]

    out = args.json or os.path.join(args.workdir, "results.json")
    with open(out, "w") as f:
        json.dump(results, f, indent=2)

    d = results["dataset"]
    print("cold reads of %s: %d records, %.2f GB in %d shards, batch %d; min / median / max of %d"
          % (args.dataset, d["records"], d["bytes"] / 1e9, d["shards"], args.batch, args.repeat))
    for row in results["cold"]:
        print("  %-12s %d threads %-6s reader %s GB/s; sequential %s, random %s; "
              "x sequential %s, x random %s" % (
                  row["order"], row["threads"], row["read_path"], fmt(row["gb_per_s"]),
                  fmt(row["sequential_gb_per_s"]), fmt(row["random_gb_per_s"]),
                  fmt(row["vs_sequential"]), fmt(row["vs_random"])))
    for w in results["warm"]:
        print("  page-cached, 2 threads, %-6s reader %s GB/s, x memcpy %s" % (
            w["read_path"], fmt(w["gb_per_s"]), fmt(w["vs_memcpy"])))


if __name__ == "__main__":
    main(sys.argv[1:])
