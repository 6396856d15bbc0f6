"""AsyPFL as an event table plus its compiled rules (REPLAY_SPEC sections 1-2, 4).

* the table's step columns are bit for bit the Trace columns today's engine gave (the
  references in ``data/asypfl_ref.npz``, :mod:`tests.engine.asypfl_cases`), and its
  time-only ``info`` (pi, E_k, dTg, dTc, p, local_steps) too;
* the rules replayed along the table (one ``update`` and one ``apply`` per contribution,
  the clients' ``noise`` streams consumed in step order) give today's final global model,
  personal models and divergence step, within 1e-10 relative (the quadratic's compiled
  gradient and the compiled ``hess_diag`` sum in another order than NumPy's BLAS);
* the compiled rules and oracles equal their ``.py_func`` bit for bit.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from fedsim.engine.models.asypfl import asypfl_table
from fedsim.engine.setup import initial_model, problem_for
from fedsim.local.asypfl import AsyPFLRule, asypfl_update
from fedsim.problems.compiled import compiled_view
from fedsim.problems.logistic_view import logistic_hess_diag
from fedsim.problems.quadratic_view import quadratic_hess_diag
from fedsim.problems.softmax_view import softmax_hess_diag
from fedsim.rng import Streams
from fedsim.servers.asypfl import asypfl_apply, client_weights
from fedsim.trace import DIVERGE_NORM
from tests.engine.asypfl_cases import CASES, scenario

# one worker runs this module (make test: --dist loadgroup): the replay kernels of its
# rule combinations are compiled once, not by both workers at the same time
pytestmark = pytest.mark.xdist_group("test_asypfl_replay")

REF = np.load(Path(__file__).with_name("data") / "asypfl_ref.npz")
RTOL = 1e-10
_STEP_COLS = (("time", "time"), ("kind", "kind_code"), ("client", "client"),
              ("staleness_steps", "staleness_steps"), ("staleness_time", "staleness_time"),
              ("buffer_fill", "buffer_fill"))
PAIRS = [(c, r) for c in CASES for r in (0, 1)]


def _table(case: str, rep: int):
    """The case's table as a dict of its columns and per-run facts."""
    sc = scenario(case)
    p = problem_for(sc)
    tb, _ = asypfl_table(sc, p, Streams(sc.seed, rep))
    return sc, p, {f.name: getattr(tb, f.name) for f in dataclasses.fields(tb)}


def rel(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if np.array_equal(a, b, equal_nan=True):
        return 0.0
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-300)))


@pytest.mark.parametrize("case, rep", PAIRS)
def test_table_step_columns_are_todays_bit_for_bit(case, rep):
    _, _, tb = _table(case, rep)
    pre = f"{case}/{rep}/"
    T = int(REF[pre + "steps_done"])
    for col, ref in _STEP_COLS:
        np.testing.assert_array_equal(tb[col][:T], REF[pre + ref][1:], err_msg=col)
    # one contribution per step, read r_k = t - 1 - staleness, E_k local steps
    np.testing.assert_array_equal(tb["ptr"], np.arange(tb["steps_done"] + 1))
    np.testing.assert_array_equal(tb["c_client"], tb["client"])
    t = np.arange(1, tb["steps_done"] + 1)
    np.testing.assert_array_equal(tb["c_read"], t - 1 - tb["staleness_steps"])
    np.testing.assert_array_equal(tb["c_stale"], tb["staleness_steps"])
    np.testing.assert_array_equal(np.bincount(tb["c_client"], weights=tb["c_steps"],
                                              minlength=tb["client_updates"].size),
                                  tb["info"]["local_steps"])
    if int(REF[pre + "diverged_step"]) < 0:
        assert tb["steps_done"] == T and tb["sim_time"] == float(REF[pre + "sim_time"])
        for k in ("client_updates", "concurrency_time", "concurrency_busy", "metric_steps"):
            np.testing.assert_array_equal(tb[k], REF[pre + k], err_msg=k)
        for k in ("pi", "E_k", "dTg", "dTc", "p", "local_steps"):
            np.testing.assert_array_equal(tb["info"][k], REF[pre + "i/" + k], err_msg=k)


def _replay(sc, p, tb, rep):
    """The rules along the table, one contribution at a time (the clients' ``noise``
    streams from ``fedsim.rng``); returns (steps, diverged step or None, w, beta)."""
    a = sc.algorithm
    rule = AsyPFLRule(p, a.eta, a.delta, a.gamma, a.lam, a.batch)
    noise = [Streams(sc.seed, rep).client(i, "noise") for i in range(p.n)]
    w0 = initial_model(p, sc)
    hist = [w0.copy()]
    beta = np.tile(w0, (p.n, 1))
    fp = client_weights(p)
    out = np.empty(p.dim)
    div2 = DIVERGE_NORM * DIVERGE_NORM
    for t in range(1, tb["steps_done"] + 1):
        S = hist[-1].copy().reshape(1, -1)
        for j in range(tb["ptr"][t - 1], tb["ptr"][t]):
            i, r = int(tb["c_client"][j]), int(tb["c_read"][j])
            rule.round(i, hist[r], beta[i], out, noise[i], tau=r, E=int(tb["c_steps"][j]))
            fill = asypfl_apply(S, tb["c_client"][j:j + 1], hist[r].reshape(1, -1),
                                out.reshape(1, -1), 1, tb["c_stale"][j:j + 1], 1, fp,
                                np.zeros(0, dtype=np.int64))
            assert fill == tb["buffer_fill"][t - 1]
        hist.append(S[0])
        if not float(S[0] @ S[0]) <= div2:
            return t, t, S[0], beta
    return tb["steps_done"], None, hist[-1], beta


@pytest.mark.parametrize("case, rep", PAIRS)
def test_rules_along_the_table_give_todays_models(case, rep):
    sc, p, tb = _table(case, rep)
    pre = f"{case}/{rep}/"
    t, div, w, beta = _replay(sc, p, tb, rep)
    ref_div = int(REF[pre + "diverged_step"])
    assert div == (None if ref_div < 0 else ref_div)
    assert t == int(REF[pre + "steps_done"])
    with np.errstate(all="ignore"):
        assert rel(w, REF[pre + "final_w"]) <= RTOL
        if div is None:
            assert rel(beta, REF[pre + "i/beta"]) <= RTOL


def _oracle_cases():
    out = []
    for case, hd in (("quad_lam0", quadratic_hess_diag), ("digits_lam0", softmax_hess_diag),
                     ("logistic_lam1", logistic_hess_diag)):
        out.append((case, hd))
    return out


@pytest.mark.parametrize("case, hd", _oracle_cases())
def test_compiled_hess_diag_is_the_problems_diagonal(case, hd):
    """Bitwise its ``.py_func``; within 1e-12 relative of ``problem.hess_diag`` (softmax) or
    the diagonal of ``problem.hess`` (quadratic: exactly; logistic), at several points."""
    p = problem_for(scenario(case))
    cv = compiled_view(p, 4)
    rng = np.random.default_rng(0)
    for scale in (0.0, 0.3, 3.0):
        w = scale * rng.standard_normal(p.dim)
        for i in range(p.n):
            h, h2 = np.empty(p.dim), np.empty(p.dim)
            hd(cv.data, i, w, h)
            hd.py_func(cv.data, i, w, h2)
            np.testing.assert_array_equal(h, h2)
            fn = getattr(p, "hess_diag", None)
            ref = fn(i, w) if fn is not None else np.diagonal(p.hess(i, w))
            if hd is quadratic_hess_diag:
                np.testing.assert_array_equal(h, ref)
            assert rel(h, ref) <= 1e-12


@pytest.mark.parametrize("case", ["quad_lam2_gamma", "digits_lam2_gamma", "logistic_lam1",
                                  "digits_lam0"])
def test_compiled_update_is_its_py_func_bit_for_bit(case):
    sc = scenario(case)
    p = problem_for(sc)
    a = sc.algorithm
    rule = AsyPFLRule(p, a.eta, a.delta, 0.05, a.lam, a.batch)
    assert rule.fast
    rng = np.random.default_rng(7)
    for i in range(p.n):
        read = 0.1 * rng.standard_normal(p.dim)
        cst = 0.1 * rng.standard_normal((1, p.dim))
        cst2, cst0 = cst.copy(), cst.copy()
        E, tau = 3, 5
        Z = rule.cv.round_draws(np.random.default_rng(i), i, E, rule.draws) \
            if not rule.cv.normal_block else np.random.default_rng(i).standard_normal(
                (E, rule.draws))
        out, out2 = np.empty(p.dim), np.empty(p.dim)
        cnt = np.zeros(0, dtype=np.int64)
        rule.compiled_update(rule.vdata, i, cst, read, tau, Z, E, rule.params(), out, cnt)
        asypfl_update.py_func(rule.cv.grad.py_func, _hd(rule).py_func, rule.data(), i, cst2,
                              read, tau, Z, E, rule.params(), out2, cnt)
        np.testing.assert_array_equal(out, out2)
        np.testing.assert_array_equal(cst, cst2)
        assert not np.array_equal(cst, cst0)  # beta_k moved


def _hd(rule):
    from fedsim.local.asypfl import hess_diag_oracle
    return hess_diag_oracle(rule.cv)


def test_interpreted_path_is_the_compiled_one(monkeypatch):
    """``_COMPILED = False``: the same function through ``.py_func`` with the problem's
    ``sample_batch``/``batch_grad``/``hess_diag``; on softmax (whose compiled ``grad`` IS
    ``batch_grad``) the rounds agree within the hess_diag rounding (1e-12)."""
    import fedsim.local.sgd as sgd

    sc = scenario("digits_lam2_gamma")
    p = problem_for(sc)
    a = sc.algorithm
    fast = AsyPFLRule(p, a.eta, a.delta, a.gamma, a.lam, a.batch)
    monkeypatch.setattr(sgd, "_COMPILED", False)
    slow = AsyPFLRule(p, a.eta, a.delta, a.gamma, a.lam, a.batch)
    assert fast.fast and not slow.fast
    read = 0.05 * np.ones(p.dim)
    for i in range(p.n):
        b1, b2 = np.zeros(p.dim), np.zeros(p.dim)
        o1, o2 = np.empty(p.dim), np.empty(p.dim)
        g1, g2 = np.random.default_rng(i), np.random.default_rng(i)
        fast.round(i, read, b1, o1, g1, tau=3, E=4)
        slow.round(i, read, b2, o2, g2, tau=3, E=4)
        np.testing.assert_array_equal(o1, o2)  # omega_k does not see h
        assert rel(b1, b2) <= 1e-12
        assert g1.bit_generator.state == g2.bit_generator.state


_EXACT = ("time", "kind_code", "client", "staleness_steps", "staleness_time", "buffer_fill",
          "metric_steps", "client_updates", "concurrency_time", "concurrency_busy")


def _check_trace(tr, pre: str) -> float:
    """Trace ``tr`` against the reference ``pre``: the timeline, records, divergence and
    time-only info bit for bit; metrics, ``final_w``, ``beta`` and ``personal_gap`` within
    1e-10 relative.  Returns the largest relative difference."""
    for col in _EXACT:
        np.testing.assert_array_equal(getattr(tr, col), REF[pre + col], err_msg=col)
    assert tr.steps_done == int(REF[pre + "steps_done"])
    assert tr.sim_time == float(REF[pre + "sim_time"])
    assert tr.concurrency_mean == float(REF[pre + "concurrency_mean"])
    ref_div = int(REF[pre + "diverged_step"])
    assert tr.diverged_step == (None if ref_div < 0 else ref_div)
    assert tr.diverged == (ref_div >= 0)
    names = {k.split("/")[-1] for k in REF if k.startswith(pre + "m/")}
    assert set(tr.metrics) == names
    for k in ("pi", "E_k", "dTg", "dTc", "p", "local_steps", "personal_gap_steps"):
        if pre + "i/" + k in REF:
            np.testing.assert_array_equal(tr.info[k], REF[pre + "i/" + k], err_msg=k)
    worst = 0.0
    with np.errstate(all="ignore"):
        for k in names:
            worst = max(worst, rel(tr.metrics[k], REF[pre + "m/" + k]))
        worst = max(worst, rel(tr.final_w, REF[pre + "final_w"]))
        for k in ("beta", "personal_gap"):
            if pre + "i/" + k in REF:
                worst = max(worst, rel(tr.info[k], REF[pre + "i/" + k]))
    assert worst <= RTOL, worst
    return worst


@pytest.mark.parametrize("case, rep", PAIRS)
def test_run_is_the_table_replayed_and_equals_todays_trace(case, rep):
    from fedsim.engine import run

    _check_trace(run(scenario(case), rep), f"{case}/{rep}/")


def test_run_batch_replicates_do_not_depend_on_the_others():
    from fedsim.engine import run, run_batch

    sc = scenario("digits_lam2_gamma")
    both = run_batch(sc, [0, 1])
    one = run_batch(sc, [1])
    assert one[0].equals(both[1]) and both[0].equals(run(sc, 0))
    for k, tr in enumerate(both):
        _check_trace(tr, f"digits_lam2_gamma/{k}/")
        np.testing.assert_array_equal(tr.info["beta"], run(sc, k).info["beta"])


def test_interpreted_replay_is_the_compiled_one(monkeypatch):
    """A problem run interpreted (``_COMPILED`` off: ``asypfl_update.py_func`` with
    ``sample_batch``/``batch_grad``/``hess_diag``, the generic loop interpreted) gives the
    compiled replay's trace: the timeline bit for bit, the rest within 1e-10 (the
    quadratic's ``batch_grad`` and the compiled ``grad`` sum in another order)."""
    import fedsim.local.sgd as sgd
    from fedsim.engine import run

    for case in ("quad_diverge", "logistic_lam1"):
        fast = run(scenario(case), 0)
        monkeypatch.setattr(sgd, "_COMPILED", False)
        slow = run(scenario(case), 0)
        monkeypatch.setattr(sgd, "_COMPILED", True)
        _check_trace(slow, f"{case}/0/")
        for col in _EXACT:
            np.testing.assert_array_equal(getattr(slow, col), getattr(fast, col))
