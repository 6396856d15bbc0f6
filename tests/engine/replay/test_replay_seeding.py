"""The vectorised SeedSequence hash gives fedsim.rng's streams bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from fedsim.rng import SERVER, Streams
from fedsim.rng.seeding import client_bitgens, pcg64_seed_words


@pytest.mark.parametrize("seed", [0, 1, 5, 2**32 + 9, 2**40 + 3, 2**130 + 7])
@pytest.mark.parametrize("purpose", ["delays", "noise"])
def test_client_bitgens_equal_fedsim_rng(seed: int, purpose: str) -> None:
    reps = [0, 3, 1000, 2**31]
    bgs = client_bitgens(seed, reps, 6, purpose)
    for a, r in enumerate(reps):
        for i in range(6):
            ref = Streams(seed, r).client(i, purpose).bit_generator.random_raw(16)
            assert np.array_equal(bgs[a][i].random_raw(16), ref), (seed, r, i)


def test_seed_words_equal_seedsequence_for_any_key() -> None:
    keys = np.array([[7, 0, 4], [0, SERVER, 3], [2**32 - 1, 5, 0]])
    got = pcg64_seed_words(12345, keys)
    for k, key in enumerate(keys.tolist()):
        ref = np.random.SeedSequence(12345, spawn_key=tuple(key)).generate_state(4, np.uint64)
        assert np.array_equal(got[k], ref)
