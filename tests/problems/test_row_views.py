"""The fused local-SGD kernels (fedsim/problems/fused_sgd.py) equal the generic path BIT FOR
BIT: ``sample_batch`` then ``batch_grad`` then ``w -= eta * g`` per step, from the same
stream, for softmax and binary logistic regression ([P] Algorithm 2 Option A; [A]
Algorithm 2's client loop).

Every comparison is ``np.array_equal`` (or ``Trace.equals``, which is ``array_equal`` per
column), never a tolerance: the kernels must make the same draws and the same
floating-point operations in the same order.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fedsim.local.sgd as sgd_mod
from fedsim.config import Scenario
from fedsim.engine import problem_for, run
from fedsim.engine.reference import run_reference
from fedsim.local.maml import MAMLRule
from fedsim.local.moreau import MoreauRule
from fedsim.local.sgd import SGDRule
from fedsim.problems import fused_sgd
from fedsim.problems.logistic import LogisticProblem
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


# ---- the draw: one call of s*b indices == s calls of b ------------------------------------
@settings(max_examples=200, deadline=None)
@given(m=st.one_of(st.integers(1, 300), st.integers(1, 2**32)), b=st.integers(1, 40),
       s=st.integers(1, 12), seed=st.integers(0, 2**63))
def test_one_draw_of_s_batches_equals_s_draws(m, b, s, seed):
    r1, r2 = _pcg(seed), _pcg(seed)
    one = r1.integers(0, m, size=s * b)
    many = np.concatenate([r2.integers(0, m, size=b) for _ in range(s)])
    assert np.array_equal(one, many)
    assert r1.bit_generator.state == r2.bit_generator.state  # the same numbers come next


# ---- the kernel alone ----------------------------------------------------------------------
@settings(max_examples=150, deadline=None)
@given(kind=st.sampled_from(sorted(PROBLEMS)), Q=st.integers(1, 25),
       b=st.one_of(st.integers(1, 40), st.integers(100, 300)),
       eta=st.one_of(st.just(0.0), st.floats(1e-4, 5.0)), client=st.integers(0, 4),
       seed=st.integers(0, 2**32), scale=st.sampled_from([0.0, 1.0, 50.0]))
def test_kernel_rounds_equal_the_generic_steps(kind, Q, b, eta, client, seed, scale):
    """Any Q, batch (chunks of CHUNK_ROWS rows included: b up to 300, Q up to 25), eta,
    client and start (large logits at scale 50): the same iterate and the same stream."""
    p = PROBLEMS[kind]
    w0 = scale * np.random.default_rng(seed).standard_normal(p.dim)
    r1, r2 = _pcg(seed), _pcg(seed)
    k = p.fused_sgd(b)
    w = w0.copy()
    k.run(client, w, r1, eta, Q)
    ref = _generic_round(p, client, w0, r2, eta, Q, b)
    assert np.array_equal(w, ref)
    assert r1.bit_generator.state == r2.bit_generator.state


@settings(max_examples=100, deadline=None)
@given(kind=st.sampled_from(sorted(PROBLEMS)), b=st.integers(1, 120), client=st.integers(0, 4),
       seed=st.integers(0, 2**32), scale=st.sampled_from([0.0, 1.0, 50.0]))
def test_kernel_grad_equals_batch_grad(kind, b, client, seed, scale):
    """``grad(i, w, idx)`` / ``hvp(i, w, v, idx)`` (any batch size: MAML's |D|, |D'|, |D''|)
    are ``batch_grad`` / ``batch_hvp``; sizes reuse their buffers, so a second call with
    another w must not see the first."""
    p = PROBLEMS[kind]
    k = p.fused_sgd(7)
    r = np.random.default_rng(seed)
    idx = p.sample_batch(client, b, r)
    for _ in range(2):
        w = scale * r.standard_normal(p.dim)
        v = r.standard_normal(p.dim)
        assert np.array_equal(k.grad(client, w, idx), p.batch_grad(client, w, idx))
        assert np.array_equal(k.hvp(client, w, v, idx), p.batch_hvp(client, w, v, idx))


@pytest.mark.parametrize("kind", sorted(PROBLEMS))
def test_chunk_boundaries_and_a_strided_model(kind, monkeypatch):
    """Tiny chunks (3 rows: a chunk boundary inside every other step) and a model that is a
    strided view (not C-contiguous): still the generic numbers."""
    p = PROBLEMS[kind]
    monkeypatch.setattr(fused_sgd, "CHUNK_ROWS", 3)
    k = p.fused_sgd(2)
    assert k.steps == 1
    big = np.random.default_rng(5).standard_normal(2 * p.dim)
    w = big[::2]
    w0 = w.copy()
    r1, r2 = _pcg(9), _pcg(9)
    k.run(1, w, r1, 0.3, 7)
    assert np.array_equal(w, _generic_round(p, 1, w0, r2, 0.3, 7, 2))
    assert np.array_equal(big[1::2], np.random.default_rng(5).standard_normal(2 * p.dim)[1::2])


def test_rule_step_and_round_use_the_kernel_and_agree():
    """SGDRule.round (engine) and SGDRule.step (reference engine) with the fused kernel equal
    the rule with the generic path, also at an eta passed by AREA."""
    p = _SOFTMAX
    fused = SGDRule(p, 0.2, 6, 5)
    sgd_mod_fused = fused.fused
    assert isinstance(sgd_mod_fused, fused_sgd.SoftmaxSGD)
    w0 = np.random.default_rng(0).standard_normal(p.dim)
    out = np.empty(p.dim)
    for eta in (None, 0.05):
        r1, r2 = _pcg(4), _pcg(4)
        fused.round(2, w0, out, r1, eta=eta)
        w = w0.copy()
        for _ in range(6):
            fused.step(2, w, r2, eta=eta)
        ref = _generic_round(p, 2, w0, _pcg(4), 0.2 if eta is None else eta, 6, 5)
        assert np.array_equal(out, ref) and np.array_equal(w, ref)


def test_switch_and_overrides_fall_back_to_the_generic_path(monkeypatch):
    class Noisy(SoftmaxProblem):
        def batch_grad(self, i, w, batch):
            return super().batch_grad(i, w, batch) + 1.0

    q = Noisy(_SOFTMAX.X, _SOFTMAX.y, 10, _SOFTMAX.reg)
    assert q.fused_sgd(4) is None and SGDRule(q, 0.1, 2, 4).fused is None
    inst = SoftmaxProblem(_SOFTMAX.X, _SOFTMAX.y, 10, _SOFTMAX.reg)
    inst.sample_batch = lambda i, size, rng: np.zeros(size, dtype=np.int64)
    assert inst.fused_sgd(4) is None and SGDRule(inst, 0.1, 2, 4).fused is None

    class Proxy:  # forwards attributes; the kernel is looked up on the class
        def __init__(self, p):
            self.p = p

        def __getattr__(self, name):
            return getattr(self.p, name)

    assert SGDRule(Proxy(_SOFTMAX), 0.1, 2, 4).fused is None
    assert SGDRule(_SOFTMAX, 0.1, 2, 4).fused is not None
    monkeypatch.setattr(sgd_mod, "_FUSED", False)
    assert SGDRule(_SOFTMAX, 0.1, 2, 4).fused is None


# ---- whole runs: fused against generic -----------------------------------------------------
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
    # two chunks per round (Q b = 16 * 160 > CHUNK_ROWS = 2048)
    "fedasync-chunks": ({"name": "fedasync", "client_rule": "sgd", "Q": 16, "eta": 0.3,
                         "batch": 160, "beta": 0.5}, {"kind": "every_upload"}),
}


def _scenario(alg: str, problem: dict | None = None, steps: int = 40) -> Scenario:
    a, trig = _ALGS[alg]
    return Scenario.from_dict({
        "name": f"fused-{alg}", "seed": 11, "problem": dict(problem or _DIGITS),
        "algorithm": dict(a), "trigger": dict(trig), "delays": _DELAYS,
        "horizon": {"steps": steps},
        "record": {"every": 4, "metrics": ["grad_sq", "test_loss", "test_acc"]
                   if problem is None else ["grad_sq"]}})


def _both(sc: Scenario, monkeypatch, runner=run):
    fast = runner(sc, 1)
    with monkeypatch.context() as mp:
        mp.setattr(sgd_mod, "_FUSED", False)
        slow = runner(sc, 1)
    return fast, slow


@pytest.mark.parametrize("alg", sorted(_ALGS))
def test_whole_softmax_runs_equal_the_generic_path(alg, monkeypatch):
    fast, slow = _both(_scenario(alg), monkeypatch)
    assert fast.steps_done == 40 and not fast.diverged
    assert np.array_equal(fast.final_w, slow.final_w)
    assert all(np.array_equal(fast.metrics[m], slow.metrics[m], equal_nan=True)
               for m in slow.metrics)  # AREA: avg_* columns start with NaN
    assert fast.equals(slow)
    # the run moved: the kernel did something
    assert not np.array_equal(fast.final_w, np.zeros_like(fast.final_w))


def test_fused_runs_actually_use_the_kernel(monkeypatch):
    """The generic oracles are not called with the fused path on (so the equalities above
    compare two different code paths), and are called without it."""
    calls = []
    orig = SoftmaxProblem.batch_grad

    def counting(self, i, w, batch):
        calls.append(i)
        return orig(self, i, w, batch)

    sc = _scenario("fedasync")
    monkeypatch.setattr(SoftmaxProblem, "batch_grad", counting)
    run(sc, 0)
    assert calls == []
    monkeypatch.setattr(sgd_mod, "_FUSED", False)
    run(sc, 0)
    assert len(calls) > 0


@pytest.mark.parametrize("alg", ["fedasync", "fedbuff"])
def test_reference_engine_steps_equal_the_generic_path(alg, monkeypatch):
    """The per-step reference engine (SGDRule.step) with the kernel equals the fast engine
    without it."""
    sc = _scenario(alg, steps=25)
    ref = run_reference(sc, 1)
    with monkeypatch.context() as mp:
        mp.setattr(sgd_mod, "_FUSED", False)
        slow = run(sc, 1)
    assert np.array_equal(ref.final_w, slow.final_w)
    assert np.array_equal(ref.metrics["grad_sq"], slow.metrics["grad_sq"])


@pytest.mark.parametrize("alg", ["area", "fedasync"])
def test_whole_logistic_runs_equal_the_generic_path(alg, monkeypatch):
    prob = {"kind": "digits", "n_clients": 5, "seed": 0}
    sc = _scenario(alg, prob)
    assert isinstance(problem_for(sc), LogisticProblem)
    fast, slow = _both(sc, monkeypatch)
    assert np.array_equal(fast.final_w, slow.final_w)
    assert fast.equals(slow)


# ---- MAML (Option B) steps: one draw of D, D', D'' and the kernel's grad -------------------
@settings(max_examples=40, deadline=None)
@given(kind=st.sampled_from(sorted(PROBLEMS)), variant=st.sampled_from(["maml", "fomaml",
                                                                          "hfmaml"]),
       b=st.integers(1, 20), b1=st.integers(1, 20), b2=st.integers(1, 20),
       client=st.integers(0, 4), seed=st.integers(0, 2**32), Q=st.integers(1, 4))
def test_maml_steps_equal_the_generic_path(kind, variant, b, b1, b2, client, seed, Q):
    p = PROBLEMS[kind]
    args = (p, 0.3, Q, b, 0.2, variant, 1e-3)
    kw = {"batch_inner": b1, "batch_hess": b2}
    fused = MAMLRule(*args, **kw)
    sgd_mod._FUSED = False
    try:
        generic = MAMLRule(*args, **kw)
    finally:
        sgd_mod._FUSED = True
    assert fused.fused is not None and generic.fused is None
    w0 = np.random.default_rng(seed).standard_normal(p.dim)
    r1, r2 = _pcg(seed), _pcg(seed)
    a, c = np.empty(p.dim), np.empty(p.dim)
    fused.round(client, w0, a, r1)
    generic.round(client, w0, c, r2)
    assert np.array_equal(a, c)
    assert r1.bit_generator.state == r2.bit_generator.state


_MAML_RUNS = {
    "perfedavg-fo": {"name": "fedavg", "client_rule": "fomaml", "participation": 0.5,
                     "batch_inner": 9},
    "perfedavg-hf": {"name": "fedavg", "client_rule": "hfmaml", "participation": 0.5,
                     "batch_inner": 9, "batch_hess": 5, "hf_delta": 1e-3},
    "persafl-maml": {"name": "fedasync", "client_rule": "maml", "beta": 0.5},
}


@pytest.mark.parametrize("case", sorted(_MAML_RUNS))
def test_whole_maml_runs_equal_the_generic_path(case, monkeypatch):
    alg = {**_MAML_RUNS[case], "Q": 3, "eta": 0.3, "batch": 7, "alpha": 0.1}
    sc = Scenario.from_dict({
        "name": f"fused-{case}", "seed": 4, "problem": dict(_DIGITS), "algorithm": alg,
        "delays": _DELAYS, "horizon": {"steps": 20},
        "record": {"every": 2, "metrics": ["grad_sq", "pers_acc_maml"], "maml_alpha": 0.1}})
    fast, slow = _both(sc, monkeypatch)
    assert fast.steps_done == 20
    assert np.array_equal(fast.final_w, slow.final_w)
    assert fast.equals(slow)


# ---- Moreau (Option C) GD inner solves: the kernel's grad -----------------------------------
@pytest.mark.parametrize("name", ["fedavg", "fedasync"])  # pFedMe, PersA-FL-ME
def test_whole_moreau_runs_equal_the_generic_path(name, monkeypatch):
    sc0 = _scenario("fedasync")
    L = float(problem_for(sc0).constants["L"].value)
    alg = {"name": name, "client_rule": "moreau", "Q": 3, "eta": 0.5 / L, "batch": 7,
           "lam": 2.0 * L, "nu": 1e-3, "inner_max_iter": 30}
    alg.update({"participation": 0.5} if name == "fedavg" else {"beta": 0.5})
    sc = Scenario.from_dict({
        "name": f"fused-moreau-{name}", "seed": 4, "problem": dict(_DIGITS), "algorithm": alg,
        "delays": _DELAYS, "horizon": {"steps": 12},
        "record": {"every": 2, "metrics": ["grad_sq"]}})
    fast, slow = _both(sc, monkeypatch)
    assert fast.steps_done == 12
    assert np.array_equal(fast.final_w, slow.final_w)
    assert fast.equals(slow)
    assert fast.info == slow.info and fast.info["inner_iters"] > 0


def test_maml_and_moreau_rules_take_the_kernel_unless_switched_off(monkeypatch):
    p = _SOFTMAX
    L = float(p.constants["L"].value)
    assert MAMLRule(p, 0.1, 2, 4, 0.1, "hfmaml").fused is not None
    assert MoreauRule(p, 0.1, 2, 4, 2 * L, 1e-3, 10, "gd", L).fused is not None
    monkeypatch.setattr(sgd_mod, "_FUSED", False)
    assert MAMLRule(p, 0.1, 2, 4, 0.1, "hfmaml").fused is None
    assert MoreauRule(p, 0.1, 2, 4, 2 * L, 1e-3, 10, "gd", L).fused is None
