"""Compiled PCG64 stream rows (fedsim.rng.streams): bitwise NumPy's numbers and
states, for every method a problem's compiled ``draw`` may call."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedsim.jit import jit
from fedsim.rng import Streams
from fedsim.rng.seeding import client_bitgens, pcg64_seed_words, stream_keys
from fedsim.rng.streams import (
    client_states,
    numpy_state,
    seed_states,
    server_states,
    stream,
)


@jit(cache=False)
def _normals(states, row, out):
    gen = stream(states, row)
    for k in range(out.shape[0]):
        out[k] = gen.standard_normal()
    return 0


@jit(cache=False)
def _mixed(states, row, kinds, highs, out):
    gen = stream(states, row)
    for k in range(out.shape[0]):
        c = kinds[k]
        if c == 0:
            out[k] = gen.standard_normal()
        elif c == 1:
            out[k] = gen.random()
        elif c == 2:
            out[k] = gen.standard_exponential()
        else:
            out[k] = gen.integers(0, highs[k])
    return 0


@pytest.mark.parametrize("seed", [0, 5, 2**40 + 17])
def test_rows_are_the_pcg64_states_of_fedsim_rng(seed):
    S = client_states(seed, [0, 2, 9], 4, "noise")
    bgs = client_bitgens(seed, [0, 2, 9], 4, "noise")
    for k, r in enumerate([0, 2, 9]):
        for i in range(4):
            assert numpy_state(S[k, i]) == bgs[k][i].state
            assert numpy_state(S[k, i]) == Streams(seed, r).client(i, "noise").bit_generator.state


def test_two_million_normals_and_the_final_state_are_numpys():
    """2e6 draws take the ziggurat's slow branches (wedges, tail) thousands of times."""
    S = client_states(3, [1], 3, "noise")[0].copy()
    out = np.empty(2_000_000)
    _normals(S, 2, out)
    g = Streams(3, 1).client(2, "noise")
    np.testing.assert_array_equal(out, g.standard_normal(out.size))
    assert numpy_state(S[2]) == g.bit_generator.state
    assert numpy_state(S[0]) == Streams(3, 1).client(0, "noise").bit_generator.state  # untouched


@pytest.mark.parametrize("high", [1, 2, 7, 1000, 2**32 - 1, 2**32, 2**32 + 1, 2**33 + 5, 2**62])
def test_interleaved_methods_are_numpys(high):
    """Every method, interleaved at random (the buffered 32-bit half of ``integers`` with a
    small range carries across the other methods' draws, as in NumPy)."""
    rng = np.random.default_rng(high % 1000)
    m = 20_000
    kinds = rng.integers(0, 4, m)
    highs = np.full(m, high, dtype=np.int64)
    S = client_states(11, [4], 2, "noise")[0].copy()
    out = np.empty(m)
    _mixed(S, 1, kinds, highs, out)
    g = Streams(11, 4).client(1, "noise")
    ref = np.empty(m)
    for k in range(m):
        c = kinds[k]
        ref[k] = (g.standard_normal() if c == 0 else g.random() if c == 1
                  else g.standard_exponential() if c == 2 else g.integers(0, high))
    np.testing.assert_array_equal(out, ref)
    assert numpy_state(S[1]) == g.bit_generator.state


@jit(cache=False)
def _exponentials(states, row, out):
    gen = stream(states, row)
    for k in range(out.shape[0]):
        out[k] = gen.standard_exponential()
    return 0


def test_two_million_exponentials_and_the_final_state_are_numpys():
    S = client_states(8, [2], 2, "delays")[0].copy()
    out = np.empty(2_000_000)
    _exponentials(S, 1, out)
    g = Streams(8, 2).client(1, "delays")
    want = g.standard_exponential(out.size)
    np.testing.assert_array_equal(out, want)
    assert numpy_state(S[1]) == g.bit_generator.state
    assert want.max() > 7.7  # draws from the tail (idx 0: ziggurat_exp_r - log1p(-U))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**63), r=st.integers(0, 10**6), i=st.integers(0, 2**31 - 1))
def test_large_seeds_and_keys_client_and_server_streams_are_numpys(seed, r, i):
    """Seeds of several words and spawn-key entries up to ``2**31 - 1``: the rows of a client
    stream and of the server's timer stream, and 50 exponentials of each, are NumPy's."""
    rows = seed_states(pcg64_seed_words(seed, stream_keys([r], [i], "delays")))
    timer = server_states(seed, [r], "timer")[0].copy()
    gens = (Streams(seed, r).client(i, "delays"), Streams(seed, r).server("timer"))
    for S, g in zip((rows, timer), gens, strict=True):
        assert numpy_state(S[0]) == g.bit_generator.state
        out = np.empty(50)
        _exponentials(S, 0, out)
        np.testing.assert_array_equal(out, g.standard_exponential(50))
        assert numpy_state(S[0]) == g.bit_generator.state
