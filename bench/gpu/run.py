#!/usr/bin/env python3
"""The CUDA path on a real GPU: tests, sanitizers and the upload benchmarks.

usage: bench/gpu/run.py OUT [--imgpack PATH] [--tests PATH,...] [--sample PATH]
                        [--device-tests-only] [--records N] [--threads T] [--direct-threads T] [--auto-threads T]
                        [--modes auto,staged,direct] [--epochs E]
                        [--repeat R]
                        [--batches 64,256,1024] [--outputs uint8,float32,float16]
                        [--sanitize memcheck,racecheck,synccheck] [--python-tests PATH]
                        [--python-bench] [--train-sample] [--quick]

On a machine with a CUDA device, in this order:

  tests      every test binary given with --tests, filtered to the tests that
             need a device (their names contain "Cuda"), then all of them
             (not with --device-tests-only);
  sanitize   compute-sanitizer (each --sanitize tool) over the same CUDA tests;
  sample     samples/nearest_class_mean on the generated dataset with
             --device cuda:0 (when --sample is given);
  upload     `imgpack bench --device cuda:0` for every batch size, output
             format and upload mode (--modes): auto (the loader's own choice,
             with its default reader threads unless --auto-threads), staged
             (--direct-upload=off: reader threads copy into pinned slots,
             --threads) and direct (--direct-upload=on: the copy engine reads
             the page cache, --direct-threads): the mode the loader used, and
             its delivered GB/s (H*W*C bytes per
             image) against the same run's cudaMemcpyAsync of one batch from
             pinned memory (the `upload_reference_gb_per_s` of that bench run);
  starve     for each upload mode and output format at batch 256: a simulated
             training step of 1.2x the pure read time per batch (measured in
             the same repeat) and the fraction of time the consumer waited;
  python     pytest over --python-tests (the torch CUDA tests), when given;
  pybench    with --python-bench: bench/python/run.py --devices cpu,cuda:0 at
             batch 256: a Python loop taking every batch as torch tensors
             against `imgpack bench` (host, and cuda:0 for every output
             format, with the same run's cudaMemcpy from pinned memory);
  train      with --train-sample: samples/train_torch.py on the dataset's cv5
             fold 0 with --device cuda:0: accuracy and loader starvation.

The Python steps import the module from --python-path (default build/python).

The dataset is generated with `imgpack sample-data` and converted to 224x224
(--records images), then read once so the page cache holds it. Writes
OUT/gpu.json (the results rendered by bench/report.py into docs/BENCHMARKS.md)
and OUT/gpu.md, and prints the tables. Exit status 1 if a test or a sanitizer
failed, 0 otherwise (targets are reported, never enforced). Without a CUDA
device it writes nothing and exits 77.
"""
import argparse
import datetime
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def run(command, timeout=None, env=None):
    """(exit status, stdout+stderr) of a command, echoing it."""
    print("+ " + " ".join(command), flush=True)
    try:
        p = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=timeout, env=env)
        return p.returncode, p.stdout
    except subprocess.TimeoutExpired as e:
        return 124, (e.stdout or "") if isinstance(e.stdout, str) else "timed out"


def gpu_name():
    if not shutil.which("nvidia-smi"):
        return None
    status, out = run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,"
                       "pcie.link.gen.max,pcie.link.width.max", "--format=csv,noheader"])
    line = out.strip().splitlines()[0] if status == 0 and out.strip() else ""
    fields = [f.strip() for f in line.split(",")]
    if len(fields) == 5:  # NVIDIA H200 (driver 580.159.04, 143771 MiB, PCIe gen 5 x16)
        return "%s (driver %s, %s, PCIe gen %s x%s)" % tuple(fields)
    return line or None


def gtest_counts(output):
    passed = re.search(r"\[  PASSED  \] (\d+) test", output)
    failed = re.search(r"\[  FAILED  \] (\d+) test", output)
    skipped = re.search(r"\[  SKIPPED \] (\d+) test", output)
    return {"passed": int(passed.group(1)) if passed else 0,
            "failed": int(failed.group(1)) if failed else 0,
            "skipped": int(skipped.group(1)) if skipped else 0}


def run_tests(binaries, out_dir, device_only=False):
    results = []
    passes = (("cuda", "*Cuda*"),) if device_only else (("cuda", "*Cuda*"), ("all", "*"))
    for binary in binaries:
        name = os.path.basename(binary)
        entry = {"binary": name}
        for label, gtest_filter in passes:
            status, out = run([binary, "--gtest_filter=" + gtest_filter], timeout=1200)
            with open(os.path.join(out_dir, "%s-%s.log" % (name, label)), "w") as f:
                f.write(out)
            counts = gtest_counts(out)
            counts["status"] = status
            entry[label] = counts
        results.append(entry)
    return results


def run_sanitizers(binaries, tools, out_dir):
    sanitizer = shutil.which("compute-sanitizer") or "/usr/local/cuda/bin/compute-sanitizer"
    results = []
    if not os.path.exists(sanitizer):
        return [{"error": "compute-sanitizer not found"}]
    for binary in binaries:
        for tool in tools:
            command = [sanitizer, "--tool", tool, "--error-exitcode", "3"]
            if tool == "memcheck":
                command += ["--leak-check", "full"]
            command += [binary, "--gtest_filter=*Cuda*"]
            status, out = run(command, timeout=1800)
            with open(os.path.join(out_dir, "sanitize-%s-%s.log" % (
                    os.path.basename(binary), tool)), "w") as f:
                f.write(out)
            # memcheck, synccheck: "ERROR SUMMARY: N errors"; racecheck: "RACECHECK
            # SUMMARY: N hazards displayed".
            summary = re.findall(r"(?:ERROR SUMMARY: (\d+) error|RACECHECK SUMMARY: (\d+) hazard)",
                                 out)
            summary = [int(a or b) for a, b in summary]
            results.append({"binary": os.path.basename(binary), "tool": tool, "status": status,
                            "errors": summary[-1] if summary else None,
                            "tests": gtest_counts(out)})
    return results


def make_dataset(imgpack, work, records):
    data = os.path.join(work, "data-%d" % records)
    if os.path.exists(os.path.join(data, "index.h5")):
        return data
    src = os.path.join(work, "src-%d" % records)
    shutil.rmtree(src, ignore_errors=True)  # sample-data writes into a new folder only
    classes = 8
    per_class = (records + classes - 1) // classes
    for command in (
            [imgpack, "sample-data", src, "--classes", str(classes), "--groups", "16",
             "--per-class", str(per_class), "--size", "320x240", "--seed", "5", "--quiet"],
            [imgpack, "convert", src, data, "--size", "224", "--overwrite", "--quiet",
             "--group-regex", "/(g[0-9]+)_", "--split", "cv5:stratified-group:5"]):
        status, out = run(command, timeout=1800)
        if status != 0:
            raise SystemExit("dataset generation failed:\n" + out)
    return data


def warm(data):
    for name in sorted(os.listdir(data)):
        if name.endswith(".h5"):
            with open(os.path.join(data, name), "rb") as f:
                while f.read(64 << 20):
                    pass


# Upload modes: the loader's own choice (the default, with its default reader
# threads), reader threads staging records in pinned memory, or the copy
# engine reading them straight from the page cache.
MODES = {"auto": [], "staged": ["--direct-upload=off"], "direct": ["--direct-upload=on"]}


def bench(imgpack, data, batch, output, threads, epochs, step_ms=0.0, mode="staged"):
    command = [imgpack, "bench", data, "--device", "cuda:0", "--batch", str(batch), "--output",
               output, "--epochs", str(epochs), "--prefetch", "4", "--json", "--quiet"]
    command += MODES[mode] + ["--threads", str(threads)]  # 0: the loader's choice
    if step_ms > 0:
        command += ["--step-ms", "%.3f" % step_ms]
    status, out = run(command, timeout=1800)
    if status != 0:
        raise SystemExit("imgpack bench failed:\n" + out)
    return json.loads(out[out.index("{"):])


def summary(values):
    values = [v for v in values if v is not None]
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "n": len(values)}


def upload_matrix(imgpack, data, batches, outputs, threads, epochs, repeat, mode):
    rows = []
    for output in outputs:
        for batch in batches:
            runs = [bench(imgpack, data, batch, output, threads, epochs, mode=mode)
                    for _ in range(repeat)]
            rows.append({
                "mode": mode, "threads": threads, "output": output, "batch": batch,
                "chosen": sorted({str(r.get("upload")) for r in runs}),
                "threads_used": sorted({r.get("threads") for r in runs}),
                "gb_per_s": summary([r["gb_per_s"] for r in runs]),
                "images_per_s": summary([r["images_per_s"] for r in runs]),
                "cudamemcpy_gb_per_s": summary([r.get("upload_reference_gb_per_s")
                                                for r in runs]),
                "upload_vs_cudamemcpy": summary([r["gb_per_s"] / r["upload_reference_gb_per_s"]
                                                 for r in runs]),
                "upload_busy_seconds": summary([r.get("upload_busy_seconds") for r in runs]),
                "raw": runs})
            print("%-6s %-8s batch %5d: %.2f GB/s, cudaMemcpy %.2f GB/s, ratio %.3f (%s)" % (
                mode, output, batch, rows[-1]["gb_per_s"]["median"],
                rows[-1]["cudamemcpy_gb_per_s"]["median"],
                rows[-1]["upload_vs_cudamemcpy"]["median"], "; ".join(rows[-1]["chosen"])),
                flush=True)
    return rows


def starvation(imgpack, data, outputs, threads, epochs, repeat, mode, batch=256):
    rows = []
    for output in outputs:
        runs = []
        for _ in range(repeat):
            pure = bench(imgpack, data, batch, output, threads, epochs, mode=mode)
            read_ms = 1000.0 * batch / pure["images_per_s"]
            step_ms = 1.2 * read_ms
            stepped = bench(imgpack, data, batch, output, threads, epochs, step_ms, mode=mode)
            runs.append({"read_ms": read_ms, "step_ms": step_ms, "threads_used": stepped.get("threads"),
                         "starvation": stepped["starvation"], "chosen": stepped.get("upload"),
                         "starvation_after_first_batch": stepped.get("starvation_after_first_batch"),
                         "first_batch_wait_ms": 1000.0 * stepped.get("first_batch_wait_seconds", 0),
                         "epoch_start_wait_ms": 1000.0 * stepped.get("epoch_start_wait_seconds", 0),
                         "images_per_s": stepped["images_per_s"]})
        rows.append({"mode": mode, "threads": threads, "output": output, "batch": batch,
                     "chosen": sorted({str(r["chosen"]) for r in runs}),
                     "threads_used": sorted({r["threads_used"] for r in runs}),
                     "read_ms": summary([r["read_ms"] for r in runs]),
                     "step_ms": summary([r["step_ms"] for r in runs]),
                     "starvation": summary([r["starvation"] for r in runs]),
                     "starvation_after_first_batch": summary(
                         [r["starvation_after_first_batch"] for r in runs]),
                     "first_batch_wait_ms": summary([r["first_batch_wait_ms"] for r in runs]),
                     "epoch_start_wait_ms": summary([r["epoch_start_wait_ms"] for r in runs]),
                     "raw": runs})
        print("%-6s %-8s batch %d: step %.2f ms (1.2x read), starvation %.3f%% (%s); waits: "
              "first batch %.2f ms, later epochs' starts %.2f ms; after the first batch %.3f%%" % (
                  mode, output, batch, rows[-1]["step_ms"]["median"],
                  100 * rows[-1]["starvation"]["median"], "; ".join(rows[-1]["chosen"]),
                  rows[-1]["first_batch_wait_ms"]["median"],
                  rows[-1]["epoch_start_wait_ms"]["median"],
                  100 * (rows[-1]["starvation_after_first_batch"] or {"median": 0})["median"]),
              flush=True)
    return rows


def run_sample(sample, data, out_dir):
    """The sample trained on the host and on cuda:0: the accuracies must agree exactly."""
    result = {}
    log = []
    for device in ("host", "cuda:0"):
        status, out = run([sample, data, "--split", "cv5", "--fold", "0", "--device", device,
                           "--threads", "4"], timeout=1200)
        log.append(out)
        found = re.search(r"accuracy ([0-9.]+)", out)
        result[device] = {"status": status, "accuracy": float(found.group(1)) if found else None,
                          "output": out.strip().splitlines()[-1:]}
    with open(os.path.join(out_dir, "sample.log"), "w") as f:
        f.write("\n".join(log))
    agree = result["host"]["accuracy"] is not None and \
        result["host"]["accuracy"] == result["cuda:0"]["accuracy"]
    result["status"] = 0 if agree and all(r["status"] == 0 for r in result.values()) else 1
    result["output"] = ["host accuracy %s, cuda:0 accuracy %s" % (
        result["host"]["accuracy"], result["cuda:0"]["accuracy"])]
    return result


def run_python(tests, out_dir, env):
    status, out = run([sys.executable, "-m", "pytest", "-q", "-rs"] + tests, timeout=1800, env=env)
    with open(os.path.join(out_dir, "pytest.log"), "w") as f:
        f.write(out)
    tail = out.strip().splitlines()[-1:] if out.strip() else []
    return {"status": status, "summary": tail}


def python_env(path):
    return dict(os.environ, PYTHONPATH=":".join(
        [path] + [p for p in os.environ.get("PYTHONPATH", "").split(":") if p]))


def run_python_bench(data, out_dir, args):
    out = os.path.join(out_dir, "python-bench")
    status, log = run([sys.executable, os.path.join(ROOT, "bench", "python", "run.py"), data, out,
                       "--imgpack", args.imgpack, "--devices", "cpu,cuda:0", "--batches", "256",
                       "--repeat", str(args.repeat), "--epochs", str(args.epochs),
                       "--outputs", args.outputs, "--torch-max-images", "1024"],
                      timeout=3600, env=python_env(args.python_path))
    with open(os.path.join(out_dir, "python-bench.log"), "w") as f:
        f.write(log)
    if status != 0:
        return {"status": status, "error": log.strip().splitlines()[-1:]}
    with open(os.path.join(out, "results.json")) as f:
        results = json.load(f)
    results.pop("raw", None)
    results["status"] = 0
    return results


def run_train_sample(data, out_dir, args):
    status, out = run([sys.executable, os.path.join(ROOT, "samples", "train_torch.py"), data,
                       "--split", "cv5", "--fold", "0", "--device", "cuda:0", "--epochs", "3",
                       "--batch-size", "128", "--threads", "4", "--min-accuracy", "0.5"],
                      timeout=3600, env=python_env(args.python_path))
    with open(os.path.join(out_dir, "train_torch.log"), "w") as f:
        f.write(out)
    found = re.search(r"validation accuracy ([0-9.]+) on (\d+) images \(chance ([0-9.]+)\); "
                      r"training loader starvation ([0-9.]+)%", out)
    return {"status": status, "output": out.strip().splitlines()[-1:],
            "accuracy": float(found.group(1)) if found else None,
            "starvation": float(found.group(4)) / 100 if found else None}


def markdown(res):
    lines = ["GPU: %s" % res["gpu"], ""]
    for entry in res.get("tests", []):
        line = "tests %s: CUDA tests %d passed, %d failed, %d skipped" % (
            entry["binary"], entry["cuda"]["passed"], entry["cuda"]["failed"],
            entry["cuda"]["skipped"])
        if "all" in entry:
            line += "; all tests %d passed, %d failed, %d skipped" % (
                entry["all"]["passed"], entry["all"]["failed"], entry["all"]["skipped"])
        lines.append(line)
    for s in res.get("sanitize", []):
        lines.append("compute-sanitizer %s on %s: %s errors (exit %s)" % (
            s.get("tool"), s.get("binary"), s.get("errors"), s.get("status")))
    if res.get("sample"):
        lines.append("sample (cuda:0): exit %s: %s" % (res["sample"]["status"],
                                                       " / ".join(res["sample"]["output"])))
    lines += ["", "| upload | threads | output | batch | loader GB/s | cudaMemcpy GB/s | ratio | chosen |",
              "|---|---:|---|---:|---:|---:|---:|---|"]
    for r in res.get("upload", []):
        lines.append("| %s | %s | %s | %d | %.2f | %.2f | %.3f | %s |" % (
            r["mode"], r["threads"] or "default", r["output"], r["batch"], r["gb_per_s"]["median"],
            r["cudamemcpy_gb_per_s"]["median"], r["upload_vs_cudamemcpy"]["median"],
            "; ".join(r.get("chosen", []))))
    lines += ["", "| upload | threads | output | batch | step (1.2x read) ms | starvation | "
              "first batch's wait ms | later epoch starts' waits ms | starvation after the first "
              "batch | chosen |", "|---|---:|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in res.get("starvation", []):
        after = r.get("starvation_after_first_batch") or {"median": float("nan")}
        lines.append("| %s | %s | %s | %d | %.2f | %.3f%% | %.2f | %.2f | %.3f%% | %s |" % (
            r["mode"], r["threads"] or "default", r["output"], r["batch"], r["step_ms"]["median"],
            100 * r["starvation"]["median"],
            (r.get("first_batch_wait_ms") or {"median": float("nan")})["median"],
            (r.get("epoch_start_wait_ms") or {"median": float("nan")})["median"],
            100 * after["median"], "; ".join(r.get("chosen", []))))
    if res.get("python"):
        lines += ["", "pytest: exit %s %s" % (res["python"]["status"], res["python"]["summary"])]
    for row in (res.get("python_bench") or {}).get("gpu", []):
        lines.append("python loop %s %s: %.2f GB/s, imgpack bench %.2f GB/s, cudaMemcpy %.2f GB/s" % (
            row["device"], row["output"], row["python_gb_per_s"]["median"],
            row["cpp_gb_per_s"]["median"], row["cudamemcpy_gb_per_s"]["median"]))
    if res.get("train_torch"):
        lines.append("samples/train_torch.py on cuda:0: exit %s %s" % (
            res["train_torch"]["status"], res["train_torch"]["output"]))
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--imgpack", default=os.path.join(ROOT, "build", "tools", "imgpack"))
    ap.add_argument("--tests", default="")
    ap.add_argument("--device-tests-only", action="store_true",
                    help="run only the tests that need a device, not then all of them")
    ap.add_argument("--sample", default="")
    ap.add_argument("--work", default="")
    ap.add_argument("--records", type=int, default=8192)
    ap.add_argument("--threads", type=int, default=12, help="reader threads, staged upload")
    ap.add_argument("--direct-threads", type=int, default=2, help="reader threads, direct upload")
    ap.add_argument("--auto-threads", type=int, default=0,
                    help="reader threads in the auto mode (0: the loader's own choice)")
    ap.add_argument("--modes", default="auto,staged,direct", help="upload modes to measure")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--batches", default="64,256,1024")
    ap.add_argument("--outputs", default="uint8,float32,float16")
    ap.add_argument("--sanitize", default="memcheck,racecheck,synccheck")
    ap.add_argument("--python-tests", default="")
    ap.add_argument("--python-bench", action="store_true")
    ap.add_argument("--train-sample", action="store_true")
    ap.add_argument("--python-path", default=os.path.join(ROOT, "build", "python"))
    ap.add_argument("--skip", default="", help="steps to leave out: tests,sanitize,sample,...")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()

    gpu = gpu_name()
    if gpu is None:
        print("bench/gpu/run.py: no CUDA device (nvidia-smi found none)")
        return 77
    if args.quick:
        args.records, args.repeat, args.epochs = 1024, 1, 2
    os.makedirs(args.out, exist_ok=True)
    work = args.work or os.path.join(args.out, "work")
    os.makedirs(work, exist_ok=True)
    skip = set(filter(None, args.skip.split(",")))
    binaries = [b for b in args.tests.split(",") if b]
    res = {"gpu": gpu, "date": datetime.date.today().isoformat(),
           "commit": os.environ.get("IMGPACK_COMMIT", ""), "records": args.records,
           "threads": args.threads, "epochs": args.epochs, "repeat": args.repeat,
           "cpu_count": os.cpu_count()}
    started = time.time()
    if binaries and "tests" not in skip:
        res["tests"] = run_tests(binaries, args.out, args.device_tests_only)
    if binaries and "sanitize" not in skip:
        res["sanitize"] = run_sanitizers(binaries, list(filter(None, args.sanitize.split(","))),
                                         args.out)
    data = make_dataset(args.imgpack, work, args.records)
    warm(data)
    res["dataset_bytes"] = sum(os.path.getsize(os.path.join(data, n))
                               for n in os.listdir(data) if n.startswith("shard-"))
    if args.sample and "sample" not in skip:
        res["sample"] = run_sample(args.sample, data, args.out)
    batches = [int(b) for b in args.batches.split(",")]
    outputs = args.outputs.split(",")
    threads = {"auto": args.auto_threads, "staged": args.threads, "direct": args.direct_threads}
    modes = [m for m in args.modes.split(",") if m]
    if "upload" not in skip:
        res["upload"] = []
        for mode in modes:
            res["upload"] += upload_matrix(args.imgpack, data, batches, outputs, threads[mode],
                                           args.epochs, args.repeat, mode)
    if "starve" not in skip:
        res["starvation"] = []
        for mode in modes:
            res["starvation"] += starvation(args.imgpack, data, outputs, threads[mode],
                                            args.epochs, args.repeat, mode)
    if args.python_tests and "python" not in skip:
        env = dict(python_env(args.python_path), IMGPACK_TEST_DATASET=data)
        env.setdefault("IMGPACK", args.imgpack)  # tests/python make their datasets with it
        res["python"] = run_python(args.python_tests.split(","), args.out, env)
    if args.python_bench and "pybench" not in skip:
        res["python_bench"] = run_python_bench(data, args.out, args)
    if args.train_sample and "train" not in skip:
        res["train_torch"] = run_train_sample(data, args.out, args)
    res["seconds"] = time.time() - started
    with open(os.path.join(args.out, "gpu.json"), "w") as f:
        json.dump(res, f, indent=1)
    text = markdown(res)
    with open(os.path.join(args.out, "gpu.md"), "w") as f:
        f.write(text)
    print(text)
    failed = any(e[k]["failed"] or e[k]["status"] != 0 for e in res.get("tests", [])
                 for k in ("cuda", "all") if k in e)
    failed = failed or any(s.get("errors") != 0 for s in res.get("sanitize", []))
    failed = failed or (res.get("sample") or {}).get("status", 0) != 0
    failed = failed or (res.get("python") or {}).get("status", 0) != 0
    failed = failed or (res.get("python_bench") or {}).get("status", 0) != 0
    failed = failed or (res.get("train_torch") or {}).get("status", 0) != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
