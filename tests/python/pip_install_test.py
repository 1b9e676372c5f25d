#!/usr/bin/env python3
"""`pip install .` as a PyTorch user runs it: into a fresh virtual environment
(--system-site-packages, so NumPy and PyTorch come from the system), offline
(--no-index --no-build-isolation), from the source tree. Then, from another
folder, `import imgpack` finds the installed module (not the build tree's),
with its stubs beside it (and the CUDA module, where CUDA is built), every
library it links resolves, and one epoch of a converted dataset reads into
torch tensors; the source tree gains no build/ or egg-info; the environment
is removed.

Run by ctest (python.pip_install) under CMake's Python_EXECUTABLE, with
IMGPACK (the CLI), IMGPACK_SOURCE_DIR, IMGPACK_HAVE_CUDA and
IMGPACK_WHEEL_CMAKE_ARGS (this build's flags, passed to setup.py as
CMAKE_ARGS, so that the compiler cache already holds what the wheel compiles).
Exits 77 (skipped) when venv, ensurepip (Debian: python3-venv), setuptools or
wheel is missing. Prints each step's wall time.
"""
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

SKIPPED = 77
IMGPACK = os.environ["IMGPACK"]
SOURCE_DIR = os.environ["IMGPACK_SOURCE_DIR"]
HAVE_CUDA = os.environ.get("IMGPACK_HAVE_CUDA", "OFF") == "ON"
CMAKE_ARGS = os.environ.get("IMGPACK_WHEEL_CMAKE_ARGS", "")

# Reads one epoch with the installed module; prints what the test checks.
READ_EPOCH = r"""
import json, os, sys
import imgpack
try:
    import torch
    to_tensor = torch.from_dlpack
except ImportError:  # the module needs only NumPy
    import numpy
    torch, to_tensor = None, numpy.asarray
loader = imgpack.Loader(sys.argv[1], batch_size=8)
images, labels = 0, []
for batch in loader:
    x, y = to_tensor(batch.images), to_tensor(batch.labels)
    images += x.shape[0]
    labels += [int(v) for v in y]
print(json.dumps({"file": os.path.realpath(imgpack.__file__), "images": images,
                  "labels": sorted(set(labels)), "torch": torch is not None}))
"""


def step(name, command, **kwargs):
    start = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, **kwargs)
    print("pip_install_test: %-28s %6.1f s" % (name, time.monotonic() - start), flush=True)
    if done.returncode != 0:
        sys.exit("pip_install_test: %s failed (%d):\n%s\n%s" % (
            name, done.returncode, done.stdout[-12000:], done.stderr[-4000:]))
    return done.stdout


def source_tree_entries():
    """Top-level names, and those inside a top-level build/ (where setuptools
    would put lib.*, bdist.* and temp.*)."""
    names = set(os.listdir(SOURCE_DIR))
    build = os.path.join(SOURCE_DIR, "build")
    if os.path.isdir(build):
        names |= {"build/" + n for n in os.listdir(build)}
    return names


def main():
    missing = [m for m in ("venv", "ensurepip", "setuptools", "wheel")
               if importlib.util.find_spec(m) is None]
    if missing:
        print("pip_install_test: %s cannot import %s; skipped" % (sys.executable,
                                                                  ", ".join(missing)))
        return SKIPPED
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(CMAKE_ARGS=CMAKE_ARGS, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")

    before = source_tree_entries()
    work = tempfile.mkdtemp(prefix="imgpack-pip-")
    try:
        venv = os.path.join(work, "venv")
        step("venv", [sys.executable, "-m", "venv", "--system-site-packages", venv], env=env)
        python = os.path.join(venv, "bin", "python")
        step("pip install", [python, "-m", "pip", "install", "--no-index",
                             "--no-build-isolation", SOURCE_DIR], env=env, cwd=work)
        after = source_tree_entries()
        added = sorted(n for n in after - before
                       if n.endswith(".egg-info") or n.startswith("build/") or n == "build")
        assert not added, "pip install wrote into the source tree: %s" % added

        data = os.path.join(work, "data")
        step("sample-data", [IMGPACK, "sample-data", os.path.join(work, "images"), "--classes",
                             "3", "--per-class", "6", "--size", "32x24", "--quiet"])
        step("convert", [IMGPACK, "convert", os.path.join(work, "images"), data, "--size",
                         "16x12", "--quiet"])
        elsewhere = os.path.join(work, "elsewhere")
        os.mkdir(elsewhere)
        report = json.loads(step("import and read an epoch", [python, "-c", READ_EPOCH, data],
                                 env=env, cwd=elsewhere))

        site = step("site-packages", [python, "-c", "import sysconfig; "
                                      "print(sysconfig.get_path('platlib'))"], env=env).strip()
        module = report["file"]
        assert os.path.dirname(module) == os.path.realpath(site), (module, site)
        assert module.startswith(os.path.realpath(venv) + os.sep), module
        assert os.path.exists(os.path.join(site, "imgpack.pyi")), "no stubs beside the module"
        if HAVE_CUDA:
            assert os.path.exists(os.path.join(site, "libimgpack_cuda.so")), \
                "no CUDA module beside the Python module"
        if shutil.which("ldd"):
            linked = step("ldd", ["ldd", module])
            assert "not found" not in linked, linked
        assert report["images"] == 18, report
        assert report["labels"] == [0, 1, 2], report
        assert report["torch"] or importlib.util.find_spec("torch") is None, report
        print("pip_install_test: %s read %d images (torch: %s)" % (module, report["images"],
                                                                  report["torch"]))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    assert not os.path.exists(work), "the environment was not removed"
    return 0


if __name__ == "__main__":
    sys.exit(main())
