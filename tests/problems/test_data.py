"""Logistic data sets (fedsim/problems/data.py): synthetic, digits, partitions, anchor rows."""

import math
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedsim.errors import ConfigError, FedsimError
from fedsim.problems import data
from fedsim.problems.data import (
    SIGNAL,
    add_anchor_rows,
    digits_binary,
    partition_classes,
    partition_dirichlet,
    partition_iid,
    synthetic_logistic,
)

sklearn_datasets = pytest.importorskip("sklearn.datasets")
DIGITS = np.asarray(sklearn_datasets.load_digits().target)
N_DIGITS = DIGITS.size  # 1797


def _labels_ok(y_list):
    return all(y.dtype == np.float64 and set(np.unique(y)) <= {-1.0, 1.0} for y in y_list)


# ---------------------------------------------------------------------------------------------
# synthetic_logistic
def test_synthetic_shapes_labels_and_dtypes():
    X, y = synthetic_logistic(4, 3, [5, 6, 7, 8], seed=2)
    assert [x.shape for x in X] == [(5, 3), (6, 3), (7, 3), (8, 3)]
    assert [v.shape for v in y] == [(5,), (6,), (7,), (8,)]
    assert all(x.dtype == np.float64 for x in X) and _labels_ok(y)
    X, _ = synthetic_logistic(2, 3, np.array([2, 3]))
    assert [x.shape for x in X] == [(2, 3), (3, 3)]
    X, y = synthetic_logistic(2, 5, 400)
    assert all(set(np.unique(v)) == {-1.0, 1.0} for v in y)


def test_synthetic_is_deterministic_and_client_data_do_not_depend_on_n_clients():
    X1, y1 = synthetic_logistic(3, 4, 50, seed=9)
    X2, y2 = synthetic_logistic(3, 4, 50, seed=9)
    X5, y5 = synthetic_logistic(5, 4, 50, seed=9)
    for i in range(3):
        np.testing.assert_array_equal(X1[i], X2[i])
        np.testing.assert_array_equal(y1[i], y2[i])
        np.testing.assert_array_equal(X1[i], X5[i])
        np.testing.assert_array_equal(y1[i], y5[i])
    X3, _ = synthetic_logistic(3, 4, 50, seed=10)
    assert not np.array_equal(X1[0], X3[0])


def _documented_model(seed, i, d, m, h):
    """Rebuild client i's weights and features from the docstring's recipe."""
    def gen(*key):
        return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed, spawn_key=key)))
    wbar = SIGNAL * gen(0).standard_normal(d)
    rng = gen(1, i)
    w = wbar + h * SIGNAL * rng.standard_normal(d)
    c = h * rng.standard_normal(d) / math.sqrt(d)
    X = c + rng.standard_normal((m, d)) / math.sqrt(d)
    return w, X


def _label_z(X, y, w, eps):
    """z-score of sum_j g_j (1{y_j = 1} - p_j), p_j = (1-eps) s(z_j) + eps (1 - s(z_j)),
    with weights g_j = 2 s(z_j) - 1 (sensitive to the flip rate; exact mean 0 and variance
    sum_j g_j^2 p_j (1 - p_j) under the model, independent rows -> CLT)."""
    s = 1.0 / (1.0 + np.exp(-(X @ w)))
    p = (1 - eps) * s + eps * (1 - s)
    g = 2 * s - 1
    return float(np.sum(g * ((y == 1.0) - p)) / math.sqrt(np.sum(g * g * p * (1 - p))))


@pytest.mark.parametrize("h,eps", [(0.0, 0.0), (1.0, 0.1), (0.5, 0.3)])
def test_synthetic_follows_the_documented_model(h, eps):
    """Features equal the documented recipe exactly; labels pass a z-test of the logistic
    model with flips (sum of Bernoulli residuals / sd; false-alarm rate 5.7e-7 per client
    at |z| < 5), and the same test flags a wrong flip rate (negative control)."""
    d, m = 4, 20_000
    X, y = synthetic_logistic(3, d, m, heterogeneity=h, label_noise=eps, seed=5)
    for i in range(3):
        w, Xref = _documented_model(5, i, d, m, h)
        np.testing.assert_array_equal(X[i], Xref)
        assert abs(_label_z(X[i], y[i], w, eps)) < 5.0
        assert abs(_label_z(X[i], y[i], w, eps + 0.1)) > 5.0


def test_synthetic_heterogeneity_moves_client_means():
    X0, _ = synthetic_logistic(6, 3, 3000, heterogeneity=0.0, seed=1)
    X2, _ = synthetic_logistic(6, 3, 3000, heterogeneity=2.0, seed=1)
    spread0 = np.var([x.mean(axis=0) for x in X0], axis=0).sum()
    spread2 = np.var([x.mean(axis=0) for x in X2], axis=0).sum()
    assert spread0 < 0.01 < 0.5 < spread2


@pytest.mark.parametrize("kwargs,msg", [
    ({"n_clients": 0}, "n_clients must be an integer >= 1"),
    ({"n_clients": 2.0}, "n_clients must be an integer >= 1"),
    ({"dim": 0}, "dim must be an integer >= 1"),
    ({"samples_per_client": 0}, "samples_per_client must be >= 1"),
    ({"samples_per_client": [3]}, "samples_per_client must be an integer or a sequence of 2"),
    ({"heterogeneity": -1.0}, "heterogeneity must be finite and >= 0"),
    ({"heterogeneity": math.inf}, "heterogeneity must be finite"),
    ({"label_noise": 0.6}, r"label_noise must be in \[0, 0.5\]"),
    ({"label_noise": -0.1}, r"label_noise must be in \[0, 0.5\]"),
    ({"heterogeneity": "big"}, "heterogeneity must be a number"),
    ({"seed": -1}, "seed must be an integer >= 0"),
])
def test_synthetic_bad_args(kwargs, msg):
    args = {"n_clients": 2, "dim": 3, "samples_per_client": 5, **kwargs}
    with pytest.raises(ConfigError, match=msg):
        synthetic_logistic(**args)


# ---------------------------------------------------------------------------------------------
# partitions
def test_partition_iid_is_a_partition():
    parts = partition_iid(103, 4, np.random.default_rng(0))
    assert sorted(p.size for p in parts) == [25, 26, 26, 26]
    np.testing.assert_array_equal(np.sort(np.concatenate(parts)), np.arange(103))


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 30), st.floats(0.005, 50.0), st.integers(1, 40), st.integers(0, 10**6))
def test_partition_dirichlet_partitions_and_respects_min_rows(n, a, min_rows, seed):
    if n * min_rows > N_DIGITS:
        with pytest.raises(ConfigError, match="min_rows must satisfy"):
            partition_dirichlet(DIGITS, n, a, np.random.default_rng(seed), min_rows)
        return
    parts = partition_dirichlet(DIGITS, n, a, np.random.default_rng(seed), min_rows)
    assert len(parts) == n and min(p.size for p in parts) >= min_rows
    allidx = np.concatenate(parts)
    np.testing.assert_array_equal(np.sort(allidx), np.arange(N_DIGITS))
    assert all(np.all(np.diff(p) > 0) for p in parts)


def test_partition_dirichlet_top_up_hand_case():
    """10 rows of class 0 and 2 of class 1, 3 clients, min 3 rows each: all rows used, every
    client gets >= 3 rows, and top-up moves rows of the donor's most plentiful class."""
    labels = np.array([0] * 10 + [1] * 2)
    for seed in range(20):
        parts = partition_dirichlet(labels, 3, 0.01, np.random.default_rng(seed), 3)
        assert sorted(np.concatenate(parts).tolist()) == list(range(12))
        assert min(p.size for p in parts) >= 3


def test_partition_dirichlet_concentration_controls_skew():
    def mean_top_share(a):
        parts = partition_dirichlet(DIGITS, 10, a, np.random.default_rng(0), 10)
        return np.mean([np.bincount(DIGITS[p], minlength=10).max() / p.size for p in parts])
    assert mean_top_share(0.05) > 0.6 > 0.2 > mean_top_share(1000.0)


def test_partition_classes_round_robin():
    parts = partition_classes(DIGITS, 7, 2, np.random.default_rng(1))
    expected = [{(2 * i) % 10, (2 * i + 1) % 10} for i in range(7)]
    assert [set(np.unique(DIGITS[p])) for p in parts] == expected
    # class 0 is shared by clients 0 and 5 in near-equal halves; class 4 belongs to client 2
    n0 = np.sum(DIGITS == 0)
    assert abs(np.sum(DIGITS[parts[0]] == 0) - n0 / 2) <= 0.5
    assert np.sum(DIGITS[parts[2]] == 4) == np.sum(DIGITS == 4)
    # 3 clients x 2 classes cover 6 classes: digits 6..9 are dropped
    parts3 = partition_classes(DIGITS, 3, 2, np.random.default_rng(1))
    assert sum(p.size for p in parts3) == np.sum(DIGITS < 6)


# ---------------------------------------------------------------------------------------------
# digits_binary
def test_digits_shapes_labels_and_sizes_add_up():
    X, y = digits_binary(10, seed=1)
    assert len(X) == len(y) == 10
    assert sum(x.shape[0] for x in X) == N_DIGITS
    assert all(x.shape[1] == 64 and x.dtype == np.float64 for x in X)
    assert all(x.shape[0] >= 10 for x in X) and _labels_ok(y)
    allX = np.vstack(X)
    assert allX.min() == 0.0 and allX.max() == 1.0  # pixels / 16
    n_pos = sum(int(np.sum(v == 1.0)) for v in y)
    assert n_pos == np.sum(DIGITS % 2 == 0)  # default: even digits are +1


def test_digits_positive_classes_and_single_class_clients():
    X, y = digits_binary(10, split="classes", classes_per_client=1, positive_classes=(3, 7))
    # client i holds digit i only, so its labels are constant
    assert [float(v[0]) for v in y] == [1.0 if i in (3, 7) else -1.0 for i in range(10)]
    assert all(np.all(v == v[0]) for v in y)
    assert [x.shape[0] for x in X] == np.bincount(DIGITS).tolist()


def test_digits_deterministic_per_seed():
    Xa, ya = digits_binary(5, seed=3, a=0.3)
    Xb, yb = digits_binary(5, seed=3, a=0.3)
    Xc, _ = digits_binary(5, seed=4, a=0.3)
    for i in range(5):
        np.testing.assert_array_equal(Xa[i], Xb[i])
        np.testing.assert_array_equal(ya[i], yb[i])
    assert [x.shape[0] for x in Xa] != [x.shape[0] for x in Xc]


def test_digits_pca_reduction_and_max_norm():
    """Centred PCA scores: over all rows, the columns have mean 0 and a diagonal Gram matrix
    with decreasing diagonal (whatever the split order); max_norm scales max ||x|| to 1."""
    X, _ = digits_binary(4, split="iid", max_features=6)
    allX = np.vstack(X)
    assert allX.shape == (N_DIGITS, 6)
    np.testing.assert_allclose(allX.sum(axis=0), 0.0, atol=1e-10)
    G = allX.T @ allX
    off = G - np.diag(np.diag(G))
    assert np.max(np.abs(off)) < 1e-9 * np.max(np.diag(G))
    assert np.all(np.diff(np.diag(G)) < 0)
    Xn, _ = digits_binary(4, split="iid", max_features=6, scale="max_norm")
    norms = np.linalg.norm(np.vstack(Xn), axis=1)
    assert norms.max() == pytest.approx(1.0, rel=1e-15)
    np.testing.assert_allclose(np.vstack(Xn) * np.linalg.norm(allX, axis=1).max(), allX,
                               rtol=1e-12, atol=1e-12)
    Xp, _ = digits_binary(4, split="iid", scale="max_norm")
    assert np.linalg.norm(np.vstack(Xp), axis=1).max() == pytest.approx(1.0, rel=1e-15)


@pytest.mark.parametrize("kwargs,msg", [
    ({"n_clients": 0}, "n_clients must be an integer >= 1"),
    ({"split": "shards"}, "split must be one of"),
    ({"a": 0.0}, "a must be finite and > 0"),
    ({"a": math.nan}, "a must be finite and > 0"),
    ({"a": "0.5"}, "a must be a number"),
    ({"split": "classes", "classes_per_client": 0}, "classes_per_client must be an integer"),
    ({"split": "classes", "classes_per_client": 11}, "classes_per_client must be an integer"),
    ({"positive_classes": ()}, "positive_classes must be 1 to 9 distinct digits"),
    ({"positive_classes": tuple(range(10))}, "positive_classes must be 1 to 9"),
    ({"positive_classes": (1, 1)}, "positive_classes must be 1 to 9 distinct"),
    ({"positive_classes": (10,)}, "positive_classes must be 1 to 9 distinct digits in 0..9"),
    ({"max_features": 0}, "max_features must be None or an integer in 1..63"),
    ({"max_features": 64}, "max_features must be None or an integer in 1..63"),
    ({"scale": "std"}, "scale must be one of"),
    ({"seed": 1.5}, "seed must be an integer >= 0"),
    ({"min_rows": 0}, "min_rows must be an integer >= 1"),
    ({"n_clients": 200}, "n_clients must satisfy n_clients\\*min_rows <= 1797"),
    # 25 clients x 1 class: each digit (~180 rows) is shared by 2-3 clients -> ~60-90 rows each
    ({"n_clients": 25, "split": "classes", "classes_per_client": 1, "min_rows": 70},
     "leaves a client with"),
])
def test_digits_bad_args(kwargs, msg):
    args = {"n_clients": 4, **kwargs}
    with pytest.raises(ConfigError, match=msg):
        digits_binary(**args)


def test_digits_without_sklearn_raises_clear_error(monkeypatch):
    data.load_digits_arrays.cache_clear()
    monkeypatch.setitem(sys.modules, "sklearn.datasets", None)  # makes the import fail
    try:
        with pytest.raises(FedsimError, match=r"pip install fedsim\[data\]"):
            digits_binary(2)
    finally:
        data.load_digits_arrays.cache_clear()


# ---------------------------------------------------------------------------------------------
# add_anchor_rows
def test_anchor_rows_appended_exactly():
    X = [np.array([[1.0, 2.0]]), np.array([[3.0, 4.0], [5.0, 6.0]])]
    y = [np.array([1.0]), np.array([-1.0, 1.0])]
    Xa, ya = add_anchor_rows(X, y, s=2.0)
    np.testing.assert_array_equal(Xa[0], [[1, 2], [2, 0], [2, 0], [0, 2], [0, 2]])
    np.testing.assert_array_equal(ya[0], [1, 1, -1, 1, -1])
    np.testing.assert_array_equal(Xa[1][2:], [[2, 0], [2, 0], [0, 2], [0, 2]])
    np.testing.assert_array_equal(ya[1], [-1, 1, 1, -1, 1, -1])
    # inputs untouched
    assert X[0].shape == (1, 2) and y[1].shape == (2,)
    Xf, yf = add_anchor_rows(X, y, clients="first")
    assert Xf[0].shape == (5, 2) and Xf[1].shape == (2, 2)
    np.testing.assert_array_equal(Xf[1], X[1])
    np.testing.assert_array_equal(yf[1], y[1])
    assert Xf[1] is not X[1]


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 6), st.integers(1, 8), st.floats(0.1, 10.0), st.integers(0, 10**6))
def test_anchors_make_every_direction_lose(d, m, s, seed):
    """With anchors: X has full column rank, and for every w != 0 some row has margin
    y x.w <= -s max_k |w_k| < 0 -- the two facts behind coercivity + strict convexity
    (THEORY_SPEC 9.4), even when the raw data are strictly separable."""
    rng = np.random.default_rng(seed)
    w_true = rng.standard_normal(d)
    X = rng.standard_normal((m, d))
    y = np.where(X @ w_true >= 0, 1.0, -1.0)  # separable by construction
    Xa, ya = add_anchor_rows([X], [y], s=s)
    assert np.linalg.matrix_rank(Xa[0]) == d
    for _ in range(5):
        w = rng.standard_normal(d)
        margins = ya[0] * (Xa[0] @ w)
        assert margins.min() <= -s * np.max(np.abs(w)) * (1 - 1e-12)


def test_anchor_rows_give_unique_minimiser_on_separable_data():
    """Separable data have no minimiser (the loss tends to 0 along w_true); with anchors
    gradient descent converges to one point from two different starts."""
    X = np.array([[1.0, 0.5], [2.0, 1.0], [-1.0, -0.2], [-2.0, -1.5]])
    y = np.array([1.0, 1.0, -1.0, -1.0])
    Xa, ya = add_anchor_rows([X], [y], s=1.0)
    A, b = Xa[0], ya[0]

    def grad(w):
        z = b * (A @ w)
        return -(A.T @ (b * 0.5 * (1 - np.tanh(0.5 * z)))) / len(b)

    sols = []
    for w in (np.array([10.0, -10.0]), np.array([-5.0, 8.0])):
        for _ in range(20_000):
            w = w - 1.0 * grad(w)
        assert np.linalg.norm(grad(w)) < 1e-10
        sols.append(w)
    np.testing.assert_allclose(sols[0], sols[1], atol=1e-8)


@pytest.mark.parametrize("args,kwargs,msg", [
    (([np.ones((2, 2))], [np.ones(2)]), {"s": 0.0}, "s must be finite and > 0"),
    (([np.ones((2, 2))], [np.ones(2)]), {"s": math.inf}, "s must be finite and > 0"),
    (([np.ones((2, 2))], [np.ones(2)]), {"s": None}, "s must be a number"),
    (([np.ones((2, 2))], [np.ones(2)]), {"clients": "last"}, "clients must be 'all' or 'first'"),
    (([], []), {}, "X_list must hold at least one client"),
    (([np.ones((2, 2))], [np.ones(2), np.ones(2)]), {}, "y_list must have one label vector"),
    (([np.ones((2, 2)), np.ones((2, 3))], [np.ones(2)] * 2), {}, r"X_list\[1\] must be a 2-D"),
    (([np.ones(2)], [np.ones(2)]), {}, r"X_list\[0\] must be a 2-D"),
    (([np.ones((2, 2))], [np.ones(3)]), {}, r"y_list\[0\] must have shape \(2,\)"),
    (([np.ones((2, 2))], [np.array([1.0, 0.0])]), {}, r"y_list\[0\] must contain only -1/\+1"),
    (([np.array([[1.0, np.nan]])], [np.ones(1)]), {}, r"X_list\[0\] must be finite"),
])
def test_anchor_bad_args(args, kwargs, msg):
    with pytest.raises(ConfigError, match=msg):
        add_anchor_rows(*args, **kwargs)
