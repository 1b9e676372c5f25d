#!/usr/bin/env python3
"""Reader benchmarks against their peers, side by side in one run on one machine.

usage: bench/reader/run.py DATASET SRC OUT [--repeat R] [--batches 16,64,256,1024]
                           [--threads 1,2,3,4] [--jpeg-configs B:W,...] [--h5py-configs B:W,...]
                           [--epochs 3] [--h5py-max-images N] [--torch-max-images N]
                           [--no-peers]

DATASET is an imgpack dataset of 224x224x3 records (for the issue's targets:
at least 2 GiB, so 14,300 records or more), SRC the JPEG class folders it was
converted from. Every repeat runs, in this order:

  imgpack bench   random order, batch 256, 2 threads, host output, with the
                  same run's 2-thread memcpy over the same bytes (the targets);
                  the other --batches at 2 threads; --sweep-threads up to the
                  largest --threads
  h5py            h5py_read.py: the fastest way of per-sample reads of the shards
  torch jpeg      torchvision ImageFolder + DataLoader over SRC (--jpeg-configs)
  torch h5py      DataLoader over an h5py Dataset of the shards (--h5py-configs)

and, with a CUDA device, the pinned upload against same-run cudaMemcpy and
the starvation with a simulated step of 1.2x the pure read time. The shards
are read once first, so the page cache holds them. Ratios are taken within a
repeat and summarised as min / median / max over the repeats. Writes
OUT/results.json and OUT/results.md and prints the table.

--no-peers runs imgpack bench only (memcpy included): the h5py and torch
figures and imgpack's ratios to them are null.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import benchlib  # noqa: E402

TARGET_BATCH = 256
TARGET_THREADS = 2


def bench(imgpack, dataset, batch, threads, epochs, extra=(), device="host"):
    command = [imgpack, "bench", dataset, "--batch", batch, "--threads", threads,
               "--epochs", epochs, "--order", "random", "--device", device,
               "--memcpy-threads", TARGET_THREADS, "--json", "--quiet"] + list(extra)
    return benchlib.run_json(command), " ".join(map(str, command))


def configs(text):
    return [tuple(int(x) for x in c.split(":")) for c in text.split(",") if c]


def peer_runs(args, seed, jpeg_pairs, h5_pairs, commands):
    """One repeat of the peers: h5py per-sample reads and the two DataLoaders."""
    h5_command = [benchlib.PYTHON, os.path.join(HERE, "h5py_read.py"), args.dataset,
                  "--batch", TARGET_BATCH, "--max-images", args.h5py_max_images, "--seed", seed]
    runs = {"h5py": benchlib.run_json(h5_command)}
    commands["h5py per-sample"] = " ".join(map(str, h5_command))
    runs["torch_jpeg"], commands["torch jpeg"] = torch_throughput(
        "jpeg", args.src, jpeg_pairs, args.torch_max_images)
    runs["torch_h5py"], commands["torch h5py"] = torch_throughput(
        "h5py", args.dataset, h5_pairs, args.torch_max_images)
    return runs


def torch_throughput(kind, path, pairs, max_images):
    command = [benchlib.PYTHON, os.path.join(HERE, "torch_loaders.py"), "throughput",
               "--source", kind, path, "--configs", ",".join("%d:%d" % p for p in pairs),
               "--max-images", max_images]
    return benchlib.run_json(command), " ".join(map(str, command))


def gpu_runs(imgpack, dataset):
    """Pinned upload and starvation on cuda:0, or {"error": why} when there is no device."""
    try:
        upload, _ = bench(imgpack, dataset, TARGET_BATCH, TARGET_THREADS, 1, device="cuda:0")
    except benchlib.CommandFailed as failure:
        return {"error": str(failure).strip().splitlines()[-1]}
    step_ms = 1.2 * 1000 * TARGET_BATCH / upload["images_per_s"]
    step, _ = bench(imgpack, dataset, TARGET_BATCH, TARGET_THREADS, 2,
                    ["--step-ms", "%.3f" % step_ms], device="cuda:0")
    return {"upload": upload, "step": step}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("src")
    parser.add_argument("out")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--batches", default="16,64,256,1024")
    parser.add_argument("--threads", default="1,2,3,4")
    parser.add_argument("--jpeg-configs", default="16:2,64:2,256:1,256:2,256:4")
    parser.add_argument("--h5py-configs", default="16:2,64:2,256:1,256:2,256:4,1024:2")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--h5py-max-images", type=int, default=20000)
    parser.add_argument("--torch-max-images", type=int, default=3072)
    parser.add_argument("--imgpack", default=benchlib.imgpack_binary())
    parser.add_argument("--no-peers", action="store_true",
                        help="measure imgpack only, not h5py and the torch DataLoaders")
    benchlib.add_measure_seconds(parser)
    args = parser.parse_args()
    measure = benchlib.measure_args(args.measure_seconds)
    batches = sorted({int(b) for b in args.batches.split(",")} | {TARGET_BATCH})
    threads = sorted(int(t) for t in args.threads.split(","))
    jpeg_pairs = configs(args.jpeg_configs)
    h5_pairs = configs(args.h5py_configs)
    for pairs in (jpeg_pairs, h5_pairs):
        if (TARGET_BATCH, TARGET_THREADS) not in pairs:
            pairs.append((TARGET_BATCH, TARGET_THREADS))
    os.makedirs(args.out, exist_ok=True)

    shards = [p for p in benchlib.files_under(args.dataset) if p.endswith(".h5")]
    benchlib.say("reader", "warming the page cache (%.2f GB)" % (benchlib.warm(shards) / 1e9))
    if not args.no_peers:
        benchlib.warm(benchlib.files_under(args.src))

    commands = {}
    repeats = []
    for r in range(args.repeat):
        rep = {"by_batch": {}}
        for batch in batches:
            result, command = bench(args.imgpack, args.dataset, batch, TARGET_THREADS, args.epochs,
                                    measure)
            rep["by_batch"][str(batch)] = result
            commands["imgpack bench (batch %d)" % batch] = command
        rep["sweep"], commands["imgpack bench --sweep-threads"] = bench(
            args.imgpack, args.dataset, TARGET_BATCH, max(threads), max(1, args.epochs - 1),
            ["--sweep-threads"] + measure)
        if not args.no_peers:
            rep.update(peer_runs(args, r, jpeg_pairs, h5_pairs, commands))
        repeats.append(rep)
        main_run = rep["by_batch"][str(TARGET_BATCH)]
        benchlib.say("reader", "repeat %d/%d: imgpack %.0f images/s (%.0f%% of memcpy)%s" % (
            r + 1, args.repeat, main_run["images_per_s"], 100 * main_run["reader_vs_memcpy"],
            "" if args.no_peers else ", h5py %.0f, torch jpeg %.0f images/s" % (
                rep["h5py"]["images_per_s"],
                pick(rep["torch_jpeg"], TARGET_BATCH, TARGET_THREADS))))

    gpu = gpu_runs(args.imgpack, args.dataset)
    results = summarise(repeats, batches, threads, jpeg_pairs, h5_pairs, gpu)
    results["commands"] = commands
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(results, f, indent=2)
    table = markdown(results)
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write(table + "\n")
    print(table)


def pick(torch_result, batch, workers):
    for run in torch_result["runs"]:
        if run["batch"] == batch and run["workers"] == workers:
            return run["images_per_s"]
    return None


def summarise(repeats, batches, threads, jpeg_pairs, h5_pairs, gpu):
    S = benchlib.summary
    main_runs = [rep["by_batch"][str(TARGET_BATCH)] for rep in repeats]
    reader_ips = [m["images_per_s"] for m in main_runs]
    peer_reps = [rep for rep in repeats if "h5py" in rep]  # none with --no-peers
    h5_ips = [rep["h5py"]["images_per_s"] for rep in peer_reps]
    jpeg_ips = [pick(rep["torch_jpeg"], TARGET_BATCH, TARGET_THREADS) for rep in peer_reps]
    torch_h5_ips = [pick(rep["torch_h5py"], TARGET_BATCH, TARGET_THREADS) for rep in peer_reps]
    first = main_runs[0]
    targets = {
        "reader_vs_memcpy": S([m["reader_vs_memcpy"] for m in main_runs]),
        "reader_vs_h5py": S(benchlib.ratios(reader_ips, h5_ips)),
        "reader_vs_torch_jpeg": S(benchlib.ratios(reader_ips, jpeg_ips)),
        "reader_vs_torch_h5py": S(benchlib.ratios(reader_ips, torch_h5_ips)),
        "memory_vs_bound": S([m["reader_memory_bytes"] / m["memory_bound_bytes"]
                              for m in main_runs]),
    }
    figures = {
        "reader_images_per_s": S(reader_ips),
        "reader_gb_per_s": S([m["gb_per_s"] for m in main_runs]),
        "memcpy_gb_per_s": S([m["memcpy_gb_per_s"] for m in main_runs]),
        "h5py_images_per_s": S(h5_ips),
        "h5py_best_method": [rep["h5py"]["best_method"] for rep in peer_reps],
        "h5py_methods": {name: S([rep["h5py"]["methods"][name]["images_per_s"]
                                  for rep in peer_reps])
                         for name in (peer_reps[0]["h5py"]["methods"] if peer_reps else ())},
        "torch_jpeg_images_per_s": S(jpeg_ips),
        "torch_h5py_images_per_s": S(torch_h5_ips),
        "reader_memory_mib": S([m["reader_memory_bytes"] / 2**20 for m in main_runs]),
        "memory_bound_mib": first["memory_bound_bytes"] / 2**20,
        "ring_host_mib": first["ring_host_bytes"] / 2**20,
        "prefetch": first["prefetch"],
    }
    by_batch = {}
    for batch in batches:
        runs = [rep["by_batch"][str(batch)] for rep in repeats]
        by_batch[str(batch)] = {
            "imgpack": S([x["images_per_s"] for x in runs]),
            "imgpack_vs_memcpy": S([x["reader_vs_memcpy"] for x in runs]),
            "memcpy_images_per_s": S([x["memcpy_gb_per_s"] * 1e9 / x["record_bytes"]
                                      for x in runs]),
            "torch_jpeg": S([pick(rep["torch_jpeg"], batch, TARGET_THREADS)
                             for rep in peer_reps]),
            "torch_h5py": S([pick(rep["torch_h5py"], batch, TARGET_THREADS)
                             for rep in peer_reps]),
        }
    sweep = {}
    for t in threads:
        sweep[str(t)] = {
            "imgpack": S([next((x["images_per_s"] for x in rep["sweep"]["sweep"]
                                if x["threads"] == t), None) for rep in repeats]),
            "torch_jpeg": S([pick(rep["torch_jpeg"], TARGET_BATCH, t) for rep in peer_reps]),
            "torch_h5py": S([pick(rep["torch_h5py"], TARGET_BATCH, t) for rep in peer_reps]),
        }
    gpu_rows = None
    if gpu and "upload" in gpu:
        upload, step = gpu["upload"], gpu["step"]
        gpu_rows = {
            "upload_gb_per_s": upload["gb_per_s"],
            "cudamemcpy_gb_per_s": upload.get("upload_reference_gb_per_s"),
            "upload_vs_cudamemcpy": (upload["gb_per_s"] / upload["upload_reference_gb_per_s"]
                                     if upload.get("upload_reference_gb_per_s") else None),
            "step_ms": step["step_ms"], "starvation": step["starvation"],
        }
    return {
        "records": first["records"], "record_bytes": first["record_bytes"],
        "dataset_gib": first["records"] * first["record_bytes"] / 2**30,
        "batch": TARGET_BATCH, "threads": TARGET_THREADS, "repeat": len(repeats),
        "targets": targets, "figures": figures, "by_batch": by_batch, "by_threads": sweep,
        "recommended_threads": [rep["sweep"].get("recommended_threads") for rep in repeats],
        "gpu": gpu_rows, "gpu_error": gpu.get("error") if gpu else None,
        "raw": repeats, "gpu_raw": gpu,
    }


def fmt(s, digits=2, scale=1.0):
    if s is None:
        return "-"
    return "%.*f / %.*f / %.*f" % (digits, s["min"] * scale, digits, s["median"] * scale,
                                   digits, s["max"] * scale)


def markdown(res):
    t, f = res["targets"], res["figures"]
    lines = ["Reader: %d records of 224x224x3 (%.2f GiB), random order, batch %d, %d reader "
             "threads, host output; min / median / max of %d repeats" % (
                 res["records"], res["dataset_gib"], res["batch"], res["threads"], res["repeat"]),
             "", "| comparison | ratio | target |", "|---|---|---|",
             "| reader / same-run 2-thread memcpy | %s | >= 0.70 |" % fmt(t["reader_vs_memcpy"]),
             "| reader / fastest h5py per-sample | %s | >= 2 |" % fmt(t["reader_vs_h5py"], 1),
             "| reader / torchvision ImageFolder + DataLoader(2 workers) | %s | >= 50 |"
             % fmt(t["reader_vs_torch_jpeg"], 0),
             "| reader / DataLoader(2 workers) over h5py | %s | |"
             % fmt(t["reader_vs_torch_h5py"], 1),
             "| reader memory / ((prefetch + 2) x batch + 64 MiB) | %s | < 1 |"
             % fmt(t["memory_vs_bound"])]
    lines += ["", "imgpack %s images/s, memcpy %s GB/s, h5py %s images/s, torch jpeg %s "
              "images/s, torch h5py %s images/s" % (
                  fmt(f["reader_images_per_s"], 0), fmt(f["memcpy_gb_per_s"]),
                  fmt(f["h5py_images_per_s"], 0), fmt(f["torch_jpeg_images_per_s"], 0),
                  fmt(f["torch_h5py_images_per_s"], 0))]
    if res["gpu"] is None:
        lines += ["", "GPU: unmeasured (%s)" % (res["gpu_error"] or "no CUDA device")]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
