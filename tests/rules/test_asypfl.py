"""AsyPFL (Ma, Lu, Li, Cui 2022; /work/shared/papers/asypfl.md): client rule, eq. (4) server,
pi_k / E_k of Algorithm 1, the physical engine, config validation and the CLI.

The hand case is ``f_k(w) = A_k/2 (w - b_k)^2`` in one dimension with ``A = (1, 2)``,
``b = (1, -1)`` and no gradient noise, so ``grad F_k(x) = A_k (x - b_k)`` and the Fisher
diagonal is ``h_k = A_k``.  Expected values come from Algorithm 1 / eq. (4) replayed in exact
rational arithmetic (``fractions.Fraction``), and the first three events are written out as
literal numbers.
"""

from __future__ import annotations

import math
from fractions import Fraction as Fr
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedsim.config import AlgorithmConfig, Scenario
from fedsim.errors import ConfigError, FedsimError
from fedsim.local.asypfl import AsyPFLRule, decay
from fedsim.problems.logistic import LogisticProblem
from fedsim.problems.quadratic import QuadraticProblem
from fedsim.rng import Streams
from fedsim.servers.asypfl import (
    AsyPFLServer,
    asypfl_apply,
    client_weights,
    staleness_indicator,
)

A = (1, 2)
B = (1, -1)
ETA, DELTA, GAMMA, LAM = Fr(1, 10), Fr(1, 5), Fr(1, 2), Fr(1, 2)


def two_clients() -> QuadraticProblem:
    return QuadraticProblem([[[1.0]], [[2.0]]], [[1.0], [-1.0]])


def const(v: float) -> dict:
    return {"kind": "constant", "value": v}


# client 0: download 0.5, 1.0 per local step, upload 0.5  -> DeltaT^g = 1,   DeltaT^c = 1
# client 1: download 1.0, 0.5 per local step, upload 1.0  -> DeltaT^g = 0.5, DeltaT^c = 2
DELAYS = {"download": const(0.5), "compute": const(1.0), "upload": const(0.5),
          "compute_per": "step",
          "override": [{"clients": [1], "download": const(1.0), "compute": const(0.5),
                        "upload": const(1.0)}]}


def scenario(steps: int, alg: dict | None = None, delays: dict | None = None, **kw) -> Scenario:
    a = {"name": "asypfl", "E": 1, "eta": 0.1, "delta": 0.2, "gamma": 0.5, "lam": 0.5}
    a.update(alg or {})
    d = {"name": "asypfl-hand", "seed": 3,
         "problem": {"kind": "quadratic", "n": 2, "dim": 1, "mu": 1.0, "L": 2.0,
                     "noise_sd": 0.0, "seed": 0},
         "algorithm": a, "delays": DELAYS if delays is None else delays,
         "horizon": {"steps": steps}, "record": {"metrics": ["f_gap"], "every": 1}}
    d.update(kw)
    return Scenario.from_dict(d)


def run(sc: Scenario, problem=None, replicate: int = 0):
    from fedsim.engine import problem_for
    from fedsim.engine.dispatch import replay_tables

    p = problem if problem is not None else problem_for(sc)
    with np.errstate(all="ignore"):
        return replay_tables(sc, p, [replicate])[0]


# --------------------------------------------------------------------------------------
# exact replay of Algorithm 1 (Fractions)
# --------------------------------------------------------------------------------------
def grad(k: int, x: Fr) -> Fr:
    return A[k] * (x - B[k])


def client_update(k: int, omega: Fr, beta: Fr, tau: int, E: int, lam: Fr = LAM):
    """Algorithm 1 ClientUpdate: E steps of (a) then (b), decay 1/(1 + gamma tau)."""
    s = 1 / (1 + GAMMA * tau)
    for _ in range(E):
        omega_new = omega - ETA * s * grad(k, omega)
        beta = beta - DELTA * s * (grad(k, beta) + lam * (beta - omega_new) * A[k])
        omega = omega_new
    return omega, beta


def test_hand_case_first_three_events_literal():
    """t=2.0 client 0 (r=0): omega_0 = 0 - 0.1(0-1) = 0.1; beta_0 = 0 - 0.2(-1 + 0.5*1*(0 -
    0.1)) = 0.21; eq. (4): omega = 0 + 0.5 (0.1 - 0) = 0.05.
    t=2.5 client 1 (r=0): omega_1 = 0 - 0.1*2*(0+1) = -0.2; beta_1 = 0 - 0.2(2 + 0.5*2*(0 +
    0.2)) = -0.44; omega = 0.05 + 0.5(-0.2 - 0) = -0.05.
    t=4.0 client 0 (r=1, decay 1/(1+0.5) = 2/3) from 0.05: omega_0 = 0.05 + (0.2/3) 0.95 =
    17/150; beta_0 = 0.21 - (0.4/3)(-0.79 + 0.5 (0.21 - 17/150)) = 139/450; omega = -0.05 +
    0.5 (17/150 - 0.05) = -11/600."""
    p = two_clients()
    tr = run(scenario(1), p)
    assert tr.final_w[0] == pytest.approx(0.05, abs=1e-15)
    assert tr.info["beta"][0, 0] == pytest.approx(0.21, abs=1e-15)
    assert tr.info["beta"][1, 0] == 0.0  # client 1 has not uploaded yet
    tr = run(scenario(2), p)
    assert tr.final_w[0] == pytest.approx(-0.05, abs=1e-15)
    assert tr.info["beta"][1, 0] == pytest.approx(-0.44, abs=1e-15)
    tr = run(scenario(3), p)
    assert tr.final_w[0] == pytest.approx(-11 / 600, abs=1e-15)
    assert tr.info["beta"][0, 0] == pytest.approx(139 / 450, abs=1e-15)
    assert tr.info["beta"][1, 0] == pytest.approx(-0.44, abs=1e-15)
    assert tr.time.tolist() == [0.0, 2.0, 2.5, 4.0]
    assert tr.client.tolist() == [-1, 0, 1, 0]
    assert tr.staleness_steps.tolist() == [0, 0, 1, 1]
    assert tr.staleness_time.tolist() == [0.0, 2.0, 2.5, 2.0]


def test_hand_case_five_events_exact_replay_and_pi():
    """Events: (t, client, r_k, E_k) = (2.0, 0, 0, 1), (2.5, 1, 0, 1), (4.0, 0, 1, 1),
    (6.0, 0, 3, 1), (6.5, 1, 2, 4).  After client 1's first upload the server knows
    DeltaT^c/(DeltaT^g p) = 1/(1*0.5) = 2 (client 0) and 2/(0.5*0.5) = 8 (client 1), so
    pi_min = 2, pi_1 = floor(8/2) = 4 and client 1's second round runs E_1 = 4 E = 4 steps
    (arriving at 2.5 + 1 + 4*0.5 + 1 = 6.5); pi_0 = floor(2/2) = 1."""
    p = two_clients()
    tr = run(scenario(5), p)
    half = Fr(1, 2)
    w = Fr(0)
    beta = [Fr(0), Fr(0)]
    # (client, r, E, global model read) in arrival order
    w_read = {}
    w_read[(0, 0)] = w
    w_read[(1, 0)] = w
    o, beta[0] = client_update(0, w_read[(0, 0)], beta[0], tau=0, E=1)
    w = w + half * (o - w_read[(0, 0)])              # step 1, t = 2.0
    w_read[(0, 1)] = w                                # client 0 reads at 2.0
    o, beta[1] = client_update(1, w_read[(1, 0)], beta[1], tau=0, E=1)
    w = w + half * (o - w_read[(1, 0)])              # step 2, t = 2.5
    w_read[(1, 2)] = w                                # client 1 reads at 2.5
    o, beta[0] = client_update(0, w_read[(0, 1)], beta[0], tau=1, E=1)
    w = w + half * (o - w_read[(0, 1)])              # step 3, t = 4.0
    w_read[(0, 3)] = w
    o, beta[0] = client_update(0, w_read[(0, 3)], beta[0], tau=3, E=1)
    w = w + half * (o - w_read[(0, 3)])              # step 4, t = 6.0
    o, beta[1] = client_update(1, w_read[(1, 2)], beta[1], tau=2, E=4)
    w = w + half * (o - w_read[(1, 2)])              # step 5, t = 6.5
    assert tr.time.tolist() == [0.0, 2.0, 2.5, 4.0, 6.0, 6.5]
    assert tr.client.tolist() == [-1, 0, 1, 0, 0, 1]
    assert tr.staleness_steps.tolist() == [0, 0, 1, 1, 0, 2]
    assert tr.final_w[0] == pytest.approx(float(w), rel=1e-14, abs=1e-16)
    assert tr.info["beta"][:, 0] == pytest.approx([float(beta[0]), float(beta[1])], rel=1e-14)
    assert tr.info["pi"].tolist() == [1, 4]
    assert tr.info["E_k"].tolist() == [1, 4]
    assert tr.info["local_steps"].tolist() == [3, 5]
    assert tr.info["dTg"].tolist() == [1.0, 0.5]
    assert tr.info["dTc"].tolist() == [1.0, 2.0]
    assert tr.client_updates.tolist() == [3, 2]
    assert tr.staleness_bound == math.inf
    # f_gap of the global model at every step; personalized gap mean_k f_k(beta_k) - 0
    assert tr.metrics["f_gap"][-1] == pytest.approx(float(p.f_gap(np.array([float(w)]))))
    pg = np.mean([0.5 * A[k] * (float(beta[k]) - B[k]) ** 2 for k in range(2)])
    assert tr.info["personal_gap_steps"].tolist() == [0, 1, 2, 3, 4, 5]
    assert tr.info["personal_gap"][-1] == pytest.approx(pg, rel=1e-13)
    assert tr.info["personal_gap"][0] == pytest.approx(0.5 * (0.5 + 1.0))


def test_E_scales_the_local_epochs():
    """With E = 3: client 0's first round has 3 steps (arrival 0.5 + 3 + 0.5 = 4.0), client
    1's 3 steps (1 + 1.5 + 1 = 3.5), so client 1 uploads first."""
    p = two_clients()
    tr = run(scenario(2, alg={"E": 3}), p)
    assert tr.time.tolist() == [0.0, 3.5, 4.0]
    assert tr.client.tolist() == [-1, 1, 0]
    o1, b1 = client_update(1, Fr(0), Fr(0), tau=0, E=3)
    w = Fr(1, 2) * o1
    o0, b0 = client_update(0, Fr(0), Fr(0), tau=0, E=3)
    w = w + Fr(1, 2) * o0
    assert tr.final_w[0] == pytest.approx(float(w), rel=1e-14)
    assert tr.info["beta"][:, 0] == pytest.approx([float(b0), float(b1)], rel=1e-14)
    # E_k is set at k's own upload: client 1 reported alone (pi_1 = 1, E_1 = 3); client 0
    # then sees ratios 2 (itself) and 8, pi_min = 2, pi_0 = 1 -> E_0 = 3
    assert tr.info["E_k"].tolist() == [3, 3]
    assert tr.info["local_steps"].tolist() == [3, 3]


# --------------------------------------------------------------------------------------
# the client rule
# --------------------------------------------------------------------------------------
def noisy_quadratic() -> QuadraticProblem:
    return QuadraticProblem.random(n=3, dim=4, mu=0.5, L=2.0, noise_sd=0.3, seed=7,
                                   shared_hessian=False)


@pytest.mark.parametrize("gamma, tau", [(0.0, 0), (0.3, 5)])
def test_lam_zero_personal_model_is_pure_local_sgd(gamma, tau):
    """lam = 0 ("the local objective aims at training purely local models"): beta follows
    beta <- beta - delta/(1+gamma tau) g_k(beta, xi) with the same batches, whatever omega."""
    p = noisy_quadratic()
    r = AsyPFLRule(p, eta=0.05, delta=0.1, gamma=gamma, lam=0.0, batch=2)
    beta = np.array([0.3, -0.2, 0.1, 1.0])
    out = np.empty(4)
    rng = np.random.default_rng(11)
    r.round(1, np.zeros(4), beta, out, rng, tau=tau, E=6)
    ref = np.array([0.3, -0.2, 0.1, 1.0])
    rng2 = np.random.default_rng(11)
    s = 1.0 / (1.0 + gamma * tau)
    for _ in range(6):
        xi = p.sample_batch(1, 2, rng2)
        ref -= (0.1 * s) * p.batch_grad(1, ref, xi)
    np.testing.assert_array_equal(beta, ref)
    # and beta does not depend on the global model or on eta when lam = 0
    beta2 = np.array([0.3, -0.2, 0.1, 1.0])
    AsyPFLRule(p, eta=0.7, delta=0.1, gamma=gamma, lam=0.0, batch=2).round(
        1, np.full(4, 5.0), beta2, out, np.random.default_rng(11), tau=tau, E=6)
    np.testing.assert_array_equal(beta2, ref)


def test_engine_lam_zero_beta_is_local_sgd_on_the_noise_stream():
    """End to end with gamma = 0: beta_k after the run equals local_steps[k] SGD steps on
    client k's own ``noise`` stream (one batch per step, shared with omega's step), by the
    gradient oracle the rule runs (the quadratic's compiled view, whose ``A_i (w - b_i)`` is
    summed in index order; ``QuadraticProblem.batch_grad`` uses BLAS, ~1 ulp apart)."""
    from fedsim.problems.compiled import compiled_view

    sc = scenario(12, alg={"lam": 0.0, "gamma": 0.0, "batch": 3}, seed=5,
                  problem={"kind": "quadratic", "n": 2, "dim": 3, "mu": 0.5, "L": 2.0,
                           "noise_sd": 0.5, "seed": 2})
    tr = run(sc)
    p = QuadraticProblem.random(n=2, dim=3, mu=0.5, L=2.0, noise_sd=0.5, seed=2)
    for k in range(2):
        rng = Streams(5, 0).client(k, "noise")
        b = np.zeros(3)
        cv, g = compiled_view(p, 3), np.empty(3)
        for _ in range(int(tr.info["local_steps"][k])):
            z = rng.standard_normal(3)  # the d normals sample_batch draws
            cv.grad(cv.data, k, b, z, g)
            b -= 0.2 * g
        np.testing.assert_array_equal(tr.info["beta"][k], b)


def test_step_order_and_elastic_term_on_logistic():
    """One step by hand on a logistic client: omega first with g(omega, xi), then beta with
    g(beta^tau, xi) + lam diag(hess(omega^{tau+1})) (beta^tau - omega^{tau+1})."""
    p = LogisticProblem.synthetic(2, 3, 15, seed=1, nu_reg=0.05)
    r = AsyPFLRule(p, eta=0.3, delta=0.2, gamma=0.1, lam=2.0, batch=4)
    om0, be0 = np.array([0.1, -0.4, 0.2]), np.array([-0.3, 0.5, 0.0])
    om, be = om0.copy(), be0.copy()
    r.step(1, om, be, np.random.default_rng(3), tau=4)
    xi = p.sample_batch(1, 4, np.random.default_rng(3))
    s = 1.0 / (1.0 + 0.1 * 4)
    om1 = om0 - 0.3 * s * p.batch_grad(1, om0, xi)
    h = np.diag(p.hess(1, om1))
    be1 = be0 - 0.2 * s * (p.batch_grad(1, be0, xi) + 2.0 * h * (be0 - om1))
    np.testing.assert_allclose(om, om1, rtol=1e-14, atol=1e-16)
    np.testing.assert_allclose(be, be1, rtol=1e-14, atol=1e-16)


def test_quadratic_fisher_is_the_constant_hessian_diagonal():
    p = noisy_quadratic()
    r = AsyPFLRule(p, eta=0.1, delta=0.1, gamma=0.0, lam=1.0)
    for i in range(3):
        np.testing.assert_array_equal(r.fisher_diag(i, np.ones(4)), np.diag(p.A_stack[i]))
        np.testing.assert_array_equal(r.fisher_diag(i, -np.ones(4)), np.diag(p.A_stack[i]))


def test_decay_uses_the_download_step():
    assert decay(0.5, 0) == 1.0
    assert decay(0.5, 2) == 0.5
    assert decay(0.0, 10**6) == 1.0


def test_rule_rejects_bad_parameters():
    p = two_clients()
    for kw in ({"eta": -0.1}, {"delta": math.nan}, {"gamma": -1.0}, {"lam": math.inf}):
        args = {"eta": 0.1, "delta": 0.1, "gamma": 0.0, "lam": 0.0} | kw
        with pytest.raises(ConfigError, match=f"algorithm.{next(iter(kw))}"):
            AsyPFLRule(p, **args)
    with pytest.raises(ConfigError, match="algorithm.batch"):
        AsyPFLRule(p, 0.1, 0.1, 0.0, 0.0, batch=0)
    r = AsyPFLRule(p, 0.1, 0.1, 0.0, 0.0)
    with pytest.raises(ConfigError, match="E_k"):
        r.round(0, np.zeros(1), np.zeros(1), np.zeros(1), np.random.default_rng(0), 0, 0)


# --------------------------------------------------------------------------------------
# the server: eq. (4), p^k, pi_k
# --------------------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.floats(1e-3, 1.0), st.integers(0, 2**31 - 1))
def test_server_rule_is_eq4(d, pk, seed):
    rng = np.random.default_rng(seed)
    w, new, read = rng.normal(size=(3, d))
    expect = w + pk * (new - read)
    S = w.copy().reshape(1, d)
    fill = asypfl_apply(S, np.array([0], dtype=np.int32), read.reshape(1, d),
                        new.reshape(1, d), 1, np.zeros(1, dtype=np.int64), 0,
                        np.array([pk, 1.0]), np.zeros(0, dtype=np.int64))
    assert fill == 1
    np.testing.assert_array_equal(S[0], expect)
    S2 = w.copy().reshape(1, d)
    asypfl_apply.py_func(S2, np.array([0], dtype=np.int32), read.reshape(1, d),
                         new.reshape(1, d), 1, np.zeros(1, dtype=np.int64), 0,
                         np.array([pk, 1.0]), np.zeros(0, dtype=np.int64))
    np.testing.assert_array_equal(S2, S)
    srv = AsyPFLServer(np.array([pk, 1.0]), 1)
    np.testing.assert_array_equal(srv.apply(w.copy(), 0, new, read), expect)


def test_client_weights_are_sample_shares():
    rng = np.random.default_rng(0)
    X = [rng.normal(size=(m, 2)) for m in (3, 5, 12)]
    y = [np.where(rng.random(x.shape[0]) < 0.5, -1.0, 1.0) for x in X]
    p = client_weights(LogisticProblem(X, y, nu_reg=0.1))
    np.testing.assert_allclose(p, [3 / 20, 5 / 20, 12 / 20], rtol=1e-15)
    np.testing.assert_array_equal(client_weights(noisy_quadratic()), np.full(3, 1 / 3))


def test_staleness_indicator_hand_values():
    """p = (0.25, 0.25, 0.5): ratios DeltaT^c/(DeltaT^g p) = (1/(1*0.25), 3/(0.5*0.25),
    2.9/(1*0.5)) = (4, 24, 5.8), pi_min = 4, pi = floor((1, 6, 1.45)) = (1, 6, 1).
    p = 0.25 each: client 2's ratio is 11.6, pi_2 = floor(2.9) = 2."""
    dTc, dTg, p = [1.0, 3.0, 2.9], [1.0, 0.5, 1.0], [0.25, 0.25, 0.5]
    assert [staleness_indicator(dTc, dTg, p, k) for k in range(3)] == [1, 6, 1]
    p = [0.25, 0.25, 0.25]
    assert [staleness_indicator(dTc, dTg, p, k) for k in range(3)] == [1, 6, 2]
    # an integer ratio up to rounding is that integer: 0.3/0.1 = 2.9999999999999996
    assert staleness_indicator([0.1, 0.3], [1.0, 1.0], [0.5, 0.5], 1) == 3
    # unknown clients are left out of pi_min; a client without reports runs pi = 1
    assert staleness_indicator([1.0, 3.0, 0.5], [1.0, 0.5, 1.0], [1 / 3] * 3, 1,
                               known=[True, True, False]) == 6
    assert staleness_indicator([1.0, 3.0, 0.5], [1.0, 0.5, 1.0], [1 / 3] * 3, 2,
                               known=[True, True, False]) == 1
    # no communication time anywhere: 0/0 -> pi = 1; pi_min = 0 with DeltaT^c_k > 0: error
    assert staleness_indicator([0.0, 0.0], [1.0, 2.0], [0.5, 0.5], 1) == 1
    with pytest.raises(FedsimError, match="pi_min = 0"):
        staleness_indicator([0.0, 1.0], [1.0, 1.0], [0.5, 0.5], 1)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(1e-3, 10.0), st.floats(1e-3, 10.0), st.integers(1, 50)),
                min_size=1, max_size=6))
def test_pi_is_at_least_one_and_one_at_the_minimiser(clients):
    """pi_k >= 1 always, pi_k = 1 for the client attaining pi_min, and pi_k is the floor of
    the ratio (within the 1e-12 integer tolerance)."""
    dTc = np.array([c[0] for c in clients])
    dTg = np.array([c[1] for c in clients])
    m = np.array([c[2] for c in clients], dtype=float)
    p = m / m.sum()
    pis = [staleness_indicator(dTc, dTg, p, k) for k in range(len(clients))]
    ratios = dTc / (dTg * p)
    assert min(pis) >= 1
    assert pis[int(np.argmin(ratios))] == 1
    for k, pi in enumerate(pis):
        r = ratios[k] / ratios.min()
        assert pi <= r * (1 + 1e-9) and pi > r * (1 - 1e-9) - 1


def test_server_running_averages_and_epochs():
    srv = AsyPFLServer(np.array([0.5, 0.5]), 2)
    assert srv.epochs(0) == 2  # no report yet -> pi = 1, E_k = E
    srv.report(0, 3.0, 3, 1.0)  # 1.0 per step, comm 1.0
    assert srv.epochs(0) == 2
    srv.report(1, 1.0, 2, 2.0)  # 0.5 per step, comm 2.0 -> ratio 8 vs 2
    assert srv.epochs(1) == 8
    srv.report(1, 3.0, 2, 2.0)  # now 4.0 / 4 steps = 1.0 per step -> ratio 4 vs 2
    assert srv.dTg.tolist() == [1.0, 1.0] and srv.dTc.tolist() == [1.0, 2.0]
    assert srv.epochs(1) == 4
    assert srv.pi.tolist() == [1, 2]


# --------------------------------------------------------------------------------------
# config validation
# --------------------------------------------------------------------------------------
@pytest.mark.parametrize("alg, field", [
    ({"E": 0}, "algorithm.E"),
    ({"E": 1.5}, "algorithm.E"),
    ({"delta": -0.1}, "algorithm.delta"),
    ({"gamma": math.nan}, "algorithm.gamma"),
    ({"lam": -1.0}, "algorithm.lam"),
    ({"eta": -1.0}, "algorithm.eta"),
    ({"batch": 0}, "algorithm.batch"),
    ({"Q": 3}, "algorithm.Q"),
    ({"beta": 1.0}, "algorithm.beta"),
    ({"model": "window"}, "algorithm.model"),
    ({"client_rule": "sgd"}, "algorithm.client_rule"),
])
def test_config_rejects_bad_algorithm_fields(alg, field):
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
        scenario(5, alg=alg)


def test_config_lam_required_and_keys_only_for_asypfl():
    with pytest.raises(ConfigError, match=r"algorithm\.lam .*required"):
        AlgorithmConfig(name="asypfl")
    with pytest.raises(ConfigError, match=r"algorithm\.E is not used"):
        AlgorithmConfig(name="fedasync", E=2)
    with pytest.raises(ConfigError, match=r"algorithm\.gamma is not used"):
        AlgorithmConfig(name="fedbuff", gamma=0.1)
    a = AlgorithmConfig(name="asypfl", lam=0.0)
    assert (a.model, a.client_rule) == ("physical", "asypfl")
    assert (a.get("E"), a.get("eta"), a.get("delta"), a.get("gamma"), a.get("batch")) == (
        1, 0.01, 0.01, 0.0, 1)


def test_config_cross_field_rules():
    with pytest.raises(ConfigError, match=r"trigger\.kind"):
        scenario(5, trigger={"kind": "every_k", "count": 2})
    with pytest.raises(ConfigError, match=r"delays\.compute_per"):
        scenario(5, delays={**DELAYS, "compute_per": "round"})
    with pytest.raises(ConfigError, match=r"delays\.compute must not be constant 0"):
        scenario(5, delays={"compute": const(0.0), "compute_per": "step"})
    mixed = {"compute_per": "step", "upload": const(0.0), "download": const(0.0),
             "override": [{"clients": [1], "upload": const(1.0)}]}
    with pytest.raises(ConfigError, match=r"delays must make download and upload constant 0"):
        scenario(5, delays=mixed)
    # every client without communication time: allowed, pi_k = 1 throughout
    sc = scenario(6, delays={"compute_per": "step",
                             "compute": {"kind": "exponential", "rate": 2.0}})
    tr = run(sc, two_clients())
    assert tr.info["pi"].tolist() == [1, 1]
    assert tr.info["dTc"].tolist() == [0.0, 0.0]


def test_engine_rejects_round_compute_when_called_directly():
    """The engine re-checks compute_per (a Scenario that skipped validation, built by
    copying a valid one: dataclasses.replace would re-validate)."""
    import copy

    sc = scenario(3)
    bad = copy.copy(sc.delays)
    object.__setattr__(bad, "compute_per", "round")
    sc2 = copy.copy(sc)
    object.__setattr__(sc2, "delays", bad)
    with pytest.raises(ConfigError, match=r"delays\.compute_per"):
        run(sc2, two_clients())


# --------------------------------------------------------------------------------------
# determinism, read_at, physical model
# --------------------------------------------------------------------------------------
LOGISTIC = {"kind": "logistic", "n_clients": 4, "dim": 3, "samples_per_client": 12,
            "nu_reg": 0.05, "seed": 0}
RANDOM_DELAYS = {"compute": {"kind": "exponential", "rate": 4.0},
                 "download": {"kind": "exponential", "rate": 2.0},
                 "upload": {"kind": "uniform", "low": 0.1, "high": 0.5},
                 "think": {"kind": "exponential", "rate": 5.0}, "compute_per": "step",
                 "override": [{"clients": [0], "download": {"kind": "exponential",
                                                            "rate": 0.3}}]}


def test_same_seed_same_trace_other_seed_differs():
    sc = scenario(40, alg={"E": 2, "eta": 0.3, "delta": 0.3, "gamma": 0.01, "lam": 1.0,
                           "batch": 2}, delays=RANDOM_DELAYS, problem=LOGISTIC,
                  record={"metrics": ["grad_sq", "f_gap"], "every": 3})
    t1, t2, t3 = run(sc), run(sc), run(sc.with_seed(4))
    assert t1.equals(t2)
    for k in ("beta", "pi", "E_k", "dTg", "dTc", "personal_gap"):
        np.testing.assert_array_equal(t1.info[k], t2.info[k])
    assert not t1.equals(t3)
    assert not np.array_equal(t1.info["beta"], t3.info["beta"])
    assert t1.info["personal_gap_steps"].tolist() == t1.metric_steps.tolist()
    assert 0.0 < t1.concurrency_mean < 1.0  # think times make clients idle
    assert (np.diff(t1.time) >= 0).all()
    assert (t1.staleness_steps >= 0).all() and (t1.staleness_time[1:] > 0).all()


def test_read_at_arrival_reads_the_model_after_the_download():
    """read_at = "arrival": client 0 reads at 0.5 (after its download), client 1 at 1.0;
    the first two uploads are at 2.0 and 2.5 as before, both from omega^0.  Client 0's second
    download runs 2.0 -> 2.5 and its read at 2.5 comes after client 1's upload at 2.5 (that
    event was scheduled first, at 1.0), so it reads omega = -0.05 with r = 2 (decay 1/2)."""
    sc = scenario(3, delays={**DELAYS, "read_at": "arrival"})
    tr = run(sc, two_clients())
    assert tr.time.tolist() == [0.0, 2.0, 2.5, 4.0]
    w2 = Fr(-1, 20)
    o, b = client_update(0, w2, Fr(21, 100), tau=2, E=1)
    assert tr.final_w[0] == pytest.approx(float(w2 + Fr(1, 2) * (o - w2)), rel=1e-14)
    assert tr.info["beta"][0, 0] == pytest.approx(float(b), rel=1e-14)
    assert tr.staleness_steps.tolist() == [0, 0, 1, 0]
    assert tr.staleness_time.tolist() == [0.0, 1.5, 1.5, 1.5]


def test_time_horizon_stops_the_run():
    sc = scenario(100, horizon={"steps": 100, "time": 4.5})
    tr = run(sc, two_clients())
    assert tr.steps_done == 3 and tr.sim_time == 4.5


# --------------------------------------------------------------------------------------
# end to end: engine.run dispatch and `fedsim run` on the example
# --------------------------------------------------------------------------------------
EXAMPLE = Path(__file__).parents[2] / "examples" / "asypfl_logistic.toml"


def test_engine_run_is_the_asypfl_table_replayed():
    from fedsim import config
    from fedsim.engine import run as engine_run

    sc = config.load(EXAMPLE)
    t1 = engine_run(sc)
    assert t1.equals(run(sc))
    assert t1.steps_done == 300 and not t1.diverged
    assert t1.metrics["f_gap"][-1] < 0.1 * t1.metrics["f_gap"][0]
    assert t1.info["personal_gap"][-1] < 0.5 * t1.info["personal_gap"][0]
    assert t1.info["pi"][:2].min() > 1  # the two slow-network clients


def test_fedsim_run_example_end_to_end(tmp_path, capsys):
    from fedsim.cli import main

    out = tmp_path / "run.csv"
    rc = main(["run", str(EXAMPLE), "--out", str(out), "--steps", "80", "--no-progress"])
    assert rc == 0
    df = pd.read_csv(out)
    assert len(df) == 81
    assert (df["kind"].iloc[1:] == "upload").all() and (df["buffer_fill"].iloc[1:] == 1).all()
    assert (df["time"].diff().dropna() >= 0).all()
    assert "asypfl-logistic: ok; steps=80" in capsys.readouterr().out


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 5), st.lists(st.tuples(st.integers(0, 4), st.floats(1e-3, 10.0),
                                             st.integers(1, 6),
                                             st.one_of(st.just(0.0), st.floats(1e-3, 10.0))),
                                   min_size=1, max_size=25))
def test_server_epochs_are_the_staleness_indicator_of_the_averages(n, reports):
    """The running averages kept by ``report`` give ``staleness_indicator`` of the
    ``dTc``/``dTg`` properties over the clients that reported, report after report."""
    p = np.linspace(1.0, 2.0, n) / np.linspace(1.0, 2.0, n).sum()
    srv = AsyPFLServer(p, 3)
    for k, ct, steps, cm in reports:
        k %= n
        srv.report(k, ct, steps, cm)
        known = srv.rounds > 0
        try:
            want = staleness_indicator(np.where(known, srv.dTc, 0.0),
                                       np.where(known, srv.dTg, 1.0), p, k, known)
        except FedsimError:
            with pytest.raises(FedsimError, match="pi_min = 0"):
                srv.epochs(k)
            return
        assert srv.epochs(k) == 3 * want
        assert srv.pi[k] == want
