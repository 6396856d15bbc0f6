"""The compiled views of the row-sampled problems (binary logistic and softmax regression:
fedsim/problems/row_view.py, logistic_view.py, softmax_view.py) and the rules that run them.

Three kinds of checks:

* the draws: a round's indices drawn in one call (NumPy's or the compiled ``draw``) are
  the numbers, and leave the generator in the state, of the per-step ``sample_batch``
  calls -- ``np.array_equal`` and ``state ==``;
* the arithmetic: the compiled oracles ARE the problems' ``batch_grad``/``batch_hvp``, so
  the compiled rules (``sgd_round`` with the view's ``grad``; MAML's oracle) and the
  interpreted ones (``py_func`` with ``sample_batch``/``batch_grad``) must agree BIT FOR
  BIT, in single rounds and in whole runs -- ``np.array_equal``/``Trace.equals``, never a
  tolerance;
* the oracles against the NumPy expressions they replaced (``-(X_D^T expit(-(X_D w)))/b +
  nu w`` etc., written out below): summation order differs, so the bound is a first-order
  rounding bound, ``|g - ref| <= 1e-13 * (|X_D|^T (|r| (1 + |X_D| |w|)) / b + |reg w|)``
  per coordinate: the sums have at most 120 terms (``120 eps ~ 2.7e-14`` each way), and a
  logit ``z_j`` rounded by ``~eps |x_j|^T |w|`` moves ``s(z_j)`` or ``softmax(z_j)`` by as
  much relative to it (large logits: ``exp(z)`` is as well conditioned as ``z`` is large).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import expit, softmax

import fedsim.local.sgd as sgd_mod
from fedsim.config import Scenario
from fedsim.engine import problem_for, run
from fedsim.engine.models.physical.reference import run_reference
from fedsim.local.maml import MAMLRule
from fedsim.local.sgd import SGDRule
from fedsim.problems.compiled import compiled_view
from fedsim.problems.logistic import LogisticProblem
from fedsim.problems.row_view import RowsView, draw_rows
from fedsim.problems.softmax import SoftmaxProblem

_SOFTMAX = SoftmaxProblem.digits(6, split="dirichlet", a=0.5, seed=1, min_rows=5)
_LOGISTIC = LogisticProblem.digits(5, seed=0)
PROBLEMS = {"softmax": _SOFTMAX, "logistic": _LOGISTIC}


def _pcg(seed: int) -> np.random.Generator:
    return np.random.Generator(np.random.PCG64(seed))


def _generic_round(p, i: int, w0: np.ndarray, rng, eta: float, Q: int, b: int) -> np.ndarray:
    """The reference: Q times sample_batch, batch_grad, ``w -= eta * g`` (sgd.py's step)."""
    w = w0.copy()
    for _ in range(Q):
        batch = p.sample_batch(i, b, rng)
        g = p.batch_grad(i, w, batch)
        w -= eta * g
    return w


# ---- the draws -------------------------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(m=st.one_of(st.integers(1, 300), st.integers(1, 2**32)), b=st.integers(1, 40),
       s=st.integers(1, 12), seed=st.integers(0, 2**63))
def test_one_draw_of_s_batches_equals_s_draws(m, b, s, seed):
    r1, r2 = _pcg(seed), _pcg(seed)
    one = r1.integers(0, m, size=(s, b))
    many = np.array([r2.integers(0, m, size=b) for _ in range(s)])
    assert np.array_equal(one, many)
    assert r1.bit_generator.state == r2.bit_generator.state  # the same numbers come next


@settings(max_examples=60, deadline=None)
@given(kind=st.sampled_from(sorted(PROBLEMS)), b=st.integers(1, 40), Q=st.integers(1, 6),
       client=st.integers(0, 4), seed=st.integers(0, 2**63))
def test_compiled_draw_and_round_draws_are_sample_batch(kind, b, Q, client, seed):
    """The view's compiled ``draw`` (a numba-typed Generator) and ``round_draws`` (one NumPy
    call) give the indices and the final state of Q ``sample_batch`` calls."""
    p = PROBLEMS[kind]
    cv = p.compiled_view(b)
    assert isinstance(cv, RowsView) and cv.draw is draw_rows and cv.draws == b
    assert cv.dtype is np.int64 and not cv.normal_block
    ref, r1, r2 = _pcg(seed), _pcg(seed), _pcg(seed)
    want = np.array([p.sample_batch(client, b, ref) for _ in range(Q)])
    got = np.empty((Q, b), dtype=np.int64)
    for q in range(Q):
        cv.draw(cv.data, client, r1, got[q])
    assert np.array_equal(got, want) and r1.bit_generator.state == ref.bit_generator.state
    assert np.array_equal(cv.round_draws(r2, client, Q, b), want)
    assert r2.bit_generator.state == ref.bit_generator.state


# ---- the oracles against the NumPy expressions they replaced ---------------------------------
def _numpy_grad(p, i, w, idx):
    """The NumPy ``batch_grad``, and the scale of its rounding (module docstring)."""
    if isinstance(p, LogisticProblem):
        rows = p._rows[i][idx]
        r = expit(-(rows @ w))
        cond = 1.0 + np.abs(rows) @ np.abs(w)  # a logit's rounding, through the sigmoid
        return (-(rows.T @ r) / rows.shape[0] + p.nu_reg * w,
                np.abs(rows).T @ (np.abs(r) * cond) / rows.shape[0] + np.abs(p.nu_reg * w))
    Xb = p.X[i][idx]
    W = w.reshape(p.d, p.n_classes)
    R = softmax(Xb @ W, axis=1)
    P = R.copy()
    R[np.arange(Xb.shape[0]), p.y[i][idx]] -= 1.0
    cond = 1.0 + np.max(np.abs(Xb) @ np.abs(W), axis=1, keepdims=True)
    return ((Xb.T @ R).ravel() / Xb.shape[0] + p.reg * w,
            (np.abs(Xb).T @ ((np.abs(R) + 2.0 * P) * cond)).ravel() / Xb.shape[0]
            + np.abs(p.reg * w))


def _numpy_hvp(p, i, w, v, idx):
    """The NumPy ``batch_hvp``, and the scale of its rounding (module docstring)."""
    if isinstance(p, LogisticProblem):
        rows = p._rows[i][idx]
        z = rows @ w
        s2 = expit(z) * expit(-z)
        cond = 1.0 + np.abs(rows) @ np.abs(w)
        return (rows.T @ (s2 * (rows @ v)) / rows.shape[0] + p.nu_reg * v,
                np.abs(rows).T @ (2.0 * s2 * cond * (np.abs(rows) @ np.abs(v)))
                / rows.shape[0] + np.abs(p.nu_reg * v))
    Xb = p.X[i][idx]
    shape = (p.d, p.n_classes)
    W = w.reshape(shape)
    P = softmax(Xb @ W, axis=1)
    U = Xb @ v.reshape(shape)
    AU = P * U - P * np.sum(P * U, axis=1, keepdims=True)
    aU = np.abs(Xb) @ np.abs(v.reshape(shape))
    cond = 1.0 + np.max(np.abs(Xb) @ np.abs(W), axis=1, keepdims=True)
    scale = 3.0 * (P * aU + P * np.sum(P * aU, axis=1, keepdims=True)) * cond
    return ((Xb.T @ AU).ravel() / Xb.shape[0] + p.reg * v,
            (np.abs(Xb).T @ scale).ravel() / Xb.shape[0] + np.abs(p.reg * v))


@settings(max_examples=100, deadline=None)
@given(kind=st.sampled_from(sorted(PROBLEMS)), b=st.integers(1, 120), client=st.integers(0, 4),
       seed=st.integers(0, 2**32), scale=st.sampled_from([0.0, 1.0, 50.0]))
def test_oracles_equal_the_numpy_expressions_to_rounding(kind, b, client, seed, scale):
    p = PROBLEMS[kind]
    r = np.random.default_rng(seed)
    idx = p.sample_batch(client, b, r)
    w = scale * r.standard_normal(p.dim)
    v = r.standard_normal(p.dim)
    for got, (want, terms) in ((p.batch_grad(client, w, idx), _numpy_grad(p, client, w, idx)),
                               (p.batch_hvp(client, w, v, idx),
                                _numpy_hvp(p, client, w, v, idx))):
        assert np.all(np.abs(got - want) <= 1e-13 * terms)


def test_oracles_accept_any_numpy_index_and_check_the_model():
    """A batch is read as NumPy reads an index (list, negative, mask); a bad index or a
    model of the wrong length is an error, never a read outside the client's rows."""
    from fedsim.errors import FedsimError

    for p in PROBLEMS.values():
        w = np.random.default_rng(0).standard_normal(p.dim)
        m = int(p.m[1])
        ref = p.batch_grad(1, w, np.array([0, m - 1, 2]))
        assert np.array_equal(p.batch_grad(1, w, [0, -1, 2]), ref)
        mask = np.zeros(m, dtype=bool)
        mask[[0, 2, m - 1]] = True
        assert np.array_equal(p.batch_grad(1, w, mask), p.batch_grad(1, w, [0, 2, m - 1]))
        assert np.array_equal(p.batch_grad(-4, w, [0]), p.batch_grad(p.n - 4, w, [0]))
        with pytest.raises(IndexError):
            p.batch_grad(1, w, [m])
        with pytest.raises(IndexError):
            p.batch_grad(p.n, w, [0])
        with pytest.raises(FedsimError, match="w.shape"):
            p.batch_grad(1, w[:-1], [0])


# ---- SGD rounds: compiled against the per-call steps -------------------------------------------
@settings(max_examples=150, deadline=None)
@given(kind=st.sampled_from(sorted(PROBLEMS)), Q=st.integers(1, 25),
       b=st.one_of(st.integers(1, 40), st.integers(100, 300)),
       eta=st.one_of(st.just(0.0), st.floats(1e-4, 5.0)), client=st.integers(0, 4),
       seed=st.integers(0, 2**32), scale=st.sampled_from([0.0, 1.0, 50.0]))
def test_compiled_rounds_equal_the_per_call_steps(kind, Q, b, eta, client, seed, scale):
    """Any Q, batch, eta, client and start (large logits at scale 50): the compiled round
    gives the iterate of Q ``sample_batch``/``batch_grad``/``w -= eta g`` steps and leaves
    the stream where they leave it."""
    p = PROBLEMS[kind]
    w0 = scale * np.random.default_rng(seed).standard_normal(p.dim)
    r1, r2 = _pcg(seed), _pcg(seed)
    rule = SGDRule(p, eta, Q, b)
    assert rule.fast and rule.cv.grad is not None
    out = rule.round(client, w0, np.empty(p.dim), r1)
    assert np.array_equal(out, _generic_round(p, client, w0, r2, eta, Q, b))
    assert r1.bit_generator.state == r2.bit_generator.state


@pytest.mark.parametrize("kind", sorted(PROBLEMS))
def test_a_strided_model_and_steps_in_place(kind):
    """A model that is a strided view (not C-contiguous), updated in place by ``step``: the
    per-call numbers, and the interleaved entries untouched."""
    p = PROBLEMS[kind]
    rule = SGDRule(p, 0.3, 7, 2)
    big = np.random.default_rng(5).standard_normal(2 * p.dim)
    w = big[::2]
    w0 = w.copy()
    r1, r2 = _pcg(9), _pcg(9)
    for _ in range(7):
        rule.step(1, w, r1)
    assert np.array_equal(w, _generic_round(p, 1, w0, r2, 0.3, 7, 2))
    assert np.array_equal(big[1::2], np.random.default_rng(5).standard_normal(2 * p.dim)[1::2])


def test_rule_step_and_round_agree_with_the_interpreted_rule(monkeypatch):
    """SGDRule.round (engine) and SGDRule.step (reference engine), compiled, equal the rule
    run interpreted (``sgd_round.py_func``), also at an eta passed by AREA."""
    p = _SOFTMAX
    fast = SGDRule(p, 0.2, 6, 5)
    monkeypatch.setattr(sgd_mod, "_COMPILED", False)
    slow = SGDRule(p, 0.2, 6, 5)
    assert fast.fast and not slow.fast
    w0 = np.random.default_rng(0).standard_normal(p.dim)
    out, ref = np.empty(p.dim), np.empty(p.dim)
    for eta in (None, 0.05):
        r1, r2, r3 = _pcg(4), _pcg(4), _pcg(4)
        fast.round(2, w0, out, r1, eta=eta)
        w = w0.copy()
        for _ in range(6):
            fast.step(2, w, r2, eta=eta)
        slow.round(2, w0, ref, r3, eta=eta)
        assert np.array_equal(out, ref) and np.array_equal(w, ref)


def test_switch_and_overrides_fall_back_to_the_interpreted_path(monkeypatch):
    class Noisy(SoftmaxProblem):
        def batch_grad(self, i, w, batch):
            return super().batch_grad(i, w, batch) + 1.0

    q = Noisy(_SOFTMAX.X, _SOFTMAX.y, 10, _SOFTMAX.reg)
    assert compiled_view(q, 4) is None and not SGDRule(q, 0.1, 2, 4).fast

    class Curved(LogisticProblem):
        def batch_hvp(self, i, w, v, batch):
            return 2.0 * super().batch_hvp(i, w, v, batch)

    c = Curved(_LOGISTIC.X, _LOGISTIC.y)
    assert compiled_view(c, 4) is None and MAMLRule(c, 0.1, 1, 4, 0.1).cv is None
    inst = SoftmaxProblem(_SOFTMAX.X, _SOFTMAX.y, 10, _SOFTMAX.reg)
    inst.sample_batch = lambda i, size, rng: np.zeros(size, dtype=np.int64)
    assert compiled_view(inst, 4) is None and not SGDRule(inst, 0.1, 2, 4).fast

    class Proxy:  # forwards attributes; the view is looked up on the class
        def __init__(self, p):
            self.p = p

        def __getattr__(self, name):
            return getattr(self.p, name)

    assert not SGDRule(Proxy(_SOFTMAX), 0.1, 2, 4).fast
    assert SGDRule(_SOFTMAX, 0.1, 2, 4).fast
    monkeypatch.setattr(sgd_mod, "_COMPILED", False)
    assert not SGDRule(_SOFTMAX, 0.1, 2, 4).fast
    assert MAMLRule(_SOFTMAX, 0.1, 1, 4, 0.1).cv is None


# ---- whole runs: compiled against interpreted ------------------------------------------------
_DIGITS = {"kind": "softmax", "n_clients": 6, "split": "dirichlet", "a": 0.3,
           "test_fraction": 0.2, "reg": 1e-3, "seed": 0, "min_rows": 5}
_DELAYS = {"compute": {"kind": "exponential", "rate": 1.0},
           "download": {"kind": "exponential", "rate": 8.0},
           "upload": {"kind": "exponential", "rate": 8.0}}
_ALGS = {
    "area": ({"name": "area", "model": "algorithm", "client_rule": "area", "M": 5, "batch": 7,
              "alpha": {"kind": "constant", "value": 0.3}}, {"kind": "every_k", "count": 3}),
    "fedbuff": ({"name": "fedbuff", "client_rule": "sgd", "Q": 5, "eta": 0.3, "batch": 7,
                 "buffer": 3}, {"kind": "every_k", "count": 3}),
    "asfedavg": ({"name": "asfedavg", "client_rule": "upload", "Q": 5, "eta": 0.3, "batch": 7,
                  "buffer": 3}, {"kind": "every_k", "count": 3}),
    "fedavg": ({"name": "fedavg", "client_rule": "sgd", "Q": 5, "eta": 0.3, "batch": 7,
                "participation": 0.5}, {"kind": "every_upload"}),
    "fedasync": ({"name": "fedasync", "client_rule": "sgd", "Q": 5, "eta": 0.3, "batch": 7,
                  "beta": 0.5}, {"kind": "every_upload"}),
    "fedasync-big": ({"name": "fedasync", "client_rule": "sgd", "Q": 16, "eta": 0.3,
                      "batch": 160, "beta": 0.5}, {"kind": "every_upload"}),
}


def _scenario(alg: str, problem: dict | None = None, steps: int = 40) -> Scenario:
    a, trig = _ALGS[alg]
    return Scenario.from_dict({
        "name": f"rows-{alg}", "seed": 11, "problem": dict(problem or _DIGITS),
        "algorithm": dict(a), "trigger": dict(trig), "delays": _DELAYS,
        "horizon": {"steps": steps},
        "record": {"every": 4, "metrics": ["grad_sq", "test_loss", "test_acc"]
                   if problem is None else ["grad_sq"]}})


def _both(sc: Scenario, monkeypatch, runner=run):
    fast = runner(sc, 1)
    with monkeypatch.context() as mp:
        mp.setattr(sgd_mod, "_COMPILED", False)
        slow = runner(sc, 1)
    return fast, slow


@pytest.mark.parametrize("alg", sorted(_ALGS))
def test_whole_softmax_runs_equal_the_interpreted_path(alg, monkeypatch):
    fast, slow = _both(_scenario(alg), monkeypatch)
    assert fast.steps_done == 40 and not fast.diverged
    assert np.array_equal(fast.final_w, slow.final_w)
    assert all(np.array_equal(fast.metrics[m], slow.metrics[m], equal_nan=True)
               for m in slow.metrics)  # AREA: avg_* columns start with NaN
    assert fast.equals(slow)
    # the run moved: the rule did something
    assert not np.array_equal(fast.final_w, np.zeros_like(fast.final_w))


def test_compiled_runs_do_not_call_the_per_call_oracles(monkeypatch):
    """The problem's ``batch_grad`` is not called on the compiled path (so the equalities
    above compare two different code paths), and is called without it."""
    calls = []
    orig = SoftmaxProblem.batch_grad

    def counting(self, i, w, batch):
        calls.append(i)
        return orig(self, i, w, batch)

    sc = _scenario("fedasync")
    monkeypatch.setattr(SoftmaxProblem, "batch_grad", counting)  # on the base class itself:
    assert SGDRule(problem_for(sc), 0.3, 5, 7).fast  # not an override, the view stays
    run(sc, 0)
    assert calls == []
    monkeypatch.setattr(sgd_mod, "_COMPILED", False)
    run(sc, 0)
    assert len(calls) > 0


@pytest.mark.parametrize("alg", ["fedasync", "fedbuff"])
def test_reference_engine_steps_equal_the_interpreted_path(alg, monkeypatch):
    """The per-step reference engine (SGDRule.step, compiled) equals the fast engine
    interpreted."""
    sc = _scenario(alg, steps=25)
    ref = run_reference(sc, 1)
    with monkeypatch.context() as mp:
        mp.setattr(sgd_mod, "_COMPILED", False)
        slow = run(sc, 1)
    assert np.array_equal(ref.final_w, slow.final_w)
    assert np.array_equal(ref.metrics["grad_sq"], slow.metrics["grad_sq"])


@pytest.mark.parametrize("alg", ["area", "fedasync"])
def test_whole_logistic_runs_equal_the_interpreted_path(alg, monkeypatch):
    prob = {"kind": "digits", "n_clients": 5, "seed": 0}
    sc = _scenario(alg, prob)
    assert isinstance(problem_for(sc), LogisticProblem)
    fast, slow = _both(sc, monkeypatch)
    assert np.array_equal(fast.final_w, slow.final_w)
    assert fast.equals(slow)


# ---- MAML (Option B): the compiled estimator -----------------------------------------------
def _maml_reference(p, i, w, rng, alpha, variant, dl, b, b1, b2):
    """[P] eq. (9) and its variants from the per-call oracles (maml.py's docstring)."""
    D = p.sample_batch(i, b, rng)
    D1 = p.sample_batch(i, b1, rng)
    g = p.batch_grad(i, w - alpha * p.batch_grad(i, w, D1), D)
    if variant == "fomaml":
        return g
    D2 = p.sample_batch(i, b2, rng)
    if variant == "maml":
        return g - alpha * p.batch_hvp(i, w, g, D2)
    hv = (p.batch_grad(i, w + dl * g, D2) - p.batch_grad(i, w - dl * g, D2)) / (2.0 * dl)
    return g - alpha * hv


@settings(max_examples=40, deadline=None)
@given(kind=st.sampled_from(sorted(PROBLEMS)), variant=st.sampled_from(["maml", "fomaml",
                                                                          "hfmaml"]),
       b=st.integers(1, 20), b1=st.integers(1, 20), b2=st.integers(1, 20),
       client=st.integers(0, 4), seed=st.integers(0, 2**32), Q=st.integers(1, 4))
def test_maml_steps_equal_the_interpreted_path(kind, variant, b, b1, b2, client, seed, Q):
    p = PROBLEMS[kind]
    args = (p, 0.3, Q, b, 0.2, variant, 1e-3)
    kw = {"batch_inner": b1, "batch_hess": b2}
    fast = MAMLRule(*args, **kw)
    sgd_mod._COMPILED = False
    try:
        slow = MAMLRule(*args, **kw)
    finally:
        sgd_mod._COMPILED = True
    assert fast.cv is not None and slow.cv is None
    w0 = np.random.default_rng(seed).standard_normal(p.dim)
    r1, r2, r3 = _pcg(seed), _pcg(seed), _pcg(seed)
    a, c = np.empty(p.dim), np.empty(p.dim)
    fast.round(client, w0, a, r1)
    slow.round(client, w0, c, r2)
    w = w0.copy()
    for _ in range(Q):
        w -= 0.3 * _maml_reference(p, client, w, r3, 0.2, variant, 1e-3, b, b1, b2)
    assert np.array_equal(a, c) and np.array_equal(a, w)
    assert r1.bit_generator.state == r2.bit_generator.state == r3.bit_generator.state
    r4, r5 = _pcg(seed), _pcg(seed)
    assert np.array_equal(fast.direction(client, w0, r4), slow.direction(client, w0, r5))
    assert r4.bit_generator.state == r5.bit_generator.state


_MAML_RUNS = {
    "perfedavg-fo": {"name": "fedavg", "client_rule": "fomaml", "participation": 0.5,
                     "batch_inner": 9},
    "perfedavg-hf": {"name": "fedavg", "client_rule": "hfmaml", "participation": 0.5,
                     "batch_inner": 9, "batch_hess": 5, "hf_delta": 1e-3},
    "persafl-maml": {"name": "fedasync", "client_rule": "maml", "beta": 0.5},
}


@pytest.mark.parametrize("case", sorted(_MAML_RUNS))
def test_whole_maml_runs_equal_the_interpreted_path(case, monkeypatch):
    alg = {**_MAML_RUNS[case], "Q": 3, "eta": 0.3, "batch": 7, "alpha": 0.1}
    sc = Scenario.from_dict({
        "name": f"rows-{case}", "seed": 4, "problem": dict(_DIGITS), "algorithm": alg,
        "delays": _DELAYS, "horizon": {"steps": 20},
        "record": {"every": 2, "metrics": ["grad_sq", "pers_acc_maml"], "maml_alpha": 0.1}})
    fast, slow = _both(sc, monkeypatch)
    assert fast.steps_done == 20
    assert np.array_equal(fast.final_w, slow.final_w)
    assert fast.equals(slow)


# ---- the compiled metrics and the replay's constraints ----------------------------------------
@pytest.mark.parametrize("kind", sorted(PROBLEMS))
def test_grad_sq_metric_is_the_numpy_gradient_to_rounding(kind):
    """``grad_f_sq`` (the recorded grad_sq) is the compiled metric and equals
    ``||grad_f(w)||^2`` (NumPy, BLAS order) to 1e-12 relative at these points (the gradient
    is not small: no cancellation to amplify the rounding)."""
    p = PROBLEMS[kind]
    cv = p.compiled_view(3)
    names = {"logistic": ("grad_sq", "grad_maml_sq", "f_gap", "dist_sq"),
             "softmax": ("grad_sq",)}[kind]
    assert cv.metric_names == names and cv.has_metrics(["grad_sq"])
    assert cv.has_metrics(["grad_sq", "f_gap"]) == (kind == "logistic")  # softmax: Python
    r = np.random.default_rng(1)
    for scale in (0.0, 1.0, 20.0):
        w = scale * r.standard_normal(p.dim)
        out = np.empty(2)
        cv.metrics(cv.mdata, cv.codes(["grad_sq", "grad_sq"]), w, out)
        want = float(np.sum(p.grad_f(w) ** 2))
        assert out[0] == out[1] == p.grad_f_sq(w)
        assert abs(out[0] - want) <= 1e-12 * want


@pytest.mark.parametrize("kind", sorted(PROBLEMS))
def test_oracles_compile_without_reference_counting(kind):
    """The replay compiles its loops without NumPy's reference counting (numba
    ``_nrt=False``): the view's grad, hvp and metrics must compile and run there (no
    allocation), with the numbers of the ordinary calls.  (The draw runs there on the
    replay's own streams; numba's ``Generator.integers`` allocates, so it is not tried.)"""
    import numba

    p = PROBLEMS[kind]
    cv = p.compiled_view(5)
    grad, hvp, metrics = cv.grad, cv.hvp, cv.metrics

    def loop(data, mdata, w, v, z, g, h, codes, out):
        grad(data, 2, w, z, g)
        hvp(data, 2, w, v, z, h)
        metrics(mdata, codes, w, out)
        return 0

    bare = numba.njit(_nrt=False)(loop)
    w, v = np.random.default_rng(2).standard_normal((2, p.dim))
    idx = p.sample_batch(2, 5, _pcg(3))
    g, h, out = np.empty(p.dim), np.empty(p.dim), np.empty(1)
    bare(cv.data, cv.mdata, w, v, idx, g, h, cv.codes(["grad_sq"]), out)
    assert np.array_equal(g, p.batch_grad(2, w, idx))
    assert np.array_equal(h, p.batch_hvp(2, w, v, idx))
    assert out[0] == p.grad_f_sq(w)
