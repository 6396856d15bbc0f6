"""The asynchronous-SGD literature's server rules: hand-computed cases, compiled equal to
interpreted bit for bit, and end-to-end runs that reduce to fedsim's FedAsync exactly
where the papers say they coincide."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fedsim.config import Scenario
from fedsim.engine import run
from fedsim.errors import ConfigError
from fedsim.servers.base import Upload
from fedsim.servers.delay_adaptive import DelayAdaptiveRule, delay_factor
from fedsim.servers.fedasync_xie import XieMixRule, xie_staleness
from fedsim.servers.picky import PickyRule


def test_delay_factor_hand_values():
    # tau_C = 4: tau <= 4 full step; beyond: 1/tau (Koloskova 4.4), 0 (drop), 4/tau (code)
    assert [delay_factor.py_func(0, t, 4.0) for t in (0, 4, 5, 8)] == [1.0, 1.0, 0.2, 0.125]
    assert [delay_factor.py_func(1, t, 4.0) for t in (3, 5)] == [1.0, 0.0]
    assert [delay_factor.py_func(2, t, 4.0) for t in (4, 5, 8)] == [1.0, 0.8, 0.5]


def test_delay_adaptive_hand_run():
    # w = [1, 1]; uploads (read - new) = [1, 0] at tau 2, [0, 2] at tau 10, [2, 2] at tau 5
    # koloskova, tau_C = 4, beta = 0.5: steps 0.5*1, 0.5/10, 0.5/5
    # w = [1 - 0.5, 1] -> [0.5, 1 - 0.05*2] = [0.5, 0.9] -> [0.5 - 0.2, 0.9 - 0.2] = [0.3, 0.7]
    rule = DelayAdaptiveRule(beta=0.5, tau_c=4, rule="koloskova")
    w = rule.init(np.array([1.0, 1.0]))
    ups = [Upload(0, np.array([1.0, 0.0]), np.array([0.0, 0.0]), 2),
           Upload(1, np.array([0.0, 2.0]), np.array([0.0, 0.0]), 10),
           Upload(2, np.array([2.0, 2.0]), np.array([0.0, 0.0]), 5)]
    for u in ups:
        w, diag = rule.apply(w, [u])
    np.testing.assert_allclose(w, [0.3, 0.7], rtol=0, atol=1e-15)
    drop = DelayAdaptiveRule(beta=0.5, tau_c=4, rule="koloskova_drop")
    w2 = drop.init(np.array([1.0, 1.0]))
    w2, diag = drop.apply(w2, ups)
    np.testing.assert_array_equal(w2, [0.5, 1.0])
    assert diag == {"fill": 3, "dropped": 2}


def _uniform_shape(step, form, S, reads, news, stale):
    k = len(reads)
    return step(S, np.zeros(k, np.int64), np.array(reads), np.array(news), k,
                np.array(stale, np.int64), 0, form.fp, np.zeros(1, np.int64))


@pytest.mark.parametrize("rule", [DelayAdaptiveRule(beta=0.7, tau_c=3, rule="mishchenko"),
                                  PickyRule(beta=0.9, threshold=0.8),
                                  XieMixRule(alpha=0.6, staleness="hinge", a=0.3, b=1.0)])
def test_compiled_step_equals_interpreted_bitwise(rule):
    rng = np.random.default_rng(5)
    w0, = rng.standard_normal((1, 6))
    reads = list(w0 + 0.3 * rng.standard_normal((4, 6)))
    news = list(rng.standard_normal((4, 6)))
    stale = [0, 2, 5, 9]
    form = rule.replay_form()
    a, b = w0[None].copy(), w0[None].copy()
    step = form.apply
    assert _uniform_shape(step, form, a, reads, news, stale) == 4
    _uniform_shape(step.py_func, form, b, reads, news, stale)
    c = rule.init(w0)
    c, _ = rule.apply(c, [Upload(i, r, n, s) for i, (r, n, s) in enumerate(zip(reads, news, stale,
                                                                                  strict=True))])
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[0], c)


def test_picky_hand_run():
    # threshold 1: ||w - read|| = 0.5 -> applied: w = [1, 0] - 1*([1.5, 0] - [1, 0])
    #   = [0.5, 0]; next upload read = [3, 0]: ||w - read|| = 2.5 > 1 -> dropped
    rule = PickyRule(beta=1.0, threshold=1.0)
    w = rule.init(np.array([1.0, 0.0]))
    w, d1 = rule.apply(w, [Upload(0, np.array([1.5, 0.0]), np.array([1.0, 0.0]), 1)])
    np.testing.assert_array_equal(w, [0.5, 0.0])
    w, d2 = rule.apply(w, [Upload(1, np.array([3.0, 0.0]), np.array([0.0, 0.0]), 3)])
    np.testing.assert_array_equal(w, [0.5, 0.0])
    assert (d1["dropped"], d2["dropped"]) == (0, 1)


def test_xie_staleness_functions_hand_values():
    assert xie_staleness.py_func(0, 7, 0.5, 4.0) == 1.0
    assert xie_staleness.py_func(1, 3, 0.5, 4.0) == 0.5          # (3 + 1)^(-1/2)
    assert xie_staleness.py_func(2, 4, 0.5, 4.0) == 1.0          # lag <= b
    assert xie_staleness.py_func(2, 8, 0.5, 4.0) == 1.0 / 3.0    # 1 / (0.5 * 4 + 1)


def test_xie_mix_hand_run():
    # alpha = 0.5, polynomial a = 1: lag 1 -> alpha_t = 0.25
    # w = [4, 0] -> (1 - 0.25) [4, 0] + 0.25 [0, 8] = [3, 2]
    rule = XieMixRule(alpha=0.5, staleness="polynomial", a=1.0)
    w = rule.init(np.array([4.0, 0.0]))
    w, _ = rule.apply(w, [Upload(0, np.array([9.0, 9.0]), np.array([0.0, 8.0]), 1)])
    np.testing.assert_array_equal(w, [3.0, 2.0])


def test_bad_parameters_are_config_errors():
    with pytest.raises(ConfigError, match="step_rule"):
        DelayAdaptiveRule(tau_c=2, rule="nope")
    with pytest.raises(ConfigError, match="threshold"):
        PickyRule(threshold=-1.0)
    with pytest.raises(ConfigError, match="alpha"):
        XieMixRule(alpha=1.5)


def _scenario(name: str, n: int = 4, **alg) -> Scenario:
    return Scenario.from_dict({
        "seed": 7,
        "problem": {"kind": "quadratic", "n": n, "dim": 3, "mu": 0.5, "L": 1.0,
                    "noise": "additive", "noise_sd": 0.1, "seed": 2},
        "algorithm": {"name": name, "Q": 1, "eta": 0.2, **alg},
        "delays": {"compute": {"kind": "exponential", "rate": 1.0}},
        "trigger": {"kind": "every_upload"},
        "horizon": {"steps": 60},
        "record": {"every": 1, "metrics": ["f_gap"]},
    })


def _w(trace):
    return np.asarray(trace.metrics["f_gap"])


@pytest.mark.slow  # compiles kernels of its own (~40-120 s cold): make slow
def test_async_sgd_with_large_tau_c_is_fedasync_bitwise():
    ref = _w(run(_scenario("fedasync", beta=0.5)))
    assert np.array_equal(_w(run(_scenario("async_sgd", beta=0.5, tau_C=10**6))), ref)
    assert np.array_equal(_w(run(_scenario("picky_sgd", beta=0.5, threshold=math.inf))), ref)
    # the adaptive steps change the run once some delay exceeds tau_C = 1
    assert not np.array_equal(_w(run(_scenario("async_sgd", beta=0.5, tau_C=1))), ref)


@pytest.mark.slow  # compiles kernels of its own (~40-120 s cold): make slow
def test_xie_with_one_client_is_fedasync_bitwise():
    # one client: zero staleness, so (1 - a) w + a w_new == w - a (w_read - w_new)
    ref = _w(run(_scenario("fedasync", n=1, beta=0.6)))
    assert np.array_equal(_w(run(_scenario("fedasync_xie", n=1, alpha=0.6))), ref)
    assert not np.array_equal(_w(run(_scenario("fedasync_xie", alpha=0.6))),
                              _w(run(_scenario("fedasync", beta=0.6))))


def test_async_sgd_needs_one_local_step():
    with pytest.raises(ConfigError, match="algorithm.Q"):
        run(_scenario("async_sgd", tau_C=2, Q=2))
