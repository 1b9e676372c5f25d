#!/usr/bin/env python3
"""Property test: imgpack's multi-label iterative stratification against the
paper's algorithm.

The reference, `reference_parts`, is a plain rendering of Algorithm 1 of
Sechidis, Tsoumakas & Vlahavas, "On the Stratification of Multi-Label Data"
(ECML PKDD 2011), written from the paper with numpy's random generator for
its random tie-breaks:

    c_j = |D| r_j;  c_j^l = |D^l| r_j
    while labeled examples remain:
        l = the label with the fewest (but at least one) remaining examples,
            ties broken at random
        for each remaining example with label l (in order):
            m = argmax_j c_j^l, ties to argmax c_j, further ties at random
            put it in S_m; c_m^i -= 1 for each of its labels i; c_m -= 1
    examples without labels: each to argmax_j c_j, ties at random

With groups it runs over groups instead of examples, as imgpack does: a
group's label counts are the sums over its samples, the counts decrease by
them, and unlabeled groups go largest first. The paper's measures (Label
Distribution, Examples Distribution) are computed here with numpy,
independently of imgpack's multilabel_quality(), which the driver also
reports; the two must agree.

Over COUNT generated layouts (30..2000 samples, 2..40 labels, 2..10 parts,
equal or unequal fractions, Zipf, uniform, sparse and clustered label
densities, three in eight with groups), for each of imgpack's seeds:

- LD: imgpack's Label Distribution is at most the mean of the reference's
  over REFERENCE_SEEDS seeds (the promise). How often it is at most the best
  of those reference runs (every single one) is printed, not asserted.
- ED: imgpack's Examples Distribution is at most the reference's mean plus
  the largest unit's size (1 without groups), and without groups at most one
  sample above the least ED any partition reaches (imgpack's bound; grouped
  runs over theirs are counted and printed).
- groups are never split; the same seed gives the same parts; the driver's
  multilabel_quality() agrees with the measures computed here.

Last measured (200 layouts x 2 seeds): LD below the reference mean in 396
runs, equal in 4 (both at the optimum the label counts allow), above in none;
at most the best reference run in all 400. With MULTILABEL_LAYOUTS=1500:
2943 below, 57 equal, none above, all 3000 at most the best reference run.
The price is sizes a little less even than the paper's (ED median +0.25
samples per part), within the bounds above.

Run by ctest (multilabel_property) as `PYTHON THIS_FILE` (CMake's Python_EXECUTABLE),
with MULTILABEL_DRIVER naming tests/libpack/split/multilabel_driver; exits 77
(skipped) without numpy.
"""
import os
import subprocess
import sys
import tempfile
import time

try:
    import numpy as np
except ImportError as error:  # ctest treats 77 as skipped
    print(f"skipping: {error}")
    sys.exit(77)

COUNT = int(os.environ.get("MULTILABEL_LAYOUTS", 200))
OUR_SEEDS = (0, 7)
REFERENCE_SEEDS = (0, 1, 2, 3, 4)
TIE = 1e-9  # relative tolerance of "equal" desired counts, as imgpack's


# --- the reference ---------------------------------------------------------

def units_of(labels, groups):
    """(unit of every sample, label counts per unit [U, L], size per unit)."""
    if groups is None:
        unit = np.arange(len(labels))
    else:
        unit = np.empty(len(labels), dtype=np.int64)
        ids = {}
        for i, g in enumerate(groups):
            if g < 0:
                unit[i] = len(ids)
                ids[("alone", i)] = unit[i]
            else:
                unit[i] = ids.setdefault(("group", g), len(ids))
    count = int(unit.max()) + 1 if len(unit) else 0
    counts = np.zeros((count, labels.shape[1]), dtype=np.int64)
    np.add.at(counts, unit, labels.astype(np.int64))
    sizes = np.bincount(unit, minlength=count)
    return unit, counts, sizes


def argmax_ties(values):
    best = values.max()
    return np.flatnonzero(values >= best - TIE * max(1.0, abs(best)))


def reference_parts(labels, groups, fractions, rng):
    """The part of every sample by the paper's Algorithm 1 (over groups when given)."""
    unit, counts, sizes = units_of(labels, groups)
    r = np.asarray(fractions, dtype=np.float64)
    desired_size = sizes.sum() * r                       # c_j
    desired = np.outer(r, counts.sum(axis=0)).astype(np.float64)  # c_j^l
    remaining = counts.sum(axis=0).copy()                # |D^l|: samples left
    part = np.full(len(sizes), -1)
    holders = [np.flatnonzero(counts[:, l]) for l in range(counts.shape[1])]
    while (remaining > 0).any():
        left = np.where(remaining > 0, remaining, np.iinfo(np.int64).max)
        fewest = np.flatnonzero(left == left.min())
        label = fewest[rng.integers(len(fewest))] if len(fewest) > 1 else fewest[0]
        for u in holders[label]:
            if part[u] >= 0:
                continue
            best = argmax_ties(desired[:, label])
            if len(best) > 1:
                best = best[argmax_ties(desired_size[best])]
            m = best[rng.integers(len(best))] if len(best) > 1 else best[0]
            part[u] = m
            desired[m] -= counts[u]
            desired_size[m] -= sizes[u]
            remaining -= counts[u]
    unlabeled = [u for u in range(len(sizes)) if part[u] < 0]
    unlabeled.sort(key=lambda u: -sizes[u])  # stable: ties keep unit order
    for u in unlabeled:
        best = argmax_ties(desired_size)
        m = best[rng.integers(len(best))] if len(best) > 1 else best[0]
        part[u] = m
        desired_size[m] -= sizes[u]
    return part[unit]


def least_size_deviation(samples, fractions):
    """The least sum over parts of |size - desired size| of any partition."""
    desired = samples * np.asarray(fractions)
    rest = np.sort(desired - np.floor(desired))[::-1]
    up = int(round(samples - np.floor(desired).sum()))
    return float((1 - rest[:up]).sum() + rest[up:].sum())


def measures(labels, parts, fractions):
    """The paper's (LD, ED): a ratio with no negatives counts as 0."""
    k = len(fractions)
    n = len(parts)

    def ratio(pos, size):
        neg = size - pos
        return np.where(neg == 0, 0.0, pos / np.where(neg == 0, 1, neg))

    size = np.bincount(parts, minlength=k)
    per_part = np.zeros((k, labels.shape[1]))
    np.add.at(per_part, parts, labels)
    whole = ratio(labels.sum(axis=0).astype(np.float64), float(n))
    ld = np.abs(ratio(per_part, size[:, None].astype(np.float64)) - whole).mean() if labels.shape[1] else 0.0
    ed = np.abs(size - n * np.asarray(fractions)).mean()
    return float(ld), float(ed)


# --- layouts ----------------------------------------------------------------

def layout(index):
    rng = np.random.default_rng(1000 + index)
    samples = int(np.exp(rng.uniform(np.log(30), np.log(2000))))
    labels = int(rng.integers(2, 41))
    k = int(rng.integers(2, 11))
    k = min(k, samples // 3)
    family = ("zipf", "uniform", "sparse", "clustered")[index % 4]
    if family == "zipf":
        p = rng.uniform(0.2, 0.7) / np.arange(1, labels + 1) ** rng.uniform(0.5, 1.5)
        y = rng.random((samples, labels)) < p
    elif family == "uniform":
        y = rng.random((samples, labels)) < rng.uniform(0.02, 0.5, labels)
    elif family == "sparse":
        y = rng.random((samples, labels)) < rng.uniform(0.002, 0.05, labels)
    else:  # samples of a few clusters share label sets, with noise
        clusters = int(rng.integers(2, 12))
        sets = rng.random((clusters, labels)) < rng.uniform(0.1, 0.4)
        y = sets[rng.integers(clusters, size=samples)] ^ (rng.random((samples, labels)) < 0.03)
    groups = None
    if index % 4 == 1 or index % 8 == 2:
        mean = rng.uniform(1.5, 8)
        cap = max(2, min(40, samples // (3 * k)))
        sizes = np.minimum(rng.zipf(1.0 + 1.0 / mean, size=samples), cap)
        groups = np.repeat(np.arange(samples), sizes)[:samples]
        rng.shuffle(groups)
        groups[rng.random(samples) < 0.1] = -1
        if index % 3 == 0:  # group members share most labels
            for g in np.unique(groups[groups >= 0]):
                members = np.flatnonzero(groups == g)
                y[members] = y[members[0]] ^ (rng.random((len(members), labels)) < 0.05)
    if index % 7 == 3:
        fractions = rng.dirichlet(np.ones(k) * 3)
        fractions = np.maximum(fractions, 0.05)
        fractions /= fractions.sum()
    else:
        fractions = np.full(k, 1.0 / k)
    return y.astype(np.uint8), groups, [float(f) for f in fractions], family


# --- the driver --------------------------------------------------------------

def run_driver(requests):
    """Parts and (LD, ED) from multilabel_driver for (labels, groups, fractions, seed)."""
    path = os.environ.get("MULTILABEL_DRIVER")
    if not path:
        print("skipping: MULTILABEL_DRIVER is not set (ctest sets it)")
        sys.exit(77)
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as f:
        for y, groups, fractions, seed in requests:
            f.write(f"{y.shape[0]} {y.shape[1]} {len(fractions)} {seed}\n")
            f.write(" ".join(repr(x) for x in fractions) + "\n")
            f.write(" ".join(map(str, y.ravel().tolist())) + "\n")
            f.write("none\n" if groups is None else " ".join(map(str, groups.tolist())) + "\n")
        f.flush()
        done = subprocess.run([path, f.name], capture_output=True, text=True, check=True)
    lines = done.stdout.splitlines()
    out = []
    for y, _, _, _ in requests:
        line = lines.pop(0)
        assert not line.startswith("error"), line
        parts = np.array(line.split(), dtype=np.int64)
        assert len(parts) == y.shape[0]
        ld, ed = map(float, lines.pop(0).split())
        out.append((parts, ld, ed))
    assert not lines, done.stderr
    return out


def main():
    start = time.time()
    cases = [layout(i) for i in range(COUNT)]
    requests = [(y, g, fr, seed) for (y, g, fr, _) in cases for seed in OUR_SEEDS]
    again = run_driver(requests[:20])
    ours = run_driver(requests)
    driver_seconds = time.time() - start
    failures = []
    better = equal = worse = 0
    best_run_beaten = 0
    ed_over = grouped_ed_over = 0
    ld_ratio_best_run = []
    ed_minus_ref = []
    ld_gain = []
    for i, (y, groups, fractions, family) in enumerate(cases):
        ref = []
        for s in REFERENCE_SEEDS:
            parts = reference_parts(y, groups, fractions, np.random.default_rng(s))
            ref.append(measures(y, parts, fractions))
        ref_ld = np.mean([r[0] for r in ref])
        ref_ed = np.mean([r[1] for r in ref])
        _, _, largest = units_of(y, groups)
        unit = int(largest.max())
        for j, seed in enumerate(OUR_SEEDS):
            parts, ld, ed = ours[i * len(OUR_SEEDS) + j]
            name = (f"layout {i} ({family}, {y.shape[0]} x {y.shape[1]}, k={len(fractions)}, "
                    f"{'groups' if groups is not None else 'no groups'}) seed {seed}")
            own_ld, own_ed = measures(y, parts, fractions)
            if abs(own_ld - ld) > 1e-9 * max(1, ld) or abs(own_ed - ed) > 1e-9 * max(1, ed):
                failures.append(f"{name}: multilabel_quality {ld} {ed} != numpy's {own_ld} {own_ed}")
            if groups is not None:
                for g in np.unique(groups[groups >= 0]):
                    if len(np.unique(parts[groups == g])) > 1:
                        failures.append(f"{name}: group {g} split")
                        break
            if np.bincount(parts, minlength=len(fractions)).min() == 0:
                print(f"note: {name}: an empty part")
            tol = 1e-12 * max(1.0, ref_ld)
            if ld < ref_ld - tol:
                better += 1
            elif ld <= ref_ld + tol:
                equal += 1
            else:
                worse += 1
                failures.append(f"{name}: LD {ld:.6g} above the reference's mean {ref_ld:.6g} "
                                f"(runs {', '.join(f'{r[0]:.6g}' for r in ref)})")
            best_run_beaten += ld <= min(r[0] for r in ref) + tol
            best_ref = min(r[0] for r in ref)
            ld_ratio_best_run.append(ld / best_ref if best_ref > 0 else 1.0)
            ld_gain.append(ld / ref_ld if ref_ld > 0 else 1.0)
            # Designed: at most one unit's size above the most even sizes
            # (where single moves reach them: always without groups).
            floor = least_size_deviation(y.shape[0], fractions) / len(fractions)
            if ed > floor + unit + 1e-9:
                if groups is None:
                    failures.append(f"{name}: ED {ed:.6g} more than one unit above the least "
                                    f"{floor:.6g}")
                else:
                    grouped_ed_over += 1
            ed_minus_ref.append(ed - ref_ed)
            if ed > ref_ed + unit + 1e-9:
                ed_over += 1
                failures.append(f"{name}: ED {ed:.6g} above the reference's mean {ref_ed:.6g} "
                                f"+ {unit} (runs {', '.join(f'{r[1]:.6g}' for r in ref)})")
    for k, (parts, _, _) in enumerate(again):
        if not np.array_equal(parts, ours[k][0]):
            failures.append(f"request {k}: the same seed gave different parts")
    runs = len(cases) * len(OUR_SEEDS)
    print(f"{len(cases)} layouts x {len(OUR_SEEDS)} seeds = {runs} runs against the mean of "
          f"{len(REFERENCE_SEEDS)} reference runs each")
    print(f"LD: better {better}, equal {equal}, worse {worse}; at most the best reference run in "
          f"{best_run_beaten}; median LD ratio (imgpack / reference mean) "
          f"{np.median(ld_gain):.3f}, worst {max(ld_gain):.3f}")
    print(f"LD against the best of the {len(REFERENCE_SEEDS)} reference runs: worst ratio "
          f"{max(ld_ratio_best_run):.3f}")
    print(f"ED minus the reference mean: median {np.median(ed_minus_ref):.3f}, largest "
          f"{max(ed_minus_ref):.3f}; below it in {sum(d < -1e-9 for d in ed_minus_ref)} runs")
    print(f"ED: above the reference mean + one unit in {ed_over}; grouped runs more than one "
          f"unit above the least possible: {grouped_ed_over}")
    print(f"driver {driver_seconds:.1f} s, total {time.time() - start:.1f} s")
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
