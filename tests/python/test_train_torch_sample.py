"""samples/train_torch.py trains a small CNN on a sample-data dataset, split
by `imgpack split`, and reaches a validation accuracy far above chance
(misaligned labels and images would leave it at chance)."""
import os
import re
import subprocess
import sys

import pytest
import torch

import imgpack
from conftest import SOURCE_DIR, cli

SCRIPT = os.path.join(SOURCE_DIR, "samples", "train_torch.py")


@pytest.fixture(scope="module")
def sample_dataset(tmp_path_factory):
    root = tmp_path_factory.mktemp("train")
    src, data = str(root / "images"), str(root / "data")
    cli("sample-data", src, "--classes", 4, "--groups", 8, "--per-class", 50, "--size", "64x48",
        "--seed", 2, "--quiet")
    cli("convert", src, data, "--size", 32, "--group-regex", "/(g[0-9]+)_", "--variants", 2,
        "--augment", "hflip,rotate=10", "--quiet")
    cli("split", data, "--name", "cv5", "--kind", "stratified-group", "--folds", 5, "--json")
    return data


def train(data, *extra):
    done = subprocess.run([sys.executable, SCRIPT, data, "--split", "cv5", "--fold", "0",
                           "--min-accuracy", "0.75", *extra], capture_output=True, text=True,
                          timeout=600)
    print(done.stdout, done.stderr)
    assert done.returncode == 0, done.stderr
    found = re.search(r"validation accuracy ([0-9.]+) on (\d+) labeled images "
                      r"\(chance ([0-9.]+)\)", done.stdout)
    assert found, done.stdout
    accuracy, images, chance = float(found.group(1)), int(found.group(2)), float(found.group(3))
    assert images == 50 and chance == 0.25
    assert accuracy >= 0.75
    return done.stdout


def test_trains_on_the_cpu(sample_dataset):
    out = train(sample_dataset)
    assert "150 training images, 50 validation images, on cpu" in out


@pytest.mark.skipif(not (torch.cuda.is_available() and imgpack.cuda_device_count() > 0),
                    reason="needs a CUDA device")
def test_trains_on_the_gpu_with_device_batches(sample_dataset):
    out = train(sample_dataset, "--device", "cuda:0")
    assert "on cuda:0" in out and "starvation" in out


def run_script(*args):
    return subprocess.run([sys.executable, SCRIPT, *map(str, args)], capture_output=True,
                          text=True, timeout=600)


def test_refuses_a_missing_split_in_one_line(sample_dataset):
    done = run_script(sample_dataset, "--split", "nope")
    assert done.returncode == 2, done.stderr
    assert "nope" in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_refuses_a_missing_dataset_in_one_line(tmp_path):
    done = run_script(tmp_path / "missing")
    assert done.returncode == 1, done.stderr
    assert "missing" in done.stderr and "Traceback" not in done.stderr, done.stderr


@pytest.fixture(scope="module")
def partly_labeled(tmp_path_factory):
    """Every fifth image of the sample set without a class (an empty CSV cell)."""
    root = tmp_path_factory.mktemp("partly")
    src = root / "images"
    cli("sample-data", src, "--classes", 4, "--groups", 8, "--per-class", 50, "--size", "64x48",
        "--seed", 2, "--quiet")
    lines = (src / "labels.csv").read_text().splitlines()
    rows = [line.split(",") for line in lines[1:]]
    for i, row in enumerate(rows):
        if i % 5 == 0:
            row[1] = ""
    (root / "list.csv").write_text("\n".join([lines[0]] + [",".join(r) for r in rows]) + "\n")
    return root, src


def test_leaves_unlabeled_images_out_of_the_loss_and_the_accuracy(partly_labeled):
    root, src = partly_labeled
    data = root / "data"
    cli("convert", src, data, "--csv", root / "list.csv", "--csv-label", "class", "--csv-group",
        "group", "--size", 32, "--split", "cv5:stratified-group:5", "--quiet")
    dataset = imgpack.Dataset(str(data))
    assert (dataset.sample_labels == -1).sum() == 40
    done = run_script(data, "--split", "cv5", "--fold", "0", "--epochs", 1)
    assert done.returncode == 0, done.stderr
    found = re.search(r"validation accuracy [0-9.]+ on (\d+) labeled images", done.stdout)
    assert found, done.stdout
    val = dataset.splits["cv5"].assign == 0
    assert int(found.group(1)) == int((dataset.sample_labels[val] >= 0).sum())


def test_refuses_a_dataset_without_classes(partly_labeled):
    root, src = partly_labeled
    data = root / "unlabeled"
    cli("convert", src, data, "--labels", "none", "--size", 32, "--split", "cv5:random:5",
        "--quiet")
    done = run_script(data, "--split", "cv5", "--epochs", 1)
    assert done.returncode == 2, done.stderr
    assert "no classes" in done.stderr and "Traceback" not in done.stderr, done.stderr
