"""Held-out and personal metrics of many models in one pass (evaluation.*_batch,
problems.held_out_batch) against hand-computed values and the per-model evaluation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedsim.errors import ConfigError
from fedsim.problems import evaluation as ev
from fedsim.problems.held_out_batch import base_name, held_out_values
from fedsim.problems.logistic import LogisticProblem
from fedsim.problems.softmax import SoftmaxProblem
from fedsim.trace import metric_functions


@pytest.fixture(scope="module")
def digits():
    return SoftmaxProblem.digits(4, split="classes", classes_per_client=3, seed=1, reg=1e-2,
                                 test_fraction=0.2, validation_fraction=0.2)


def _logistic():
    X = [np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]]), np.array([[1.0, 1.0], [2.0, -1.0]])]
    y = [np.array([1.0, -1.0, 1.0]), np.array([-1.0, 1.0])]
    return LogisticProblem(X, y, nu_reg=0.1), X, y


def test_logistic_by_hand():
    """w = (2, -1): client 0's scores (2, -1, -2) -> hits (yes, yes, no); client 1's
    (1, 5) -> (no, yes); the second model w = 0 predicts +1 everywhere (score 0)."""
    p, X, y = _logistic()
    M = np.array([[[2.0, -1.0], [2.0, -1.0]], [[0.0, 0.0], [0.0, 0.0]]])
    acc, loss, cacc, closs = ev.models_metrics_batch(p, M, X, y, "clients")
    np.testing.assert_array_equal(cacc, [[2 / 3, 1 / 2], [2 / 3, 1 / 2]])
    l0 = np.mean([math.log1p(math.exp(-2)), math.log1p(math.exp(-1)), math.log1p(math.exp(2))])
    l1 = np.mean([math.log1p(math.exp(1)), math.log1p(math.exp(-5))])
    np.testing.assert_allclose(closs[0], [l0, l1], rtol=1e-14)
    np.testing.assert_allclose(closs[1], [math.log(2), math.log(2)], rtol=1e-15)
    np.testing.assert_array_equal(acc, [(2 / 3 + 1 / 2) / 2] * 2)
    acc_r, _, _, _ = ev.models_metrics_batch(p, M, X, y, "rows")
    np.testing.assert_allclose(acc_r, [3 / 5, 3 / 5], rtol=1e-15)
    pa, pl = ev.pooled_metrics_batch(p, M[:, 0], np.vstack(X), np.concatenate(y))
    np.testing.assert_allclose(pa, [3 / 5, 3 / 5], rtol=1e-15)
    np.testing.assert_allclose(pl[1], math.log(2), rtol=1e-15)


def _old_models_metrics(problem, models, Xs, ys, weighting):
    """The per-model evaluation as written before the batch (one model, one row set)."""
    acc = np.full(problem.n, math.nan)
    loss = np.full(problem.n, math.nan)
    for i, (Xi, yi, wi) in enumerate(zip(Xs, ys, models, strict=True)):
        if Xi.shape[0]:
            acc[i] = float(np.mean(ev.predict(problem, wi, Xi) == yi))
            loss[i] = ev.data_loss(problem, wi, Xi, yi)
    n_rows = np.array([X.shape[0] for X in Xs])
    has = n_rows > 0
    if weighting == "rows":
        wts = n_rows[has] / n_rows.sum()
        return float(wts @ acc[has]), float(wts @ loss[has]), acc, loss
    return float(np.mean(acc[has])), float(np.mean(loss[has])), acc, loss


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), S=st.integers(1, 6), scale=st.sampled_from([0.0, 0.1, 3.0]),
       weighting=st.sampled_from(["rows", "clients"]))
def test_batch_equals_one_model_at_a_time(digits, seed, S, scale, weighting):
    rng = np.random.default_rng(seed)
    M = scale * rng.standard_normal((S, digits.n, digits.dim))
    Xs, ys = ev.test_rows(digits)
    acc, loss, cacc, closs = ev.models_metrics_batch(digits, M, Xs, ys, weighting)
    for s in range(S):
        a, l_, ca, cl = _old_models_metrics(digits, M[s], Xs, ys, weighting)
        assert acc[s] == a                       # counts: exactly
        np.testing.assert_array_equal(cacc[s], ca)
        np.testing.assert_allclose(closs[s], cl, rtol=1e-12)
        assert loss[s] == pytest.approx(l_, rel=1e-12)
    pa, pl = ev.pooled_metrics_batch(digits, M[:, 0], np.vstack(Xs), np.concatenate(ys))
    X, y = np.vstack(Xs), np.concatenate(ys)
    for s in range(S):
        assert pa[s] == np.mean(ev.predict(digits, M[s, 0], X) == y)
        assert pl[s] == pytest.approx(ev.data_loss(digits, M[s, 0], X, y), rel=1e-12)


def test_held_out_values_equal_the_recorder(digits):
    """Every held-out name, batched, equals the Recorder's per-step function bit for bit."""
    names = ["test_acc", "test_loss", "pers_acc_maml", "pers_loss_maml", "pers_acc_me",
             "pers_loss_me", "pers_acc_beta", "pers_loss_beta", "val_acc", "val_loss",
             "val_pers_acc_maml", "val_pers_loss_beta"]
    rng = np.random.default_rng(7)
    S = 4
    W = 0.3 * rng.standard_normal((S, digits.dim))
    P = 0.3 * rng.standard_normal((S, digits.n, digits.dim))
    got = held_out_values(digits, names, W, P, maml_alpha=0.5, me_lam=2.0)
    holder: list = [None]
    fns = dict(metric_functions(digits, names, 0.5, 2.0, personal=lambda: holder[0]))
    for s in range(S):
        holder[0] = P[s]
        for name in names:
            assert got[name][s] == fns[name](W[s]), (name, s)


def test_base_name():
    assert base_name("val_acc") == ("test_acc", True)
    assert base_name("val_pers_loss_me") == ("pers_loss_me", True)
    assert base_name("pers_acc_beta") == ("pers_acc_beta", False)


def test_bad_shapes(digits):
    Xs, ys = ev.test_rows(digits)
    with pytest.raises(ConfigError, match="models.shape"):
        ev.models_metrics_batch(digits, np.zeros((2, digits.n, 3)), Xs, ys, "rows")
    with pytest.raises(ConfigError, match="W.shape"):
        ev.pooled_metrics_batch(digits, np.zeros((2, 3)), np.vstack(Xs), np.concatenate(ys))
    with pytest.raises(ConfigError, match="personal models"):
        held_out_values(digits, ["pers_acc_beta"], np.zeros((1, digits.dim)), None, None, None)
