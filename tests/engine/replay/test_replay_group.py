"""Many replicates' tables in one compiled call (fedsim.engine.replay.group): a replicate's
numbers do not depend on the group it is replayed in, its place there, the budget of the
calls or the other replicates (one of them diverging included)."""

from __future__ import annotations

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


def _scenario(metrics=("grad_sq", "f_gap", "ergodic_f_gap"), every: int = 3,
              steps: int = 40) -> Scenario:
    return Scenario.from_dict({
        "name": "group", "seed": 4,
        "problem": {"kind": "quadratic", "n": 5, "dim": 3, "mu": 0.2, "L": 1.0,
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


P, TABLES, CF, SF, PLAN = _setup(SC)
W0 = initial_model(P, SC)


def _states():
    """Fresh noise stream rows (a replay advances them in place)."""
    return noise_streams(SC.seed, REPS, P.n, True)


ALONE = [replay_one(TABLES[k], CF, SF, PLAN, _states()[k], W0) for k in range(len(REPS))]


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
    edges = [0, *sorted(cuts), len(REPS)]
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        ks = [order[j] for j in range(lo, hi)]
        got = replay_group(TableGroup([TABLES[k] for k in ks]), CF, SF, PLAN, _states()[ks],
                           [W0] * len(ks), budget=budget)
        for k, res in zip(ks, got, strict=True):
            _same(res, ALONE[k])


def test_a_diverging_replicate_leaves_its_group_bitwise() -> None:
    """A non-finite initial model makes one replicate diverge at its first step; the
    others of its group are their replays alone."""
    w0s = [W0.copy() for _ in REPS]
    w0s[3] = np.full_like(W0, np.inf)
    got = replay_group(TableGroup(TABLES), CF, SF, PLAN, _states(), w0s)
    assert got[3].diverged_step == 1
    for k in (0, 1, 2, 4, 5, 6):
        _same(got[k], ALONE[k])


def test_progress_reports_the_steps_replayed() -> None:
    seen = []
    total = sum(t.steps_done for t in TABLES)
    replay_group(TableGroup(TABLES), CF, SF, PLAN, _states(), [W0] * len(REPS), budget=17,
                 progress=seen.append)
    assert seen == sorted(seen) and seen[-1] == total
    assert len(seen) == -(-total // 17)


def test_the_group_traces_equal_the_engine() -> None:
    for r, tr in zip(REPS, run_batch(SC, REPS), strict=True):
        assert tr.equals(run(SC, r))


def test_group_slices_bound_the_steps() -> None:
    sl = group_slices(TABLES, steps=2 * 41)
    assert [(s.start, s.stop) for s in sl] == [(0, 2), (2, 4), (4, 6), (6, 7)]
    assert group_slices(TABLES, steps=1) == [slice(k, k + 1) for k in range(7)]
    assert group_slices(TABLES, steps=10 ** 9) == [slice(0, 7)]


def test_a_group_of_tables_without_steps_ends() -> None:
    """A time horizon before the first upload: every table has no step; the group ends
    (the calls' step budget is never 0) with the initial records only."""
    d = SC.to_dict()
    d["horizon"] = {"time": 1e-9}
    sc = Scenario.from_dict(d)
    p, tables, cf, sf, plan = _setup(sc)
    assert all(t.steps_done == 0 for t in tables)
    got = replay_group(TableGroup(tables), cf, sf, plan,
                       noise_streams(sc.seed, REPS, p.n, True), [W0] * len(REPS))
    assert [g.steps_done for g in got] == [0] * len(REPS)
    assert all(np.array_equal(g.final_w, W0) for g in got)
    for r, tr in zip(REPS, run_batch(sc, REPS), strict=True):
        assert tr.equals(run(sc, r))
