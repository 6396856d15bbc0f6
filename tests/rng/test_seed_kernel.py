"""The compiled seed hash gives ``pcg64_seed_words``'s words (and NumPy's) bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from fedsim.rng import SERVER, Streams
from fedsim.rng.seed_kernel import seed_words_grid
from fedsim.rng.seeding import (
    INIT_A,
    INIT_B,
    MIX_MULT_L,
    MIX_MULT_R,
    MULT_A,
    MULT_B,
    POOL,
    grid_seed_words,
    pcg64_seed_words,
    stream_keys,
)
from fedsim.rng.streams import client_states, numpy_state


def compiled(seed_words: list[int], reps, owners, purpose: int) -> np.ndarray:
    sw = seed_words + [0] * max(0, POOL - len(seed_words))
    return seed_words_grid(sw, reps, owners, purpose, INIT_A, MULT_A, INIT_B, MULT_B,
                           MIX_MULT_L, MIX_MULT_R)


@pytest.mark.parametrize("seed", [0, 1, 12345, 2**32 - 1, 2**32, 2**70 + 3, 2**160 + 7])
def test_compiled_words_are_the_vectorised_words(seed: int) -> None:
    words = [(seed >> (32 * k)) & 0xFFFFFFFF for k in range(max(1, (seed.bit_length() + 31) // 32))]
    reps, owners = [0, 3, 2**32 - 1], np.array([0, 1, 7, 999, SERVER, 2**32 - 1])
    for purpose in (0, 1, 5):
        want = pcg64_seed_words(seed, stream_keys(reps, owners, ["delays", "noise", "init"][
            (0, 1, 5).index(purpose)]))
        got = compiled(words, reps, owners, purpose)
        assert got.dtype == np.uint64 and got.tobytes() == want.tobytes()


def test_large_grids_take_the_compiled_hash_and_match_numpy() -> None:
    n = 70_000  # above GRID_COMPILED_MIN
    got = grid_seed_words(7, [0, 2], np.arange(n), "delays")
    assert got.tobytes() == pcg64_seed_words(7, stream_keys([0, 2], range(n), "delays")).tobytes()
    rows = client_states(7, [2], n, "delays")[0]
    for i in (0, 1, n - 1):
        want = Streams(7, 2).client(i, "delays").bit_generator.state
        assert numpy_state(rows[i]) == want
