"""FedAsync + Moreau (PersA-FL-ME, [P] Option C) replayed through the one table driver with
the rule's own form (``MoreauRule.replay_form``): compiled, interpreted and the engine's
``round`` give the same traces and inner counters."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import fedsim.local.sgd as sgd_mod
from fedsim.config import Scenario
from fedsim.engine.dispatch import write_tables
from fedsim.engine.replay.driver import replay_table
from fedsim.engine.setup import problem_for
from fedsim.local import make_client_rule
from fedsim.local.forms import round_form

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "rules"))
import moreau_cases as mc  # noqa: E402

# the Moreau rule's compiled forms are shared by these modules: one worker compiles each once
pytestmark = pytest.mark.xdist_group("moreau_kernels")

CASES = ("fedasync_moreau_quad", "fedasync_moreau_quad_exact", "fedasync_moreau_softmax")
REPS = (0, 2)
COUNTERS = ("inner_iters", "inner_solves", "inner_failures")


def _replay(name, form):
    sc = Scenario.from_dict(mc.ENGINE_CASES[name])
    p = problem_for(sc)
    tables = list(write_tables(sc, p, list(REPS)).tables)
    rule = make_client_rule(sc.algorithm, p)
    return replay_table(sc, tables, form(rule), replicates=list(REPS), problem=p), rule


def _same(a, b, rel, counters=True):
    for x, y in zip(a, b, strict=True):
        assert x.steps_done == y.steps_done
        if counters:
            assert [x.info[k] for k in COUNTERS] == [y.info[k] for k in COUNTERS]
        for m in x.metrics:
            u, v = np.asarray(x.metrics[m]), np.asarray(y.metrics[m])
            if rel == 0.0:
                assert np.array_equal(u, v, equal_nan=True), m
            else:
                np.testing.assert_allclose(v, u, rtol=rel, atol=0.0, err_msg=m)


@pytest.mark.parametrize("name", CASES)
def test_compiled_form_equals_the_rule_round(name):
    """The compiled form in the table kernel against the rule's own ``round`` wrapped
    (``round_form``, the interpreted kernel): bit for bit; the replicates' counters add up
    to the rule object's."""
    fast, rule = _replay(name, lambda r: r.replay_form())
    assert rule.replay_form().compiled
    slow, obj = _replay(name, round_form)
    _same(fast, slow, 0.0, counters=False)
    total = [sum(t.info[k] for t in fast) for k in COUNTERS]
    assert total == [getattr(obj, k) for k in COUNTERS] and total[1] > 0


@pytest.mark.parametrize("name", CASES)
def test_interpreted_form_equals_compiled(name, monkeypatch):
    """The same functions interpreted (``py_func`` with ``sample_batch``/``batch_grad``):
    bit for bit on softmax (the view's grad IS batch_grad), to 1e-12 on the quadratic."""
    fast, _ = _replay(name, lambda r: r.replay_form())
    monkeypatch.setattr(sgd_mod, "_COMPILED", False)
    slow, rule = _replay(name, lambda r: r.replay_form())
    assert not rule.replay_form().compiled
    _same(fast, slow, 0.0 if "softmax" in name else 1e-12)


def test_replicate_does_not_depend_on_the_others():
    sc = Scenario.from_dict(mc.ENGINE_CASES["fedasync_moreau_quad"])
    p = problem_for(sc)
    rule = make_client_rule(sc.algorithm, p)
    both = replay_table(sc, list(write_tables(sc, p, [0, 2]).tables), rule, replicates=[0, 2],
                        problem=p)
    one = replay_table(sc, list(write_tables(sc, p, [2]).tables), rule, replicates=[2], problem=p)
    assert both[1].equals(one[0])
