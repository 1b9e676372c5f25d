#!/usr/bin/env python3
"""Splits: imgpack split against scikit-learn on the same synthetic labels and groups.

For each kind, writes a synthetic dataset index (labels, groups; no pixels) that
`imgpack split` reads, runs imgpack and the matching scikit-learn splitter on
the same labels and groups, and scores both assignments with one Python
implementation of the quality figures of `imgpack inspect`:

  size_spread   (largest - smallest validation part) / (samples / folds)
  max_dev       max over folds and classes of |class share in fold - share overall|
  mean_dev      mean over folds of the mean over classes of that deviation
  missing       (fold, class) pairs where a class present outside test is absent
  leakage       groups with samples in more than one part
  sk_objective  StratifiedGroupKFold's own criterion: mean over classes of the
                std over folds of (class count in fold / class count)

Lower is better for all. Each kind is judged on the figures it promises
(marked * in the table; the others are shown for information, e.g. a random
split's class deviation is chance for both): random: size_spread; stratified:
size_spread, max_dev, mean_dev, missing; group: size_spread, leakage;
stratified-group: all five plus sk_objective; holdout (grouped, against
GroupShuffleSplit) and holdout-nogroups (stratified, against
train_test_split): size_error (|validation share - asked| / asked), max_dev,
mean_dev, missing of the validation part, and leakage for the grouped one.

Times: imgpack's compute time (the library call, from `imgpack split --json`),
its whole process (read index.h5, compute, quality, write index.h5), and
scikit-learn's time to produce all folds; --repeats runs of each, interleaved
(the tables show the best; the JSON holds every run).
Ratios are imgpack / scikit-learn: below 1 is better for imgpack.

Usage: bench_splits.py [--samples N --groups G --classes C --folds K --seed S]
                       [--kinds random,stratified,...] [--repeats R] [--no-peers]
                       [--sklearn-repeats N]
                       [--out DIR] [--format markdown|json] [--imgpack PATH]
With --out, writes DIR/splits.json and DIR/splits.md as well as printing.
--no-peers (or --no-sklearn) runs imgpack only: its times and figures, no
scikit-learn.
Exit status 0 when imgpack is no worse on every judged figure, 3 otherwise.
Needs a Python with numpy, h5py and scikit-learn 1.2; finds
build/tools/imgpack relative to this file unless --imgpack is given.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

import h5py
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

KINDS = ["random", "stratified", "group", "stratified-group", "holdout", "holdout-nogroups"]

# The figures each kind promises, on which it is judged against scikit-learn.
JUDGED = {
    "random": ["size_spread"],
    "stratified": ["size_spread", "max_dev", "mean_dev", "missing"],
    "group": ["size_spread", "leakage"],
    "stratified-group": ["size_spread", "max_dev", "mean_dev", "missing", "leakage", "sk_objective"],
    "holdout": ["size_error", "max_dev", "mean_dev", "missing", "leakage"],
    "holdout-nogroups": ["size_error", "max_dev", "mean_dev", "missing"],
}
KFOLD_METRICS = ["size_spread", "max_dev", "mean_dev", "missing", "leakage", "sk_objective"]
HOLDOUT_METRICS = ["size_error", "max_dev", "mean_dev", "missing", "leakage"]


def make_inputs(samples, groups, classes, seed):
    """Skewed classes (Zipf-like), uneven groups (log-normal sizes), and groups
    that favour a few classes, as sites, patients or drivers do."""
    rng = np.random.default_rng(seed)
    class_p = 1.0 / np.arange(1, classes + 1) ** 1.1
    class_p /= class_p.sum()
    sizes = rng.lognormal(mean=0.0, sigma=1.0, size=groups)
    sizes = np.maximum(1, np.floor(sizes / sizes.sum() * samples)).astype(np.int64)
    # Fix the total exactly by adding or removing samples from the largest groups.
    diff = samples - sizes.sum()
    order = np.argsort(-sizes)
    i = 0
    while diff != 0:
        g = order[i % groups]
        step = 1 if diff > 0 else -1
        if sizes[g] + step >= 1:
            sizes[g] += step
            diff -= step
        i += 1
    group = np.repeat(np.arange(groups, dtype=np.int32), sizes)
    # Each group draws half its samples from two favourite classes.
    favourite = rng.choice(classes, size=(groups, 2), p=class_p)
    label = rng.choice(classes, size=samples, p=class_p).astype(np.int32)
    use_fav = rng.random(samples) < 0.5
    pick = rng.integers(0, 2, size=samples)
    label[use_fav] = favourite[group[use_fav], pick[use_fav]]
    perm = rng.permutation(samples)
    return label[perm], group[perm]


def write_index(directory, label, group, classes, groups):
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "index.h5")
    string = h5py.string_dtype("utf-8")
    n = len(label)
    with h5py.File(path, "w", libver=("v110", "v110")) as f:
        f.attrs["imgpack_format"] = np.int64(1)
        f.attrs["dataset_uuid"] = "00000000-0000-8000-8000-0000000b0001"
        for key in ("height", "width", "channels", "variants"):
            f.attrs[key] = np.int64(1)
        f.attrs["color"] = "gray"
        f.attrs["convert_options"] = "{}"
        f.attrs["created_by"] = "bench/splits"
        f.create_dataset("samples/path", data=np.array([f"s{i}" for i in range(n)], dtype=object), dtype=string)
        f.create_dataset("samples/label", data=label.astype(np.int32))
        f.create_dataset("samples/group", data=group.astype(np.int32))
        f.create_dataset("classes/name", data=np.array([f"c{i}" for i in range(classes)], dtype=object), dtype=string)
        f.create_dataset("groups/name", data=np.array([f"g{i}" for i in range(groups)], dtype=object), dtype=string)
        f.create_dataset("records/shard", data=np.zeros(0, np.uint32))
        f.create_dataset("records/row", data=np.zeros(0, np.uint32))
        f.create_dataset("records/sample", data=np.zeros(0, np.int64))
        f.create_dataset("records/variant", data=np.zeros(0, np.uint16))
        f.create_dataset("shards/file", data=np.zeros(0, dtype=object), dtype=string)
        f.create_dataset("shards/records", data=np.zeros(0, np.uint64))
        f.create_group("splits")


def run_imgpack(imgpack, directory, kind, folds, seed, val, test):
    name = kind.replace("-", "_")
    cmd = [imgpack, "split", directory, "--name", name, "--seed", str(seed), "--force", "--json"]
    if kind.startswith("holdout"):
        cmd += ["--kind", "holdout", "--val", str(val)]
        if kind == "holdout-nogroups":
            cmd += ["--no-groups"]
    else:
        cmd += ["--kind", kind, "--folds", str(folds)]
    if test > 0:
        cmd += ["--test", str(test)]
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr}")
    report = json.loads(done.stdout)
    with h5py.File(os.path.join(directory, "index.h5"), "r") as f:
        assign = f[f"splits/{name}/assign"][...].astype(np.int64)
    return assign, report["timings"]["compute_s"], wall, report


def run_sklearn(kind, label, group, folds, seed, val):
    from sklearn.model_selection import (GroupKFold, GroupShuffleSplit, KFold, StratifiedGroupKFold,
                                         StratifiedKFold, train_test_split)
    n = len(label)
    x = np.zeros((n, 1))
    assign = np.full(n, -9, dtype=np.int64)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kind == "random":
            splits = KFold(folds, shuffle=True, random_state=seed).split(x)
        elif kind == "stratified":
            splits = StratifiedKFold(folds, shuffle=True, random_state=seed).split(x, label)
        elif kind == "group":
            splits = GroupKFold(folds).split(x, label, group)
        elif kind == "stratified-group":
            # shuffle=False: scikit-learn 1.2's shuffle permutes the class counts
            # without the groups they belong to, which only makes it worse.
            splits = StratifiedGroupKFold(folds, shuffle=False).split(x, label, group)
        elif kind == "holdout":
            splits = GroupShuffleSplit(1, test_size=val, random_state=seed).split(x, label, group)
            splits = [(tr, te) for tr, te in splits]
        elif kind == "holdout-nogroups":
            tr, te = train_test_split(np.arange(n), test_size=val, stratify=label, random_state=seed)
            splits = [(tr, te)]
        for f, (_, te) in enumerate(splits):
            assign[te] = f
    elapsed = time.perf_counter() - start
    if kind.startswith("holdout"):
        assign[assign == -9] = 1
    assert (assign >= 0).all()
    return assign, elapsed


def quality(assign, label, group, folds, classes):
    total = np.bincount(label, minlength=classes).astype(np.float64)
    present = total > 0
    overall = total / total.sum()
    outside_test = np.bincount(label[assign >= 0], minlength=classes)
    sizes, max_devs, mean_devs, missing, counts_per_fold = [], [], [], 0, []
    for f in range(folds):
        in_fold = assign == f
        counts = np.bincount(label[in_fold], minlength=classes).astype(np.float64)
        counts_per_fold.append(counts)
        size = int(in_fold.sum())
        sizes.append(size)
        share = counts / counts.sum() if counts.sum() > 0 else np.zeros(classes)
        dev = np.abs(share - overall)[present]
        max_devs.append(float(dev.max()))
        mean_devs.append(float(dev.mean()))
        missing += int(((counts == 0) & (outside_test > 0)).sum())
    # Leakage: groups whose samples are in more than one part.
    pairs = np.unique(np.stack([group.astype(np.int64), assign]), axis=1)
    parts_per_group = np.bincount(pairs[0])
    leakage = int((parts_per_group > 1).sum())
    cpf = np.array(counts_per_fold)
    sk_objective = float(np.mean(np.std(cpf[:, present] / total[present], axis=0)))
    return {
        "sizes": sizes,
        "size_spread": (max(sizes) - min(sizes)) / (len(label) / folds),
        "max_dev": max(max_devs),
        "mean_dev": float(np.mean(mean_devs)),
        "missing": missing,
        "leakage": leakage,
        "sk_objective": sk_objective,
    }


def holdout_quality(assign, label, group, classes, val):
    q = quality(assign, label, group, 2, classes)
    val_share = q["sizes"][0] / len(label)
    # For a holdout what matters is the validation part: its size against the
    # request and its class shares.
    in_val = assign == 0
    total = np.bincount(label, minlength=classes).astype(np.float64)
    present = total > 0
    counts = np.bincount(label[in_val], minlength=classes).astype(np.float64)
    dev = np.abs(counts / max(counts.sum(), 1) - total / total.sum())[present]
    return {
        "sizes": q["sizes"],
        "size_error": abs(val_share - val) / val,
        "max_dev": float(dev.max()),
        "mean_dev": float(dev.mean()),
        "missing": int(((counts == 0) & present).sum()),
        "leakage": q["leakage"],
    }


def ratio(a, b):
    if b == 0:
        return "=" if a == 0 else "inf"
    return f"{a / b:.3f}"


def no_worse(ours, theirs):
    # Floating figures equal to 12 significant digits count as equal.
    return ours <= theirs or abs(ours - theirs) <= 1e-12 * max(abs(ours), abs(theirs))


def check_own_figures(kind, report, score):
    """imgpack's --json figures must agree with this script's."""
    for f, stats in enumerate(report["fold_stats"]):
        assert stats["size"] == score["sizes"][f], (kind, f)
    assert report["group_leakage"] == score["leakage"], kind
    if not kind.startswith("holdout"):
        assert abs(max(s["max_class_dev"] for s in report["fold_stats"]) - score["max_dev"]) < 1e-9, kind
        mean = sum(s["mean_class_dev"] for s in report["fold_stats"]) / len(report["fold_stats"])
        assert abs(mean - score["mean_dev"]) < 1e-9, kind


def markdown(rows, args):
    lines = [f"Splits: {args.samples} samples, {args.groups} groups, {args.classes} classes, "
             f"k={args.folds} (holdout: val {args.val}), seed {args.seed}; "
             "ratio = imgpack / scikit-learn, lower is better; * = figure the kind is judged on", "",
             "| kind | imgpack compute s | imgpack process s | scikit-learn s | time ratio "
             "| figure | imgpack | scikit-learn | ratio |",
             "|---|---|---|---|---|---|---|---|---|"]
    fmt = (lambda v: "-" if v is None else (f"{v:.6f}" if isinstance(v, float) else str(v)))
    for row in rows:
        kind = row["kind"]
        for i, m in enumerate(HOLDOUT_METRICS if kind.startswith("holdout") else KFOLD_METRICS):
            ours = row["imgpack"][m]
            theirs = row.get("sklearn", {}).get(m)
            times = ["", "", "", ""]
            if i == 0:
                sk = row.get("sklearn_s")
                times = [f"{row['imgpack_compute_s']:.4f}", f"{row['imgpack_process_s']:.3f}",
                         "-" if sk is None else f"{sk:.4f}",
                         "-" if sk is None else ratio(row["imgpack_compute_s"], sk)]
            judged = "*" if m in JUDGED[kind] else ""
            lines.append(f"| {kind if i == 0 else ''} | {' | '.join(times)} | {m}{judged} | {fmt(ours)} | "
                         f"{fmt(theirs)} | {'-' if theirs is None else ratio(ours, theirs)} |")
    verdicts = [row["no_worse"] for row in rows if "no_worse" in row]
    if verdicts:
        lines += ["", "imgpack no worse than scikit-learn on every judged figure: " +
                  ("yes" if all(verdicts) else "NO (" + ", ".join(r["kind"] for r in rows
                                                            if not r.get("no_worse", True)) + ")")]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=50000)
    parser.add_argument("--groups", type=int, default=2000)
    parser.add_argument("--classes", type=int, default=100)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--val", type=float, default=0.2, help="holdout validation fraction")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--repeats", type=int, default=1, help="runs per tool; the best time counts")
    parser.add_argument("--no-peers", "--no-sklearn", action="store_true",
                        help="time imgpack only, without scikit-learn")
    parser.add_argument("--sklearn-repeats", type=int,
                        help="run scikit-learn in only the first N repeats (default: every repeat)")
    parser.add_argument("--imgpack", default=os.path.join(ROOT, "build", "tools", "imgpack"))
    parser.add_argument("--out", help="directory for splits.json and splits.md (default: print only)")
    parser.add_argument("--format", choices=["markdown", "json"], default="markdown")
    args = parser.parse_args()
    kinds = args.kinds.split(",")
    for kind in kinds:
        if kind not in KINDS:
            raise SystemExit(f"unknown kind {kind}; kinds: {', '.join(KINDS)}")
    if not os.access(args.imgpack, os.X_OK):
        raise SystemExit(f"{args.imgpack}: not found; build first (scripts/build) or pass --imgpack")

    sklearn_repeats = args.repeats if args.sklearn_repeats is None else args.sklearn_repeats
    if not args.no_peers and sklearn_repeats < 1:
        raise SystemExit("--sklearn-repeats must be at least 1 (or use --no-peers)")
    label, group = make_inputs(args.samples, args.groups, args.classes, args.seed)
    rows = []
    with tempfile.TemporaryDirectory(prefix="imgpack-bench-splits-") as tmp:
        write_index(tmp, label, group, args.classes, args.groups)
        for kind in kinds:
            holdout = kind.startswith("holdout")
            folds = 2 if holdout else args.folds
            score = (lambda a: holdout_quality(a, label, group, args.classes, args.val)) if holdout else \
                    (lambda a: quality(a, label, group, folds, args.classes))
            # The repeats interleave the two tools, so repeat i of each ran side by side.
            compute_runs, wall_runs, sk_runs = [], [], []
            for _ in range(args.repeats):
                ours, c, w, report = run_imgpack(args.imgpack, tmp, kind, args.folds, args.seed, args.val, 0)
                compute_runs.append(c)
                wall_runs.append(w)
                if not args.no_peers and len(sk_runs) < sklearn_repeats:
                    theirs, t = run_sklearn(kind, label, group, folds, args.seed, args.val)
                    sk_runs.append(t)
            row = {"kind": kind, "samples": args.samples, "groups": args.groups, "classes": args.classes,
                   "folds": folds, "seed": args.seed, "imgpack_compute_s": min(compute_runs),
                   "imgpack_process_s": min(wall_runs), "imgpack_compute_s_runs": compute_runs,
                   "imgpack_process_s_runs": wall_runs, "judged": JUDGED[kind],
                   "imgpack": score(ours)}
            check_own_figures(kind, report, row["imgpack"])
            if not args.no_peers:
                row["sklearn_s"] = min(sk_runs)
                row["sklearn_s_runs"] = sk_runs
                row["sklearn"] = score(theirs)
                row["no_worse"] = all(no_worse(row["imgpack"][m], row["sklearn"][m]) for m in JUDGED[kind])
            rows.append(row)
            print(f"{kind}: done", file=sys.stderr)

    table = markdown(rows, args)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "splits.json"), "w") as f:
            json.dump(rows, f, indent=2)
        with open(os.path.join(args.out, "splits.md"), "w") as f:
            f.write(table + "\n")
    print(json.dumps(rows, indent=2) if args.format == "json" else table)
    return 0 if all(row.get("no_worse", True) for row in rows) else 3


if __name__ == "__main__":
    sys.exit(main())
