#!/usr/bin/python3
"""Turns the JSON files of bench/reader/run.sh into results.json and
results.md: every figure, the ratio it is judged by, the target and whether
it was met. All ratios compare numbers measured in the same run.

  compare.py OUTDIR [--scale S]
"""
import argparse
import json
import os
import platform


def load(out, name):
    path = os.path.join(out, name)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--scale", default="?")
    args = parser.parse_args()
    reader = load(args.out, "reader.json")
    sweep = load(args.out, "reader_sweep.json")
    h5 = load(args.out, "h5py.json")
    torch = load(args.out, "torch.json")
    gpu_upload = load(args.out, "gpu_upload.json")
    gpu_step = load(args.out, "gpu_step.json")

    gib = reader["records"] * reader["record_bytes"] / 2**30
    rows = []

    def row(what, value, reference, ratio, target, met):
        rows.append({"what": what, "value": value, "reference": reference, "ratio": ratio,
                     "target": target, "met": met})

    r_vs_memcpy = reader["gb_per_s"] / reader["memcpy_gb_per_s"]
    row("reader vs same-run 2-thread memcpy",
        f"{reader['gb_per_s']:.2f} GB/s ({reader['images_per_s']:.0f} images/s)",
        f"memcpy {reader['memcpy_gb_per_s']:.2f} GB/s", f"{r_vs_memcpy:.2f}", ">= 0.70",
        r_vs_memcpy >= 0.70)
    if h5:
        ratio = reader["images_per_s"] / h5["images_per_s"]
        row("reader vs fastest h5py per-sample reads", f"{reader['images_per_s']:.0f} images/s",
            f"h5py {h5['best_method']}: {h5['images_per_s']:.0f} images/s", f"{ratio:.1f}",
            ">= 2", ratio >= 2)
    if torch:
        ratio = reader["images_per_s"] / torch["images_per_s"]
        row("reader vs torchvision ImageFolder + DataLoader(2 workers)",
            f"{reader['images_per_s']:.0f} images/s",
            f"DataLoader: {torch['images_per_s']:.0f} images/s", f"{ratio:.0f}", ">= 50",
            ratio >= 50)
    mem = reader["reader_memory_bytes"]
    bound = reader["memory_bound_bytes"]
    row("reader memory beyond the page cache", f"{mem / 2**20:.0f} MiB",
        f"(prefetch + 2) x batch + 64 MiB = {bound / 2**20:.0f} MiB", f"{mem / bound:.2f}",
        "<= 1", mem <= bound)
    if gpu_upload and "upload_reference_gb_per_s" in gpu_upload:
        ratio = gpu_upload["gb_per_s"] / gpu_upload["upload_reference_gb_per_s"]
        row("pinned upload (reader to GPU) vs same-run cudaMemcpy from pinned",
            f"{gpu_upload['gb_per_s']:.2f} GB/s",
            f"cudaMemcpy {gpu_upload['upload_reference_gb_per_s']:.2f} GB/s", f"{ratio:.2f}",
            ">= 0.80", ratio >= 0.80)
    else:
        row("pinned upload vs same-run cudaMemcpy from pinned", "unmeasured (no GPU)", "", "",
            ">= 0.80", None)
    if gpu_step:
        row(f"starvation, GPU, step {gpu_step['step_ms']:.1f} ms (1.2x read time)",
            f"{100 * gpu_step['starvation']:.2f}%", "", "", "< 2%", gpu_step["starvation"] < 0.02)
    else:
        row("starvation with a step of 1.2x the read time (GPU)", "unmeasured (no GPU)", "", "",
            "< 2%", None)

    result = {"scale": args.scale, "records": reader["records"], "dataset_gib": gib,
              "machine": {"cpus": os.cpu_count(), "platform": platform.platform()},
              "rows": rows, "reader": reader, "sweep": sweep, "h5py": h5, "torch": torch,
              "gpu_upload": gpu_upload, "gpu_step": gpu_step}
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(result, f, indent=2)

    lines = [f"Reader benchmarks: {reader['records']} records of 224x224x3 "
             f"({gib:.2f} GiB, scale {args.scale}), random order, batch {reader['batch']}, "
             f"{reader['threads']} reader threads, host output, {os.cpu_count()} CPUs.", "",
             "| comparison | imgpack | reference | ratio | target | met |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        met = "unmeasured" if r["met"] is None else ("yes" if r["met"] else "NO")
        lines.append(f"| {r['what']} | {r['value']} | {r['reference']} | {r['ratio']} | "
                     f"{r['target']} | {met} |")
    if sweep and "sweep" in sweep:
        lines += ["", "Thread sweep (images/s): " + ", ".join(
            f"{s['threads']}: {s['images_per_s']:.0f}" for s in sweep["sweep"]) +
            f"; recommended {sweep['recommended_threads']}."]
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
