#!/usr/bin/env python3
"""The reader on a dataset the page cache does not hold: `imgpack bench --cold`
(the dataset evicted before every epoch, the storage's own O_DIRECT reads over
the same files measured in the same run as the reference), by order, reader
threads and read path; and the same dataset page-cached against memcpy.

usage: bench/cold/run.py DATASET WORKDIR [--threads 1,2,4] [--orders random,shard-window]
                         [--windows 4] [--read-paths auto,mapped] [--epochs 2] [--batch 256]
                         [--memory-limit 0.5x] [--limit-windows 2]
                         [--limit-read-paths auto] [--repeat R]
                         [--json FILE] [--imgpack PATH]

Every cold run measures its own references: sequential reads of 4 MiB with 1,
4 and 16 in flight, random record-sized reads with 1, 4, 16 and 32 in flight;
the ratios are the reader's GB/s over the best of each, within the run. After
the runs without a memory limit, each repeat also times `imgpack verify` on
the dataset evicted from the page cache, against the best sequential read of
the cold run just before it. With --memory-limit (a size, or a fraction of the
dataset's bytes such as 0.5x) every cold configuration runs a second time
inside a memory cgroup of that size (`imgpack bench --memory-limit`, which
needs root), shard-window order then with --limit-windows shards per window,
and with the read paths of --limit-read-paths (`mapped` under a limit reads at
a few percent of the storage's rate: minutes per run on a dataset of a few
GB). The page-cached runs (--read-path auto and mapped, 2 threads) give the
reader's ratio to memcpy over the same mapped bytes, as bench/reader does.

Prints a table (min / median / max over the repeats) and writes the samples
and their summaries to --json (default WORKDIR/results.json).
"""
import argparse
import ctypes
import json
import mmap
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import benchlib  # noqa: E402


def bench(args, extra):
    # Every variant is its own sample: each epoch reads every record of the dataset.
    command = [args.imgpack, "bench", args.dataset, "--variants", "all", "--batch",
               str(args.batch), "--epochs", str(args.epochs), "--json", "-q"] + extra
    command += [str(a) for a in benchlib.measure_args(args.measure_seconds)]
    return benchlib.run_json(command), " ".join(command)


SERIES = ("gb_per_s", "sequential_gb_per_s", "random_gb_per_s", "vs_sequential", "vs_random",
          "resident_after_eviction", "records_read_fraction", "prefetched_fraction",
          "memory_peak_bytes", "anon_growth_bytes")


def record_cold(samples, j, order, window, threads, path, limit):
    """Adds one cold run's figures to its configuration's samples."""
    key = "%s/%s/%d/%s/%s" % (order, window, threads, path, limit)
    row = samples.setdefault(key, dict(
        {name: [] for name in SERIES}, order=order, window=window, threads=threads,
        read_path=path, memory_limit=limit, direct=j["storage"]["direct"]))
    row["gb_per_s"].append(j["gb_per_s"])
    row["sequential_gb_per_s"].append(max(x["gb_per_s"] for x in j["storage"]["sequential"]))
    row["random_gb_per_s"].append(max(x["gb_per_s"] for x in j["storage"]["random"]))
    row["vs_sequential"].append(j["reader_vs_sequential"])
    row["vs_random"].append(j["reader_vs_random"])
    row["resident_after_eviction"].append(j["resident_after_eviction"])
    row["records_read_fraction"].append(j["records_read"] / max(1, j["images"]))
    pixels = max(1, j["records"] * j["record_bytes"] * j["epochs"])
    row["prefetched_fraction"].append(j["prefetched_bytes"] / pixels)
    row["memory_peak_bytes"].append(j.get("memory_peak_bytes", 0))
    row["anon_growth_bytes"].append(j["reader_memory_bytes"])


LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.mmap.restype = ctypes.c_void_p
LIBC.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                      ctypes.c_long]
LIBC.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
LIBC.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]


def resident_bytes(fd, size):
    """Bytes of the file the page cache holds, in whole pages (mincore)."""
    if size == 0:
        return 0
    addr = LIBC.mmap(None, size, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
    if addr in (None, ctypes.c_void_p(-1).value):
        raise OSError(ctypes.get_errno(), "mmap failed")
    try:
        pages = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE
        vec = ctypes.create_string_buffer(pages)
        if LIBC.mincore(addr, size, vec) != 0:
            raise OSError(ctypes.get_errno(), "mincore failed")
        return min(size, sum(b & 1 for b in vec.raw) * mmap.PAGESIZE)
    finally:
        LIBC.munmap(addr, size)


def evict(dataset):
    """Drops the dataset's shard files from the page cache (no process maps
    them between runs); returns the fraction of their bytes still resident."""
    resident = total = 0
    for name in sorted(os.listdir(dataset)):
        if not name.startswith("shard-"):
            continue
        fd = os.open(os.path.join(dataset, name), os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            resident += resident_bytes(fd, size)
            total += size
        finally:
            os.close(fd)
    return resident / max(1, total)


def verify_cold(args, reference):
    """`imgpack verify` of the evicted dataset against the best sequential
    read of the cold run just before it."""
    left = evict(args.dataset)
    j = benchlib.run_json([args.imgpack, "verify", args.dataset, "--json"])
    if not j["ok"]:
        raise SystemExit("bench/cold: imgpack verify found problems in %s" % args.dataset)
    sequential = max(x["gb_per_s"] for x in reference["storage"]["sequential"])
    return {"gb_per_s": j["gb_per_s"], "sequential_gb_per_s": sequential,
            "vs_sequential": j["gb_per_s"] / sequential, "threads": j["threads"],
            "resident_after_eviction": left}


def fmt(s, digits=2):
    return "%.*f / %.*f / %.*f" % (digits, s["min"], digits, s["median"], digits, s["max"])


def dataset_bytes(dataset):
    return sum(os.path.getsize(os.path.join(dataset, name)) for name in os.listdir(dataset)
               if name.startswith("shard-"))


def limit_bytes(text, dataset):
    if text.endswith("x"):
        return int(float(text[:-1]) * dataset_bytes(dataset))
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(float(text[:-1]) * units[text[-1].upper()]) if text[-1].upper() in units \
        else int(text)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("workdir")
    comma_ints = lambda text: [int(t) for t in text.split(",")]  # noqa: E731
    parser.add_argument("--threads", default="1,2,4", type=comma_ints)
    parser.add_argument("--orders", default="random,shard-window",
                        type=lambda text: text.split(","))
    parser.add_argument("--windows", default="4", type=comma_ints,
                        help="shards per window in shard-window order")
    parser.add_argument("--read-paths", default="auto,mapped", type=lambda text: text.split(","))
    parser.add_argument("--memory-limit", help="also run under a memory cgroup of this size")
    parser.add_argument("--limit-windows", default="2", type=comma_ints,
                        help="shards per window under --memory-limit")
    parser.add_argument("--limit-read-paths", type=lambda text: text.split(","),
                        help="read paths under --memory-limit (default: --read-paths)")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--imgpack", default=benchlib.imgpack_binary())
    benchlib.add_measure_seconds(parser)
    parser.add_argument("--json", help="result file (default WORKDIR/results.json)")
    args = parser.parse_args(argv)
    os.makedirs(args.workdir, exist_ok=True)

    limits = [None]
    if args.memory_limit:
        limits.append(limit_bytes(args.memory_limit, args.dataset))
    samples = {}
    warm = {}
    verify = {"gb_per_s": [], "sequential_gb_per_s": [], "vs_sequential": [],
              "resident_after_eviction": [], "threads": None}
    results = {"batch": args.batch, "epochs": args.epochs, "repeat": args.repeat,
               "cpus": os.cpu_count(), "commands": {}}
    for r in range(args.repeat):
        for limit in limits:
            for order in args.orders:
                windows = [None]
                if order == "shard-window":
                    windows = args.limit_windows if limit else args.windows
                for window in windows:
                    for threads in args.threads:
                        paths = args.read_paths
                        if limit and args.limit_read_paths:
                            paths = args.limit_read_paths
                        for path in paths:
                            extra = ["--cold", "--order", order, "--threads", str(threads),
                                     "--read-path", path]
                            if window:
                                extra += ["--window", str(window)]
                            if limit:
                                extra += ["--memory-limit", str(limit)]
                            j, command = bench(args, extra)
                            results["commands"]["cold-limited" if limit else "cold"] = command
                            results.setdefault("reads_in_flight", j["reads_in_flight"])
                            results.setdefault("ring_host_bytes", j["ring_host_bytes"])
                            results.setdefault("dataset", {
                                "records": j["records"], "shards": j["shards"],
                                "bytes": j["records"] * j["record_bytes"]})
                            record_cold(samples, j, order, window, threads, path, limit)
                            benchlib.say("cold", "repeat %d/%d %s%s, %d threads, %s%s: %.2f GB/s" % (
                                r + 1, args.repeat, order, " window %d" % window if window else "",
                                threads, path, ", limit %.2f GB" % (limit / 1e9) if limit else "",
                                j["gb_per_s"]))
            if limit is None:
                v = verify_cold(args, j)
                results["commands"]["verify"] = "%s verify %s --json" % (args.imgpack,
                                                                         args.dataset)
                for key in ("gb_per_s", "sequential_gb_per_s", "vs_sequential",
                            "resident_after_eviction"):
                    verify[key].append(v[key])
                verify["threads"] = v["threads"]
                benchlib.say("cold", "repeat %d/%d verify, evicted: %.2f GB/s, %.2fx sequential"
                             % (r + 1, args.repeat, v["gb_per_s"], v["vs_sequential"]))
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
        for key in SERIES:
            summary[key] = benchlib.summary(row[key])
            summary[key + "_samples"] = row[key]
        results["cold"].append(summary)
    results["warm"] = [{"read_path": w["read_path"], "gb_per_s": benchlib.summary(w["gb_per_s"]),
                        "memcpy_gb_per_s": benchlib.summary(w["memcpy_gb_per_s"]),
                        "vs_memcpy": benchlib.summary(w["vs_memcpy"])} for w in warm.values()]

    results["verify"] = {key: benchlib.summary(values) if key != "threads" else values
                         for key, values in verify.items()}
    out = args.json or os.path.join(args.workdir, "results.json")
    with open(out, "w") as f:
        json.dump(results, f, indent=2)

    d = results["dataset"]
    print("cold reads of %s: %d records, %.2f GB in %d shards, batch %d; min / median / max of %d"
          % (args.dataset, d["records"], d["bytes"] / 1e9, d["shards"], args.batch, args.repeat))
    for row in results["cold"]:
        print("  %-12s %-9s %d threads %-6s%s reader %s GB/s; sequential %s, random %s; "
              "x sequential %s, x random %s" % (
                  row["order"], "window %d" % row["window"] if row["window"] else "",
                  row["threads"], row["read_path"],
                  " limit %.2f GB" % (row["memory_limit"] / 1e9) if row["memory_limit"] else "",
                  fmt(row["gb_per_s"]), fmt(row["sequential_gb_per_s"]),
                  fmt(row["random_gb_per_s"]), fmt(row["vs_sequential"]), fmt(row["vs_random"])))
    v = results["verify"]
    print("  verify, evicted, %d threads: %s GB/s; x sequential %s" % (
        v["threads"], fmt(v["gb_per_s"]), fmt(v["vs_sequential"])))
    for w in results["warm"]:
        print("  page-cached, 2 threads, %-6s reader %s GB/s, x memcpy %s" % (
            w["read_path"], fmt(w["gb_per_s"]), fmt(w["vs_memcpy"])))


if __name__ == "__main__":
    main(sys.argv[1:])
