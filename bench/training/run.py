#!/usr/bin/env python3
"""The headline: a simulated training loop fed by each input pipeline.

usage: bench/training/run.py DATASET SRC OUT [--batch 256] [--threads 2] [--workers 2]
                             [--steps-ms 2000,1000,500,200,100,50,20,10,5,2,1] [--repeat R]
                             [--budget-s 6] [--min-batches 8] [--no-peers]

The consumer is a training loop whose step (the GPU's work on one batch)
takes a fixed time: it sleeps that long per batch and records how long it
waits for the next batch. Starvation = waiting time / the loop's time: the
fraction of time the GPU would sit idle. Pipelines, all delivering batches of
224x224x3 uint8 images in shuffled order:

  imgpack      the reader over DATASET (`imgpack bench --step-ms S`), THREADS threads
  imgpack python  the same reader from Python, the loop taking every batch as
               torch tensors (bench/python/consume.py --step-ms S); left out
               when the module is not built
  torch jpeg   torchvision ImageFolder + DataLoader(WORKERS) over SRC's JPEGs
  torch h5py   DataLoader(WORKERS) over DATASET's shards read with h5py

Every repeat first measures each pipeline's pure read rate (no step), then
its starvation at every step time. Each point reads about --budget-s seconds
of batches (at least --min-batches). imgpack's figure counts every wait from
the first next() on, epoch starts included (for long steps it reads the
validation part of a holdout split `bench_headline` it creates in DATASET, so
a point need not read the whole dataset); the DataLoaders' figures leave out
worker start-up and the batches prefetched meanwhile (torch_loaders.py), so
the comparison favours torch. --no-peers leaves the torch pipelines out.

Writes OUT/results.json and prints a table.
"""
import argparse
import json
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import benchlib  # noqa: E402

TORCH_LOADERS = os.path.join(os.path.dirname(HERE), "reader", "torch_loaders.py")
CONSUME = os.path.join(os.path.dirname(HERE), "python", "consume.py")
SPLIT = "bench_headline"
PIPELINES = ("imgpack", "imgpack_python", "torch_jpeg", "torch_h5py")
PEERS = ("torch_jpeg", "torch_h5py")
STARVING = 0.05  # "keeps up" = starvation under 5%


def imgpack_bench(args, extra, python=False):
    """`imgpack bench`, or with python=True the same loop from Python (consume.py)."""
    if python:
        command = [benchlib.PYTHON, CONSUME, args.dataset, "--batch", args.batch, "--threads",
                   args.threads, "--order", "random", "--device", "cpu"] + list(extra)
        return benchlib.run_json(command, env=benchlib.python_env()), " ".join(map(str, command))
    command = [args.imgpack, "bench", args.dataset, "--batch", args.batch, "--threads",
               args.threads, "--order", "random", "--device", "host", "--json",
               "--quiet"] + list(extra)
    command += benchlib.measure_args(args.measure_seconds)
    return benchlib.run_json(command), " ".join(map(str, command))


def python_module_available():
    done = subprocess.run([benchlib.PYTHON, "-c", "import imgpack"], capture_output=True,
                          env=benchlib.python_env())
    return done.returncode == 0


def make_subset(args, records):
    """A holdout split whose validation part is about 10 batches, for the long steps."""
    fraction = min(0.5, max(0.01, 10 * args.batch / records))
    report = benchlib.run_json([args.imgpack, "split", args.dataset, "--name", SPLIT, "--kind",
                                "holdout", "--val", "%.4f" % fraction, "--seed", "0", "--force",
                                "--json"])
    return next(s["size"] for s in report["fold_stats"] if s["fold"] == 0)


def imgpack_point(args, step_ms, rate, records, subset, python=False):
    per_batch = max(step_ms / 1000, args.batch / rate)
    wanted = max(args.min_batches, math.ceil(args.budget_s / per_batch))
    all_batches = math.ceil(records / args.batch)
    if all_batches * per_batch <= 2 * args.budget_s:
        extra = ["--epochs", max(1, round(wanted / all_batches))]
    else:
        per_epoch = max(1, math.ceil(subset / args.batch))
        extra = ["--split", SPLIT, "--fold", "0", "--role", "val",
                 "--epochs", max(1, math.ceil(wanted / per_epoch))]
    result, command = imgpack_bench(args, extra + ["--step-ms", step_ms], python)
    return {"step_ms": step_ms, "batches": result["images"] // args.batch,
            "wait_seconds": result["wait_seconds"], "seconds": result["seconds"],
            "starvation": result["starvation"]}, command


def torch_command(args, kind, path, mode, extra):
    return [benchlib.PYTHON, TORCH_LOADERS, mode, "--source", kind, path] + list(extra)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("src")
    parser.add_argument("out")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--threads", type=int, default=2, help="imgpack reader threads")
    parser.add_argument("--workers", type=int, default=2, help="DataLoader workers")
    parser.add_argument("--steps-ms", default="2000,1000,500,200,100,50,20,10,5,2,1")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--budget-s", type=float, default=6)
    parser.add_argument("--min-batches", type=int, default=8)
    parser.add_argument("--rate-images", type=int, default=2048,
                        help="images read by the torch pipelines' pure-rate runs")
    benchlib.add_measure_seconds(parser)
    parser.add_argument("--imgpack", default=benchlib.imgpack_binary())
    parser.add_argument("--no-peers", action="store_true",
                        help="imgpack's pipelines only, not the torch DataLoaders")
    args = parser.parse_args()
    steps = [float(s) for s in args.steps_ms.split(",")]
    os.makedirs(args.out, exist_ok=True)

    shards = [p for p in benchlib.files_under(args.dataset) if p.endswith(".h5")]
    benchlib.warm(shards)
    if not args.no_peers:
        benchlib.warm(benchlib.files_under(args.src))
    probe, _ = imgpack_bench(args, ["--epochs", 1])
    records = probe["records"]
    subset = make_subset(args, records)
    sources = {} if args.no_peers else {"torch_jpeg": ("jpeg", args.src),
                                        "torch_h5py": ("h5py", args.dataset)}
    pipelines = [p for p in PIPELINES if not (args.no_peers and p in PEERS) and
                 (p != "imgpack_python" or python_module_available())]
    if "imgpack_python" not in pipelines:
        benchlib.say("training", "the imgpack Python module is not built: no Python consumer")

    rates = {p: [] for p in pipelines}
    points = {p: {step: [] for step in steps} for p in pipelines}
    commands = {}
    for r in range(args.repeat):
        for pipeline in ("imgpack", "imgpack_python"):
            if pipeline not in pipelines:
                continue
            python = pipeline == "imgpack_python"
            result, commands[pipeline + " rate"] = imgpack_bench(args, ["--epochs", 2], python)
            rates[pipeline].append(result["images_per_s"])
            for step in steps:
                point, commands[pipeline] = imgpack_point(args, step, rates[pipeline][-1],
                                                          records, subset, python)
                points[pipeline][step].append(point)
        for pipeline, (kind, path) in sources.items():
            command = torch_command(args, kind, path, "throughput", [
                "--configs", "%d:%d" % (args.batch, args.workers),
                "--max-images", args.rate_images])
            rate = benchlib.run_json(command)["runs"][0]["images_per_s"]
            rates[pipeline].append(rate)
            command = torch_command(args, kind, path, "starvation", [
                "--batch", args.batch, "--workers", args.workers,
                "--steps-ms", ",".join("%g" % s for s in steps), "--rate", "%.1f" % rate,
                "--budget-s", args.budget_s, "--min-batches", args.min_batches])
            commands[pipeline] = " ".join(map(str, command))
            for point in benchlib.run_json(command)["points"]:
                points[pipeline][point["step_ms"]].append(point)
        benchlib.say("training", "repeat %d/%d: read rates %s" % (r + 1, args.repeat, ", ".join(
            "%s %.0f images/s" % (p, rates[p][-1]) for p in pipelines)))

    results = {"batch": args.batch, "threads": args.threads, "workers": args.workers,
               "records": records, "repeat": args.repeat, "steps_ms": steps,
               "starving_above": STARVING, "commands": commands, "pipelines": {}}
    for p in pipelines:
        rate = benchlib.summary(rates[p])
        per_step = []
        for step in steps:
            runs = points[p][step]
            per_step.append({"step_ms": step, "runs": runs,
                             "starvation": benchlib.summary([x["starvation"] for x in runs])})
        fed = [s["step_ms"] for s in per_step if s["starvation"]["median"] < STARVING]
        results["pipelines"][p] = {
            "images_per_s": rate,
            "read_ms_per_batch": 1000 * args.batch / rate["median"],
            "points": per_step,
            # The shortest step at which the loop (median) waits less than 5% of its time.
            "shortest_fed_step_ms": min(fed) if fed else None,
        }
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(results, f, indent=2)

    print("simulated training loop, batch %d; starvation %% (median of %d) by step time" % (
        args.batch, args.repeat))
    print("%-10s" % "step ms" + "".join("%16s" % p for p in pipelines))
    for i, step in enumerate(steps):
        print("%-10g" % step + "".join(
            "%15.1f%%" % (100 * results["pipelines"][p]["points"][i]["starvation"]["median"])
            for p in pipelines))
    for p in pipelines:
        pr = results["pipelines"][p]
        print("%s: %.0f images/s (%.1f ms per batch), fed down to a %s ms step" % (
            p, pr["images_per_s"]["median"], pr["read_ms_per_batch"], pr["shortest_fed_step_ms"]))


if __name__ == "__main__":
    main()
