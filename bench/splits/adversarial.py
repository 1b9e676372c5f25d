#!/usr/bin/env python3
"""Splits on adversarial layouts: imgpack split against scikit-learn, wins / ties / losses.

For every layout of bench/splits/layouts.py (Zipf and uniform group sizes, one
giant group, a rare class concentrated in a few groups, singleton classes, two
classes per group, one sample per group, few groups, the layout of issue 19;
k from 2 to 10), writes a dataset index (labels and groups, no pixels), runs
`imgpack split` for `stratified-group` and `group` with the layout's k, and
the scikit-learn peers on the same labels and groups. Scores, lower is
better:

  criterion   StratifiedGroupKFold's own: the mean over classes of the standard
              deviation over folds of the class's share in each fold (numpy,
              as its greedy computes it)
  spread      largest minus smallest fold, in samples
  class dev   mean over folds and classes of |class share in fold - overall|
  leakage     groups with samples in more than one fold

and counts, per kind, peer and figure, the layouts where imgpack is better
(win), equal (tie: the same number, floating figures to 12 significant
digits) or worse (loss). stratified-group is compared with
StratifiedGroupKFold unshuffled and shuffled (--shuffle-seeds seeds, each
layout and seed one comparison), group with GroupKFold; it also counts the
runs that beat stratified-group on both criterion and spread.

Usage: adversarial.py [--layouts N] [--shuffle-seeds S] [--seed SEED] [--no-peers]
                      [--out DIR] [--format markdown|json] [--imgpack PATH]
With --out, writes DIR/adversarial.json and DIR/adversarial.md as well as
printing. Exit status 0 when imgpack has no loss on a figure it promises by
construction (stratified-group: criterion and spread against
StratifiedGroupKFold unshuffled; group: spread against GroupKFold; leakage 0),
3 otherwise. --no-peers runs imgpack's splits and counts their leakage only:
no scikit-learn, no rows. Needs a Python with numpy, h5py
and scikit-learn 1.2.
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
sys.path.insert(0, HERE)
import bench_splits  # noqa: E402
import layouts  # noqa: E402

# (kind, peer, figure) rows of the table, and whether imgpack promises no loss
# there by construction (split.hpp); the others are measured.
ROWS = [
    ("stratified-group", "StratifiedGroupKFold", "criterion", True),
    ("stratified-group", "StratifiedGroupKFold", "spread", True),
    ("stratified-group", "StratifiedGroupKFold", "class_dev", False),
    ("stratified-group", "StratifiedGroupKFold(shuffle)", "criterion", False),
    ("stratified-group", "StratifiedGroupKFold(shuffle)", "spread", False),
    ("group", "GroupKFold", "spread", True),
    ("group", "GroupKFold", "class_dev", False),
]


def criterion(assign, label, k):
    _, y = np.unique(label, return_inverse=True)
    counts = np.zeros((k, y.max() + 1))
    np.add.at(counts, (assign, y), 1)
    return float(np.mean(np.std(counts / np.bincount(y).reshape(1, -1), axis=0)))


def scores(assign, label, group, k):
    sizes = np.bincount(assign, minlength=k)
    _, y = np.unique(label, return_inverse=True)
    overall = np.bincount(y) / len(y)
    devs = []
    for f in range(k):
        counts = np.bincount(y[assign == f], minlength=len(overall))
        devs.append(np.abs(counts / max(counts.sum(), 1) - overall).mean())
    pairs = np.unique(np.stack([group, assign]), axis=1)
    return {"criterion": criterion(assign, label, k), "spread": int(sizes.max() - sizes.min()),
            "class_dev": float(np.mean(devs)),
            "leakage": int((np.unique(pairs[0], return_counts=True)[1] > 1).sum())}


def outcome(ours, theirs):
    if ours == theirs or (isinstance(ours, float) and
                          abs(ours - theirs) <= 1e-12 * max(abs(ours), abs(theirs))):
        return "tie"
    return "win" if ours < theirs else "loss"


def sklearn_folds(splitter, label, group):
    assign = np.full(len(label), -1, dtype=np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for f, (_, test) in enumerate(splitter.split(np.zeros((len(label), 1)), label, group)):
            assign[test] = f
    return assign


def peer_scores(label, group, k, shuffle_seeds):
    """The scores of each scikit-learn peer's runs on one layout."""
    from sklearn.model_selection import GroupKFold, StratifiedGroupKFold
    return {
        "StratifiedGroupKFold": [scores(sklearn_folds(StratifiedGroupKFold(k), label, group),
                                        label, group, k)],
        "StratifiedGroupKFold(shuffle)": [
            scores(sklearn_folds(StratifiedGroupKFold(k, shuffle=True, random_state=s), label,
                                 group), label, group, k) for s in range(shuffle_seeds)],
        "GroupKFold": [scores(sklearn_folds(GroupKFold(k), label, group), label, group, k)],
    }


def run_imgpack(imgpack, directory, kind, k, seed):
    cmd = [imgpack, "split", directory, "--name", "s", "--kind", kind, "--folds", str(k),
           "--seed", str(seed), "--force", "--json"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr}")
    report = json.loads(done.stdout)
    with h5py.File(os.path.join(directory, "index.h5"), "r") as f:
        assign = f["splits/s/assign"][...].astype(np.int64)
    return assign, report["timings"]["compute_s"]


def markdown(result):
    lines = [f"Adversarial layouts: {result['layouts']} layouts ({', '.join(layouts.FAMILIES)}), "
             f"k {result['k_min']} to {result['k_max']}, {result['samples_min']} to "
             f"{result['samples_max']} samples; imgpack seed {result['seed']}, " +
             (f"scikit-learn shuffled with seeds 0..{result['shuffle_seeds'] - 1}"
              if result["peers"] else "scikit-learn not run (--no-peers)")]
    verdict = f"Group leakage: {result['leakage']}."
    if result["peers"]:
        lines += ["", "| kind | scikit-learn peer | figure | comparisons | wins | ties | losses |",
                  "|---|---|---|---:|---:|---:|---:|"]
        for row in result["rows"]:
            promised = "*" if row["promised"] else ""
            lines.append(f"| {row['kind']} | {row['peer']} | {row['figure']}{promised}"
                         f" | {row['comparisons']} | {row['win']} | {row['tie']} | {row['loss']} |")
        lines += ["", "stratified-group beaten on both criterion and spread: " +
                  ", ".join(f"{n} times by {peer}" for peer, n in result["dominated"].items())]
        verdict = (f"* = promised by construction: no loss. {verdict} "
                   f"No loss on a promised figure: {'yes' if result['no_loss'] else 'NO'}")
    lines += ["", verdict]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layouts", type=int, default=216)
    parser.add_argument("--shuffle-seeds", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0, help="imgpack's --seed")
    parser.add_argument("--imgpack", default=os.path.join(ROOT, "build", "tools", "imgpack"))
    parser.add_argument("--out", help="directory for adversarial.json and adversarial.md")
    parser.add_argument("--format", choices=["markdown", "json"], default="markdown")
    parser.add_argument("--no-peers", action="store_true",
                        help="run imgpack only: its splits and their leakage, no scikit-learn")
    args = parser.parse_args()
    if not os.access(args.imgpack, os.X_OK):
        raise SystemExit(f"{args.imgpack}: not found; build first (scripts/build) or pass --imgpack")

    compared = [] if args.no_peers else ROWS
    tally = {(kind, peer, figure): {"win": 0, "tie": 0, "loss": 0}
             for kind, peer, figure, _ in compared}
    leakage, sizes, ks, compute = 0, [], [], []
    dominated = {} if args.no_peers else {"StratifiedGroupKFold": 0,
                                          "StratifiedGroupKFold(shuffle)": 0}
    start = time.time()
    with tempfile.TemporaryDirectory(prefix="imgpack-bench-adversarial-") as tmp:
        for i in range(args.layouts):
            family, label, group, k = layouts.layout(i)
            # The index holds ids 0..n-1 in the order of the layout's ids (the
            # order scikit-learn sees), so both sides split the same input.
            _, y = np.unique(label, return_inverse=True)
            _, g = np.unique(group, return_inverse=True)
            bench_splits.write_index(tmp, y, g, y.max() + 1, g.max() + 1)
            sizes.append(len(y))
            ks.append(k)
            ours = {}
            for kind in ("stratified-group", "group"):
                assign, seconds = run_imgpack(args.imgpack, tmp, kind, k, args.seed)
                ours[kind] = scores(assign, y, g, k)
                compute.append(seconds)
                leakage += ours[kind]["leakage"]
            if args.no_peers:
                continue
            theirs = peer_scores(y, g, k, args.shuffle_seeds)
            for kind, peer, figure, _ in ROWS:
                for their in theirs[peer]:
                    tally[(kind, peer, figure)][outcome(ours[kind][figure], their[figure])] += 1
            # Runs that beat stratified-group on both criterion and spread.
            for peer in ("StratifiedGroupKFold", "StratifiedGroupKFold(shuffle)"):
                for their in theirs[peer]:
                    both = [outcome(ours["stratified-group"][f], their[f])
                            for f in ("criterion", "spread")]
                    dominated[peer] += "win" not in both and "loss" in both
    rows = [{"kind": kind, "peer": peer, "figure": figure, "promised": promised,
             "comparisons": sum(tally[(kind, peer, figure)].values()),
             **tally[(kind, peer, figure)]} for kind, peer, figure, promised in compared]
    result = {"layouts": args.layouts, "shuffle_seeds": args.shuffle_seeds, "seed": args.seed,
              "peers": not args.no_peers,
              "k_min": min(ks), "k_max": max(ks), "samples_min": min(sizes),
              "samples_max": max(sizes), "leakage": leakage, "rows": rows,
              "dominated": dominated,
              "imgpack_compute_s_total": sum(compute), "seconds": time.time() - start,
              "no_loss": leakage == 0 and all(r["loss"] == 0 for r in rows if r["promised"])}
    table = markdown(result)
    if args.out:
        os.makedirs(args.out, exist_ok=True)
        with open(os.path.join(args.out, "adversarial.json"), "w") as f:
            json.dump(result, f, indent=2)
        with open(os.path.join(args.out, "adversarial.md"), "w") as f:
            f.write(table + "\n")
    print(json.dumps(result, indent=2) if args.format == "json" else table)
    return 0 if result["no_loss"] else 3


if __name__ == "__main__":
    sys.exit(main())
