"""The synchronous rounds' rules in the replay's uniform shapes (REPLAY_SPEC section 2):
FedAvg's average (:func:`fedsim.servers.fedavg.fedavg_step`) and the MAML / FO-MAML /
HF-MAML client update (:func:`fedsim.local.maml.maml_update_for`): hand-computed cases,
compiled == ``py_func`` bit for bit, and equal to the rule objects the SimPy engine ran."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedsim.config import build_problem
from fedsim.config.problem import ProblemConfig
from fedsim.local.maml import MAMLRule, interpreted_maml_update, maml_update_for
from fedsim.local.sgd import RngSteps
from fedsim.servers.base import Upload
from fedsim.servers.fedavg import FedAvgRule, fedavg_step

_NOCNT = np.zeros(1, np.int64)


def _step(fn, w, news, m):
    k = news.shape[0]
    S = np.array(w, dtype=np.float64)[None, :].copy()
    fill = fn(S, np.arange(k, dtype=np.int32), news, news, k, np.zeros(k, np.int64), 2,
              np.array([m]), _NOCNT)
    return S[0], fill


def test_fedavg_step_hand_cases():
    news = np.array([[0.0, 1.0], [2.0, 3.0], [4.0, -1.0]])
    w, fill = _step(fedavg_step, [9.0, 9.0], news, 1.0)
    assert fill == 3
    np.testing.assert_array_equal(w, [2.0, 1.0])
    # w + m (mean - w) = [3, 4] + 0.5 ([1, 2] - [3, 4]) = [2, 3]
    w, fill = _step(fedavg_step, [3.0, 4.0], np.array([[1.0, 2.0]]), 0.5)
    assert fill == 1
    np.testing.assert_array_equal(w, [2.0, 3.0])
    # m = 0: the server keeps its model
    w, _ = _step(fedavg_step, [3.0, 4.0], news, 0.0)
    np.testing.assert_array_equal(w, [3.0, 4.0])


def _numpy_average(w, models, m):
    """The NumPy expression the engine used before the compiled rule (bd440e6)."""
    w = np.array(w, dtype=np.float64)
    acc = np.zeros_like(w)
    for x in models:
        np.add(acc, x, out=acc)
    np.divide(acc, float(len(models)), out=acc)
    if m == 1.0:
        return acc
    np.subtract(acc, w, out=acc)
    np.multiply(acc, m, out=acc)
    return w + acc


_F = st.floats(-1e6, 1e6, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.integers(1, 5), st.sampled_from([1.0, 0.5, 0.7, 1.3, 0.0]),
       st.data())
def test_fedavg_step_compiled_py_func_numpy(k, d, m, data):
    w = np.array(data.draw(st.lists(_F, min_size=d, max_size=d)))
    news = np.array(data.draw(st.lists(st.lists(_F, min_size=d, max_size=d), min_size=k,
                                       max_size=k)))
    a, _ = _step(fedavg_step, w, news, m)
    b, _ = _step(fedavg_step.py_func, w, news, m)
    assert np.array_equal(a, b)
    assert np.array_equal(a, _numpy_average(w, list(news), m))
    state = w.copy()
    FedAvgRule(m).apply(state, [Upload(j, w, news[j]) for j in range(k)])
    assert np.array_equal(state, a)


_DIGITS = {"kind": "softmax", "n_clients": 6, "split": "dirichlet", "a": 0.3,
           "test_fraction": 0.2, "reg": 1e-3, "seed": 0, "min_rows": 5}


@pytest.fixture(scope="module")
def digits():
    return build_problem(ProblemConfig.from_dict(_DIGITS))


def _rule(problem, variant, **kw):
    return MAMLRule(problem, eta=0.3, Q=3, batch=5, alpha=0.1, variant=variant,
                    hf_delta=1e-3, **kw)


@pytest.mark.parametrize("variant", ["maml", "fomaml", "hfmaml"])
def test_maml_update_equals_rule_round(digits, variant):
    """The uniform update (compiled, and its py_func) gives MAMLRule.round's model bit for
    bit from the same stream, on a view with a compiled hvp (softmax digits)."""
    rule = _rule(digits, variant, batch_inner=4, batch_hess=3)
    cv = rule.cv
    assert cv is not None
    d = digits.dim
    upd = maml_update_for(cv.grad, cv.hvp)
    w0 = np.random.default_rng(1).standard_normal(d) * 0.1
    for i in (0, 3, 5):
        for nsteps in (1, 3):
            ref = np.empty(d)
            rule.round(i, w0, ref, np.random.default_rng(10 + i), Q=nsteps)
            Z = cv.round_draws(np.random.default_rng(10 + i), i, nsteps, rule.draws)
            out = np.empty(d)
            cst = np.zeros((rule.c_rows, d))
            assert upd(cv.data, i, cst, w0, 0, Z, nsteps, rule.params(), out, _NOCNT) == 0
            assert np.array_equal(out, ref)
            out2 = np.empty(d)
            upd.py_func(cv.data, i, np.zeros((rule.c_rows, d)), w0, 0, Z, nsteps,
                        rule.params(), out2, _NOCNT)
            assert np.array_equal(out2, ref)
            # interpreted (problem oracles, per-step sample_batch): the same numbers
            out3 = np.empty(d)
            interpreted_maml_update()(digits, i, np.zeros((rule.c_rows, d)), w0, 0,
                                      RngSteps(np.random.default_rng(10 + i)), nsteps,
                                      rule.params(), out3, _NOCNT)
            assert np.array_equal(out3, ref)


def test_maml_update_interpreted_quadratic():
    """A quadratic has no compiled hvp: MAMLRule runs interpreted, and the interpreted
    uniform update is the same computation."""
    q = build_problem(ProblemConfig.from_dict({"kind": "quadratic", "n": 4, "dim": 3,
                                               "mu": 0.1, "L": 1.0, "seed": 0,
                                               "noise_sd": 0.1}))
    for variant in ("maml", "fomaml", "hfmaml"):
        rule = MAMLRule(q, eta=0.1, Q=4, batch=2, alpha=0.05, variant=variant)
        assert rule.cv is None
        w0 = np.array([0.3, -0.2, 1.0])
        ref = np.empty(3)
        rule.round(2, w0, ref, np.random.default_rng(5))
        out = np.empty(3)
        interpreted_maml_update()(q, 2, np.zeros((4, 3)), w0, 0,
                                  RngSteps(np.random.default_rng(5)), 4, rule.params(), out,
                                  _NOCNT)
        assert np.array_equal(out, ref)


def test_maml_update_hand_case(digits):
    """alpha = 0 and FO-MAML: the step is plain SGD on D (D' is drawn and unused):
    out = read - eta grad f_i(read, D)."""
    rule = MAMLRule(digits, eta=0.25, Q=1, batch=5, alpha=0.0, variant="fomaml")
    cv = rule.cv
    d = digits.dim
    w0 = np.linspace(-0.1, 0.1, d)
    Z = cv.round_draws(np.random.default_rng(3), 1, 1, rule.draws)
    out = np.empty(d)
    maml_update_for(cv.grad, cv.hvp)(cv.data, 1, np.zeros((4, d)), w0, 0, Z, 1,
                                     rule.params(), out, _NOCNT)
    g = digits.batch_grad(1, w0, Z[0, :5])
    np.testing.assert_allclose(out, w0 - 0.25 * g, rtol=0, atol=1e-15)
