"""Many replicates' tables in one compiled call (fedsim.engine.replay.group): a replicate's
numbers do not depend on the group it is replayed in, its place there, the budget of the
calls or the other replicates (one of them diverging included)."""

from __future__ import annotations

import functools
from types import SimpleNamespace

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fedsim.algorithms import get_algorithm
from fedsim.config import Scenario
from fedsim.engine import problem_for, run, run_batch
from fedsim.engine.dispatch import write_tables
from fedsim.engine.replay.driver import metric_plan, noise_streams, replay_one
from fedsim.engine.replay.group import TableGroup, group_slices, replay_group
from fedsim.engine.setup import initial_model
from fedsim.local import make_client_rule

#: the clients of the module's scenario
N_CLIENTS = 5


def _scenario(metrics=("grad_sq", "f_gap", "ergodic_f_gap"), every: int = 3,
              steps: int = 40) -> Scenario:
    return Scenario.from_dict({
        "name": "group", "seed": 4,
        "problem": {"kind": "quadratic", "n": N_CLIENTS, "dim": 3, "mu": 0.2, "L": 1.0,
                    "heterogeneity": 1.0, "noise_sd": 0.3, "seed": 1},
        "algorithm": {"name": "fedasync", "client_rule": "sgd", "Q": 2, "eta": 0.1,
                      "beta": 0.9},
        "delays": {"compute": {"kind": "exponential", "rate": 1.0}},
        "horizon": {"steps": steps},
        "record": {"every": every, "metrics": list(metrics)}})


REPS = list(range(7))
SC = _scenario()


def _setup(sc: Scenario):
    p = problem_for(sc)
    tables = list(write_tables(sc, p, REPS).tables)
    cf = make_client_rule(sc.algorithm, p).replay_form()
    sf = get_algorithm(sc.algorithm.name).server(sc.algorithm, p).replay_form()
    return p, tables, cf, sf, metric_plan(sc, p)


@functools.cache
def _ctx() -> SimpleNamespace:
    """The module's tables, forms, plan, initial model and each replicate replayed alone,
    built on first use (not at import: every xdist worker imports every module)."""
    p, tables, cf, sf, plan = _setup(SC)
    w0 = initial_model(p, SC)
    c = SimpleNamespace(P=p, TABLES=tables, CF=cf, SF=sf, PLAN=plan, W0=w0)
    c.ALONE = [replay_one(tables[k], cf, sf, plan, _states()[k], w0) for k in range(len(REPS))]
    return c


def _states():
    """Fresh noise stream rows (a replay advances them in place)."""
    return noise_streams(SC.seed, REPS, N_CLIENTS, True)


def _same(a, b) -> None:
    assert (a.steps_done, a.diverged_step) == (b.steps_done, b.diverged_step)
    assert np.array_equal(a.final_w, b.final_w)
    assert np.array_equal(a.metric_steps, b.metric_steps)
    assert list(a.metrics) == list(b.metrics)
    for m in a.metrics:
        assert np.array_equal(a.metrics[m], b.metrics[m], equal_nan=True), m


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cuts=st.sets(st.integers(1, len(REPS) - 1)), budget=st.one_of(st.none(),
                                                                      st.integers(1, 60)),
       order=st.permutations(range(len(REPS))))
def test_any_split_order_and_budget_gives_the_same_bits(cuts, budget, order) -> None:
    """Replicates grouped at any cut points, in any order, replayed ``budget`` steps a
    call: each equals its replay alone (a group of one)."""
    c = _ctx()
    edges = [0, *sorted(cuts), len(REPS)]
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        ks = [order[j] for j in range(lo, hi)]
        got = replay_group(TableGroup([c.TABLES[k] for k in ks]), c.CF, c.SF, c.PLAN,
                           _states()[ks], [c.W0] * len(ks), budget=budget)
        for k, res in zip(ks, got, strict=True):
            _same(res, c.ALONE[k])


def test_a_diverging_replicate_leaves_its_group_bitwise() -> None:
    """A non-finite initial model makes one replicate diverge at its first step; the
    others of its group are their replays alone."""
    c = _ctx()
    w0s = [c.W0.copy() for _ in REPS]
    w0s[3] = np.full_like(c.W0, np.inf)
    got = replay_group(TableGroup(c.TABLES), c.CF, c.SF, c.PLAN, _states(), w0s)
    assert got[3].diverged_step == 1
    for k in (0, 1, 2, 4, 5, 6):
        _same(got[k], c.ALONE[k])


def test_progress_reports_the_steps_replayed() -> None:
    c = _ctx()
    seen = []
    total = sum(t.steps_done for t in c.TABLES)
    replay_group(TableGroup(c.TABLES), c.CF, c.SF, c.PLAN, _states(), [c.W0] * len(REPS), budget=17,
                 progress=seen.append)
    assert seen == sorted(seen) and seen[-1] == total
    assert len(seen) == -(-total // 17)


def test_the_group_traces_equal_the_engine() -> None:
    for r, tr in zip(REPS, run_batch(SC, REPS), strict=True):
        assert tr.equals(run(SC, r))


def test_group_slices_bound_the_steps() -> None:
    c = _ctx()
    sl = group_slices(c.TABLES, steps=2 * 41)
    assert [(s.start, s.stop) for s in sl] == [(0, 2), (2, 4), (4, 6), (6, 7)]
    assert group_slices(c.TABLES, steps=1) == [slice(k, k + 1) for k in range(7)]
    assert group_slices(c.TABLES, steps=10 ** 9) == [slice(0, 7)]


def test_a_group_of_tables_without_steps_ends() -> None:
    """A time horizon before the first upload: every table has no step; the group ends
    (the calls' step budget is never 0) with the initial records only."""
    c = _ctx()
    d = SC.to_dict()
    d["horizon"] = {"time": 1e-9}
    sc = Scenario.from_dict(d)
    p, tables, cf, sf, plan = _setup(sc)
    assert all(t.steps_done == 0 for t in tables)
    got = replay_group(TableGroup(tables), cf, sf, plan,
                       noise_streams(sc.seed, REPS, p.n, True), [c.W0] * len(REPS))
    assert [g.steps_done for g in got] == [0] * len(REPS)
    assert all(np.array_equal(g.final_w, c.W0) for g in got)
    for r, tr in zip(REPS, run_batch(sc, REPS), strict=True):
        assert tr.equals(run(sc, r))
