"""Server rules: hand-computed cases, FedBuff(K=1) == FedAsync bit for bit, AREA invariant."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedsim.errors import ConfigError
from fedsim.servers import (
    AreaServer,
    ASFedAvgServer,
    FedAvgRule,
    FedBuffServer,
    StepSizes,
    Upload,
    fedasync_apply,
    staleness_weight,
)


def test_fedasync_hand_case():
    # w - beta (read - new) = [1, 2] - 0.5 [0.5, -1] = [0.75, 2.5]
    w = np.array([1.0, 2.0])
    fedasync_apply(w, np.array([1.0, 0.0]), np.array([0.5, 1.0]), 0.5)
    np.testing.assert_array_equal(w, [0.75, 2.5])


def test_fedasync_apply_compiled_equals_interpreted_bitwise():
    rng = np.random.default_rng(3)
    for beta in (1.0, 0.3, 2.5):
        w, read, new = rng.standard_normal((3, 7))
        a, b = w.copy(), w.copy()
        fedasync_apply(a, read, new, beta)
        fedasync_apply.py_func(b, read, new, beta)
        want = w - (read - new) * beta if beta != 1.0 else w - (read - new)
        assert np.array_equal(a, b) and np.array_equal(a, want)


vec = st.lists(st.floats(-1e3, 1e3), min_size=3, max_size=3).map(np.array)


@settings(max_examples=50, deadline=None)
@given(w0=vec, deltas=st.lists(vec, min_size=1, max_size=10), beta=st.floats(0.0, 3.0))
def test_fedbuff_buffer_one_is_fedasync_bit_for_bit(w0, deltas, beta):
    a, b = w0.copy(), w0.copy()
    srv = FedBuffServer(3, server_lr=beta)
    zero = np.zeros(3)
    for dl in deltas:
        fedasync_apply(a, dl.copy(), zero, beta)
        srv.add(dl.copy(), tau=7)
        assert srv.flush(b) == 1
    assert np.array_equal(a, b)


def test_fedbuff_hand_case_with_weights():
    srv = FedBuffServer(2, server_lr=2.0, weight="inverse_sqrt")
    srv.add(np.array([1.0, 0.0]), tau=0)
    srv.add(np.array([0.0, 2.0]), tau=3)
    w = np.zeros(2)
    assert srv.flush(w) == 2
    np.testing.assert_allclose(w, [-1.0, -1.0])  # -2 * mean([1, 0], [0, 2 * 0.5])
    assert srv.fill == 0 and np.all(srv.acc == 0)
    assert srv.flush(w) == 0
    assert staleness_weight("polynomial", 3, 2.0) == 1 / 16
    assert staleness_weight("none", 99) == 1.0
    with pytest.raises(ConfigError, match="staleness_weight"):
        staleness_weight("exp", 1)


def test_asfedavg_and_fedavg_average_models():
    s = ASFedAvgServer(2)
    s.add(np.array([1.0, 3.0]))
    s.add(np.array([3.0, 5.0]))
    w = np.array([100.0, 100.0])
    assert s.flush(w) == 2
    np.testing.assert_array_equal(w, [2.0, 4.0])
    s2 = ASFedAvgServer(2, beta=0.5)
    s2.add(np.array([2.0, 4.0]))
    w = np.zeros(2)
    s2.flush(w)
    np.testing.assert_array_equal(w, [1.0, 2.0])
    w = np.array([9.0, 9.0])
    FedAvgRule().apply(w, [Upload(0, w, np.array([0.0, 1.0])), Upload(1, w, np.array([2.0, 3.0]))])
    np.testing.assert_array_equal(w, [1.0, 2.0])
    w = np.array([3.0, 4.0])
    FedAvgRule(0.5).apply(w, [Upload(0, w, np.array([1.0, 2.0]))])
    np.testing.assert_array_equal(w, [2.0, 3.0])


def test_step_sizes():
    assert StepSizes("constant", value=0.3)(10**6) == 0.3
    s = StepSizes("c_over_k_plus_d", c=10.0, d=4.0)
    assert s(0) == 2.5 and s(6) == 1.0
    with pytest.raises(ConfigError):
        StepSizes("constant", value=-1.0)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 5), seed=st.integers(0, 10**6), events=st.integers(1, 60))
def test_area_invariant_any_event_sequence(n, seed, events):
    """x_s + u_s - mean_i y_i = 0 after every event ([A] Appendix A, zbar_k = 0)."""
    rng = np.random.default_rng(seed)
    x0 = rng.standard_normal(3)
    srv = AreaServer(x0, n)
    y = np.tile(x0, (n, 1))
    for _ in range(events):
        j = int(rng.integers(0, n + 1))
        if j == n:
            srv.aggregate()
        else:
            new = rng.standard_normal(3) * 10
            srv.receive(new - y[j])
            y[j] = new
        assert np.max(np.abs(srv.x_s + srv.u_s - y.mean(axis=0))) <= 1e-12 * max(
            1.0, float(np.max(np.abs(y))))
    assert srv.k == events


def test_area_counter_counts_both_kinds():
    srv = AreaServer(np.zeros(1), 2)
    srv.receive(np.array([2.0]))
    srv.receive(np.array([4.0]))
    assert srv.pending == 2 and srv.k == 2
    assert srv.aggregate() == 2 and srv.k == 3
    assert srv.x_s[0] == 3.0 and srv.u_s[0] == 0.0
    assert srv.aggregate() == 0 and srv.k == 4
    assert math.isclose(srv.x_s[0], 3.0)
