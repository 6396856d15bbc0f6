"""The pieces AsyPFL needs on softmax digits: the O(m d C) Hessian diagonal (against the
dense Hessian and autograd), the seeded validation split (the rows without it are the rows
before it existed), and the personal-model / validation metrics (hand-computed cases)."""

from __future__ import annotations

import hashlib
import math

import autograd
import autograd.numpy as anp
import numpy as np
import pytest
from autograd.scipy.special import logsumexp as alse
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.datasets import load_digits

from fedsim.errors import ConfigError, FedsimError
from fedsim.problems import evaluation as ev
from fedsim.problems import splits
from fedsim.problems.softmax import SoftmaxProblem
from fedsim.trace import METRICS, PERSONAL, VALIDATION, metric_functions

LABELS = np.asarray(load_digits().target, dtype=np.int64)


def _random_problem(seed: int, n: int = 2, d: int = 4, c: int = 3, reg: float = 0.05,
                    scale: float = 1.0) -> SoftmaxProblem:
    rng = np.random.default_rng(seed)
    X = [scale * (rng.standard_normal((m, d)) + rng.standard_normal(d))
         for m in rng.integers(5, 15, size=n)]
    y = [rng.integers(0, c, size=x.shape[0]) for x in X]
    return SoftmaxProblem.from_arrays(X, y, c, reg)


# ------------------------------------------------------------------ Hessian diagonal
@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), scale=st.sampled_from([0.1, 1.0, 5.0]),
       c=st.integers(2, 5), wscale=st.sampled_from([0.0, 0.5, 3.0]))
def test_hess_diag_equals_dense_diagonal(seed, scale, c, wscale):
    p = _random_problem(seed, c=c, scale=scale)
    w = wscale * np.random.default_rng(seed + 1).standard_normal(p.dim)
    for i in range(p.n):
        dense = np.diagonal(p.hess(i, w))
        got = p.hess_diag(i, w)
        assert got.shape == (p.dim,)
        assert np.max(np.abs(got - dense)) <= 1e-12 * max(1.0, float(np.max(np.abs(dense))))


def test_hess_diag_against_autograd():
    p = _random_problem(3, c=4)
    w = 0.7 * np.random.default_rng(0).standard_normal(p.dim)
    for i in range(p.n):
        X, y, d, C = p.X[i], p.y[i], p.d, p.n_classes
        onehot = np.eye(C)[y]

        def f(v, X=X, onehot=onehot, d=d, C=C):
            Z = anp.dot(X, anp.reshape(v, (d, C)))
            return (anp.mean(alse(Z, axis=1) - anp.sum(Z * onehot, axis=1))
                    + 0.5 * p.reg * anp.sum(v * v))
        H = autograd.hessian(f)(w)
        np.testing.assert_allclose(p.hess_diag(i, w), np.diagonal(H), rtol=1e-10, atol=1e-13)


def test_hess_diag_hand_case():
    """One row x = (1, 2), C = 2, w = 0: p = (1/2, 1/2), diag = x_j^2/4 + reg."""
    p = SoftmaxProblem.from_arrays([np.array([[1.0, 2.0]])], [np.array([0])], 2, 0.5)
    np.testing.assert_array_equal(p.hess_diag(0, np.zeros(4)),
                                  [0.25 + 0.5, 0.25 + 0.5, 1.0 + 0.5, 1.0 + 0.5])


def test_asypfl_rule_uses_hess_diag_not_the_dense_hessian(monkeypatch):
    from fedsim.local.asypfl import AsyPFLRule

    p = _random_problem(5)
    r = AsyPFLRule(p, 0.1, 0.1, 0.0, 2.0, 2)
    w = np.random.default_rng(1).standard_normal(p.dim)
    want = np.diagonal(p.hess(0, w)).copy()
    monkeypatch.setattr(p, "hess", lambda *a: (_ for _ in ()).throw(AssertionError("dense")))
    np.testing.assert_allclose(r.fisher_diag(0, w), want, rtol=0, atol=1e-14)
    om, be = np.zeros(p.dim), np.ones(p.dim)
    r.round(0, om, be, np.empty(p.dim), np.random.default_rng(2), tau=0, E=3)  # no dense call


# ------------------------------------------------------------------ validation split
def _digest(parts) -> str:
    h = hashlib.sha256()
    for q in parts:
        h.update(np.asarray(q, dtype=np.int64).tobytes() + b"|")
    return h.hexdigest()


@pytest.mark.parametrize("split", splits.SPLITS)
@pytest.mark.parametrize("test_fraction", [0.0, 0.2])
def test_unset_validation_leaves_rows_unchanged(split, test_fraction):
    parts = splits.partition(LABELS, 7, split=split, a=0.3, classes_per_client=3, seed=2,
                             min_rows=5)
    tr0, te0 = splits.train_test_split(parts, test_fraction, 2, min_train=5)
    cs = splits.split_dataset(LABELS, 7, split=split, a=0.3, classes_per_client=3, seed=2,
                              test_fraction=test_fraction, min_train=5)
    assert _digest(cs.train) == _digest(tr0) and _digest(cs.test) == _digest(te0)
    assert all(v.size == 0 for v in cs.val)


#: sha256 of split_dataset's train then test rows (digits labels, 6 clients, a = 0.3,
#: c = 3, seed 1, test_fraction 0.2, min_train 5), computed with the code before the
#: validation option existed (main at 5f8fb01)
GOLDEN = {"iid": "cf29f6cd238914face8bad03f616c918bb602feeb302e9e24d3bf99730eaa9f7",
          "dirichlet": "283238e8de38e0a4211173aca304a5adab94fa8442bb311c228dfbd85c2ccd62",
          "classes": "03bf7642180767dcce976fdee0ed074fab6013a695a191c63d79c0b21a016018"}


@pytest.mark.parametrize("split", sorted(GOLDEN))
def test_rows_pinned_to_before_the_option(split):
    cs = splits.split_dataset(LABELS, 6, split=split, a=0.3, classes_per_client=3, seed=1,
                              test_fraction=0.2, min_train=5)
    assert _digest(list(cs.train) + list(cs.test)) == GOLDEN[split]
    cs0 = splits.split_dataset(LABELS, 6, split=split, a=0.3, classes_per_client=3, seed=1,
                               test_fraction=0.2, min_train=5, validation_fraction=0.0)
    assert _digest(list(cs0.train) + list(cs0.test)) == GOLDEN[split]


def test_validation_split_properties():
    cs0 = splits.split_dataset(LABELS, 6, split="classes", classes_per_client=3, seed=1,
                               test_fraction=0.2, min_train=5)
    cs = splits.split_dataset(LABELS, 6, split="classes", classes_per_client=3, seed=1,
                              test_fraction=0.2, min_train=5, validation_fraction=0.25)
    for i in range(6):
        assert np.array_equal(cs.test[i], cs0.test[i])  # the test rows never change
        both = np.union1d(cs.train[i], cs.val[i])
        assert np.array_equal(both, cs0.train[i])  # train = old train minus val
        assert np.intersect1d(cs.train[i], cs.val[i]).size == 0
        m = cs0.train[i].size
        assert cs.val[i].size == min(math.floor(0.25 * m + 0.5), m - 5)
        assert np.all(np.diff(cs.val[i]) > 0) and np.all(np.diff(cs.train[i]) > 0)
    # a larger fraction holds out a superset (one permutation per client, a prefix of it)
    cs2 = splits.split_dataset(LABELS, 6, split="classes", classes_per_client=3, seed=1,
                               test_fraction=0.2, min_train=5, validation_fraction=0.4)
    assert all(np.isin(cs.val[i], cs2.val[i]).all() for i in range(6))
    # its own stream: another seed gives other validation rows
    other = splits.validation_split(list(cs0.train), 0.25, 2, min_train=5)[1]
    assert _digest(other) != _digest(cs.val)


def test_validation_split_keeps_min_train_and_rejects_bad_fraction():
    tr, val = splits.validation_split([np.arange(6)], 0.9, 0, min_train=4)
    assert tr[0].size == 4 and val[0].size == 2
    with pytest.raises(ConfigError, match="validation_fraction"):
        splits.validation_split([np.arange(6)], 1.0, 0)
    with pytest.raises(ConfigError, match="validation_fraction"):
        SoftmaxProblem.digits(4, split="iid", validation_fraction=-0.1)


def test_digits_problem_carries_validation_rows():
    p0 = SoftmaxProblem.digits(5, split="classes", classes_per_client=2, test_fraction=0.2,
                               min_rows=5)
    p = SoftmaxProblem.digits(5, split="classes", classes_per_client=2, test_fraction=0.2,
                              min_rows=5, validation_fraction=0.3)
    assert p0.X_val is None and p.X_val is not None
    for i in range(5):
        np.testing.assert_array_equal(p.X_test[i], p0.X_test[i])
        assert p.X[i].shape[0] + p.X_val[i].shape[0] == p0.X[i].shape[0]
        assert set(p.y_val[i]) <= set(p0.y[i])
    with pytest.raises(ConfigError, match="validation rows"):
        ev.validation_rows(p0)


# ------------------------------------------------------------------ metrics
def test_models_metrics_hand_case():
    """Two clients, C = 2, d = 1 (x = 1): a model predicts argmax(W^T x)."""
    X = [np.ones((2, 1)), np.ones((1, 1))]
    p = SoftmaxProblem.from_arrays(X, [np.array([0, 1]), np.array([1])], 2, 0.1,
                                   X_test=[np.ones((3, 1)), np.ones((1, 1))],
                                   y_test=[np.array([0, 0, 1]), np.array([1])])
    models = np.array([[1.0, 0.0], [0.0, 1.0]])  # client 0 says 0, client 1 says 1
    out = ev.models_metrics(p, models)
    np.testing.assert_allclose(out["client_acc"], [2 / 3, 1.0])
    assert out["acc"] == pytest.approx((2 / 3 + 1.0) / 2)  # mean over clients
    assert ev.models_metrics(p, models, weighting="rows")["acc"] == pytest.approx(3 / 4)
    l0 = np.logaddexp(0, -1) * 2 / 3 + np.logaddexp(0, 1) / 3
    assert out["client_loss"][0] == pytest.approx(l0)
    with pytest.raises(ConfigError, match="models"):
        ev.models_metrics(p, models[:1])


def test_metric_names():
    assert set(PERSONAL) <= set(METRICS) and set(VALIDATION) <= set(METRICS)
    assert {"val_acc", "val_loss", "val_pers_acc_beta", "val_pers_acc_maml"} <= set(VALIDATION)


def test_personal_metrics_read_the_attached_models_and_refuse_without():
    p = SoftmaxProblem.digits(4, split="classes", classes_per_client=2, test_fraction=0.25,
                              validation_fraction=0.25, min_rows=5)
    held = {"m": None}
    fns = dict(metric_functions(p, ["pers_acc_beta", "val_pers_loss_beta", "val_acc"], None,
                                None, personal=lambda: held["m"]))
    w = np.zeros(p.dim)
    with pytest.raises(FedsimError, match="personal models"):
        fns["pers_acc_beta"](w)
    rng = np.random.default_rng(0)
    held["m"] = rng.standard_normal((p.n, p.dim))
    assert fns["pers_acc_beta"](w) == pytest.approx(
        ev.models_metrics(p, held["m"])["acc"])
    Xv, yv = ev.validation_rows(p)
    assert fns["val_pers_loss_beta"](w) == pytest.approx(
        ev.models_metrics(p, held["m"], X_test=Xv, y_test=yv)["loss"])
    held["m"] = held["m"] * 0.0  # changed in place or replaced: re-evaluated
    assert fns["val_pers_loss_beta"](w) == pytest.approx(math.log(10))
    assert fns["val_acc"](w) == ev.global_metrics(p, w, X_test=Xv, y_test=yv)["test_acc"]
