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
    found = re.search(r"validation accuracy ([0-9.]+) on (\d+) images \(chance ([0-9.]+)\)",
                      done.stdout)
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


def test_refuses_a_missing_split(sample_dataset):
    done = subprocess.run([sys.executable, SCRIPT, sample_dataset, "--split", "nope"],
                          capture_output=True, text=True)
    assert done.returncode != 0 and "nope" in done.stderr
