"""`pip install .`: builds the imgpack module with CMake for the Python that runs
pip, and installs it with its type stubs (python/imgpack.pyi) and, where CUDA is
built, the reader's CUDA module beside it.

CMake configures a temporary folder: Release, the reader and the Python module
alone (IMGPACK_BUILD_TOOLS=OFF: no OpenCV, no CLI, no tests), and builds the
target imgpack_python and what it needs; setuptools' own build/ and egg-info go
to a temporary folder too, so the source tree is left as it was. The CMake
folder has the same name on every build of the same source tree, in the
user's cache folder (~/.cache/imgpack; held by a lock while in use, removed
after), so that the compiler cache (cmake/compiler_cache.cmake) finds what an
earlier build compiled: the generated headers' paths are part of what it
compares. Not in /tmp under a fixed name: another user could make that
folder first and put there what this build would use, so it must be one only
this user can write to.

Needs CMake, a C++20 compiler, HDF5, libxxhash, DLPack's header and pybind11
(CMake's package, or the `pybind11` the interpreter imports); offline:
`pip install --no-build-isolation .`.

Environment: CMAKE_ARGS (extra configure arguments, split as a shell would:
CMAKE_ARGS="-DIMGPACK_WITH_CUDA=OFF"), CMAKE_BUILD_PARALLEL_LEVEL (parallel
compile jobs; default: the cores), CMAKE_GENERATOR (default Ninja where
installed). The version is CMakeLists.txt's project(VERSION).
"""
import atexit
import fcntl
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))
# setuptools' build/ and egg-info, and CMake's build folder: never in the source
# tree (whose ./build is the CMake build of scripts/build).
SCRATCH = tempfile.mkdtemp(prefix="imgpack-setup-")
atexit.register(shutil.rmtree, SCRATCH, True)


def project_version():
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        found = re.search(r"project\(\s*imgpack\s+VERSION\s+([0-9][0-9.]*)", f.read())
    if not found:
        sys.exit("setup.py: no project(imgpack VERSION ...) in CMakeLists.txt")
    return found.group(1)


class CMakeBuild(build_ext):
    """Builds the one extension, imgpack, with the project's CMake."""

    def build_extension(self, ext):
        # An editable install (pip install -e .) builds in place: the module
        # would land in the source tree and the CUDA module it loads would be
        # removed with the CMake folder after the build.
        if self.inplace or getattr(self, "editable_mode", False):
            sys.exit("setup.py: an editable install (pip install -e) is not supported: the "
                     "module and its CUDA module are built for an install; use pip install "
                     "(again after a change), or scripts/build and PYTHONPATH=build/python")
        target_dir = os.path.dirname(os.path.abspath(self.get_ext_fullpath(ext.name)))
        build_dir = self._cmake_build_dir()
        configure = [
            "cmake", "-S", ROOT, "-B", build_dir,
            "-DCMAKE_BUILD_TYPE=Release",
            "-DIMGPACK_BUILD_TESTS=OFF",
            "-DIMGPACK_BUILD_TOOLS=OFF",
            "-DIMGPACK_BUILD_PYTHON=ON",
            "-DPython_EXECUTABLE=" + sys.executable,
            "-DIMGPACK_PYTHON_INSTALL_DIR=" + target_dir,
        ]
        if not os.environ.get("CMAKE_GENERATOR") and shutil.which("ninja"):
            configure += ["-G", "Ninja"]
        configure += shlex.split(os.environ.get("CMAKE_ARGS", ""))
        self._run(configure)

        build = ["cmake", "--build", build_dir, "--target", "imgpack_python"]
        if not os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL"):  # which cmake --build reads
            build += ["--parallel", str(os.cpu_count() or 1)]
        self._run(build)
        # The module and its stubs; the CUDA module where CUDA was built (a
        # component with nothing in it installs nothing).
        for component in ("python", "python_wheel"):
            self._run(["cmake", "--install", build_dir, "--component", component])

    @staticmethod
    def _cmake_build_dir():
        """An empty folder named after the source tree in the user's cache
        folder, locked until this process ends and removed then."""
        cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        key = hashlib.sha256(ROOT.encode()).hexdigest()[:16]
        os.makedirs(os.path.join(cache, "imgpack"), mode=0o700, exist_ok=True)
        build_dir = os.path.join(cache, "imgpack", "wheel-build-" + key)
        lock = open(build_dir + ".lock", "w")
        fcntl.flock(lock, fcntl.LOCK_EX)
        shutil.rmtree(build_dir, ignore_errors=True)
        atexit.register(lock.close)  # atexit runs last in, first out: this after the rmtree
        atexit.register(shutil.rmtree, build_dir, True)
        return build_dir

    def _run(self, command):
        print("setup.py: " + shlex.join(command), flush=True)
        subprocess.run(command, check=True)


setup(
    version=project_version(),
    # One extension module, no Python package: no package discovery over the
    # source tree's folders.
    packages=[],
    py_modules=[],
    ext_modules=[Extension("imgpack", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    options={
        "build": {"build_base": os.path.join(SCRATCH, "build")},
        "egg_info": {"egg_base": SCRATCH},
    },
    zip_safe=False,
)
