"""Synchronous rounds as an event table (REPLAY_SPEC sections 1 and 4): the table SimPy
writes (:func:`fedsim.engine.models.sync.simpy_writer.sync_timeline`) has the step columns
of the Traces the engine of main computed in SimPy (``data/sync_reference.npz``,
``sync_cases.py``) bit for bit, for every case (quadratic and softmax digits; SGD,
MAML/FO/HF, Moreau; participation < 1, server_mix != 1; a time horizon inside a round; a
diverging run, whose table runs on to the horizon and agrees with the engine's up to the
divergence)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from sync_cases import CASES, INTERPRETED, REFERENCE, load_reference, scenario

import fedsim.local.sgd as sgd_mod
from fedsim.engine import run, run_batch
from fedsim.engine.models.sync import sync_table
from fedsim.engine.models.sync.simpy_writer import sync_timeline
from fedsim.engine.replay.driver import replay_table
from fedsim.rng import Streams

# one worker runs this module (make test: --dist loadgroup): the replay kernels of its
# rule combinations are compiled once, not by both workers at the same time
pytestmark = pytest.mark.xdist_group("test_sync_table")

_REF = load_reference()
#: cases whose client rule changed its operation order since the reference (the compiled
#: Moreau rule's exact solve on quadratics: one Newton step on a Cholesky factor); their
#: timeline columns stay exact, metrics and final model within 1e-10 relative
ROUNDING = ("quad_moreau",)
_TIMELINE = ("time", "kind_code", "client", "staleness_steps", "staleness_time", "buffer_fill",
             "metric_steps", "client_updates", "concurrency_time", "concurrency_busy")


def max_rel_diff(tr, ref) -> float:
    """The largest relative difference of a metric or ``final_w`` between two Traces
    whose timelines are equal bit for bit (asserted)."""
    for c in _TIMELINE:
        assert np.array_equal(getattr(tr, c), getattr(ref, c)), c
    assert (tr.diverged_step, tr.steps_done, tr.sim_time) == \
        (ref.diverged_step, ref.steps_done, ref.sim_time)
    assert set(tr.metrics) == set(ref.metrics)
    worst = 0.0
    for a, b in [(tr.metrics[k], ref.metrics[k]) for k in ref.metrics] + [(tr.final_w,
                                                                           ref.final_w)]:
        a, b = np.asarray(a, float), np.asarray(b, float)
        assert np.array_equal(np.isnan(a), np.isnan(b))
        ok = ~np.isnan(b)
        den = np.maximum(np.abs(b[ok]), np.finfo(float).tiny)
        worst = max(worst, float(np.max(np.abs(a[ok] - b[ok]) / den, initial=0.0)))
    return worst
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


# -- the replay along the table ---------------------------------------------------------

@pytest.mark.parametrize("key", _KEYS, ids=[f"{k}-{r}" for k, r in _KEYS])
def test_run_equals_engine_reference(key):
    """``fedsim.engine.run`` (table -> replay) gives main's SimPy-computed Trace bit for
    bit (``Trace.equals``; the info too): every metric, held-out ones included, the final
    model, the busy curve, the truncation at a divergence."""
    name, r = key
    tr = run(scenario(name), r)
    ref = _REF[key]
    if name in ROUNDING:
        assert max_rel_diff(tr, ref) <= 1e-10
    else:
        assert tr.equals(ref)
    assert tr.concurrency_mean == ref.concurrency_mean
    assert tr.staleness_bound == ref.staleness_bound == 0.0
    assert {k: tr.info[k] for k in ref.info} == ref.info


@pytest.mark.parametrize("name", ["quad_sgd", "digits_hfmaml", "quad_diverge"])
def test_run_batch_equals_run_and_is_independent_of_r(name):
    """``run_batch`` gives each replicate's reference Trace, whatever the other
    replicates of the call."""
    sc = scenario(name)
    reps = CASES[name][1]
    both = run_batch(sc, list(reps))
    for k, r in enumerate(reps):
        assert both[k].equals(_REF[(name, r)])
    alone = run_batch(sc, [reps[-1]])
    assert alone[0].equals(both[-1])


_INTERP = load_reference(REFERENCE.with_name("sync_reference_interpreted.npz"))


@pytest.mark.parametrize("name", INTERPRETED)
def test_interpreted_path_equals_reference(name, monkeypatch):
    """The same rules interpreted (``.py_func`` with the problem's own oracles, the
    interpreted loop) give main's interpreted engine's Trace bit for bit."""
    monkeypatch.setattr(sgd_mod, "_COMPILED", False)
    tr = run(scenario(name), 0)
    assert tr.equals(_INTERP[(name, 0)])


def test_divergence_of_one_replicate_leaves_the_others():
    """A replicate started from a huge model diverges at step 1, is marked and frozen
    there, and the other replicate of the same call is its reference bit for bit."""
    from fedsim.engine.setup import problem_for
    from fedsim.local import make_client_rule
    from fedsim.servers.fedavg import FedAvgRule

    sc = scenario("quad_sgd")
    problem = problem_for(sc)
    n, d = problem.n, problem.dim
    tables = [sync_table(sc, n, Streams(sc.seed, r)) for r in (0, 1)]
    w0 = np.zeros((2, d))
    w0[0] = 1e200
    rule = make_client_rule(sc.algorithm, problem)
    traces = replay_table(sc, tables, rule, FedAvgRule(float(sc.algorithm.get("server_mix"))),
                          replicates=[0, 1], problem=problem, w0=w0)
    bad, good = traces
    assert bad.diverged and bad.diverged_step == 1 and bad.steps_done == 1
    assert bad.time.size == 2 and bad.client_updates.sum() == tables[0].buffer_fill[0]
    ref = _REF[("quad_sgd", 1)]
    assert good.equals(ref)


# -- the writer without SimPy equals SimPy's --------------------------------------------

def _same_columns(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for k in a:
        if isinstance(a[k], np.ndarray):
            assert a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]), k
        else:
            assert a[k] == b[k], k


_DELAY = {"exp": {"kind": "exponential", "rate": 2.0},
          "const": {"kind": "constant", "value": 0.5},
          "unif": {"kind": "uniform", "low": 0.25, "high": 0.75},
          "zero": {"kind": "constant", "value": 0.0}}


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 7), part=st.sampled_from([0.1, 0.5, 0.8, 1.0]),
       Q=st.integers(1, 3), per_step=st.booleans(),
       kinds=st.tuples(st.sampled_from(["exp", "const", "zero"]),
                       st.sampled_from(["exp", "const", "unif"]),
                       st.sampled_from(["exp", "const", "zero"])),
       horizon=st.sampled_from(["steps", "time_on_grid", "time"]),
       seed=st.integers(0, 2**16), rep=st.integers(0, 3), every=st.integers(1, 3))
@example(n=4, part=0.5, Q=1, per_step=False, kinds=("const", "const", "const"),
         horizon="time_on_grid", seed=1, rep=0, every=1)  # t_end on an arrival
@example(n=5, part=1.0, Q=2, per_step=True, kinds=("const", "const", "zero"),
         horizon="time_on_grid", seed=2, rep=1, every=2)  # t_end on an arrival
@example(n=3, part=0.8, Q=1, per_step=False, kinds=("zero", "unif", "const"),
         horizon="time", seed=3, rep=2, every=1)
def test_rounds_timeline_equals_simpy(n, part, Q, per_step, kinds, horizon, seed, rep, every):
    """:func:`rounds_timeline` (the table ``run`` replays) is SimPy's table bit for bit:
    random and Constant delays (ties), compute per step or per round, step horizons and
    time horizons, including ones that fall exactly on arrivals (Constant delays on the
    grid of 0.5)."""
    from fedsim.config import Scenario
    from fedsim.engine.models.sync.rounds import rounds_timeline

    hz = {"steps": {"steps": 9}, "time_on_grid": {"time": 3.0, "steps": 50},
          "time": {"time": 2.7, "steps": 50}}[horizon]
    d = {"download": _DELAY[kinds[0]], "compute": _DELAY[kinds[1]],
         "upload": _DELAY[kinds[2]]}
    if per_step:
        d["compute_per"] = "step"
    sc = Scenario.from_dict({
        "name": "w", "seed": seed,
        "problem": {"kind": "quadratic", "n": n, "dim": 2, "mu": 0.1, "L": 1.0, "seed": 0},
        "algorithm": {"name": "fedavg", "client_rule": "sgd", "Q": Q, "eta": 0.1,
                      "participation": part},
        "delays": d, "horizon": hz, "record": {"every": every, "metrics": ["grad_sq"]}})
    ref = sync_timeline(sc, n, Streams(seed, rep))
    _same_columns(rounds_timeline(sc, n, Streams(seed, rep)), ref)
    const = {"const": 0.5, "zero": 0.0}
    if horizon == "time_on_grid" and all(k in const for k in kinds):
        L = const[kinds[0]] + (Q if per_step else 1) * const[kinds[1]] + const[kinds[2]]
        on_grid = L > 0 and (3.0 / L).is_integer()
    else:
        on_grid = False
    if on_grid:  # the horizon falls on the arrivals of a round
        assert ref["sim_time"] == 3.0 and np.all(ref["time"] < 3.0)
        assert np.any((ref["b_time"] == 3.0) & (ref["b_delta"] == 1))  # counted, no step
