#!/usr/bin/env python3
"""The reader from Python against the reader from C++ and a torch DataLoader, side by side.

usage: bench/python/run.py DATASET OUT [--repeat R] [--batches 64,256] [--epochs 3]
                           [--threads 2] [--prefetch 4] [--torch-max-images N]
                           [--devices cpu[,cuda:0]] [--outputs uint8,float32,float16]
                           [--no-peers]

Every repeat runs, for each batch size, on the same DATASET with the same
options (random order, seed 0, THREADS reader threads, PREFETCH slots, host
delivery, uint8):

  imgpack bench     the C++ loop (`imgpack bench --json`)
  python            bench/python/consume.py: a Python loop taking every batch
                    as torch tensors (torch.from_dlpack of images and labels),
                    timed after one untimed epoch that faults the shard
                    mappings in, as imgpack bench's memcpy reference does
                    before it times its loop

alternating which goes first, then, once per repeat, a torch DataLoader
(2 workers) over the same shards read with h5py at batch 256
(bench/reader/torch_loaders.py; its rate leaves out worker start-up).
Ratios are taken within a repeat (python / imgpack bench, python / DataLoader).
--no-peers leaves the DataLoader out: its rate and the ratio to it are null.

With --devices cpu,cuda:0 (a CUDA device), the same pair is also run with
--device cuda:0 for each --outputs format at batch 256: the Python loop's
GB/s against `imgpack bench --device cuda:0`'s, and against the same run's
cudaMemcpy from pinned memory (upload_reference_gb_per_s).

The shards are read once first so that the page cache holds them. Writes
OUT/results.json and prints a table. Needs the module: PYTHONPATH is set to
the build's python/ folder (benchlib.python_module_dir()).
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import benchlib  # noqa: E402

TARGET_BATCH = 256
CONSUME = os.path.join(HERE, "consume.py")
TORCH_LOADERS = os.path.join(os.path.dirname(HERE), "reader", "torch_loaders.py")


def cpp(args, batch, device="cpu", output="uint8"):
    command = [args.imgpack, "bench", args.dataset, "--batch", batch, "--threads", args.threads,
               "--prefetch", args.prefetch, "--epochs", args.epochs, "--order", "random",
               "--device", "host" if device == "cpu" else device, "--output", output, "--json",
               "--quiet"] + benchlib.measure_args(args.measure_seconds)
    return benchlib.run_json(command), " ".join(map(str, command))


def python(args, batch, device="cpu", output="uint8"):
    command = [benchlib.PYTHON, CONSUME, args.dataset, "--batch", batch, "--threads",
               args.threads, "--prefetch", args.prefetch, "--epochs", args.epochs, "--order",
               "random", "--device", device, "--output", output]
    return benchlib.run_json(command, env=benchlib.python_env()), " ".join(map(str, command))


def pair(args, batch, first_python, device="cpu", output="uint8"):
    runs = {}
    order = ("python", "cpp") if first_python else ("cpp", "python")
    commands = {}
    for name in order:
        runs[name], commands[name] = (python if name == "python" else cpp)(args, batch, device,
                                                                           output)
    return runs, commands


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset")
    parser.add_argument("out")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--batches", default="64,256")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--prefetch", type=int, default=4)
    parser.add_argument("--torch-max-images", type=int, default=3072)
    parser.add_argument("--devices", default="cpu")
    parser.add_argument("--outputs", default="uint8,float32,float16")
    parser.add_argument("--imgpack", default=benchlib.imgpack_binary())
    benchlib.add_measure_seconds(parser)
    parser.add_argument("--no-peers", action="store_true",
                        help="measure imgpack only, not the DataLoader over h5py")
    args = parser.parse_args()
    batches = sorted({int(b) for b in args.batches.split(",")} | {TARGET_BATCH})
    devices = [d for d in args.devices.split(",") if d]
    os.makedirs(args.out, exist_ok=True)

    shards = [p for p in benchlib.files_under(args.dataset) if p.endswith(".h5")]
    benchlib.say("python", "warming the page cache (%.2f GB)" % (benchlib.warm(shards) / 1e9))
    commands = {}
    repeats = []
    for r in range(args.repeat):
        rep = {"by_batch": {}, "gpu": []}
        for batch in batches:
            runs, cmds = pair(args, batch, first_python=(r % 2 == 1))
            rep["by_batch"][str(batch)] = runs
            commands["imgpack bench (batch %d)" % batch] = cmds["cpp"]
            commands["python loop (batch %d)" % batch] = cmds["python"]
        if not args.no_peers:
            torch_command = [benchlib.PYTHON, TORCH_LOADERS, "throughput", "--source", "h5py",
                             args.dataset, "--configs", "%d:2" % TARGET_BATCH, "--max-images",
                             args.torch_max_images]
            rep["torch_h5py"] = benchlib.run_json(torch_command)["runs"][0]
            commands["torch DataLoader(2 workers) over h5py"] = " ".join(map(str, torch_command))
        for device in devices:
            if device == "cpu":
                continue
            for output in args.outputs.split(","):
                runs, cmds = pair(args, TARGET_BATCH, r % 2 == 1, device, output)
                rep["gpu"].append({"device": device, "output": output, **runs})
                commands["python loop (%s, %s)" % (device, output)] = cmds["python"]
                commands["imgpack bench (%s, %s)" % (device, output)] = cmds["cpp"]
        repeats.append(rep)
        main_run = rep["by_batch"][str(TARGET_BATCH)]
        benchlib.say("python", "repeat %d/%d: batch %d: python %.0f images/s, imgpack bench %.0f "
                     "(%.2fx)%s" % (
                         r + 1, args.repeat, TARGET_BATCH, main_run["python"]["images_per_s"],
                         main_run["cpp"]["images_per_s"],
                         main_run["python"]["images_per_s"] / main_run["cpp"]["images_per_s"],
                         "" if args.no_peers else ", DataLoader over h5py %.0f" %
                         rep["torch_h5py"]["images_per_s"]))

    results = summarise(repeats, batches, args)
    results["commands"] = commands
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(results, f, indent=2)
    print(markdown(results))


def summarise(repeats, batches, args):
    S = benchlib.summary
    first = repeats[0]["by_batch"][str(TARGET_BATCH)]["cpp"]
    by_batch = {}
    for batch in batches:
        runs = [rep["by_batch"][str(batch)] for rep in repeats]
        by_batch[str(batch)] = {
            "python": S([x["python"]["images_per_s"] for x in runs]),
            "cpp": S([x["cpp"]["images_per_s"] for x in runs]),
            "python_vs_cpp": S([x["python"]["images_per_s"] / x["cpp"]["images_per_s"]
                                for x in runs]),
            "python_starvation": S([x["python"]["starvation"] for x in runs]),
            "cpp_starvation": S([x["cpp"]["starvation"] for x in runs]),
        }
    main_runs = [rep["by_batch"][str(TARGET_BATCH)] for rep in repeats]
    torch_ips = [rep["torch_h5py"]["images_per_s"] for rep in repeats if "torch_h5py" in rep]
    gpu = []
    for i, row in enumerate(repeats[0]["gpu"]):
        runs = [rep["gpu"][i] for rep in repeats]
        gpu.append({
            "device": row["device"], "output": row["output"], "batch": TARGET_BATCH,
            "python_gb_per_s": S([x["python"]["gb_per_s"] for x in runs]),
            "cpp_gb_per_s": S([x["cpp"]["gb_per_s"] for x in runs]),
            "cudamemcpy_gb_per_s": S([x["cpp"].get("upload_reference_gb_per_s") for x in runs]),
            "python_vs_cpp": S([x["python"]["gb_per_s"] / x["cpp"]["gb_per_s"] for x in runs]),
            "python_vs_cudamemcpy": S([x["python"]["gb_per_s"] / x["cpp"]["upload_reference_gb_per_s"]
                                       for x in runs if x["cpp"].get("upload_reference_gb_per_s")]),
        })
    return {
        "records": first["records"], "record_bytes": first["record_bytes"],
        "dataset_gib": first["records"] * first["record_bytes"] / 2**30,
        "threads": args.threads, "prefetch": args.prefetch, "epochs": args.epochs,
        "repeat": len(repeats), "batch": TARGET_BATCH, "by_batch": by_batch,
        "torch_h5py_images_per_s": S(torch_ips),
        "python_vs_torch_h5py": S(benchlib.ratios([m["python"]["images_per_s"]
                                                   for m in main_runs], torch_ips)),
        "gpu": gpu, "raw": repeats,
    }


def fmt(s, digits=2):
    if not s:
        return "-"
    return "%.*f / %.*f / %.*f" % (digits, s["min"], digits, s["median"], digits, s["max"])


def markdown(res):
    lines = ["Python loop (torch tensors) vs imgpack bench, %d records (%.2f GiB), %d threads, "
             "prefetch %d; min / median / max of %d repeats" % (
                 res["records"], res["dataset_gib"], res["threads"], res["prefetch"],
                 res["repeat"]), "",
             "| batch | python images/s | imgpack bench images/s | ratio |", "|---|---|---|---|"]
    for batch, row in sorted(res["by_batch"].items(), key=lambda kv: int(kv[0])):
        lines.append("| %s | %s | %s | %s |" % (batch, fmt(row["python"], 0), fmt(row["cpp"], 0),
                                                 fmt(row["python_vs_cpp"])))
    lines += ["", "DataLoader(2 workers) over h5py: %s images/s; python / DataLoader %s" % (
        fmt(res["torch_h5py_images_per_s"], 0), fmt(res["python_vs_torch_h5py"], 1))]
    for row in res["gpu"]:
        lines.append("%s %s: python %s GB/s, imgpack bench %s GB/s, cudaMemcpy %s GB/s" % (
            row["device"], row["output"], fmt(row["python_gb_per_s"]), fmt(row["cpp_gb_per_s"]),
            fmt(row["cudamemcpy_gb_per_s"])))
    return "\n".join(lines)


if __name__ == "__main__":
    main()
