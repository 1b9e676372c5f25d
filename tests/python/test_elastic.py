"""Elastic restore from Python: a state saved by 2 ranks of batch 8 in the
middle of an epoch continues on 3 ranks of batch 8 (another global batch),
which deliver every remaining position of the epoch exactly once; on the same
topology the continuation is byte for byte."""
import numpy as np

import imgpack

SEED = 5


def loader(dataset_dir, world_size, rank, batch_size):
    return imgpack.Loader(dataset_dir, batch_size=batch_size, seed=SEED, rank=rank,
                          world_size=world_size, threads=2)


def records_of(batch):
    """The batch's records, its padding entries left out."""
    records = [int(r) for r in np.from_dlpack(batch.records)]
    return records[:len(records) - batch.padding]


def test_two_ranks_of_eight_continue_on_three_ranks_of_eight_exactly_once(dataset_dir):
    epoch = 2
    before, states, rest_on_two = [], [], []
    for rank in range(2):
        old = loader(dataset_dir, 2, rank, 8)
        old.set_epoch(epoch)
        it = iter(old)
        for _ in range(2):
            before += records_of(next(it))
        states.append(old.state())
        rest_on_two.append([(b.index, records_of(b), np.from_dlpack(b.images).tobytes())
                            for b in it])
    assert states[0] == states[1]  # every rank saves the same state
    saved = states[0]

    everything = loader(dataset_dir, 1, 0, 8)
    everything.set_epoch(epoch)
    whole = [r for b in everything for r in records_of(b)]
    consumed = 2 * 2 * 8
    assert sorted(before) == sorted(whole[:consumed])

    after = []
    for rank in range(3):
        new = loader(dataset_dir, 3, rank, 8)
        new.restore(saved)
        new.set_epoch(epoch)  # the top of the epoch loop keeps the restored position
        batches = list(new)
        assert [b.index for b in batches] == list(range(consumed // 24, consumed // 24 +
                                                        len(batches)))
        after += [r for b in batches for r in records_of(b)]
    assert sorted(after) == sorted(whole[consumed:])  # the rest, each once
    assert sorted(before + after) == sorted(whole)

    # The same topology: byte for byte what the uninterrupted ranks delivered.
    for rank in range(2):
        same = loader(dataset_dir, 2, rank, 8)
        same.restore(saved)
        got = [(b.index, records_of(b), np.from_dlpack(b.images).tobytes()) for b in same]
        assert got == rest_on_two[rank]
