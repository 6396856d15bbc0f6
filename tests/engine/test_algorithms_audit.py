"""Independent audit: tiny two-client cases with exact numbers from the papers' equations.

Every expected value below is computed by hand (or by replaying the paper's update equations
in a few lines of plain Python) from:

* [P] PersA-FL, Algorithm 1 line 4 (``w^{t+1} = w^t - beta Delta``), Algorithm 2 lines 5-14
  (Options A/B/C), eq. (9) (three batches D, D', D''), eq. (10) (Moreau estimator);
* Per-FedAvg (Fallah et al.), Appendix H eq. (119) (HF difference divided by ``2 delta``);
* [A] AREA, Algorithms 1-2 (server aggregator u_s, counter k counting arrivals *and*
  aggregations, ``alpha_k`` sent at iteration k) and Appendix A eqs. (5)-(7) (iterate model);
* FedBuff (Nguyen et al. 2022, [A] ref. [24]): buffer of K pseudo-gradients, weight
  ``1/sqrt(1 + tau)``, server step ``w <- w - eta_g mean``;
* THEORY_SPEC 2.1 / 2.2 / 10.2(a) (window model) and docs/INTERNALS.md section 4 (metrics).

The deterministic problem is ``f_i(w) = A_i/2 (w - b_i)^2`` in one dimension with
``A = (1, 2)``, ``b = (1, -1)`` and no gradient noise, so every local step is
``w <- w - eta A_i (w - b_i)``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from fedsim.config import Scenario
from fedsim.engine.dispatch import replay_tables
from fedsim.local.maml import MAMLRule
from fedsim.local.moreau import MoreauRule
from fedsim.problems.quadratic import QuadraticProblem
from tests.engine.paths import model_path, simpy_path

# the AREA client rule is compiled by this module and test_area_window_tables: one worker
pytestmark = pytest.mark.xdist_group("test_area_window_tables")

A = (1.0, 2.0)
B = (1.0, -1.0)


def two_clients() -> QuadraticProblem:
    return QuadraticProblem([[[A[0]]], [[A[1]]]], [[B[0]], [B[1]]])


def const(v: float) -> dict:
    return {"kind": "constant", "value": v}


# client 0 uploads every 1.0, client 1 every 1.25 (no ties among the first events)
DELAYS = {"download": const(0.0), "compute": const(1.0), "upload": const(0.0),
          "override": [{"clients": [1], "compute": const(1.25)}]}


def scenario(alg: dict, steps: int, metrics=("f_gap",), every: int = 1, **kw) -> Scenario:
    d = {"name": "audit", "seed": 3,
         "problem": {"kind": "quadratic", "n": 2, "dim": 1, "mu": 1.0, "L": 2.0,
                     "noise_sd": 0.0, "seed": 0},
         "algorithm": alg, "delays": DELAYS, "horizon": {"steps": steps},
         "record": {"metrics": list(metrics), "every": every}}
    d.update(kw)
    return Scenario.from_dict(d)


def local(i: int, w: float, eta: float, Q: int = 1) -> float:
    for _ in range(Q):
        w = w - eta * A[i] * (w - B[i])
    return w


# --------------------------------------------------------------------------------------
# [P] Option B: which batch goes where (eq. (9)); FO-MAML; HF-MAML normalisation
# --------------------------------------------------------------------------------------
class BatchProblem:
    """Scalar per-batch quadratic ``f~(w, D) = a_D w^2 / 2 - c_D w``; batches come from a
    fixed list (D, D', D'' in drawing order) and every call is recorded."""

    def __init__(self, batches):
        self.batches = list(batches)
        self.drawn = 0
        self.calls: list[tuple] = []

    def sample_batch(self, i, size, rng):
        b = self.batches[self.drawn]
        self.drawn += 1
        return b

    def batch_grad(self, i, w, batch):
        self.calls.append(("grad", float(w[0]), batch))
        a, c = batch
        return np.array([a * w[0] - c])

    def batch_hvp(self, i, w, v, batch):
        self.calls.append(("hvp", float(w[0]), batch))
        return np.array([batch[0] * v[0]])


D, D1, D2 = (2.0, 1.0), (3.0, 0.5), (5.0, 7.0)   # (a, c) of D, D', D''


def test_option_b_exact_hvp_uses_each_batch_where_eq9_says():
    """w=1, alpha=0.1: inner = 1 - 0.1 (3 - 0.5) = 0.75 (D'); g = 2*0.75 - 1 = 0.5 (D at the
    inner point); dir = g - 0.1 * 5 * g = 0.25 (Hessian of D'' at w); w' = 1 - 0.2*0.25."""
    p = BatchProblem([D, D1, D2])
    r = MAMLRule(p, eta=0.2, Q=1, batch=1, alpha=0.1, variant="maml")
    w = r.step(0, np.array([1.0]), None)
    assert w[0] == pytest.approx(0.95, abs=1e-15)
    assert p.drawn == 3
    assert p.calls == [("grad", 1.0, D1), ("grad", 0.75, D), ("hvp", 1.0, D2)]


def test_fomaml_drops_the_hessian_term_and_draws_two_batches():
    p = BatchProblem([D, D1])
    r = MAMLRule(p, eta=0.2, Q=1, batch=1, alpha=0.1, variant="fomaml")
    w = r.step(0, np.array([1.0]), None)
    assert w[0] == pytest.approx(1.0 - 0.2 * 0.5, abs=1e-15)
    assert p.drawn == 2


def test_hfmaml_difference_is_divided_by_two_delta():
    """Per-FedAvg eq. (119): [grad(w + d g, D'') - grad(w - d g, D'')]/(2 d) = a'' g for a
    quadratic, so HF-MAML equals exact MAML here (0.95); dividing by d (the text of [P] (D1))
    would give dir = 0.5 - 0.1*2*5*0.5 = 0 and w' = 1."""
    p = BatchProblem([D, D1, D2])
    r = MAMLRule(p, eta=0.2, Q=1, batch=1, alpha=0.1, variant="hfmaml", hf_delta=1e-2)
    w = r.step(0, np.array([1.0]), None)
    assert w[0] == pytest.approx(0.95, abs=1e-12)
    pts = sorted(c[1] for c in p.calls if c[2] == D2)
    assert pts == pytest.approx([1.0 - 1e-2 * 0.5, 1.0 + 1e-2 * 0.5], abs=1e-15)


# --------------------------------------------------------------------------------------
# [P] Option C: h_tilde fixed, accuracy nu, w <- w - eta lam (w - theta_tilde)
# --------------------------------------------------------------------------------------
def test_option_c_one_batch_fixed_during_inner_solve_and_update():
    """a=2, c=1, lam=4, w=1: theta* = (c + lam w)/(a + lam) = 5/6; w' = 1 - 0.3*4*(1/6) = 0.8."""
    p = BatchProblem([D])
    r = MoreauRule(p, eta=0.3, Q=1, batch=1, lam=4.0, nu=1e-13, inner_max_iter=10_000,
                   solver="gd", L=2.0)
    w = r.step(0, np.array([1.0]), None)
    assert w[0] == pytest.approx(0.8, abs=1e-13)
    assert p.drawn == 1 and {c[2] for c in p.calls} == {D}
    assert r.inner_failures == 0 and r.inner_iters == len(p.calls) - 1


def test_option_c_inner_cap_is_inner_max_iter_steps():
    """The module promises at most ``inner_max_iter`` inner iterations before a failure."""
    p = BatchProblem([D])
    r = MoreauRule(p, eta=0.3, Q=1, batch=1, lam=4.0, nu=1e-300, inner_max_iter=3,
                   solver="gd", L=2.0)
    r.step(0, np.array([1.0]), None)
    assert r.inner_failures == 1
    assert r.inner_iters == 3


# --------------------------------------------------------------------------------------
# Servers on the physical engine: FedAsync, FedBuff, AS-FedAvg, synchronous FedAvg
# --------------------------------------------------------------------------------------
def run_async(sc: Scenario):
    return simpy_path(sc, two_clients())


def test_fedasync_two_clients_by_hand():
    """eta=0.5, beta=0.8, w0=0.  Uploads: c0@1 (read w0), c1@1.25 (w0), c0@2 (w1), c1@2.5 (w2).
    Delta_i = eta A_i (w_read - b_i); w <- w - beta Delta ([P] Alg. 1 line 4)."""
    eta, beta = 0.5, 0.8
    w = [0.0]
    for i, om in ((0, 0), (1, 0), (0, 1), (1, 2)):
        w.append(w[-1] - beta * eta * A[i] * (w[om] - B[i]))
    tr = run_async(scenario({"name": "fedasync", "Q": 1, "eta": eta, "beta": beta}, 4))
    assert tr.final_w[0] == pytest.approx(w[-1], abs=1e-15)
    assert tr.client.tolist() == [-1, 0, 1, 0, 1]
    assert tr.staleness_steps.tolist() == [0, 0, 1, 1, 1]
    # provable bound: client 0 sees floor(1/1.25)+1 = 1 upload, client 1 floor(1.25/1)+1 = 2
    assert tr.staleness_bound == 2.0


def test_fedbuff_two_clients_by_hand():
    """K=2, eta_g=0.5, weight 1/sqrt(1+tau) with tau = server steps since the download.
    Agg 1 @1.25: Deltas -0.5 (c0, tau 0) and 1.0 (c1, tau 0): w1 = -0.5*0.25 = -0.125.
    Agg 2 @2.5: c0 read w0 at t=1 (tau 1): -0.5/sqrt(2); c1 read w1 at 1.25 (tau 0):
    1*(-0.125+1) = 0.875.  w2 = w1 - 0.5*(-0.5/sqrt(2) + 0.875)/2."""
    tr = run_async(scenario({"name": "fedbuff", "Q": 1, "eta": 0.5, "buffer": 2,
                             "server_lr": 0.5, "staleness_weight": "inverse_sqrt"}, 2))
    w1 = -0.125
    w2 = w1 - 0.5 * (-0.5 / math.sqrt(2.0) + 0.875) / 2.0
    assert tr.final_w[0] == pytest.approx(w2, abs=1e-15)
    assert tr.staleness_steps.tolist() == [0, 0, 1]
    assert tr.buffer_fill.tolist() == [0, 2, 2]


def test_asfedavg_two_clients_by_hand():
    """[A] Section 5: AS-FedAvg clients share models, the server averages a buffer of 2.
    Agg 1: models 0.5 (c0 from 0) and -1 (c1 from 0): w1 = -0.25.
    Agg 2: c0 from w0 (read at t=1, before agg 1): 0.5; c1 from w1: -0.25 - 2*0.5*0.75 = -1."""
    tr = run_async(scenario({"name": "asfedavg", "Q": 1, "eta": 0.5, "buffer": 2}, 2))
    assert tr.final_w[0] == pytest.approx((0.5 - 1.0) / 2.0, abs=1e-15)


def test_sync_fedavg_is_the_average_of_the_participants_models():
    tr = model_path(scenario({"name": "fedavg", "Q": 2, "eta": 0.25, "participation": 1.0},
                             3), two_clients())
    w = 0.0
    for _ in range(3):
        w = 0.5 * (local(0, w, 0.25, 2) + local(1, w, 0.25, 2))
    assert tr.final_w[0] == pytest.approx(w, abs=1e-15)
    assert tr.staleness_steps.max() == 0


def test_sync_fedavg_samples_clients_uniformly():
    """r n = 2 of 4 clients: each client's participation count over 3000 rounds is
    Binomial(3000, 1/2); all four within 5 sd (false-alarm rate < 4 * 6e-7)."""
    prob = QuadraticProblem([[[1.0]]] * 4, [[0.0]] * 4)
    sc = Scenario.from_dict({
        "name": "u", "seed": 11,
        "problem": {"kind": "quadratic", "n": 4, "dim": 1, "mu": 1.0, "L": 1.0, "seed": 0},
        "algorithm": {"name": "fedavg", "Q": 1, "eta": 0.1, "participation": 0.5},
        "delays": {"compute": const(1.0)}, "horizon": {"steps": 3000},
        "record": {"metrics": ["f_gap"], "every": 1000}})
    tr = model_path(sc, prob)
    assert tr.client_updates.sum() == 6000
    assert np.all(np.abs(tr.client_updates - 1500) < 5 * math.sqrt(750))


# --------------------------------------------------------------------------------------
# AREA: Algorithm 1-2 literally, and the Appendix A iterate model
# --------------------------------------------------------------------------------------
def test_area_algorithm_two_clients_by_hand():
    """alpha_k = 1/(k+1), M=1, aggregation every 2 arrivals (each an iteration of k).
    k=1 c0@1: from x_s0=0 with alpha_0=1 -> x=1, m=1, u=0.5; reply alpha_1=1/2.
    k=2 c1@1.25: from 0 with alpha_0 -> x=-2, m=-2, u=-0.5; reply alpha_2=1/3.
    k=3 aggregate: x_s=-0.5.
    k=4 c0@2: from 0 with 1/2 -> x=0.5, m=-0.5, u=-0.25; reply x_s=-0.5, alpha_4=1/5.
    k=5 c1@2.5: from 0 with 1/3 -> x=-2/3, m=4/3, u=5/12.  k=6 aggregate: x_s=-1/12."""
    sc = scenario({"name": "area", "model": "algorithm", "M": 1,
                   "alpha": {"kind": "c_over_k_plus_d", "c": 1.0, "d": 1.0}}, 6,
                  trigger={"kind": "every_k", "count": 2})
    tr = model_path(sc, two_clients(), diagnostics=True)
    assert tr.final_w[0] == pytest.approx(-1.0 / 12.0, abs=1e-15)
    assert tr.kind.tolist() == ["init", "client", "client", "server", "client", "client",
                                "server"]
    assert tr.staleness_steps.tolist() == [0, 0, 1, 0, 2, 2, 0]
    assert tr.info["invariant_max"] < 1e-15 and tr.info["k"] == 6


def replay_iterate_model(kinds, clients, alpha, M, x0=0.0):
    """[A] eqs. (5)-(7) with G^M, x_{i,0} = y_{i,0} = x_{s,0}; alpha index k at event k+1."""
    x = [x0, x0]
    y = [x0, x0]
    xs = [x0]
    for k, (kind, i) in enumerate(zip(kinds, clients, strict=True)):
        cur = xs[-1]
        if kind == "client":
            y[i] = x[i]
            x[i] = local(i, cur, alpha(k), M)
        else:
            cur = 0.5 * (y[0] + y[1])
        xs.append(cur)
    return np.array(xs)


def test_area_iterate_model_replays_eqs_5_to_7():
    alpha = lambda k: 1.5 / (k + 3.0)  # noqa: E731
    sc = scenario({"name": "area", "model": "iterate_model", "M": 2,
                   "alpha": {"kind": "c_over_k_plus_d", "c": 1.5, "d": 3.0}}, 40,
                  metrics=("dist_sq",),
                  delays={"compute": {"kind": "exponential", "rate": 1.0},
                          "override": [{"clients": [1],
                                        "compute": {"kind": "exponential", "rate": 2.0}}]},
                  trigger={"kind": "poisson", "rate": 1.5})
    prob = two_clients()
    tr = model_path(sc, prob)
    xs = replay_iterate_model(tr.kind[1:].tolist(), tr.client[1:].tolist(), alpha, 2)
    assert set(tr.kind[1:]) == {"client", "server"}
    assert tr.final_w[0] == pytest.approx(xs[-1], abs=1e-14)
    np.testing.assert_allclose(tr.metrics["dist_sq"], (xs - prob.x_star[0]) ** 2, atol=1e-14)
    # the first message of each client is a no-op in the model: until both clients have had
    # a second event and a server event followed, x_s stays x_{s,0}
    first = [list(tr.client[1:]).index(i) for i in (0, 1)]
    assert np.all(xs[: max(first) + 2] == 0.0)


# --------------------------------------------------------------------------------------
# Window model (THEORY_SPEC 10.2(a))
# --------------------------------------------------------------------------------------
def test_window_model_replay():
    sc = scenario({"name": "fedasync", "model": "window", "tau": 3,
                   "delay_pmf": [0.1, 0.2, 0.3, 0.4], "Q": 2, "eta": 0.2, "beta": 0.9}, 60)
    assert sc.seed == 3
    tr = replay_tables(sc, two_clients(), [0])[0]  # the window table replayed
    w = [0.0]
    for t in range(60):
        i, s = int(tr.client[t + 1]), int(tr.staleness_steps[t + 1])
        om = t - s
        assert 0 <= om <= t and s <= 3
        w.append(w[-1] - 0.9 * (w[om] - local(i, w[om], 0.2, 2)))
    assert tr.final_w[0] == pytest.approx(w[-1], abs=1e-14)
    # early steps: s_t is clipped by Omega = max(t - s_t, 0)
    assert tr.staleness_steps[1] == 0


# --------------------------------------------------------------------------------------
# Trace metrics: avg_<m> over steps 0..t-1; ergodic over x_{s,0..K-1} incl. repeats
# --------------------------------------------------------------------------------------
def test_avg_and_ergodic_metrics_by_replay():
    sc = scenario({"name": "fedasync", "Q": 1, "eta": 0.5, "beta": 0.8}, 4,
                  metrics=("f_gap", "ergodic_f_gap"))
    prob = two_clients()
    tr = run_async(sc)
    w = [0.0]
    for i, om in ((0, 0), (1, 0), (0, 1), (1, 2)):
        w.append(w[-1] - 0.8 * 0.5 * A[i] * (w[om] - B[i]))
    fgap = np.array([prob.f_gap(np.array([v])) for v in w])
    np.testing.assert_allclose(tr.metrics["f_gap"], fgap, atol=1e-15)
    avg = [math.nan] + [fgap[:t].mean() for t in range(1, 5)]
    np.testing.assert_allclose(tr.metrics["avg_f_gap"], avg, atol=1e-15)
    erg = [math.nan] + [prob.f_gap(np.array([np.mean(w[:t])])) for t in range(1, 5)]
    np.testing.assert_allclose(tr.metrics["ergodic_f_gap"], erg, atol=1e-15)


def test_area_ergodic_includes_repeated_server_values():
    """[A] Thm 8: xbar_K = (1/K) sum_{k<K} x_{s,k} over every global iteration."""
    sc = scenario({"name": "area", "model": "algorithm", "M": 1,
                   "alpha": {"kind": "c_over_k_plus_d", "c": 1.0, "d": 1.0}}, 6,
                  metrics=("f_gap", "ergodic_f_gap"), trigger={"kind": "every_k", "count": 2})
    prob = two_clients()
    tr = model_path(sc, prob)
    xs = [0.0, 0.0, 0.0, -0.5, -0.5, -0.5, -1.0 / 12.0]
    erg = [math.nan] + [prob.f_gap(np.array([np.mean(xs[:k])])) for k in range(1, 7)]
    np.testing.assert_allclose(tr.metrics["ergodic_f_gap"], erg, atol=1e-15)


def test_ergodic_last_step_off_the_record_grid():
    """The last step off the record.every grid: xbar_T = mean of w_0..w_{T-1} (fixed in
    trace.Recorder.finish; this failed before: w_T was included)."""
    sc = scenario({"name": "fedasync", "Q": 1, "eta": 0.5, "beta": 0.8}, 4,
                  metrics=("ergodic_f_gap",), every=3)
    prob = two_clients()
    tr = run_async(sc)
    w = [0.0]
    for i, om in ((0, 0), (1, 0), (0, 1), (1, 2)):
        w.append(w[-1] - 0.8 * 0.5 * A[i] * (w[om] - B[i]))
    assert tr.metric_steps.tolist() == [0, 3, 4]
    assert tr.metrics["ergodic_f_gap"][-1] == pytest.approx(
        prob.f_gap(np.array([np.mean(w[:4])])), abs=1e-15)


# --------------------------------------------------------------------------------------
# Provable staleness bound (fedsim.engine.staleness.physical_staleness_bound): floating-point edge
# --------------------------------------------------------------------------------------
def test_staleness_bound_survives_clock_rounding():
    """Client 1: compute 0, think 0.3 (c_min = 0.3), uploads at 0, 0.3, 0.6, ... (float sums).
    Client 0: one compute of W = fl-sum of 55000 x 0.3 plus one ulp, so W / 0.3 is below
    55000 by ~1e-12 relatively (bound: floor(W/0.3) + 1 = 55000 uploads) but all 55001
    uploads of client 1 at k * 0.3 (k = 0..55000, as the engine sums them) precede W.
    With the old 1e-12 slack the bound was 55000 and the engine measured 55001; the 1e-9
    slack (fedsim.engine.staleness.physical_staleness_bound) covers this clock rounding."""
    u = 0.0
    for _ in range(55000):
        u = u + 0.3
    W = float(np.nextafter(u, np.inf))
    sc = scenario({"name": "fedasync", "Q": 1, "eta": 0.1}, 55002,
                  delays={"download": const(0.0), "compute": const(W), "upload": const(0.0),
                          "override": [{"clients": [1], "compute": const(0.0),
                                        "think": const(0.3)}]},
                  record={"metrics": ["f_gap"], "every": 55002})
    tr = run_async(sc)
    assert tr.staleness_steps.max() == 55001
    assert tr.staleness_steps.max() <= tr.staleness_bound
