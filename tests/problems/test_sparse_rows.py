"""Sparse rows and distinct rows in the compiled logistic oracles (fedsim/problems/row_view.py,
logistic_view.py): they must give the dense loops' numbers BIT FOR BIT (``np.array_equal``,
``==``, never a tolerance), for finite and non-finite models; and the compiled ``f_gap`` /
``dist_sq`` metrics against the NumPy expressions the Recorder used before (rounding)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedsim.engine.replay.metrics import MetricPlan
from fedsim.errors import FedsimError
from fedsim.problems.compiled import compiled_view
from fedsim.problems.logistic import LogisticProblem
from fedsim.problems.logistic_view import distinct_rows
from fedsim.problems.row_view import dot4, row_axpy, row_dot, sparse_rows

_SPECIAL = st.sampled_from([0.0, -0.0, 1.5, -2.0, math.inf, -math.inf, math.nan, 1e300])


def _rows(seed: int, m: int, d: int, density: float) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, d))
    X[rng.random((m, d)) > density] = 0.0
    X[rng.random((m, d)) < 0.05] = -0.0
    X[0] = 0.0
    X[1 % m] = 0.0
    X[1 % m, d - 1] = 3.0  # a one-hot row in the tail
    return X


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31), m=st.integers(1, 12), d=st.integers(1, 19),
       density=st.sampled_from([0.0, 0.1, 0.3, 1.0]), special=_SPECIAL,
       where=st.integers(0, 18), s=st.floats(-3.0, 3.0) | _SPECIAL)
def test_sparse_dot_and_axpy_are_the_dense_loops_bitwise(seed, m, d, density, special, where,
                                                          s):
    X = _rows(seed, m, d, density)
    sp = sparse_rows(X)
    w = np.random.default_rng(seed + 1).standard_normal(d) * 10.0
    w[where % d] = special
    finite = bool(np.all(np.isfinite(w)))
    for j in range(m):
        got = row_dot(X, j, sp, w, d, finite)
        want = dot4(X[j], w, d)
        assert (got == want) or (math.isnan(got) and math.isnan(want))
        g0 = np.random.default_rng(seed + j).standard_normal(d)
        g1, g2 = g0.copy(), g0.copy()
        row_axpy(X, j, sp, s, g1)
        with np.errstate(invalid="ignore"):
            for k in range(d):
                g2[k] += X[j, k] * s
        assert np.array_equal(g1, g2, equal_nan=True)


def test_sparse_rows_hand_case():
    # d = 8: rows with at most 2 nonzeros are listed, a denser one is not (cnt -1)
    X = np.array([[0, 0, 5, 0, 0, 0, 0, 0], [1, 2, 3, 0, 0, 0, 0, 0],
                  [0, -0.0, 0, 0, 0, 0, 0, 7], [0] * 8], dtype=np.float64)
    off, cnt, idx, val = sparse_rows(X)
    assert cnt.tolist() == [1, -1, 1, 0] and val.tolist() == [5.0, 7.0]
    assert [idx[off[j]:off[j] + max(cnt[j], 0)].tolist() for j in range(4)] == [[2], [], [7],
                                                                                  []]


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31), m=st.integers(1, 30), d=st.integers(1, 5))
def test_distinct_rows_map_every_row_to_an_equal_first_row(seed, m, d):
    rng = np.random.default_rng(seed)
    X = rng.integers(-1, 2, size=(m, d)).astype(np.float64)
    uniq, rep = distinct_rows(X)
    assert np.array_equal(X[uniq[rep]], X)
    assert len({tuple(r) for r in X[uniq]}) == uniq.size  # distinct
    assert np.all(np.diff(uniq) > 0) and all(uniq[rep[j]] <= j for j in range(m))  # first


def _dense_view(cv):
    """The same view with every row marked dense (``cnt = -1``) and every row distinct."""
    start, rows, nu, (off, cnt, idx, val) = cv.data
    data = (start, rows, nu, (off, np.full_like(cnt, -1), idx, val))
    md = list(cv.mdata)
    md[5] = data
    md[9] = np.arange(rows.shape[0], dtype=np.int64)
    md[10] = np.arange(rows.shape[0], dtype=np.int64)
    md[11] = np.empty(rows.shape[0])
    return data, tuple(md)


@pytest.mark.parametrize("scale", [0.0, 0.3, 30.0, math.inf])
def test_anchored_oracles_and_metrics_equal_the_all_dense_path(scale):
    """The synthetic problem's anchor rows (2d per client, one nonzero each, the same rows at
    every client) take the sparse and distinct-row paths; the numbers are the dense ones."""
    p = LogisticProblem.synthetic(4, 6, 5, seed=2)
    cv = compiled_view(p, 3)
    assert np.sum(cv.data[3][1] >= 0) == 4 * 12 and cv.mdata[9].size < p.m.sum()
    data, md = _dense_view(cv)
    rng = np.random.default_rng(5)
    w = scale * rng.standard_normal(6) if math.isfinite(scale) else np.full(6, math.inf)
    v = rng.standard_normal(6)
    codes = cv.codes(["grad_sq", "f_gap"])
    for i in range(4):
        z = rng.integers(0, int(p.m[i]), size=7)
        for fn, args in ((cv.grad, (i, w, z)), (cv.hvp, (i, w, v, z))):
            a, b = np.empty(6), np.empty(6)
            with np.errstate(all="ignore"):
                fn(cv.data, *args, a)
                fn(data, *args, b)
            assert np.array_equal(a, b, equal_nan=True)
    a, b = np.empty(2), np.empty(2)
    with np.errstate(all="ignore"):
        cv.metrics(cv.mdata, codes, w, a)
        cv.metrics(md, codes, w, b)
    assert np.array_equal(a, b, equal_nan=True)


def test_f_gap_and_dist_sq_are_compiled_and_match_numpy():
    p = LogisticProblem.synthetic(3, 4, 6, seed=1, nu_reg=1e-2)
    xs, fs = p.x_star, p.f_star
    rng = np.random.default_rng(0)
    for scale in (0.5, 2.0, 10.0):
        w = xs + scale * rng.standard_normal(4)
        gap = p.f(w) - fs
        assert gap > 1e-3 and p.f_gap(w) == pytest.approx(gap, rel=1e-12)
        assert p.dist_sq(w) == pytest.approx(float(np.sum((w - xs) ** 2)), rel=1e-14)
    assert p.dist_sq(xs) == 0.0
    w = np.array([1.0, -2.0, 0.5, 0.0])
    assert p.dist_sq(w) == sum((w[k] - xs[k]) ** 2 for k in range(4))  # order: in index order
    plan = MetricPlan(p, ["grad_sq", "f_gap", "dist_sq", "ergodic_f_gap"],
                      compiled_view(p, 1), None, None)
    assert plan.compiled  # logistic rows recording them take the compiled plan
    got = plan.values(np.array([0, 3]), np.stack([w, 2 * w]), esnap=np.stack([w, 6 * w]))
    assert got["f_gap"].tolist() == [p.f_gap(w), p.f_gap(2 * w)]
    assert got["dist_sq"].tolist() == [p.dist_sq(w), p.dist_sq(2 * w)]
    assert math.isnan(got["ergodic_f_gap"][0]) and got["ergodic_f_gap"][1] == p.f_gap(2 * w)


def test_dist_sq_without_a_minimiser_is_the_problem_error():
    """A separable client set without anchors has no minimiser: the compiled plan raises
    the problem's one-line error, before any step (as the Recorder does)."""
    X = [np.array([[1.0, 0.0], [2.0, 1.0]]), np.array([[-1.0, 0.5], [-3.0, 0.0]])]
    y = [np.array([1.0, 1.0]), np.array([-1.0, -1.0])]
    p = LogisticProblem(X, y)
    with pytest.raises(FedsimError, match="no minimiser"):
        MetricPlan(p, ["dist_sq"], compiled_view(p, 1), None, None)
    plan = MetricPlan(p, ["f_gap"], compiled_view(p, 1), None, None)  # inf f = 0 exists
    assert plan.compiled
