"""fedsim.theory.lumped_mc: Monte Carlo fallback vs the exact lumped oracle, the dispatcher, and the
exponential-support argument of the module docstring (checked in exact rationals)."""

from __future__ import annotations

import time
from fractions import Fraction
from statistics import NormalDist

import numpy as np
import pytest
from fedsim.theory import area as tarea
from fedsim.theory.lumped import lumped_events
from fedsim.theory.lumped_mc import COLUMNS, area_oracle, mc_events

from fedsim.errors import ConfigError
from fedsim.problems.nonsmooth import NormProblem

QTY = [("ergodic_f_gap", "ergodic_se"), ("f_gap", "f_se"), ("sq_dist", "sq_se")]


def _paper(n: int, p_s: float, M: int, K: int) -> tuple[list[float], float, float]:
    p = [(1.0 - p_s) / n] * n
    r = tarea.theorem8(M=M, p=p, p_s=p_s, sigma2=1e-4, B=1.0, R=1.0, K=K, mode="paper")
    return p, float(r.step_sizes["alpha_prescribed"]), float(r.value)


def _norm(n: int, dim: int = 1, centers=None) -> NormProblem:
    if centers is None:
        centers = [[-1.0] * dim] * n
    return NormProblem(B=1.0, n=n, dim=dim, centers=np.asarray(centers, dtype=float))


def _ztest(mc, ex, alpha=1e-3):
    """Two-sided z-test of every recorded step and quantity, Bonferroni to a total of alpha."""
    rows = mc["k"].to_numpy() > 0
    z = NormalDist().inv_cdf(1.0 - alpha / (2 * 3 * int(rows.sum())))
    for col, se in QTY:
        m, s, e = (mc[col].to_numpy()[rows], mc[se].to_numpy()[rows], ex[col].to_numpy()[rows])
        assert np.all(np.abs(m - e) <= z * s + 1e-12), col


@pytest.mark.parametrize("n,p_s,M,K", [(2, 0.4, 50, 9), (2, 0.4, 10, 8), (3, 0.3, 2, 7)])
def test_mc_matches_exact_equal_clients(n, p_s, M, K):
    p, a, _ = _paper(n, p_s, M, K)
    prob = _norm(n)
    ex = lumped_events(prob, p, p_s, M, a, np.zeros(1), K)
    mc = mc_events(prob, p, p_s, M, a, np.zeros(1), K, replicates=40_000, seed=11)
    _ztest(mc, ex)


def test_mc_matches_exact_mixed_centres_general_d_and_schedule():
    p, p_s = [0.2, 0.3, 0.1], 0.4
    centers = np.random.default_rng(3).normal(size=(3, 2))
    prob = _norm(3, 2, centers)
    ex = lumped_events(prob, p, p_s, 3, 0.15, np.full(2, 2.0), 7)
    mc = mc_events(prob, p, p_s, 3, 0.15, np.full(2, 2.0), 7, replicates=40_000, seed=5,
                   chunk=15_000)
    _ztest(mc, ex)
    sched = lambda k: 0.3 / (k + 1)   # noqa: E731
    ex = lumped_events(_norm(2), [0.3, 0.3], 0.4, 3, sched, np.zeros(1), 8)
    mc = mc_events(_norm(2), [0.3, 0.3], 0.4, 3, sched, np.zeros(1), 8, replicates=40_000)
    _ztest(mc, ex)


def test_mc_columns_seed_and_confidence():
    p, a, _ = _paper(2, 0.4, 10, 8)
    prob = _norm(2)
    ex = lumped_events(prob, p, 0.4, 10, a, np.zeros(1), 8, record_every=3)
    mc = mc_events(prob, p, 0.4, 10, a, np.zeros(1), 8, record_every=3, replicates=5_000,
                   seed=2)
    assert list(ex.columns) == COLUMNS
    assert list(mc.columns[:len(COLUMNS)]) == COLUMNS
    assert list(mc["k"]) == list(ex["k"]) == [0, 3, 6, 8]
    assert set(mc["method"]) == {"mc"} and mc.attrs["method"] == "mc"
    assert set(ex["method"]) == {"lumped-exact"}
    again = mc_events(prob, p, 0.4, 10, a, np.zeros(1), 8, record_every=3, replicates=5_000,
                      seed=2)
    other = mc_events(prob, p, 0.4, 10, a, np.zeros(1), 8, record_every=3, replicates=5_000,
                      seed=3)
    assert again.equals(mc) and not other.equals(mc)
    z99 = NormalDist().inv_cdf(0.995)
    np.testing.assert_allclose(mc["error_bound"].iloc[1:], z99 * mc["ergodic_se"].iloc[1:])
    assert np.isnan(mc["ergodic_f_gap"].iloc[0])
    assert mc["sq_dist"].iloc[0] == 1.0 and mc["sq_se"].iloc[0] == 0.0


def test_area_oracle_dispatch():
    p, a, _ = _paper(2, 0.4, 50, 9)
    prob = _norm(2)
    small = area_oracle(prob, p, 0.4, 50, a, np.zeros(1), 9)
    assert small.attrs["method"] == "lumped-exact"
    assert abs(small["ergodic_f_gap"].iloc[-1] - 0.819411) < 5e-7
    fb = area_oracle(prob, p, 0.4, 50, a, np.zeros(1), 9, max_states=10, replicates=20_000)
    assert fb.attrs["method"] == "mc" and "max_states" in fb.attrs["fallback_reason"]
    assert abs(fb["ergodic_f_gap"].iloc[-1] - 0.819411) <= 4 * fb["ergodic_se"].iloc[-1]
    with pytest.raises(ConfigError):
        area_oracle(prob, p, 0.4, 50, a, np.zeros(1), 9, method="exact", max_states=10)
    assert area_oracle(prob, p, 0.4, 50, a, np.zeros(1), 3, method="mc",
                       replicates=100).attrs["method"] == "mc"


def test_reachable_server_values_grow_exponentially():
    """lumped_mc docstring: n=2, M even: |supp x_{s,k}| >= 2^((k-8)/3), in exact rationals."""
    n, M, K = 2, 50, 20
    p, a, _ = _paper(10, 0.4, M, 32)
    u0 = Fraction(1.0 / a)                  # R / (alpha B) of the n=10, K=32 instance

    def g(u):
        for _ in range(M):
            u = u - 1 if u > 0 else (u + 1 if u < 0 else u)
        return u

    # sawtooth form of the client map on [-1, M] (non-integers), M even
    for u in (u0, u0 / 3, -Fraction(1, 3), Fraction(7, 10)):
        assert g(u) == (u + 1) - 2 * ((u + 1) // 2) - 1
    a_, b_ = g(u0), g((u0 + g(u0)) / 2)
    assert a_ != b_
    states = {(u0, ((u0, u0), (u0, u0)))}
    for k in range(1, K + 1):
        new = set()
        for xs, pairs in states:
            gx = g(xs)
            for j in range(n):
                lst = list(pairs)
                lst[j] = (gx, lst[j][0])
                new.add((xs, tuple(sorted(lst))))
            new.add((sum(y for _, y in pairs) / n, pairs))
        states = new
        support = {s[0] for s in states}
        assert len(support) >= 2 ** ((k - 8) / 3)
    assert len(support) >= 55               # 60 at k = 20 (and 772 at k = 30)


@pytest.mark.slow
@pytest.mark.parametrize("n,K", [(10, 32), (30, 122)])
def test_target_sizes_mc_under_a_minute(n, K):
    p, a, paper = _paper(n, 0.4, 50, K)
    t0 = time.perf_counter()
    df = area_oracle(_norm(n), p, 0.4, 50, a, np.zeros(1), K, record_every=K)
    dt = time.perf_counter() - t0
    last = df.iloc[-1]
    print(f"n={n} K={K}: {dt:.1f} s, {df.attrs['method']}, E f(xbar_K) - f* = "
          f"{last['ergodic_f_gap']:.5f} +- {last['error_bound']:.5f} (99%), "
          f"paper bound {paper:.5f}")
    assert dt < 60 and df.attrs["method"] == "mc" and last["error_bound"] < 1e-3
