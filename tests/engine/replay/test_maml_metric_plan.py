"""A replayed logistic MAML run recording ``grad_maml_sq`` (the shape of the suites'
``theorem2-logistic`` rows) takes the compiled metric plan; its values are the Python plan's
and the engine's."""

from __future__ import annotations

import numpy as np
import pytest

from fedsim.config import Scenario
from fedsim.engine import problem_for, run, run_batch
from fedsim.engine.replay.driver import metric_plan
from fedsim.engine.replay.metrics import MetricPlan
from fedsim.problems.base import Problem


def _scenario(metrics=("grad_maml_sq",), record_alpha=None, rule="maml") -> Scenario:
    alg = {"name": "fedasync", "model": "window", "Q": 2, "eta": 0.05, "beta": 1.0, "tau": 2,
           "delay_pmf": [1 / 3, 1 / 3, 1 / 3], "client_rule": rule, "batch": 2}
    if rule == "maml":
        alg["alpha"] = 0.5
    rec = {"every": 1, "metrics": list(metrics)}
    if record_alpha is not None:
        rec["maml_alpha"] = record_alpha
    return Scenario.from_dict({
        "name": "maml-plan", "seed": 11,
        "problem": {"kind": "logistic", "n_clients": 4, "dim": 3, "samples_per_client": 20,
                    "heterogeneity": 1.0, "seed": 0, "anchors": "all", "anchor_scale": 1.0,
                    "feature_scale": 1.0},
        "algorithm": alg, "horizon": {"steps": 60}, "record": rec})


REPS = [0, 1, 2]


@pytest.mark.parametrize("metrics", [("grad_maml_sq",), ("grad_sq", "grad_maml_sq")])
def test_the_plan_is_compiled_and_equals_the_python_plan(metrics):
    sc = _scenario(metrics)
    p = problem_for(sc)
    plan = metric_plan(sc, p)
    assert plan.compiled
    python = MetricPlan(p, list(metrics), None, 0.5, None)
    assert not python.compiled
    # the plan's rows from snapshots: w0 and the models the runs end at
    W = np.stack([np.zeros(p.dim)] + [tr.final_w for tr in run_batch(sc, REPS)])
    steps = np.arange(W.shape[0])
    a, b = plan.values(steps, W), python.values(steps, W)
    ref = [float(np.sum(Problem.grad_F_maml(p, w, 0.5) ** 2)) for w in W]
    for name in metrics:
        assert np.array_equal(a[name], b[name])
    np.testing.assert_allclose(a["grad_maml_sq"], ref, rtol=1e-10, atol=0)

def test_the_replayed_values_equal_the_engine():
    """``run_batch`` (compiled plan, inline in the replay loop) and the SimPy engine
    (Recorder: ``LogisticProblem.grad_F_maml_sq``, the same compiled function) give the same
    trace; every recorded value is ||grad_F_maml||^2 of the interpreted path to 1e-10."""
    sc = _scenario(("grad_maml_sq",))
    p = problem_for(sc)
    for r, tr in zip(REPS, run_batch(sc, REPS), strict=True):
        assert tr.equals(run(sc, r))
    tr = run_batch(sc, [0])[0]
    vals = np.asarray(tr.metrics["grad_maml_sq"])
    assert vals.size == 61 and np.all(np.isfinite(vals))
    ref_w0 = float(np.sum(Problem.grad_F_maml(p, np.zeros(p.dim), 0.5) ** 2))
    assert vals[0] == pytest.approx(ref_w0, rel=1e-10)


def test_record_alpha_reaches_the_compiled_metric():
    """``record.maml_alpha`` with an SGD rule: the plan is compiled with that alpha (its
    values are the alpha's, not the NaN of the view's default data)."""
    sc = _scenario(("grad_maml_sq",), record_alpha=0.25, rule="sgd")
    p = problem_for(sc)
    plan = metric_plan(sc, p)
    assert plan.compiled
    w = np.array([[0.1, -0.3, 0.2]])
    got = plan.values(np.array([0]), w)["grad_maml_sq"][0]
    assert got == p.grad_F_maml_sq(w[0], 0.25)
    assert got == pytest.approx(float(np.sum(Problem.grad_F_maml(p, w[0], 0.25) ** 2)),
                                rel=1e-10)
    tr = run_batch(sc, [0])[0]
    assert tr.equals(run(sc, 0))
