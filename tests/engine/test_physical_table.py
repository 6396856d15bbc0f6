"""The asynchronous physical model as table -> replay equals the engine at main (bd440e6).

``data/physical_golden.npz`` holds traces computed by ``fedsim.engine.run`` at main, before
the physical model became a table writer, for the cases of
``data/physical_golden_cases.json`` (FedBuff with each staleness weight and trigger,
AS-FedAvg with a period trigger, beta != 1, a time horizon and the expcycle model, MAML and
Moreau clients, diverging runs), replicates 0 and 3; regenerate only with the engine of a
commit that predates the change.  Also: the SimPy writer's table is FedAsync's compiled
timeline bit for bit, and the table checks its shapes.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from fedsim.algorithms import get_algorithm
from fedsim.config import Scenario
from fedsim.engine import run, run_batch
from fedsim.engine.models.physical.simpy_writer import AsyncRun
from fedsim.engine.models.physical.upload_tables import fedasync_tables, upload_tables
from fedsim.engine.replay.table import EventTable
from fedsim.engine.setup import problem_for
from fedsim.errors import FedsimError
from fedsim.rng import Streams

DATA = Path(__file__).parent / "data"
CASES = json.loads((DATA / "physical_golden_cases.json").read_text())
BASE = {
    "name": "gold", "seed": 11,
    "problem": {"kind": "quadratic", "n": 6, "dim": 3, "mu": 0.2, "L": 1.0, "noise_sd": 0.2,
                "seed": 2},
    "delays": {"download": {"kind": "exponential", "rate": 5.0},
               "compute": {"kind": "exponential", "rate": 3.0},
               "upload": {"kind": "lognormal", "mu": -1.0, "sigma": 0.5}},
    "horizon": {"steps": 200},
    "record": {"metrics": ["grad_sq", "dist_sq", "f_gap", "ergodic_f_gap"]},
}
COLS = ("time", "kind_code", "client", "staleness_steps", "staleness_time", "buffer_fill",
        "metric_steps", "client_updates", "concurrency_time", "concurrency_busy", "final_w")


def scenario(name: str) -> Scenario:
    d = json.loads(json.dumps(BASE))
    for k, v in CASES[name].items():
        d[k] = {**d.get(k, {}), **v} if isinstance(v, dict) and k != "algorithm" else v
    return Scenario.from_dict(d)


@pytest.fixture(scope="module")
def golden():
    with np.load(DATA / "physical_golden.npz") as z:
        return {k: z[k] for k in z.files}


#: a rule whose operation order changed since bd440e6 (REPLAY_SPEC 4: model and metrics
#: within 1e-10 relative): the compiled Moreau rule sums the quadratic's batch gradient in
#: index order, not BLAS order (``tests/rules/test_moreau_compiled.py``)
REORDERED = {"moreau": 1e-10}


def _same(got, want, rel: float) -> bool:
    if rel == 0.0:
        return np.array_equal(got, want, equal_nan=True)
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    return got.shape == want.shape and np.allclose(got, want, rtol=rel, atol=0.0,
                                                   equal_nan=True)


@pytest.mark.parametrize("name", sorted(CASES))
def test_replayed_physical_runs_equal_the_engine_at_main(name, golden):
    """``run`` and ``run_batch`` (R = 2, a diverging replicate next to another) both."""
    sc = scenario(name)
    rel = REORDERED.get(sc.algorithm.client_rule, 0.0)
    batch = run_batch(sc, [0, 3])
    for r, tr in [(0, run(sc, 0)), (3, run(sc, 3)), (0, batch[0]), (3, batch[1])]:
        key = f"{name}|{r}"
        for c in COLS:
            assert _same(getattr(tr, c), golden[f"{key}|{c}"], rel if c == "final_w" else 0.0), c
        want = {k.split("|m:")[1]: v for k, v in golden.items() if k.startswith(key + "|m:")}
        assert set(tr.metrics) == set(want)
        for m, v in want.items():
            assert _same(tr.metrics[m], v, rel), m
        steps, dstep, sim_time, cmean = golden[f"{key}|scalars"]
        assert tr.steps_done == steps and tr.sim_time == sim_time
        assert (tr.diverged_step if tr.diverged else -1) == dstep
        assert tr.concurrency_mean == cmean or (np.isnan(cmean)
                                                and np.isnan(tr.concurrency_mean))
    if "diverges" in name:
        assert tr.diverged and tr.diverged_step < sc.horizon.steps


@pytest.mark.parametrize("delays", [
    {"think": {"kind": "exponential", "rate": 3.0}},
    {"read_at": "arrival", "compute_per": "step"},
    {"think": {"kind": "uniform", "low": 0.0, "high": 0.4}, "read_at": "arrival"}])
def test_simpy_writer_table_is_the_compiled_fedasync_timeline(delays):
    """The generic SimPy writer (one step per upload) and FedAsync's compiled event loop /
    vectorised merge write the same table, column for column."""
    d = json.loads(json.dumps(BASE))
    d["algorithm"] = {"name": "fedasync", "Q": 2, "eta": 0.05}
    d["delays"] = {**d["delays"], **delays}
    sc = Scenario.from_dict(d)
    p = problem_for(sc)
    for r in (0, 5):
        a = AsyncRun(sc, p, Streams(sc.seed, r), False, get_algorithm(sc.algorithm.name)).table()
        b = fedasync_tables(sc, [r], n=p.n, Q=2)[0]
        for f in ("time", "kind", "client", "staleness_steps", "staleness_time",
                  "buffer_fill", "ptr", "c_client", "c_read", "c_steps", "c_stale",
                  "client_updates", "concurrency_time", "concurrency_busy", "metric_steps",
                  "u_client", "u_before"):
            assert np.array_equal(getattr(a, f), getattr(b, f)), f
        assert (a.sim_time, a.steps_done, a.staleness_bound) == (
            b.sim_time, b.steps_done, b.staleness_bound)
        for t in (1, 7, a.steps_done // 2, a.steps_done):  # divergence truncation agrees
            for x, y in zip(a.truncated(t), b.truncated(t), strict=True):
                assert np.array_equal(x, y)


@pytest.mark.parametrize("name, K, delays", [
    ("fedbuff", 3, {"think": {"kind": "exponential", "rate": 3.0}, "read_at": "arrival"}),
    ("asfedavg", 2, {"compute": {"kind": "constant", "value": 1.0},
                     "think": {"kind": "constant", "value": 0.5}}),
    ("fedbuff", 1, {"compute_per": "step"})])
def test_simpy_writer_table_is_the_grouped_upload_timeline(name, K, delays):
    """A count trigger: the SimPy writer's table is the compiled upload timeline grouped
    ``K`` uploads a step (ties of constant delays included), its truncations too."""
    d = json.loads(json.dumps(BASE))
    d["algorithm"] = {"name": name, "Q": 2, "eta": 0.05, "buffer": K,
                      **({"client_rule": "upload"} if name == "asfedavg" else {})}
    d["trigger"] = {"kind": "every_k", "count": K} if K > 1 else {"kind": "every_upload"}
    d["delays"] = {**d["delays"], **delays}
    d["horizon"] = {"steps": 150}
    sc = Scenario.from_dict(d)
    p = problem_for(sc)
    for r in (0, 2):
        a = AsyncRun(sc, p, Streams(sc.seed, r), False, get_algorithm(sc.algorithm.name)).table()
        b = upload_tables(sc, [r], n=p.n, Q=2, K=K, per_upload=False)[0]
        for f in ("time", "kind", "client", "staleness_steps", "staleness_time",
                  "buffer_fill", "ptr", "c_client", "c_read", "c_steps", "c_stale",
                  "client_updates", "concurrency_time", "concurrency_busy", "metric_steps",
                  "u_client", "u_before"):
            assert np.array_equal(getattr(a, f), getattr(b, f)), f
        assert (a.sim_time, a.steps_done, a.staleness_bound) == (
            b.sim_time, b.steps_done, b.staleness_bound)
        for t in (1, 7, a.steps_done // 2, a.steps_done):
            for x, y in zip(a.truncated(t), b.truncated(t), strict=True):
                assert np.array_equal(x, y)


def _table(**over):
    T = 3
    kw = dict(time=[1.0, 2.0, 3.0], kind=[1, 1, 1], client=[0, 1, 0],
              staleness_steps=[0, 1, 1], staleness_time=[1.0, 2.0, 1.5],
              buffer_fill=[1, 1, 1], ptr=[0, 1, 2, 3], c_client=[0, 1, 0], c_read=[0, 0, 1],
              c_steps=[2, 2, 2], c_stale=[0, 1, 1], sim_time=3.0, steps_done=T,
              client_updates=[2, 1], concurrency_time=[0.0], concurrency_busy=[1.0],
              metric_steps=[0, 1, 2, 3], staleness_bound=np.inf, u_client=[0, 1, 0],
              u_before=[0, 1, 2])
    kw.update(over)
    return EventTable(**kw)


def test_event_table_checks_its_columns():
    tb = _table()
    assert tb.c_client.dtype == np.int32 and tb.kind.dtype == np.int8 and tb.max_lag() == 2
    assert tb.columns()["client"].tolist() == [-1, 0, 1, 0]
    assert tb.truncated(2)[1].tolist() == [1, 1]
    for bad, field in ((dict(ptr=[0, 2, 1, 3]), "ptr"), (dict(c_read=[1, 0, 1]), "c_read"),
                       (dict(time=[1.0, 2.0]), "time"), (dict(c_steps=[2, 2]), "c_steps"),
                       (dict(concurrency_busy=[1.0, 0.5]), "concurrency_busy")):
        with pytest.raises(FedsimError, match=field):
            _table(**bad)


@pytest.mark.parametrize("name", ["fedasync-diverges", "fedbuff-count-isqrt"])
def test_interpreted_rules_replay_as_the_reference(name, monkeypatch):
    """Without a compiled view (``sgd._COMPILED = False``) the replay runs the same rule
    functions interpreted (``sgd_round.py_func`` with the interpreted oracle, NumPy
    streams): equal to the per-step reference engine bit for bit, diverging run included."""
    import fedsim.local.sgd as sgd
    from fedsim.engine.models.physical.reference import run_reference

    monkeypatch.setattr(sgd, "_COMPILED", False)
    sc = scenario(name)
    a = run(sc, 1)
    assert a.equals(run_reference(sc, 1))
    assert run_batch(sc, [0, 1])[1].equals(a)
