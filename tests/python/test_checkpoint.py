"""Loader checkpoints from Python (state_dict() / load_state_dict(), and the
state() / restore() bytes) and class-balanced sampling: the C++ LoaderState
and Sampling through the module."""
import base64
import collections
import json
import os
import subprocess

import numpy as np
import pytest
import torch

import imgpack
from conftest import make_dataset

GROWTH_HELPER = os.environ.get("IMGPACK_GROWTH_HELPER", "")


def records_of(batches):
    """The records of `batches`, padding entries left out."""
    out = []
    for b in batches:
        records = [int(r) for r in np.from_dlpack(b.records)]
        out += records[:len(records) - b.padding]
    return out


def contents_of(batches):
    """(images bytes, labels bytes, padding) of every batch: copies, so that
    no batch stays alive."""
    return [(np.asarray(b.images).tobytes(), np.asarray(b.labels).tobytes(), b.padding)
            for b in batches]


# Random crops and flips too: they depend on (seed, epoch, sample), so a
# resumed epoch must deliver the same pixels, not only the same records.
RESUMABLE = dict(split="cv3", fold=1, role="train", batch_size=5, seed=7, crop=(16, 12),
                 hflip=0.5, threads=2)


def test_state_dict_in_a_torch_checkpoint_continues_the_epoch_byte_for_byte(dataset_dir,
                                                                             tmp_path):
    uninterrupted = imgpack.Loader(dataset_dir, **RESUMABLE)
    uninterrupted.set_epoch(1)
    whole_epoch = contents_of(uninterrupted)
    next_epoch = contents_of(uninterrupted)  # epoch 2
    assert len(whole_epoch) == len(uninterrupted) > 4

    torch.manual_seed(0)
    model = torch.nn.Linear(12, 3)
    interrupted = imgpack.Loader(dataset_dir, **RESUMABLE)
    interrupted.set_epoch(1)
    it = iter(interrupted)
    assert contents_of(next(it) for _ in range(3)) == whole_epoch[:3]
    path = str(tmp_path / "checkpoint.pt")
    torch.save({"model": model.state_dict(), "loader": interrupted.state_dict(), "step": 3}, path)
    interrupted.close()
    del it, interrupted

    # Plain values only: the loader's part loads with weights_only=True
    # (torch.load's default from torch 2.6 on).
    checkpoint = torch.load(path, weights_only=True)
    restored_model = torch.nn.Linear(12, 3)
    restored_model.load_state_dict(checkpoint["model"])
    assert torch.equal(restored_model.weight, model.weight)
    resumed = imgpack.Loader(dataset_dir, **RESUMABLE)  # a new loader, as after a restart
    resumed.load_state_dict(checkpoint["loader"])
    assert resumed.epoch == 1
    for epoch in range(resumed.epoch, 3):
        resumed.set_epoch(epoch)  # keeps the restored position for the restored epoch
        got = contents_of(resumed)
        assert got == (whole_epoch[3:] if epoch == 1 else next_epoch), epoch


def test_state_dict_is_plain_values_that_survive_json(dataset_dir):
    loader = imgpack.Loader(dataset_dir, **RESUMABLE)
    loader.set_epoch(4)
    it = iter(loader)
    taken = contents_of(next(it) for _ in range(2))
    saved, saved_bytes = loader.state_dict(), loader.state()
    rest = contents_of(it)
    assert isinstance(saved, dict)
    assert all(type(v) in (int, str) for v in saved.values()), saved
    assert saved["format"] == "imgpack.loader_state" and saved["version"] == 2
    assert saved["generation"] == 0
    assert (saved["epoch"], saved["consumed"]) == (4, 2 * RESUMABLE["batch_size"])
    assert (saved["world_size"], saved["batch_size"], saved["seed"]) == (1, 5, 7)
    assert (saved["split"], saved["fold"], saved["role"]) == ("cv3", 1, "train")
    # The bytes inside are state()'s: the two forms are one state.
    assert base64.b64decode(saved["state"]) == saved_bytes

    copy = json.loads(json.dumps(saved))
    assert copy == saved
    resumed = imgpack.Loader(dataset_dir, **RESUMABLE)
    resumed.load_state_dict(copy)
    assert contents_of(resumed) == rest and len(taken) + len(rest) == len(loader)

    # Rank 0's dict serves every rank of another world size with the same global batch.
    delivered = []
    for rank in range(5):
        elastic = imgpack.Loader(dataset_dir, **dict(RESUMABLE, batch_size=1, rank=rank,
                                                     world_size=5))
        elastic.load_state_dict(copy)
        delivered += records_of(elastic)
    resumed.load_state_dict(copy)
    remaining = records_of(resumed)
    assert sorted(delivered) == sorted(remaining)
    # And on another global batch: 2 ranks of 4 deliver the rest once each.
    resized = []
    for rank in range(2):
        elastic = imgpack.Loader(dataset_dir, **dict(RESUMABLE, batch_size=4, rank=rank,
                                                     world_size=2))
        elastic.load_state_dict(copy)
        resized += records_of(elastic)
    assert sorted(resized) == sorted(remaining)


def test_state_and_restore_stay_as_aliases(dataset_dir):
    loader = imgpack.Loader(dataset_dir, **RESUMABLE)
    it = iter(loader)
    next(it)
    as_bytes, as_dict = loader.state(), loader.state_dict()
    rest = contents_of(it)
    from_bytes, from_dict = (imgpack.Loader(dataset_dir, **RESUMABLE) for _ in range(2))
    from_bytes.restore(as_bytes)
    from_dict.load_state_dict(as_dict)
    assert contents_of(from_bytes) == contents_of(from_dict) == rest
    assert from_bytes.state_dict() == from_dict.state_dict()


def test_load_state_dict_lightning_style_mid_epoch(dataset_dir):
    """Lightning restores a loader it may already have iterated:
    loader.load_state_dict(other.state_dict()) in the middle of an epoch."""
    source = imgpack.Loader(dataset_dir, **RESUMABLE)
    source.set_epoch(3)
    source_it = iter(source)
    for _ in range(4):
        next(source_it)
    target = imgpack.Loader(dataset_dir, **RESUMABLE)
    target_it = iter(target)  # epoch 0, two batches in
    next(target_it), next(target_it)
    target.load_state_dict(source.state_dict())
    with pytest.raises(RuntimeError, match="stale"):
        next(target_it)  # the iteration before the restore is over
    assert target.epoch == 3
    rest = contents_of(source_it)
    target_it = iter(target)
    assert contents_of(next(target_it) for _ in range(2)) == rest[:2]

    # Its own state, restored mid-epoch, continues where it is.
    target.load_state_dict(target.state_dict())
    assert contents_of(target) == rest[2:]
    # After the restored epoch, the next iteration is the next epoch.
    fresh = imgpack.Loader(dataset_dir, **RESUMABLE)
    fresh.set_epoch(4)
    assert contents_of(target) == contents_of(fresh)


def test_a_state_saved_at_the_end_of_an_epoch_continues_with_the_next(dataset_dir):
    """A checkpoint taken after the last batch of an epoch (Lightning saves at
    epoch end) resumes with the next epoch, as the uninterrupted loader's next
    iteration does, not with an empty one."""
    for last_batch in ("partial", "drop"):
        source = imgpack.Loader(dataset_dir, **dict(RESUMABLE, last_batch=last_batch))
        contents_of(source)  # epoch 0, whole
        saved = source.state_dict()
        target = imgpack.Loader(dataset_dir, **dict(RESUMABLE, last_batch=last_batch))
        target.load_state_dict(saved)
        resumed = contents_of(target)
        assert resumed, last_batch
        assert resumed == contents_of(source), last_batch  # both epoch 1
        assert target.epoch == source.epoch == 1


def test_a_state_saved_after_leaving_an_epoch_early_resumes_as_the_run_goes_on(dataset_dir):
    """A loop that caps the steps of an epoch (break) and checkpoints after it:
    the uninterrupted loader's next iteration is the next epoch, and so is
    the resumed one's, with the README's set_epoch loop and without it. A
    checkpoint taken inside the loop still continues that epoch."""
    steps = 2

    def run(loader, epochs, stop_after=None):
        seen = []
        for epoch in range(loader.epoch, epochs):
            loader.set_epoch(epoch)
            for step, batch in enumerate(loader):
                seen.append((epoch, tuple(np.from_dlpack(batch.samples).tolist())))
                if step + 1 == steps:
                    break
            if epoch == stop_after:
                return seen, loader.state_dict()
        return seen, None

    whole, _ = run(imgpack.Loader(dataset_dir, **RESUMABLE), 3)
    first, saved = run(imgpack.Loader(dataset_dir, **RESUMABLE), 3, stop_after=0)
    resumed = imgpack.Loader(dataset_dir, **RESUMABLE)
    resumed.load_state_dict(saved)
    assert resumed.epoch == 1
    rest, _ = run(resumed, 3)
    assert first + rest == whole

    # Without set_epoch: each iteration reads the epoch after the last.
    def capped(loader, iterations):
        seen = []
        for _ in range(iterations):
            for step, batch in enumerate(loader):
                seen.append(contents_of([batch]))
                if step + 1 == steps:
                    break
        return seen

    plain = imgpack.Loader(dataset_dir, **RESUMABLE)
    expected = capped(plain, 3)
    source = imgpack.Loader(dataset_dir, **RESUMABLE)
    before = capped(source, 1)
    target = imgpack.Loader(dataset_dir, **RESUMABLE)
    target.load_state_dict(source.state_dict())
    assert before + capped(target, 2) == expected

    # Saved inside the loop, the iteration still going: the rest of that epoch.
    inside = imgpack.Loader(dataset_dir, **RESUMABLE)
    it = iter(inside)
    next(it)
    saved_inside = inside.state_dict()
    rest_of_epoch = contents_of(it)
    again = imgpack.Loader(dataset_dir, **RESUMABLE)
    again.load_state_dict(saved_inside)
    assert contents_of(again) == rest_of_epoch


def test_pairs_checkpoint_their_loader(dataset_dir):
    """Lightning is given loader.pairs(...) and checkpoints it when it has
    state_dict() and load_state_dict() (its _Stateful protocol)."""
    pairs = imgpack.Loader(dataset_dir, **RESUMABLE).pairs(torch.from_dlpack)
    it = iter(pairs)
    next(it), next(it)
    saved = pairs.state_dict()
    rest = [(images.clone(), labels.clone()) for images, labels in it]
    assert saved["consumed"] == 2 * RESUMABLE["batch_size"]
    resumed = imgpack.Loader(dataset_dir, **RESUMABLE).pairs(torch.from_dlpack)
    resumed.load_state_dict(json.loads(json.dumps(saved)))
    got = [(images.clone(), labels.clone()) for images, labels in resumed]
    assert len(got) == len(rest) == len(pairs) - 2
    assert all(torch.equal(a, c) and torch.equal(b, d) for (a, b), (c, d) in zip(got, rest))
    with pytest.raises(imgpack.Error, match="unknown member"):
        resumed.load_state_dict(edited(saved, step=2))


def edited(saved, **changes):
    out = dict(saved)
    out.update(changes)
    return out


def without(saved, *keys):
    return {k: v for k, v in saved.items() if k not in keys}


def reencoded(saved, transform):
    """saved with its 'state' bytes changed by transform(bytes)."""
    state = transform(base64.b64decode(saved["state"]))
    return edited(saved, state=base64.b64encode(state).decode("ascii"))


DAMAGED = {
    "missing state": (lambda d: without(d, "state"), r"no 'state'"),
    "missing format": (lambda d: without(d, "format"), r"no 'format'"),
    "missing fields": (lambda d: without(d, "seed", "epoch"), r"lacks 'epoch', 'seed'"),
    "other format": (lambda d: edited(d, format="torchdata"), r"'format' is 'torchdata'"),
    "epoch edited": (lambda d: edited(d, epoch=d["epoch"] + 1),
                     r"'epoch' is 1 but the saved state says 0"),
    "consumed edited": (lambda d: edited(d, consumed=0), r"'consumed' is 0"),
    "a bool for an int": (lambda d: edited(d, world_size=True), r"'world_size' is True"),
    "a str for an int": (lambda d: edited(d, seed="7"), r"'seed' is '7'"),
    "a float for an int": (lambda d: edited(d, batch_size=5.0), r"'batch_size' is 5\.0"),
    "unknown member": (lambda d: edited(d, rank=0), r"unknown member 'rank'"),
    "state not a str": (lambda d: edited(d, state=b"imgpack"), r"'state' is bytes"),
    "state not base64": (lambda d: edited(d, state="not base64!"), r"'state' is not base64"),
    "state truncated": (lambda d: reencoded(d, lambda b: b[:-5]), r"'state'.*damaged"),
    "state of something else": (lambda d: reencoded(d, lambda b: b"PK" + b),
                                r"'state'.*not an imgpack loader state"),
}


@pytest.mark.parametrize("damage", DAMAGED.keys())
def test_load_state_dict_refuses_a_damaged_dict(dataset_dir, damage):
    source = imgpack.Loader(dataset_dir, **RESUMABLE)
    it = iter(source)
    next(it), next(it)
    saved = source.state_dict()
    make, message = DAMAGED[damage]
    loader = imgpack.Loader(dataset_dir, **RESUMABLE)
    with pytest.raises(imgpack.Error, match=r"load_state_dict\(\): .*" + message):
        loader.load_state_dict(make(saved))
    # Refused, the loader is unchanged: it reads epoch 0 from its start.
    fresh = imgpack.Loader(dataset_dir, **RESUMABLE)
    assert contents_of(loader) == contents_of(fresh)


def test_load_state_dict_refuses_what_is_no_dict_and_other_options(dataset_dir):
    loader = imgpack.Loader(dataset_dir, **RESUMABLE)
    saved = loader.state_dict()
    with pytest.raises(TypeError, match="not bytes.*restore"):
        loader.load_state_dict(loader.state())
    for other in (None, [saved], json.dumps(saved)):
        with pytest.raises(TypeError, match="takes the dict"):
            loader.load_state_dict(other)
    with pytest.raises(ValueError, match="seed is 7 in the state, 8 here"):
        imgpack.Loader(dataset_dir, **dict(RESUMABLE, seed=8)).load_state_dict(saved)
    with pytest.raises(ValueError, match="the order is random in the state, sequential here"):
        imgpack.Loader(dataset_dir, **dict(RESUMABLE, order="sequential")).load_state_dict(saved)


def test_restore_continues_the_epoch_where_the_checkpoint_was(dataset_dir):
    options = dict(batch_size=6, seed=3, threads=2)
    loader = imgpack.Loader(dataset_dir, **options)
    loader.set_epoch(2)
    it = iter(loader)
    before = records_of(next(it) for _ in range(3))
    saved = loader.state()
    assert isinstance(saved, bytes) and saved
    rest = records_of(it)
    assert len(before) + len(rest) == loader.images_per_epoch

    resumed = imgpack.Loader(dataset_dir, **options)
    resumed.restore(saved)
    assert resumed.epoch == 2
    resumed.set_epoch(2)  # as a training loop does: keeps the restored position
    assert records_of(resumed) == rest

    # On two ranks with the same global batch (2 x 3), the ranks together
    # deliver exactly the rest of the epoch.
    delivered = []
    for rank in range(2):
        elastic = imgpack.Loader(dataset_dir, batch_size=3, seed=3, rank=rank, world_size=2)
        elastic.restore(saved)
        delivered += records_of(elastic)
    assert sorted(delivered) == sorted(rest)


def test_restore_refuses_other_options_and_damaged_bytes(dataset_dir):
    saved = imgpack.Loader(dataset_dir, batch_size=4, seed=1).state()
    with pytest.raises(ValueError, match="seed"):
        imgpack.Loader(dataset_dir, batch_size=4, seed=2).restore(saved)
    with pytest.raises(imgpack.Error):
        imgpack.Loader(dataset_dir, batch_size=4, seed=1).restore(saved[:-3] + b"xyz")


def growth_helper(*args, stdin=None):
    """tests/python/growth_helper.cpp: commits a removal, or rewrites state bytes as version 1."""
    assert GROWTH_HELPER, "IMGPACK_GROWTH_HELPER is not set; run through ctest"
    return subprocess.run([GROWTH_HELPER, *map(str, args)], input=stdin, capture_output=True,
                          check=True).stdout


def samples_of(batches):
    """The source samples of `batches`, padding entries left out."""
    out = []
    for b in batches:
        samples = [int(s) for s in np.from_dlpack(b.samples)]
        out += samples[:len(samples) - b.padding]
    return out


GROWN = dict(split="cv3", fold=0, role="train", batch_size=4, seed=5)


def test_a_removal_is_a_new_generation_that_loader_states_name(tmp_path):
    data = make_dataset(str(tmp_path), per_class=8, variants=1)
    before = imgpack.Dataset(data)
    assert (before.generation, before.num_removed) == (0, 0)
    loader = imgpack.Loader(before, **GROWN)
    next(iter(loader))
    saved = loader.state_dict()
    assert saved["generation"] == 0

    removed = [0, 5, 9, 17]
    growth_helper("remove", data, *removed)
    after = imgpack.Dataset(data)
    assert (after.generation, after.num_removed) == (1, len(removed))
    assert len(after) == len(before) == 32  # sample ids stay rows
    assert before.generation == 0  # a handle keeps the generation it opened

    # Removed samples are in no epoch of any role; the counts leave them out.
    everything = imgpack.Loader(after, batch_size=7, seed=1)
    assert everything.images_per_epoch == 32 - len(removed)
    for epoch in range(2):
        everything.set_epoch(epoch)
        assert sorted(samples_of(everything)) == [s for s in range(32) if s not in removed]
    for role in ("train", "val", "test"):
        kept = set(samples_of(imgpack.Loader(after, **dict(GROWN, role=role))))
        assert kept and not kept & set(removed), role
    # The handle opened before delivers every sample still.
    assert sorted(samples_of(imgpack.Loader(before, batch_size=7, seed=1))) == list(range(32))

    # A state of generation 0 on generation 1: imgpack.Error with both generations.
    grown = imgpack.Loader(after, **GROWN)
    with pytest.raises(imgpack.Error, match=r"state is of generation 0 .* now generation 1: "
                                            r"reopen .* or start a new epoch"):
        grown.load_state_dict(saved)
    with pytest.raises(imgpack.Error, match="generation 0"):
        grown.restore(loader.state())

    # A state of generation 1 names it, survives JSON and restores there.
    it = iter(grown)
    next(it)
    state = grown.state_dict()
    assert state["generation"] == 1
    rest = records_of(it)
    resumed = imgpack.Loader(after, **GROWN)
    resumed.load_state_dict(json.loads(json.dumps(state)))
    assert resumed.state_dict() == state
    assert records_of(resumed) == rest
    with pytest.raises(imgpack.Error, match="generation 1 .* now generation 0"):
        imgpack.Loader(before, **GROWN).load_state_dict(state)


def test_a_state_dict_of_version_1_is_of_generation_0(dataset_dir):
    """What state_dict() returned before states named a generation still restores."""
    loader = imgpack.Loader(dataset_dir, **RESUMABLE)
    it = iter(loader)
    next(it)
    current, current_bytes = loader.state_dict(), loader.state()
    rest = contents_of(it)
    old = {k: v for k, v in current.items() if k != "generation"}
    old["version"] = 1
    old_bytes = growth_helper("state-v1", stdin=current_bytes)
    assert b'"imgpack_loader_state":1' in old_bytes and b"generation" not in old_bytes
    old["state"] = base64.b64encode(old_bytes).decode("ascii")
    resumed = imgpack.Loader(dataset_dir, **RESUMABLE)
    resumed.load_state_dict(old)
    assert resumed.state_dict() == current  # saved again as version 2, generation 0
    assert contents_of(resumed) == rest
    # Its bytes alone too; a version 1 dict still has to agree with its bytes.
    imgpack.Loader(dataset_dir, **RESUMABLE).restore(old_bytes)
    with pytest.raises(imgpack.Error, match="'version' is 1 but the saved state says 2"):
        imgpack.Loader(dataset_dir, **RESUMABLE).load_state_dict(
            dict(old, state=current["state"], generation=0))


def test_class_balanced_sampling_draws_classes_equally(dataset_dir):
    loader = imgpack.Loader(dataset_dir, batch_size=50, sampling="class-balanced",
                            epoch_length=3000, seed=5)
    counts = collections.Counter(int(label) for b in loader for label in np.from_dlpack(b.labels))
    assert sum(counts.values()) == 3000
    share = 3000 / len(counts)
    for label, count in counts.items():
        assert abs(count - share) < 5 * (share ** 0.5), (label, count, counts)
    with pytest.raises(ValueError):
        imgpack.Loader(dataset_dir, sampling="often")
    with pytest.raises(TypeError):
        imgpack.Loader(dataset_dir, sampling="weighted", weights="heavy")
