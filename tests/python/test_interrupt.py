"""Waiting (python/src/loader_binding.cpp): next() waits with the interpreter
lock released, Ctrl-C interrupts a blocked next() at once, and a loader is
deleted promptly mid-epoch."""
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import imgpack

# The child blocks its loader's threads, then waits in next() until SIGINT.
# The stall: libc's sleep() installed as the C handler of SIGUSR2 (signal 12)
# puts the thread the signal is sent to to sleep for 12 s, so a tgkill() to
# each of the loader's threads freezes the reader while the main thread runs.
CHILD = r"""
import ctypes, json, os, signal, sys, threading, time
import imgpack
signal.signal(signal.SIGINT, signal.default_int_handler)
libc = ctypes.CDLL(None, use_errno=True)
libc.signal.restype = ctypes.c_void_p
libc.signal.argtypes = [ctypes.c_int, ctypes.c_void_p]
libc.signal(signal.SIGUSR2, ctypes.cast(libc.sleep, ctypes.c_void_p).value)
before = set(os.listdir("/proc/self/task"))
loader = imgpack.Loader(sys.argv[1], batch_size=4, prefetch=2, threads=1)
threads = set(os.listdir("/proc/self/task")) - before
assert len(threads) == 2, threads  # one reader thread, the upload stage
for tid in threads:
    assert libc.tgkill(os.getpid(), int(tid), signal.SIGUSR2) == 0
time.sleep(0.2)  # the handlers are running: the loader's threads sleep
it = iter(loader)
ticks = []
def tick():  # runs only while the main thread does not hold the interpreter lock
    while True:
        ticks.append(time.monotonic())
        time.sleep(0.002)
threading.Thread(target=tick, daemon=True).start()
entered = time.monotonic()
print("waiting", flush=True)
try:
    batch = next(it)
    result = {"delivered": True}
except KeyboardInterrupt:
    interrupted = time.monotonic()
    result = {"delivered": False, "entered": entered, "interrupted": interrupted,
              "ticks_while_waiting": sum(entered < t < interrupted for t in list(ticks))}
print(json.dumps(result), flush=True)
os._exit(0)  # the stalled threads wake up only after 12 s
"""


def test_ctrl_c_interrupts_a_blocked_next_at_once_and_other_threads_run_meanwhile(dataset_dir):
    child = subprocess.Popen([sys.executable, "-c", CHILD, dataset_dir], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "waiting", child.stderr.read()
        time.sleep(0.5)  # next() is blocked by now: nothing can be delivered for 12 s
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        result = json.loads(child.stdout.readline())
        assert child.wait(timeout=30) == 0
    finally:
        child.kill()
    assert not result["delivered"], "a stalled loader delivered a batch"
    assert result["interrupted"] - result["entered"] >= 0.45  # next() really was blocked
    latency = result["interrupted"] - sent
    assert latency < 0.5, "KeyboardInterrupt came %.3f s after SIGINT" % latency
    # Another Python thread ran during the wait: next() released the interpreter lock.
    assert result["ticks_while_waiting"] >= 20, result


def test_deleting_a_loader_mid_epoch_returns_promptly(dataset_dir):
    loader = imgpack.Loader(dataset_dir, batch_size=2, prefetch=16, threads=3, variants="all")
    it = iter(loader)
    kept = next(it)
    images = np.from_dlpack(kept.images).copy()
    start = time.monotonic()
    del it, loader  # the iterator holds the loader too
    elapsed = time.monotonic() - start
    assert elapsed < 1.0, "deleting the loader took %.3f s" % elapsed
    assert np.array_equal(np.from_dlpack(kept.images), images)  # taken batches stay valid


def test_close_mid_epoch_returns_promptly(dataset_dir):
    loader = imgpack.Loader(dataset_dir, batch_size=1, prefetch=64, threads=3, variants="all")
    it = iter(loader)
    next(it)
    start = time.monotonic()
    loader.close()
    assert time.monotonic() - start < 1.0
    with pytest.raises(RuntimeError, match="closed"):
        next(it)
