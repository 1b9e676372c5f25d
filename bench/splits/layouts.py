"""Adversarial labels-and-groups layouts for group-aware splits.

Shared by the property tests (tests/libpack/split/split_sklearn_property_test.py)
and the adversarial-layout benchmark (bench/splits/adversarial.py). Every
layout is a pure function of its index: the same labels, groups and number of
folds on every machine.

Families (the kinds of input that make group-aware stratification hard):
  zipf           group sizes Zipf-like (exponent 1.2..2.2), classes skewed,
                 each group leaning towards a favourite class
  uniform        group sizes uniform in 1..m, classes skewed, groups leaning
  giant          one group holding 30..70% of the samples, the rest small
  concentrated   a rare class (1..3%) living almost only in a few groups
  singletons     several classes of a single sample beside ordinary ones
  two-per-group  every group made of exactly two classes
  one-per-group  one sample per group (a group per image)
  few-groups     k..2k groups of very different sizes
  issue          Zipf 1.6 over 150 groups (~860 samples), classes 89/10/1%,
                 ten groups almost entirely of the rare class

Labels and group ids are scattered integers (neither 0..n-1 nor in order of
appearance), so that the ids' order, which scikit-learn's splitters see, is
exercised too. Every layout has at least k groups and a class with at least k
members (what scikit-learn needs).
"""
import numpy as np

FAMILIES = ["zipf", "uniform", "giant", "concentrated", "singletons", "two-per-group",
            "one-per-group", "few-groups", "issue"]


def _class_shares(rng, classes):
    shares = 1.0 / np.arange(1, classes + 1) ** rng.uniform(0.5, 1.5)
    return shares / shares.sum()


def _leaning_labels(rng, sizes, classes, lean):
    """Each group draws a `lean` fraction of its samples from one favourite class."""
    shares = _class_shares(rng, classes)
    favourite = rng.choice(classes, size=len(sizes), p=shares)
    labels = []
    for g, size in enumerate(sizes):
        own = rng.random(size) < lean
        drawn = rng.choice(classes, size=size, p=shares)
        labels.append(np.where(own, favourite[g], drawn))
    return labels


def _zipf_sizes(rng, groups, exponent, largest):
    sizes = np.floor(largest / np.arange(1, groups + 1) ** exponent).astype(np.int64)
    sizes = np.maximum(sizes, 1) + rng.integers(0, 2, size=groups)
    return rng.permutation(sizes)


def _layout(family, rng, k):
    """Per-group label arrays for one layout of `family`."""
    if family == "zipf":
        groups = int(rng.integers(max(k, 20), 160))
        sizes = _zipf_sizes(rng, groups, rng.uniform(1.2, 2.2), rng.integers(60, 300))
        return _leaning_labels(rng, sizes, int(rng.integers(2, 13)), rng.uniform(0.3, 0.9))
    if family == "uniform":
        groups = int(rng.integers(max(k, 15), 120))
        sizes = rng.integers(1, int(rng.integers(3, 30)), size=groups)
        return _leaning_labels(rng, sizes, int(rng.integers(2, 10)), rng.uniform(0.0, 0.9))
    if family == "giant":
        groups = int(rng.integers(max(k, 10), 80))
        sizes = rng.integers(1, 15, size=groups)
        sizes[0] = int(sizes[1:].sum() * rng.uniform(0.45, 2.3)) + 1
        return _leaning_labels(rng, rng.permutation(sizes), int(rng.integers(2, 8)),
                               rng.uniform(0.2, 0.8))
    if family == "concentrated":
        groups = int(rng.integers(max(k, 30), 150))
        sizes = _zipf_sizes(rng, groups, rng.uniform(1.0, 1.8), rng.integers(40, 200))
        labels = _leaning_labels(rng, sizes, int(rng.integers(2, 6)), rng.uniform(0.2, 0.7))
        rare = max(int(np.concatenate(labels).max()) + 1, 2)
        for g in rng.choice(groups, size=int(rng.integers(1, min(groups, k + 2) + 1)),
                            replace=False):
            labels[g] = np.where(rng.random(len(labels[g])) < 0.9, rare, labels[g])
        return labels
    if family == "singletons":
        groups = int(rng.integers(max(k, 15), 100))
        sizes = rng.integers(1, 25, size=groups)
        labels = _leaning_labels(rng, sizes, int(rng.integers(2, 6)), rng.uniform(0.2, 0.8))
        base = int(np.concatenate(labels).max()) + 1
        for j, g in enumerate(rng.choice(groups, size=int(rng.integers(1, 6)))):
            labels[g] = labels[g].copy()
            labels[g][0] = base + j
        return labels
    if family == "two-per-group":
        groups = int(rng.integers(max(k, 15), 120))
        classes = int(rng.integers(2, 9))
        labels = []
        for size in rng.integers(2, 30, size=groups):
            pair = rng.choice(classes, size=2, replace=False)
            labels.append(np.where(rng.random(size) < rng.uniform(0.1, 0.9), pair[0], pair[1]))
            labels[-1][0], labels[-1][-1] = pair[0], pair[1]
        return labels
    if family == "one-per-group":
        samples = int(rng.integers(max(k, 30), 600))
        classes = int(rng.integers(2, 8))
        drawn = rng.choice(classes, size=samples, p=_class_shares(rng, classes))
        return [np.array([c]) for c in drawn]
    if family == "few-groups":
        groups = int(rng.integers(k, 2 * k + 1))
        sizes = np.maximum(1, np.floor(rng.lognormal(3, 1.2, size=groups))).astype(np.int64)
        return _leaning_labels(rng, sizes, int(rng.integers(2, 6)), rng.uniform(0.2, 0.9))
    if family == "issue":
        sizes = _zipf_sizes(rng, 150, 1.6, 330)
        labels = [np.where(rng.random(s) < 0.9, 0, 1) for s in sizes]
        # The rare class: ten of the small groups, almost entirely.
        small = np.argsort(sizes, kind="stable")[:60]
        for g in rng.choice(small, size=10, replace=False):
            labels[g] = np.where(rng.random(len(labels[g])) < 0.9, 2, labels[g])
        return labels
    raise ValueError(family)


def layout(index):
    """Layout number `index`: (family, labels, groups, k), deterministic."""
    family = FAMILIES[index % len(FAMILIES)]
    k = 2 + (index // len(FAMILIES)) % 9 if family != "issue" else 5 + (index // 9) % 2
    rng = np.random.default_rng([20260, index])
    while True:
        per_group = _layout(family, rng, k)
        label = np.concatenate(per_group).astype(np.int64)
        group = np.repeat(np.arange(len(per_group)), [len(l) for l in per_group])
        if len(per_group) >= k and np.bincount(label).max() >= k:
            break
    # Scatter the ids: labels and groups are arbitrary integers, samples in any order.
    label_ids = rng.permutation(1000)[: label.max() + 1] * 7 + 3
    group_ids = rng.permutation(20 * len(per_group) + 10)[: len(per_group)]
    order = rng.permutation(len(label))
    return family, label_ids[label][order], group_ids[group][order], k


def layouts(count):
    return [layout(i) for i in range(count)]
