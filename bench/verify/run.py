#!/usr/bin/env python3
"""imgpack verify against a plain read of the same shard files, side by side.

usage: bench/verify/run.py DATASET OUT [--repeat N] [--threads 1,2]

For each thread count T and each repeat: the plain read (every shard file read
into memory by T threads, each file by one thread, 4 MiB at a time: what `cat`
does, with nothing computed), then `imgpack verify --threads T` (the index and
every shard's structure, then the XXH3-64 of every record). Both run from the
page cache, warmed first, so the figure is how close verify comes to the speed
of reading its input. Ratios are taken between runs of the same repeat.
Writes OUT/results.json and prints a table.
"""
import argparse
import concurrent.futures
import glob
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import benchlib  # noqa: E402

CHUNK = 4 << 20


def read_file(path):
    buffer = bytearray(CHUNK)
    view = memoryview(buffer)
    total = 0
    with open(path, "rb", buffering=0) as f:
        while True:
            n = f.readinto(view)
            if not n:
                return total
            total += n


def plain_read(paths, threads):
    """Seconds to read every file with THREADS threads (file reads release the GIL)."""
    start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        total = sum(pool.map(read_file, paths))
    return time.perf_counter() - start, total


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("out")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", default="1,%d" % (os.cpu_count() or 1))
    args = parser.parse_args()
    threads = sorted({int(t) for t in args.threads.split(",") if t})
    os.makedirs(args.out, exist_ok=True)
    imgpack = benchlib.imgpack_binary()
    shards = sorted(glob.glob(os.path.join(args.dataset, "shard-*.h5")))
    if not shards:
        sys.exit("bench/verify: no shards in %s" % args.dataset)
    file_bytes = sum(os.path.getsize(p) for p in shards)
    benchlib.say("verify", "warming the page cache (%.2f GB in %d shards)" % (file_bytes / 1e9,
                                                                              len(shards)))
    benchlib.warm(shards + [os.path.join(args.dataset, "index.h5")])

    runs = {t: {"read_gb_per_s": [], "verify_gb_per_s": [], "checksum_gb_per_s": [],
                "structure_s": [], "ratio": []} for t in threads}
    records = pixel_bytes = None
    for repeat in range(args.repeat):
        for t in threads:
            read_s, read_bytes = plain_read(shards, t)
            report = benchlib.run_json([imgpack, "verify", args.dataset, "--threads", t,
                                        "--json", "--quiet"])
            if not report["ok"]:
                sys.exit("bench/verify: %s is damaged: %s" % (args.dataset, report["errors"]))
            records, pixel_bytes = report["records_checked"], report["bytes"]
            r = runs[t]
            r["read_gb_per_s"].append(read_bytes / read_s / 1e9)
            # verify reads the pixels only (not the HDF5 metadata around them): its GB/s counts
            # the file bytes too, so that both sides are the same work, and its whole run.
            r["verify_gb_per_s"].append(file_bytes / report["seconds"] / 1e9)
            r["checksum_gb_per_s"].append(report["checksum_gb_per_s"])
            r["structure_s"].append(report["structure_seconds"])
            r["ratio"].append(r["verify_gb_per_s"][-1] / r["read_gb_per_s"][-1])
        benchlib.say("verify", "repeat %d/%d: %s" % (repeat + 1, args.repeat, "; ".join(
            "%d thread%s: read %.2f GB/s, verify %.2f GB/s" % (
                t, "" if t == 1 else "s", runs[t]["read_gb_per_s"][-1],
                runs[t]["verify_gb_per_s"][-1]) for t in threads)))

    results = {
        "dataset": os.path.abspath(args.dataset),
        "shards": len(shards),
        "file_bytes": file_bytes,
        "pixel_bytes": pixel_bytes,
        "records": records,
        "repeat": args.repeat,
        "by_threads": {str(t): {k: benchlib.summary(v) for k, v in runs[t].items()}
                       for t in threads},
    }
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(results, f, indent=2)
    print("%d records, %.2f GB of shards, page cache, %d repeats (median)" % (
        records, file_bytes / 1e9, args.repeat))
    print("| threads | plain read GB/s | imgpack verify GB/s | verify / read |")
    print("|---:|---:|---:|---:|")
    for t in threads:
        s = results["by_threads"][str(t)]
        print("| %d | %.2f | %.2f | %.2f |" % (t, s["read_gb_per_s"]["median"],
                                              s["verify_gb_per_s"]["median"],
                                              s["ratio"]["median"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
