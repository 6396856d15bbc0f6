"""AREA (both models) and the window model as event tables replayed by the one replay
(REPLAY_SPEC 1-2): the table's step columns equal the Trace columns of the engine that
computed per event (frozen from main at bd440e6 in ``data/area_window_traces.pkl.xz``, by
``tests/engine/data/README``'s recipe) bit for bit, and ``fedsim.engine.run`` (table ->
:func:`fedsim.engine.replay.driver.replay_table` with :func:`fedsim.local.area.
area_client_for` / :func:`fedsim.servers.area.area_server`, the window model with its
client rule and FedAsync's server) gives that engine's Trace (``Trace.equals``):
quadratic, norm and softmax digits, Poisson / count / periodic triggers, think pauses,
time horizons, divergence, the interpreted path."""

from __future__ import annotations

import functools
import lzma
import pickle
from pathlib import Path

import numpy as np
import pytest

from fedsim.config import Scenario
from fedsim.engine import run, run_batch
from fedsim.engine.models.area.schedule import area_invariant
from fedsim.engine.models.area.simpy_writer import area_table
from fedsim.engine.models.window import window_table
from fedsim.engine.setup import problem_for
from fedsim.rng import Streams
from fedsim.trace import Trace

# one worker runs this module (make test: --dist loadgroup): the replay kernels of its
# rule combinations are compiled once, not by both workers at the same time
pytestmark = pytest.mark.xdist_group("test_area_window_tables")

_REF = Path(__file__).parent / "data" / "area_window_traces.pkl.xz"


@functools.cache
def _frozen() -> dict:
    with lzma.open(_REF, "rb") as f:
        return pickle.load(f)


def frozen(name: str, r: int) -> Trace:
    """Replicate ``r`` of case ``name`` as the per-event engine of main computed it."""
    return Trace(**_frozen()[f"{name}/{r}"])

QUAD = {"kind": "quadratic", "n": 5, "dim": 3, "mu": 0.2, "L": 1.0, "heterogeneity": 1.0,
        "noise_sd": 0.1, "shared_hessian": False, "seed": 0}
NORM = {"kind": "norm", "B": 1.0, "n": 6, "dim": 1}
DIG = {"kind": "softmax", "n_clients": 4, "split": "dirichlet", "a": 0.1,
       "test_fraction": 0.2, "reg": 1e-3, "seed": 0, "min_rows": 5}
PHYS = {"download": {"kind": "exponential", "rate": 10.0},
        "compute": {"kind": "lognormal", "mu": 0.0, "sigma": 0.5},
        "upload": {"kind": "exponential", "rate": 10.0}}
EXP = {"compute": {"kind": "exponential", "rate": 1.0},
       "override": [{"clients": [1], "compute": {"kind": "exponential", "rate": 3.0}}]}
WIN = {"name": "fedasync", "model": "window", "client_rule": "sgd", "Q": 2, "eta": 0.1,
       "beta": 0.5, "tau": 3, "delay_pmf": [0.1, 0.2, 0.3, 0.4]}


def _area(model, M, alpha, batch=1, w0=None):
    a = {"name": "area", "model": model, "client_rule": "area", "M": M, "batch": batch,
         "alpha": alpha}
    if w0 is not None:
        a["w0"] = w0
    return a


def _sc(problem, alg, *, delays=None, trigger=None, steps=300, every=7,
        metrics=("f_gap",), time=None):
    d = {"name": "t", "seed": 3, "problem": problem, "algorithm": alg,
         "horizon": {"steps": steps}, "record": {"every": every, "metrics": list(metrics)}}
    if time is not None:
        d["horizon"]["time"] = time
    if delays is not None:
        d["delays"] = delays
    if trigger is not None:
        d["trigger"] = trigger
    return Scenario.from_dict(d)


CONST = {"kind": "constant", "value": 0.1}
CASES = {
    "alg-quad-poisson-ckd": _sc(QUAD, _area("algorithm", 3, {"kind": "c_over_k_plus_d",
                                                             "c": 2.0, "d": 10.0}),
                                delays=PHYS, trigger={"kind": "poisson", "rate": 3.0},
                                metrics=("f_gap", "dist_sq")),
    "alg-quad-every-think": _sc(QUAD, _area("algorithm", 2, CONST),
                                delays={**PHYS, "think": {"kind": "exponential", "rate": 5.0}},
                                trigger={"kind": "every_upload"}, metrics=("grad_sq",)),
    "alg-quad-period-time": _sc(QUAD, _area("algorithm", 1, {"kind": "c_over_k_plus_d",
                                                             "c": 1.0, "d": 3.0}),
                                delays=EXP, trigger={"kind": "period", "period": 0.7},
                                steps=100000, time=40.0),
    "alg-norm": _sc(NORM, _area("algorithm", 4, {"kind": "constant", "value": 0.05}, w0=1.0),
                    delays=EXP, trigger={"kind": "every_k", "count": 3},
                    metrics=("f_gap", "ergodic_f_gap")),
    "alg-digits": _sc(DIG, _area("algorithm", 2, {"kind": "constant", "value": 0.5}, 8),
                      delays=EXP, trigger={"kind": "every_k", "count": 4}, steps=200,
                      every=10, metrics=("test_acc", "test_loss", "f_gap")),
    "alg-quad-diverge": _sc(QUAD, _area("algorithm", 3, {"kind": "constant", "value": 9.0}),
                            delays=PHYS, trigger={"kind": "every_k", "count": 2}, steps=3000,
                            every=5),
    "it-quad-thm7": _sc(QUAD, _area("iterate_model", 2, {"kind": "theorem7"}), delays=EXP,
                        trigger={"kind": "poisson", "rate": 2.0},
                        metrics=("f_gap", "ergodic_f_gap")),
    "it-norm": _sc(NORM, _area("iterate_model", 10, {"kind": "constant", "value": 0.01},
                               w0=1.0), delays={"compute": {"kind": "exponential", "rate": 1.0}},
                   trigger={"kind": "poisson", "rate": 4.0}, steps=500, every=500,
                   metrics=("ergodic_f_gap",)),
    "it-digits": _sc(DIG, _area("iterate_model", 2, {"kind": "constant", "value": 0.5}, 8),
                     delays=EXP, trigger={"kind": "poisson", "rate": 2.0}, steps=200,
                     every=10, metrics=("test_acc", "f_gap")),
    "win-quad": _sc(QUAD, WIN, metrics=("f_gap", "grad_sq")),
    "win-quad-time": _sc(QUAD, WIN, steps=1000, time=250.5),
    "win-digits": _sc(DIG, {**WIN, "eta": 0.5, "batch": 8}, steps=200, every=10,
                      metrics=("test_acc", "f_gap")),
    "win-diverge": _sc(QUAD, {**WIN, "eta": 5.0, "beta": 1.0}, steps=3000, every=5),
}
COLS = [("time", "time"), ("kind_code", "kind"), ("client", "client"),
        ("staleness_steps", "staleness_steps"), ("staleness_time", "staleness_time"),
        ("buffer_fill", "buffer_fill")]


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("r", [0, 1])
def test_table_columns_and_replay_equal_the_engine(name, r) -> None:
    sc = CASES[name]
    p = problem_for(sc)
    area = sc.algorithm.name == "area"
    tab = (area_table if area else window_table)(sc, p, Streams(sc.seed, r))
    ref = frozen(name, r)
    T = ref.steps_done
    for tc, kc in COLS:
        np.testing.assert_array_equal(getattr(ref, tc)[1:], getattr(tab, kc)[:T], err_msg=tc)
    assert np.array_equal(np.bincount(tab.c_client, minlength=p.n), tab.client_updates)
    out = run(sc, r)
    assert out.equals(ref)
    if ref.diverged:
        assert tab.steps_done > T  # the table runs on; the replay stops at divergence


@pytest.mark.parametrize("name", ["it-quad-thm7", "alg-digits", "win-diverge"])
def test_run_batch_equals_the_engine_per_replicate(name) -> None:
    """``run_batch`` (R replicates) gives each replicate's frozen trace, whatever R."""
    sc = CASES[name]
    for r, tr in zip([2, 0], run_batch(sc, [2, 0]), strict=True):
        assert tr.equals(frozen(name, r))


def test_area_contributions_read_the_version_the_engine_read() -> None:
    """Algorithm 2: a client's round reads the version of its previous arrival (0 at
    first) with no contribution at aggregations; the iterate model reads t - 1."""
    sc = CASES["alg-quad-poisson-ckd"]
    tab = area_table(sc, problem_for(sc), Streams(sc.seed, 0))
    ptr, kind = tab.ptr, tab.kind
    last = {}
    for t in range(1, tab.steps_done + 1):
        rows = range(ptr[t - 1], ptr[t])
        assert len(rows) == (1 if kind[t - 1] == 3 else 0)
        for p in rows:
            i = int(tab.c_client[p])
            prev = last.get(i, 0)
            assert tab.c_read[p] == prev and tab.c_stale[p] == t - 1 - prev
            last[i] = t
    sc = CASES["it-quad-thm7"]
    tab = area_table(sc, problem_for(sc), Streams(sc.seed, 0))
    assert np.array_equal(tab.c_read, tab.contribution_steps() - 1)


@pytest.mark.parametrize("name", ["alg-quad-poisson-ckd", "alg-norm", "it-quad-thm7"])
def test_invariant_holds_along_the_replay(name) -> None:
    """[A] Appendix A: ``x_s + u_s = mean_i y_i`` after every event."""
    sc = CASES[name]
    p = problem_for(sc)
    tab = area_table(sc, p, Streams(sc.seed, 0))
    assert area_invariant(sc, p, tab, 0, tab.steps_done) <= 1e-12


@pytest.mark.parametrize("model", ["algorithm", "iterate_model"])
def test_interpreted_rules_replay_as_the_compiled_ones(model, monkeypatch) -> None:
    """A problem without a compiled view: the same rule sources run interpreted (the
    interpreted kernel, the problem's Python oracle): the same timeline, and metrics and
    final model within 1e-10 relative of the compiled replay (the oracle's NumPy products
    sum in another order: ~1e-17 seen)."""
    import fedsim.local.sgd as sgd_mod

    alg = _area(model, 2, CONST)
    trig = {"kind": "poisson", "rate": 2.0} if model == "iterate_model" else {
        "kind": "every_k", "count": 2}
    sc = _sc(QUAD, alg, delays=EXP, trigger=trig, steps=120, every=9)
    compiled = run(sc, 2)
    monkeypatch.setattr(sgd_mod, "_COMPILED", False)
    from fedsim.engine.models.area.schedule import area_client_rule

    assert not area_client_rule(sc, problem_for(sc)).replay_form().compiled
    out = run(sc, 2)
    for tc, _ in COLS:
        np.testing.assert_array_equal(getattr(out, tc), getattr(compiled, tc))
    np.testing.assert_allclose(out.final_w, compiled.final_w, rtol=1e-10, atol=0)
    np.testing.assert_allclose(out.metrics["f_gap"], compiled.metrics["f_gap"], rtol=1e-10,
                               atol=1e-300)
