"""`cmake --install` puts the module and its stubs where Python_EXECUTABLE
imports them from (python/CMakeLists.txt, cmake/python_site_dir.py)."""
import glob
import os
import subprocess
import sys

import pytest

BUILD_DIR = os.environ.get("IMGPACK_BUILD_DIR", "")
PREFIX = os.environ.get("IMGPACK_INSTALL_PREFIX", "")
SITE_DIR = os.environ.get("IMGPACK_PYTHON_INSTALL_DIR", "")


def interpreter_path():
    done = subprocess.run([sys.executable, "-c", "import sys; print('\\n'.join(sys.path))"],
                          capture_output=True, text=True, check=True,
                          env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    return done.stdout.split()


def test_the_configured_prefix_is_imported_from_without_pythonpath():
    assert BUILD_DIR and PREFIX and SITE_DIR, "run through ctest"
    target = SITE_DIR if os.path.isabs(SITE_DIR) else os.path.join(PREFIX, SITE_DIR)
    if PREFIX not in ("/usr", "/usr/local"):
        pytest.skip("prefix %s: the module needs PYTHONPATH=%s" % (PREFIX, target))
    assert target in interpreter_path()


def test_an_installed_module_imports_and_reads(tmp_path, dataset_dir):
    prefix = str(tmp_path / "prefix")
    subprocess.run(["cmake", "--install", BUILD_DIR, "--prefix", prefix], check=True,
                   capture_output=True)
    site = SITE_DIR if os.path.isabs(SITE_DIR) else os.path.join(prefix, SITE_DIR)
    assert glob.glob(os.path.join(site, "imgpack.cpython-*.so"))
    assert os.path.exists(os.path.join(site, "imgpack.pyi"))
    code = ("import imgpack, sys; loader = imgpack.Loader(sys.argv[1], batch_size=16); "
            "print(imgpack.__file__, sum(len(b) for b in loader))")
    done = subprocess.run([sys.executable, "-c", code, dataset_dir], capture_output=True,
                          text=True, cwd=str(tmp_path), env=dict(os.environ, PYTHONPATH=site))
    assert done.returncode == 0, done.stderr
    path, images = done.stdout.split()
    assert path.startswith(site) and images == "60"


def test_an_installed_module_loads_the_installed_cuda_module(tmp_path):
    """The module finds the CUDA module `cmake --install` put in the prefix's
    library directory (by its run path), never the build tree's copy."""
    prefix = str(tmp_path / "prefix")
    subprocess.run(["cmake", "--install", BUILD_DIR, "--prefix", prefix], check=True,
                   capture_output=True)
    installed = glob.glob(os.path.join(prefix, "**", "libimgpack_cuda.so"), recursive=True)
    if not installed:
        pytest.skip("this build has no CUDA module")
    site = SITE_DIR if os.path.isabs(SITE_DIR) else os.path.join(prefix, SITE_DIR)
    env = {k: v for k, v in os.environ.items() if k != "IMGPACK_CUDA_MODULE"}
    env.update(PYTHONPATH=site, LD_DEBUG="libs")
    done = subprocess.run([sys.executable, "-c", "import imgpack; imgpack.cuda_device_count()"],
                          capture_output=True, text=True, cwd=str(tmp_path), env=env)
    assert done.returncode == 0, done.stderr
    # The dynamic linker's own record of what it initialised.
    loaded = [line for line in done.stderr.splitlines()
              if "calling init:" in line and "libimgpack_cuda.so" in line]
    assert len(loaded) == 1, done.stderr[-3000:]
    assert os.path.realpath(loaded[0].split("calling init:")[1].strip()) == \
        os.path.realpath(installed[0])
