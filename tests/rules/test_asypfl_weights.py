"""AsyPFL's client weights ``p^k = m_k / m`` count REAL data rows (issue 14 item 7).

Ma, Lu, Li, Cui 2022 (/work/shared/papers/asypfl.md), Section 3.1: "the k-th client has m_k
data samples, m = sum_k m_k", ``p^k = m_k/m``, the weights of eq. (4).  THEORY_SPEC 9.4's
2d anchor rows ``(s e_j, +1), (s e_j, -1)`` that a logistic client gets by default
(``anchors = "all"``) are part of its objective ``f_i`` (and of its minibatches) but are not
samples, so they must not enter ``m_k``: counting them pulls the weights toward uniform.

Every expected weight below is a hand-computed fraction of real row counts.
"""

from __future__ import annotations

import numpy as np
import pytest

from fedsim.algorithms import get_algorithm
from fedsim.config import AlgorithmConfig
from fedsim.errors import ConfigError
from fedsim.problems.asypfl_constants import asypfl_constants_table, asypfl_weights
from fedsim.problems.data import add_anchor_rows
from fedsim.problems.logistic import LogisticProblem
from fedsim.servers.asypfl import client_weights


def _data(sizes, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = [rng.normal(size=(m, d)) for m in sizes]
    y = [np.where(rng.random(m) < 0.5, -1.0, 1.0) for m in sizes]
    return X, y


def test_hand_case_real_rows_over_total_real_rows():
    """Real rows (3, 5, 12), d = 2, anchors on every client: 4 anchor rows each, so the
    objective rows are (7, 9, 16).  p^k = real/total real = (3, 5, 12)/20 =
    (0.15, 0.25, 0.6); the old all-rows count would give (7, 9, 16)/32 =
    (0.21875, 0.28125, 0.5), nearer uniform."""
    X, y = _data((3, 5, 12))
    XA, yA = add_anchor_rows(X, y, clients="all")
    prob = LogisticProblem(XA, yA, nu_reg=0.1, anchor_rows=4)
    assert prob.m.tolist() == [7, 9, 16]
    assert prob.m_data.tolist() == [3, 5, 12]
    p = client_weights(prob)
    assert p.tolist() == [0.15, 0.25, 0.6]
    assert not np.allclose(p, [7 / 32, 9 / 32, 16 / 32])


def test_builder_counts_anchors_per_client():
    """synthetic(samples_per_client=[4, 10], dim=3): each client gets 2d = 6 anchors ("all"),
    rows (10, 16), p = (4, 10)/14; with "first" only client 0 gets them: rows (10, 10),
    p still (4, 10)/14; without anchors rows = real rows."""
    for anchors, rows in (("all", [10, 16]), ("first", [10, 10]), (None, [4, 10])):
        prob = LogisticProblem.synthetic(2, 3, [4, 10], nu_reg=0.1, anchors=anchors)
        assert prob.m.tolist() == rows, anchors
        assert prob.m_data.tolist() == [4, 10], anchors
        np.testing.assert_allclose(client_weights(prob), [4 / 14, 10 / 14], rtol=0, atol=1e-16)


def test_server_and_constants_table_use_the_same_weights():
    """The simulated eq. (4) and the theorem's ``p_k`` (asypfl_constants_table) agree."""
    prob = LogisticProblem.synthetic(3, 2, [2, 3, 5], nu_reg=0.5)
    want = [0.2, 0.3, 0.5]
    cfg = AlgorithmConfig.from_dict({"name": "asypfl", "E": 1, "eta": 0.1, "delta": 0.1,
                                     "gamma": 0.0, "lam": 0.5})
    rule = get_algorithm("asypfl").server(cfg, prob)
    np.testing.assert_allclose(rule.p, want, rtol=0, atol=1e-16)
    np.testing.assert_allclose(asypfl_weights(prob), want, rtol=0, atol=1e-16)
    vals = asypfl_constants_table(prob, batch=1).values()
    np.testing.assert_allclose([vals[f"p_{k}"] for k in range(3)], want, rtol=0, atol=1e-16)


def test_anchors_stay_in_the_objective_and_the_minibatches():
    """Only the weights change: f_i is still the mean over all m_i rows (data + anchors,
    THEORY_SPEC 9.4) and a minibatch index ranges over all of them."""
    X, y = _data((3,), d=1, seed=2)
    XA, yA = add_anchor_rows(X, y, clients="all")
    prob = LogisticProblem(XA, yA, anchor_rows=[2])
    w = np.array([0.7])
    z = yA[0] * XA[0][:, 0] * w[0]
    assert prob.loss(0, w) == pytest.approx(float(np.mean(np.log1p(np.exp(-z)))), rel=1e-14)
    idx = prob.sample_batch(0, 4000, np.random.default_rng(0))
    assert idx.min() == 0 and idx.max() == 4  # rows 3, 4 are the anchors


@pytest.mark.parametrize("bad, match", [
    (5, "anchor_rows"),            # all rows of client 0 (5 rows) would be anchors
    ([1], "one count per client"),
    ([1, -1], "anchor_rows\\[1\\]"),
    (1.5, "anchor_rows"),
])
def test_anchor_rows_is_validated(bad, match):
    X, y = _data((5, 6))
    with pytest.raises(ConfigError, match=match):
        LogisticProblem(X, y, anchor_rows=bad)


def test_softmax_weights_count_training_rows_only():
    """Digits softmax: p^k = (training rows of k) / (all training rows); the held-out test
    and validation rows are not samples the client trains on."""
    from fedsim.problems.softmax import SoftmaxProblem

    prob = SoftmaxProblem.digits(n_clients=5, split="classes", classes_per_client=3,
                                 test_fraction=0.2, validation_fraction=0.2, seed=1)
    m = np.array([len(y) for y in prob.y], dtype=np.float64)
    assert len(set(m.tolist())) > 1  # unequal counts, so the test can tell 1/n apart
    np.testing.assert_allclose(client_weights(prob), m / m.sum(), rtol=0, atol=1e-16)
    assert np.sum(m) < 1797 * 0.8  # test and validation rows are excluded
