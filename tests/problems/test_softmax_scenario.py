"""[problem] kind = "softmax" through the config, held-out metrics in the trace, MAML's
separate |D'| / |D''| batch sizes."""

from __future__ import annotations

import numpy as np
import pytest

from fedsim import config
from fedsim.engine import problem_for, run
from fedsim.errors import ConfigError
from fedsim.local.maml import MAMLRule
from fedsim.problems import evaluation
from fedsim.problems.softmax import SoftmaxProblem

PROBLEM = {"kind": "softmax", "n_clients": 5, "split": "dirichlet", "a": 0.5,
           "test_fraction": 0.2, "reg": 1e-3, "seed": 0, "min_rows": 5}


def _scenario(metrics, record=None, **alg):
    a = {"name": "fedasync", "client_rule": "sgd", "Q": 2, "eta": 0.1, "batch": 8,
         "beta": 0.5}
    a.update(alg)
    rec = {"every": 10, "metrics": list(metrics)}
    rec.update(record or {})
    return config.Scenario.from_dict({
        "name": "sm", "seed": 3, "problem": dict(PROBLEM), "algorithm": a,
        "delays": {"compute": {"kind": "exponential", "rate": 1.0}},
        "horizon": {"steps": 60}, "record": rec})


def test_softmax_kind_builds_the_digits_problem():
    sc = _scenario(["test_acc"])
    p = problem_for(sc)
    q = SoftmaxProblem.digits(5, split="dirichlet", a=0.5, test_fraction=0.2, reg=1e-3,
                              seed=0, min_rows=5)
    assert isinstance(p, SoftmaxProblem) and sc.problem.n == 5
    assert all(np.array_equal(x, y) for x, y in zip(p.X, q.X, strict=True))
    assert all(np.array_equal(x, y) for x, y in zip(p.X_test, q.X_test, strict=True))


def test_unknown_softmax_key_is_a_config_error():
    with pytest.raises(ConfigError, match="problem.bogus"):
        config.ProblemConfig.from_dict({**PROBLEM, "bogus": 1})


def test_held_out_metrics_in_the_trace_equal_the_evaluation_module():
    sc = _scenario(["test_acc", "test_loss", "pers_acc_maml", "pers_acc_me", "f_gap"],
                   {"maml_alpha": 0.1, "me_lam": 1.0})
    tr = run(sc, 0)
    p = problem_for(sc)
    w = tr.final_w
    g = evaluation.global_metrics(p, w)
    assert tr.metrics["test_acc"][-1] == g["test_acc"]
    assert tr.metrics["test_loss"][-1] == g["test_loss"]
    assert tr.metrics["pers_acc_maml"][-1] == evaluation.personalised_metrics(
        p, w, "maml", alpha=0.1)["acc"]
    assert tr.metrics["pers_acc_me"][-1] == evaluation.personalised_metrics(
        p, w, "me", lam=1.0)["acc"]
    for m in ("test_acc", "pers_acc_maml", "pers_acc_me"):
        assert np.all((tr.metrics[m] >= 0) & (tr.metrics[m] <= 1))
    # the model learns: accuracy at the end beats the zero model's (10 classes: ~0.1)
    assert tr.metrics["test_acc"][-1] > tr.metrics["test_acc"][0] + 0.2


def test_held_out_metric_needs_test_rows_and_its_parameter():
    with pytest.raises(ConfigError, match="maml_alpha"):
        run(_scenario(["pers_acc_maml"]), 0)
    sc = config.Scenario.from_dict({
        "name": "q", "problem": {"kind": "quadratic", "n": 2, "dim": 2, "mu": 0.5, "L": 1.0},
        "algorithm": {"name": "fedasync"}, "horizon": {"steps": 5},
        "record": {"metrics": ["test_acc"]}})
    with pytest.raises(ConfigError, match="held-out rows"):
        run(sc, 0)


class _Counting:
    """Wraps a problem; records the sizes of the batches drawn."""

    def __init__(self, p):
        self.p, self.sizes = p, []

    def __getattr__(self, name):
        return getattr(self.p, name)

    def sample_batch(self, i, size, rng):
        self.sizes.append(size)
        return self.p.sample_batch(i, size, rng)


@pytest.mark.parametrize("variant,expect", [("maml", [40, 7, 3]), ("hfmaml", [40, 7, 3]),
                                            ("fomaml", [40, 7])])
def test_maml_draws_D_then_D_prime_then_D_second(variant, expect):
    p = _Counting(problem_for(_scenario(["test_acc"])))
    rule = MAMLRule(p, 0.1, 1, 40, 0.05, variant, batch_inner=7, batch_hess=3)
    rule.direction(0, np.zeros(p.dim), np.random.default_rng(0))
    assert p.sizes == expect


def test_maml_default_batches_are_the_old_behaviour():
    p = problem_for(_scenario(["test_acc"]))
    w = np.full(p.dim, 0.01)
    a = MAMLRule(p, 0.1, 1, 6, 0.05, "maml").direction(1, w, np.random.default_rng(5))
    b = MAMLRule(p, 0.1, 1, 6, 0.05, "maml", batch_inner=6, batch_hess=6).direction(
        1, w, np.random.default_rng(5))
    assert np.array_equal(a, b)


def test_batch_inner_and_hess_in_the_config():
    sc = _scenario(["test_acc"], client_rule="hfmaml", alpha=0.05, batch_inner=4,
                   batch_hess=2)
    assert sc.algorithm.batch_inner == 4 and sc.algorithm.batch_hess == 2
    with pytest.raises(ConfigError, match="batch_hess"):
        _scenario(["test_acc"], client_rule="hfmaml", alpha=0.05, batch_hess=0)
    with pytest.raises(ConfigError, match="batch_hess"):
        _scenario(["test_acc"], batch_hess=2)  # not used by the sgd rule
