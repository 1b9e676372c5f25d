"""Errors (python/src/module.cpp): imgpack.Error, a RuntimeError naming the
file and the problem, for damaged data; ValueError for bad requests."""
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import imgpack
from conftest import make_dataset


@pytest.fixture()
def damaged(tmp_path, dataset_dir):
    copy = str(tmp_path / "copy")
    shutil.copytree(dataset_dir, copy)
    return copy


def test_error_is_a_runtime_error():
    assert issubclass(imgpack.Error, RuntimeError)
    assert "names what failed" in imgpack.Error.__doc__


def test_missing_dataset_names_the_path(tmp_path):
    missing = str(tmp_path / "nowhere")
    with pytest.raises(imgpack.Error, match="nowhere"):
        imgpack.Dataset(missing)
    with pytest.raises(imgpack.Error, match="nowhere"):
        imgpack.Loader(missing)


def test_missing_index_names_index_h5(damaged):
    os.remove(os.path.join(damaged, "index.h5"))
    with pytest.raises(imgpack.Error, match=r"index\.h5.*not a complete imgpack dataset"):
        imgpack.Dataset(damaged)


def test_a_table_through_a_filter_hdf5_lacks_is_named_with_the_filter(damaged):
    """h5py's LZF is a filter of h5py's own: the C library cannot decode it,
    and its message is about plugin folders."""
    h5py = pytest.importorskip("h5py")
    with h5py.File(os.path.join(damaged, "index.h5"), "r+") as f:
        labels = f["samples/label"]
        data, attrs = labels[()], dict(labels.attrs)
        del f["samples/label"]
        rewritten = f.create_dataset("samples/label", data=data, compression="lzf")
        for key, value in attrs.items():
            rewritten.attrs[key] = value
    # In this process h5py has given HDF5 its LZF filter: the CLI has none.
    from conftest import IMGPACK
    done = subprocess.run([IMGPACK, "inspect", damaged], capture_output=True, text=True)
    assert done.returncode == 1, done.stderr
    assert ("index.h5: /samples/label is stored through HDF5 filter 32000 (lzf), which this "
            "HDF5 cannot decode") in done.stderr, done.stderr


def test_truncated_shard_names_the_shard(damaged):
    shard = os.path.join(damaged, "shard-00001.h5")
    os.truncate(shard, os.path.getsize(shard) // 2)
    with pytest.raises(imgpack.Error, match=r"shard-00001\.h5"):
        imgpack.Dataset(damaged)


def test_flipped_pixel_names_the_shard_and_row(damaged, reference):
    # The first record of shard 2: flip one byte of its pixels in the file.
    import h5py
    shard = os.path.join(damaged, "shard-00002.h5")
    with h5py.File(shard, "r") as f:
        offset = f["images"].id.get_offset()
    with open(shard, "r+b") as f:
        f.seek(offset + 5)
        value = f.read(1)[0]
        f.seek(offset + 5)
        f.write(bytes([value ^ 0xFF]))
    with pytest.raises(imgpack.Error, match=r"shard-00002\.h5.*row 0"):
        imgpack.Dataset(damaged, verify_checksums=True)
    # Opening without the check succeeds; a loader that verifies names the record.
    loader = imgpack.Loader(damaged, batch_size=8, order="sequential", verify_checksums=True)
    with pytest.raises(imgpack.Error, match=r"shard-00002\.h5: row 0 \(sample \d+\) does not "
                                            r"match its stored checksum"):
        for batch in loader:
            pass
    # Without verification the damaged byte is delivered as stored.
    plain = imgpack.Loader(damaged, batch_size=180, order="sequential", variants="all")
    batch = next(iter(plain))
    assert np.asarray(batch.images).shape[0] == 180


def test_bad_requests_are_value_errors(dataset_dir):
    with pytest.raises(ValueError, match="nope.*cv3"):
        imgpack.Loader(dataset_dir, split="nope", role="train")
    with pytest.raises(ValueError, match="fold"):
        imgpack.Loader(dataset_dir, split="cv3", fold=3, role="val")
    with pytest.raises(ValueError):
        imgpack.Loader(dataset_dir, role="train")  # no split
    with pytest.raises(ValueError, match="split=''"):
        imgpack.Loader(dataset_dir, split="")  # None says "no split"
    assert not issubclass(ValueError, imgpack.Error)


CLASSES = ("Dataset", "Loader", "Split", "Pairs", "Batch", "Array", "_EpochIterator",
           "_PairsIterator")


@pytest.mark.parametrize("name", CLASSES)
def test_new_without_init_is_a_type_error_not_a_crash(name):
    cls = getattr(imgpack, name)
    with pytest.raises(TypeError, match=r"imgpack\.%s\.__new__\(\) alone makes no usable" % name):
        cls.__new__(cls)
    # A Python subclass's alike, and its subclass's. (CLS.__new__(SUBCLASS)
    # is what a subclass's own __new__ asks for through super().)
    sub = type("Sub" + name, (cls,), {})
    subsub = type("SubSub" + name, (sub,), {})
    for made in (sub, subsub):
        with pytest.raises(TypeError, match=r"%s\.__new__\(\) alone makes no usable" % made.__name__):
            made.__new__(made)


def test_subclasses_are_made_as_before(dataset_dir):
    class Named(imgpack.Dataset):
        def __init__(self, path):
            super().__init__(path)
            self.name = os.path.basename(path)

    class Counting(imgpack.Loader):
        pass

    dataset = Named(dataset_dir)
    assert dataset.name == os.path.basename(dataset_dir)
    loader = Counting(dataset, batch_size=8)
    assert isinstance(loader, imgpack.Loader)
    plain = imgpack.Loader(dataset_dir, batch_size=8)
    assert sum(len(batch) for batch in loader) == sum(len(batch) for batch in plain) > 0

    class Forgetful(imgpack.Dataset):
        def __init__(self, path):
            pass

    with pytest.raises(TypeError, match="__init__"):
        Forgetful(dataset_dir)

    # A subclass's own __new__ runs, super().__new__ included; its
    # subclasses inherit it.
    made = []

    class Counted(imgpack.Dataset):
        def __new__(cls, *args, **kwargs):
            made.append(cls.__name__)
            return super().__new__(cls)

    class CountedToo(Counted):
        pass

    assert len(Counted(dataset_dir)) == len(CountedToo(dataset_dir)) == len(dataset)
    assert made == ["Counted", "CountedToo"]

    # The next __init_subclass__ in the MRO runs (a mixin's registry), and a
    # class keyword nobody takes is a TypeError, as for any class.
    registry = []

    class Registering:
        def __init_subclass__(cls, **kwargs):
            super().__init_subclass__(**kwargs)
            registry.append(cls.__name__)

    class Mixed(imgpack.Dataset, Registering):
        pass

    assert registry == ["Mixed"]
    assert len(Mixed(dataset_dir)) == len(dataset)
    with pytest.raises(TypeError):
        class Keyworded(imgpack.Dataset, bogus=1):
            pass


# The issue's own reproduction: a shard truncated after the loader started.
# The child process must end with imgpack.Error, not die of SIGBUS.
TRUNCATE_WHILE_READING = r"""
import glob, os, sys
import imgpack
path, read_path = sys.argv[1], sys.argv[2]
loader = imgpack.Loader(path, batch_size=16, read_path=read_path, prefetch=2)
it = iter(loader)
held = [next(it), next(it)]  # as many live batches as prefetch: no hint about them is due
for shard in glob.glob(os.path.join(path, "shard-*.h5")):
    os.truncate(shard, 0)
try:
    for epoch in range(3):
        loader.set_epoch(epoch + 1)
        sum(len(b) for b in loader)
    print("no error")
except imgpack.Error as e:
    print("imgpack.Error:", e)
"""


@pytest.mark.parametrize("read_path", ["auto", "mapped", "read"])
def test_a_shard_truncated_while_a_loader_reads_raises_not_sigbus(damaged, read_path):
    done = subprocess.run([sys.executable, "-c", TRUNCATE_WHILE_READING, damaged, read_path],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (done.returncode, done.stderr)
    assert done.stdout.startswith("imgpack.Error:"), done.stdout + done.stderr
    assert os.path.join(damaged, "shard-") in done.stdout
    assert "holds its slot" not in done.stdout  # the hint belongs to held slots only


# A daemon thread still iterating when the interpreter exits: Python would end
# it when it next asks for the interpreter lock (pthread_exit, whose unwinding
# must pass through the module's frames); the module's calls wait for the
# process to end instead, and the process exits cleanly either way.
DAEMON_AT_EXIT = r"""
import sys, threading, time
import imgpack
loader = imgpack.Loader(sys.argv[1], batch_size=4, prefetch=2, threads=1)
def forever():
    while True:
        for batch in loader:
            pass
threading.Thread(target=forever, daemon=True).start()
time.sleep(0.05)
"""


def exits_cleanly(script, dataset_dir, failure):
    """Runs `script` 12 times; each must exit 0 without `failure` on stderr."""
    for attempt in range(12):
        done = subprocess.run([sys.executable, "-c", script, dataset_dir],
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, (attempt, done.returncode, done.stderr)
        assert failure not in done.stderr, done.stderr


def test_interpreter_exit_while_a_daemon_thread_iterates_is_clean(dataset_dir):
    exits_cleanly(DAEMON_AT_EXIT, dataset_dir, "terminate called")


# Threads opening datasets and making loaders with keyword arguments when the
# interpreter exits: pybind11 frees a call's keyword dict as its frame unwinds,
# which without the interpreter lock was a fatal error.
KEYWORDS_AT_EXIT = r"""
import sys, threading, time
import imgpack
dataset = imgpack.Dataset(sys.argv[1])
def open_many():
    while True:
        imgpack.Dataset(sys.argv[1], verify_checksums=False)
        imgpack.Loader(dataset, batch_size=4)
for _ in range(4):
    threading.Thread(target=open_many, daemon=True).start()
time.sleep(0.1)
"""


def test_interpreter_exit_while_daemon_threads_make_loaders_with_keywords_is_clean(dataset_dir):
    exits_cleanly(KEYWORDS_AT_EXIT, dataset_dir, "Fatal Python error")


# A daemon thread inside a call that runs Python code (a path's __fspath__, a
# 0-d array's item()) when the interpreter exits: the code sleeps past the
# exit, so Python ends the thread there, inside the module's call, every time.
# An object released while the interpreter finalizes (a module's are) keeps
# the process alive until the thread has been ended.
INSIDE_A_CALL_AT_EXIT = r"""
import sys, threading, time, types
import imgpack
dataset = imgpack.Dataset(sys.argv[1])
class SlowPath:
    def __fspath__(self):
        time.sleep(0.2)
        return sys.argv[1]
class SlowScalar:
    ndim = 0
    def item(self):
        time.sleep(0.2)
        return 0.5
calls = {"path": lambda: imgpack.Dataset(SlowPath(), verify_checksums=False),
         "item": lambda: imgpack.Loader(dataset, batch_size=4, hflip=SlowScalar())}
threading.Thread(target=calls[sys.argv[2]], daemon=True).start()
time.sleep(0.05)
class Linger:
    def __del__(self, sleep=time.sleep):
        sleep(0.6)
lingering = types.ModuleType("lingering")
lingering.linger = Linger()
sys.modules["lingering"] = lingering
del lingering
"""


@pytest.mark.parametrize("call", ["path", "item"])
def test_interpreter_exit_inside_a_call_running_python_code_is_clean(dataset_dir, call):
    done = subprocess.run([sys.executable, "-c", INSIDE_A_CALL_AT_EXIT, dataset_dir, call],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (done.returncode, done.stderr)
    assert "Fatal Python error" not in done.stderr, done.stderr
