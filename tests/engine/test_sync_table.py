"""Synchronous rounds as an event table (REPLAY_SPEC sections 1 and 4): the table SimPy
writes (:func:`fedsim.engine.sync.sync_timeline`) has the step columns of the Traces the
engine of main computed in SimPy (``data/sync_reference.npz``, ``sync_cases.py``) bit for
bit, for every case (quadratic and softmax digits; SGD, MAML/FO/HF, Moreau; participation
< 1, server_mix != 1; a time horizon inside a round; a diverging run, whose table runs on
to the horizon and agrees with the engine's up to the divergence)."""

from __future__ import annotations

import numpy as np
import pytest
from sync_cases import CASES, load_reference, scenario

from fedsim.engine.sync import sync_timeline
from fedsim.rng import Streams

_REF = load_reference()
_KEYS = sorted(_REF)


@pytest.mark.parametrize("key", _KEYS, ids=[f"{k}-{r}" for k, r in _KEYS])
def test_table_step_columns_equal_engine(key):
    name, r = key
    tr = _REF[key]
    sc = scenario(name)
    cols = sync_timeline(sc, sc.problem.n, Streams(sc.seed, r))
    t = tr.steps_done
    assert cols["steps_done"] >= t
    for col, tcol in (("time", "time"), ("kind", "kind_code"), ("client", "client"),
                      ("staleness_steps", "staleness_steps"),
                      ("staleness_time", "staleness_time"), ("buffer_fill", "buffer_fill")):
        assert np.array_equal(cols[col][:t], getattr(tr, tcol)[1:]), col
    m = tr.info["clients_per_round"]
    assert cols["info"]["clients_per_round"] == m
    assert np.array_equal(cols["ptr"][:t + 1], np.arange(t + 1) * m)
    steps = np.repeat(np.arange(1, cols["steps_done"] + 1), m)
    assert np.array_equal(cols["c_read"], steps - 1)
    assert np.all(cols["c_steps"] == int(sc.algorithm.get("Q")))
    for s in range(cols["steps_done"]):  # each round's clients, distinct and sorted
        row = cols["c_client"][s * m:(s + 1) * m]
        assert np.all(np.diff(row) > 0)
    if not tr.diverged:
        assert cols["steps_done"] == t
        assert cols["sim_time"] == tr.sim_time
        assert np.array_equal(cols["client_updates"], tr.client_updates)
        assert np.array_equal(cols["metric_steps"], tr.metric_steps)
        assert np.bincount(cols["u_client"], minlength=sc.problem.n).tolist() == \
            tr.client_updates.tolist()


def test_cases_cover_the_brief():
    """The reference covers what the sync replay must reproduce."""
    rules = {CASES[k][0]["algorithm"]["client_rule"] for k in CASES}
    assert rules == {"sgd", "maml", "fomaml", "hfmaml", "moreau"}
    assert any(tr.diverged for tr in _REF.values())
    assert any(CASES[k][0]["algorithm"].get("server_mix", 1.0) != 1.0 for k in CASES)
    held = {m for k in CASES for m in CASES[k][0]["record"]["metrics"]}
    assert {"test_acc", "pers_acc_maml", "pers_acc_me", "ergodic_f_gap"} <= held
