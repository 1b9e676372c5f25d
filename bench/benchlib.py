"""Helpers shared by the benchmark scripts: timed commands, repeat statistics,
photo sets, the page cache and the machine description.

Scripts in bench/*/ import it with
    sys.path.insert(0, os.path.dirname(HERE)); import benchlib
Runs under the interpreter bench/run-all chose (scripts/python.sh: one with numpy,
h5py, cv2, torch), which every child Python of a benchmark runs under too.
"""
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
PYTHON = sys.executable


def imgpack_binary():
    """The CLI under test: $IMGPACK, else build/tools/imgpack (or $IMGPACK_BUILD_DIR's)."""
    if os.environ.get("IMGPACK"):
        return os.environ["IMGPACK"]
    build = os.environ.get("IMGPACK_BUILD_DIR", os.path.join(ROOT, "build"))
    return os.path.join(ROOT, build, "tools", "imgpack")


def add_measure_seconds(parser):
    """The --measure-seconds option of a script that runs `imgpack bench`."""
    parser.add_argument("--measure-seconds", type=float,
                        help="imgpack bench --measure-seconds (default: bench's own)")


def measure_args(seconds):
    """What `imgpack bench` is given for a script's --measure-seconds (nothing: its own)."""
    return ["--measure-seconds", seconds] if seconds else []


def python_module_dir():
    """Where the build leaves the imgpack Python module (build/python, or $IMGPACK_BUILD_DIR's)."""
    return os.path.join(ROOT, os.environ.get("IMGPACK_BUILD_DIR", "build"), "python")


def python_env():
    """The environment for a script that imports the built module."""
    path = [python_module_dir()] + [p for p in os.environ.get("PYTHONPATH", "").split(":") if p]
    return dict(os.environ, PYTHONPATH=":".join(path))


def summary(samples):
    """min / median / max of repeated measurements (None when there are none)."""
    values = [float(v) for v in samples if v is not None]
    if not values:
        return None
    return {"min": min(values), "median": statistics.median(values), "max": max(values),
            "n": len(values)}


def ratios(numerators, denominators):
    """Per-repeat ratios of two series measured side by side (repeat i with repeat i)."""
    return [a / b for a, b in zip(numerators, denominators) if b]


def finite_positive(value):
    return isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def loadavg():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


class CommandFailed(RuntimeError):
    pass


def run(command, **kwargs):
    """Runs a command and returns its stdout; raises CommandFailed with its stderr on failure."""
    done = subprocess.run([str(c) for c in command], capture_output=True, text=True, **kwargs)
    if done.returncode != 0:
        raise CommandFailed("failed (%d): %s\n%s" % (done.returncode, " ".join(map(str, command)),
                                                      done.stderr.strip()[-4000:]))
    return done.stdout


def run_json(command, **kwargs):
    return json.loads(run(command, **kwargs))


def timed(command):
    """Runs command under /usr/bin/time -v: (wall seconds, peak RSS KiB, CPU seconds, stdout)."""
    start = time.perf_counter()
    done = subprocess.run(["/usr/bin/time", "-v"] + [str(c) for c in command],
                          capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise CommandFailed("failed (%d): %s\n%s" % (done.returncode, " ".join(map(str, command)),
                                                      done.stderr.strip()[-4000:]))
    def field(name):
        match = re.search(re.escape(name) + r": ([0-9.]+)", done.stderr)
        return float(match.group(1)) if match else None
    rss = field("Maximum resident set size (kbytes)")
    cpu = (field("User time (seconds)") or 0) + (field("System time (seconds)") or 0)
    return seconds, int(rss) if rss is not None else None, cpu, done.stdout


def warm(paths):
    """Reads files so that the page cache holds them; returns the bytes read."""
    total = 0
    for path in paths:
        with open(path, "rb") as f:
            while True:
                chunk = f.read(1 << 22)
                if not chunk:
                    break
                total += len(chunk)
    return total


def files_under(folder):
    out = []
    for root, _, files in os.walk(folder):
        out.extend(os.path.join(root, f) for f in files)
    return sorted(out)


def say(tag, message):
    print("bench/%s: %s" % (tag, message), file=sys.stderr, flush=True)


# --- photo-like JPEG sets (bench/convert/make_photos.py) -------------------------------------

PHOTO_CLASSES = 10


def photo_paths(photos, count, classes=PHOTO_CLASSES):
    """The first COUNT files make_photos.py writes into PHOTOS (its naming scheme)."""
    return [os.path.join(photos, "c%d" % (i % classes), "img_%06d.jpg" % i) for i in range(count)]


def make_photos(photos, count, width, height):
    """Generates (once; existing files are kept) COUNT photo-like WIDTHxHEIGHT JPEGs."""
    run([PYTHON, os.path.join(BENCH, "convert", "make_photos.py"), count, photos,
         "--width", width, "--height", height, "--classes", PHOTO_CLASSES])


def photo_set(workdir, width, height, count):
    """WORKDIR/photos-WxH holds the generated photos; WORKDIR/photos-WxH-COUNT is a class-folder
    directory of hard links to the first COUNT of them (what a benchmark converts)."""
    photos = os.path.join(workdir, "photos-%dx%d" % (width, height))
    make_photos(photos, count, width, height)
    target = "%s-%d" % (photos, count)
    marker = target + ".complete"  # beside the set, so that nothing but images is inside
    if os.path.exists(marker):
        return target
    shutil.rmtree(target, ignore_errors=True)
    for path in photo_paths(photos, count):
        dest = os.path.join(target, os.path.relpath(path, photos))
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        try:
            os.link(path, dest)
        except OSError:
            shutil.copyfile(path, dest)
    open(marker, "w").close()
    return target


# --- the machine --------------------------------------------------------------------------------

def _first_line(command):
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=30).stdout
        return out.strip().splitlines()[0] if out.strip() else None
    except (OSError, subprocess.SubprocessError):
        return None


def _dpkg_version(package):
    return _first_line(["dpkg-query", "-W", "-f=${Version}", package])


def machine():
    """CPU model, cores, RAM, kernel, distribution, compiler and library versions."""
    cpu = None
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_kib = int(re.search(r"MemTotal:\s+(\d+)", f.read()).group(1))
    distro = None
    if os.path.exists("/etc/os-release"):
        with open("/etc/os-release") as f:
            match = re.search(r'PRETTY_NAME="([^"]+)"', f.read())
            distro = match.group(1) if match else None
    libs = {}
    for name, package in (("HDF5 (libhdf5-dev)", "libhdf5-dev"),
                          ("OpenCV (libopencv-dev)", "libopencv-dev"),
                          ("libjpeg-turbo (libturbojpeg0-dev)", "libturbojpeg0-dev"),
                          ("oneTBB (libtbb-dev)", "libtbb-dev")):
        libs[name] = _dpkg_version(package)
    for module in ("numpy", "h5py", "cv2", "sklearn", "torch", "torchvision", "PIL", "matplotlib"):
        try:
            mod = __import__(module)
            libs["python " + module] = getattr(mod, "__version__", "?")
        except ImportError:
            libs["python " + module] = None
    try:
        import h5py
        libs["python h5py's HDF5"] = h5py.version.hdf5_version
    except ImportError:
        pass
    gpu = _first_line(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"])
    return {
        "cpu": cpu or platform.processor(),
        "cores": os.cpu_count(),
        "ram_gib": mem_kib / 2**20,
        "kernel": platform.release(),
        "os": distro,
        "python": platform.python_version(),
        "compiler": _first_line(["c++", "--version"]),
        "gpu": gpu,
        "libraries": libs,
        "commit": commit(),
    }


def commit():
    """The checkout's commit, marked when tracked files other than the results page differ."""
    head = _first_line(["git", "-C", ROOT, "rev-parse", "--short=12", "HEAD"])
    dirty = _first_line(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no", "--",
                         ".", ":!docs/BENCHMARKS.md", ":!docs/bench"])
    return (head or "?") + ("+local changes" if dirty else "")
