"""Monte Carlo fallback for the AREA event oracle and the exact-or-MC dispatcher (issue 11, 2).

**Why no exact oracle at the target sizes.**  Take the Theorem 8 norm family with equal centres
(THEORY_SPEC 7.d; in d dimensions every value stays on the line through ``c`` and ``x_{s,0}``,
so it is 1-D).  Measure values in units ``h = alpha B`` from ``c``, ``u0 = ||x_{s,0}-c||/h``.
The client map ``G^M`` of [A] eqs (5)-(7) is ``g(u) = u - m(u)`` with ``m(u)`` an integer, so
(the brief's lattice) every value is ``u0 + D`` with ``D`` in ``Z / n^j`` after ``j`` server
events (the weight of ``u0`` is always exactly 1: ``g`` keeps it and averaging keeps it).
For ``-1 <= u <= M`` and u not an integer, ``g`` is a period-2 sawtooth:
``g(u) = ((u - M + 1) mod 2) - 1``; for even M it is the identity on ``[-1, 1)``.  The
lattice has ``n^j`` points per unit, and the *reachable* part of it is exponential too:

  n = 2, M even, ``a = g(u0) != b = g((u0 + a)/2)`` (true at the 7.d and target instances).
  Events ``1,1,s,2,2`` give memories ``y = (a, b)``, both in ``[-1, 1)`` where ``g`` is the
  identity.  From memories ``(alpha, beta)`` in ``[-1, 1)`` the three events ``s, i, i`` put
  ``x_s = (alpha + beta)/2`` and replace ``y_i`` by it.  So at step ``k = 5 + 3m`` every
  level-m dyadic midpoint ``a + (b - a) (2j + 1) / 2^m`` is the value of ``x_{s,k}`` on some
  event sequence of positive probability: ``|supp x_{s,k}| >= 2^(m-1) = 2^((k-8)/3)``.

Counted by exact rational breadth-first search (M = 50, ``u0`` of the n = 10, K = 32
instance): n = 2 has 772 distinct ``x_{s,30}`` values (292,808 lumped states, without
``Ssum``); n = 10 has 300 distinct ``x_{s,14}`` values, growing ~1.9x per step, in 89,228
lumped states (~3x per step).  The measured quantity ``E f(xbar_K)`` needs
``E g(x_{s,t}) = E x_{s,t} - E m(x_{s,t})``, i.e. the distribution function of ``x_{s,t}`` at
every odd integer (a discontinuous functional), so no linear moment recursion closes and
every forward recursion over the law of a state from which ``g`` can be evaluated carries
exponentially many atoms.  (Once every memory is in ``[-1, 1)`` the dynamics are linear, but
at n = 30, K = 122 almost no mass gets there: each client must fire twice, mean 100 steps.)
Hence the issue's fallback below.

**Monte Carlo.**  :func:`mc_events` simulates the exact event process of
:func:`fedsim.theory.oracle.enumerate_events` (same model, same step-index convention) for R
replicates at once with numpy, seeded by :class:`numpy.random.SeedSequence`, and returns the
same columns with ``error_bound`` etc. the half-widths of a normal confidence interval
(THEORY_SPEC 10.3) at level ``confidence``, plus ``*_se`` standard errors; ``method`` is
``"mc"``.  :func:`area_oracle` runs the lumped exact oracle within a state budget and falls
back to Monte Carlo when the budget is exceeded; its ``method`` column says which it used.
"""

from __future__ import annotations

from collections.abc import Callable
from statistics import NormalDist
from typing import Any

import numpy as np
import pandas as pd
from fedsim.theory.lumped import event_law, exchangeable_classes, lumped_events

from fedsim.errors import ConfigError, check_integer, check_probability, require

__all__ = ["mc_events", "area_oracle"]

COLUMNS = ["k", "sq_dist", "f_gap", "ergodic_f_gap", "n_states", "error_bound",
           "f_error_bound", "sq_error_bound", "dropped_mass", "method"]


class _Vec:
    """Row-vectorised subgradient and objective; fast path for the norm family."""

    def __init__(self, problem: Any, n: int, d: int) -> None:
        self.problem = problem
        centers = getattr(problem, "centers", None)
        B = getattr(problem, "B", None)
        self.norm = (type(problem).__name__ == "NormProblem" and centers is not None
                     and B is not None)
        if self.norm:
            self.c = np.asarray(centers, dtype=np.float64).reshape(n, d)
            self.B = float(B)
        self.n, self.d = n, d

    def grad(self, i: int, X: np.ndarray) -> np.ndarray:
        if self.norm:
            v = X - self.c[i]
            nv = np.sqrt(np.einsum("rd,rd->r", v, v)) if self.d > 1 else np.abs(v[:, 0])
            scale = np.divide(self.B, nv, out=np.zeros_like(nv), where=nv > 0)
            return scale[:, None] * v
        return np.stack([np.asarray(self.problem.grad(i, x), dtype=np.float64).reshape(self.d)
                         for x in X]) if len(X) else np.zeros((0, self.d))

    def f(self, X: np.ndarray) -> np.ndarray:
        if self.norm:
            v = X[:, None, :] - self.c[None, :, :]
            nv = np.sqrt(np.einsum("rnd,rnd->rn", v, v)) if self.d > 1 else np.abs(v[..., 0])
            return self.B * nv.mean(axis=1)
        return np.array([float(self.problem.f(x)) for x in X])


def _measure(acc: np.ndarray, vec: _Vec, xs: np.ndarray, S: np.ndarray, k: int,
             x_star: np.ndarray, f_star: float) -> None:
    """Add the sums and sums of squares of the three measured quantities of one chunk."""
    sq = np.sum((xs - x_star) ** 2, axis=1)
    fg = vec.f(xs) - f_star
    eg = (vec.f(S / k) - f_star) if k > 0 else np.zeros(len(xs))
    for q, v in enumerate((sq, fg, eg)):
        acc[q, 0] += float(v.sum())
        acc[q, 1] += float(np.dot(v, v))


def mc_events(problem: Any, p: Any, p_s: float, M: int, alpha: float | Callable[[int], float],
              x_s0: Any, K: int, *, record_every: int = 1, replicates: int = 100_000,
              seed: int | np.random.SeedSequence = 0, confidence: float = 0.99,
              chunk: int = 50_000, **_ignored: Any) -> pd.DataFrame:
    """Monte Carlo estimate of :func:`fedsim.theory.lumped.lumped_events`' columns (module
    docstring).

    Simulates the model of :func:`fedsim.theory.oracle.enumerate_events` (THEORY_SPEC 2.2, [A] eqs
    (5)-(7), i.i.d. events over ``{1..n, s}``; a client event at step k+1 computes
    ``G^M_{alpha_k}[x_{s,k}]`` with ``problem.grad``) for ``replicates`` independent runs, in
    chunks of ``chunk`` rows, chunk j seeded by ``SeedSequence(seed).spawn(...)[j]`` (the
    result depends on ``seed``, ``replicates`` and ``chunk``).  Columns as
    :func:`lumped_events`: the three means; ``error_bound``, ``f_error_bound`` and
    ``sq_error_bound`` are the half-widths ``z * se`` of the two-sided ``confidence`` normal
    interval for ``ergodic_f_gap``, ``f_gap`` and ``sq_dist`` (not rigorous bounds);
    ``n_states`` is the number of replicates; ``dropped_mass`` is 0; ``method`` is ``"mc"``;
    plus ``ergodic_se``, ``f_se``, ``sq_se``.  Keyword arguments of :func:`lumped_events`
    that do not apply (``classes``, ``tol``, ``prune``, ``lipschitz``, ``max_states``) are
    accepted and ignored, so the two are interchangeable.
    """
    n = check_integer("problem.n", getattr(problem, "n", None), low=1)
    d = check_integer("problem.dim", getattr(problem, "dim", None), low=1)
    pv, ps = event_law(p, p_s, n)
    M = check_integer("M", M, low=1)
    K = check_integer("K", K, low=0)
    record_every = check_integer("record_every", record_every, low=1)
    R = check_integer("replicates", replicates, low=2)
    chunk = check_integer("chunk", chunk, low=1)
    conf = check_probability("confidence", confidence, allow_zero=False, allow_one=False)
    if callable(alpha):
        sched = alpha
    else:
        a0 = float(alpha)
        require(np.isfinite(a0) and a0 > 0, "alpha", alpha, "must be finite and > 0")
        sched = (lambda _k: a0)
    xs0 = np.asarray(x_s0, dtype=np.float64).reshape(-1)
    require(xs0.shape == (d,), "x_s0", np.shape(x_s0), f"must have shape ({d},)")
    x_star = np.asarray(problem.x_star, dtype=np.float64).reshape(d)
    f_star = float(problem.f_star)
    vec = _Vec(problem, n, d)
    # clients with identical maps (equal centres; p_i does not matter here) share one G^M
    cls_of = np.array(exchangeable_classes(problem, np.zeros(n)))
    reps = [int(np.flatnonzero(cls_of == c)[0]) for c in range(int(cls_of.max()) + 1)]
    cum = np.cumsum(np.append(pv, ps))
    cum[-1] = np.inf                              # event n = server
    rec = sorted(set(range(0, K + 1, record_every)) | {K})
    alphas = []
    for k in range(K):
        a = float(sched(k))
        require(np.isfinite(a) and a > 0, f"alpha({k})", a, "must be finite and > 0")
        alphas.append(a)

    # running sums over replicates: [sum, sum of squares] per recorded step and quantity
    acc = np.zeros((len(rec), 3, 2))
    seq = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    sizes = [min(chunk, R - s) for s in range(0, R, chunk)]
    for ss, r in zip(seq.spawn(len(sizes)), sizes, strict=True):
        rng = np.random.default_rng(ss)
        x = np.tile(xs0, (r, n, 1))
        y = x.copy()
        xs = np.tile(xs0, (r, 1))
        S = np.zeros((r, d))
        ri = 0
        if rec[0] == 0:
            _measure(acc[0], vec, xs, S, 0, x_star, f_star)
            ri = 1
        for k in range(K):
            J = np.searchsorted(cum, rng.random(r), side="right")
            S += xs
            srv = J == n
            new_xs = y[srv].mean(axis=1)          # uses the memories before this event
            a = alphas[k]
            cl = cls_of[np.minimum(J, n - 1)]
            for c, rep in enumerate(reps):      # one G^M per class of identical client maps
                rows = np.flatnonzero((cl == c) & ~srv)
                if rows.size == 0:
                    continue
                z = xs[rows].copy()
                for _ in range(M):
                    z -= a * vec.grad(rep, z)
                who = J[rows]
                y[rows, who] = x[rows, who]
                x[rows, who] = z
            xs[srv] = new_xs
            if ri < len(rec) and rec[ri] == k + 1:
                _measure(acc[ri], vec, xs, S, k + 1, x_star, f_star)
                ri += 1

    z = NormalDist().inv_cdf(0.5 + conf / 2.0)
    mean = acc[:, :, 0] / R
    var = np.maximum(acc[:, :, 1] / R - mean**2, 0.0) * R / (R - 1)
    se = np.sqrt(var / R)
    ks = np.array(rec)
    df = pd.DataFrame({
        "k": ks, "sq_dist": mean[:, 0], "f_gap": mean[:, 1],
        "ergodic_f_gap": np.where(ks > 0, mean[:, 2], np.nan), "n_states": R,
        "error_bound": np.where(ks > 0, z * se[:, 2], np.nan), "f_error_bound": z * se[:, 1],
        "sq_error_bound": z * se[:, 0], "dropped_mass": 0.0, "method": "mc",
        "ergodic_se": np.where(ks > 0, se[:, 2], np.nan), "f_se": se[:, 1], "sq_se": se[:, 0],
    })
    df.attrs.update({
        "oracle": "mc_events", "model": "AREA Appendix A, i.i.d. events", "method": "mc",
        "exact": False, "n": n, "dim": d, "M": M, "K": K, "replicates": R,
        "seed": seq.entropy, "confidence": conf, "z": z,
        "error_bound": float(df["error_bound"].iloc[-1]) if K > 0 else 0.0,
    })
    return df


def area_oracle(problem: Any, p: Any, p_s: float, M: int, alpha: float | Callable[[int], float],
                x_s0: Any, K: int, *, method: str = "auto", max_states: int = 200_000,
                record_every: int = 1, replicates: int = 100_000,
                seed: int | np.random.SeedSequence = 0, confidence: float = 0.99,
                **kw: Any) -> pd.DataFrame:
    """Exact lumped enumeration if it fits in ``max_states`` states, else Monte Carlo.

    ``method``: ``"exact"`` (lumped, raise :class:`ConfigError` past ``max_states``),
    ``"mc"`` (:func:`mc_events`) or ``"auto"`` (exact, falling back to Monte Carlo when the
    state budget is exceeded).  The result's ``method`` column and ``attrs["method"]`` say
    which ran (``lumped-exact``, ``lumped-merged`` when ``tol``/``prune`` changed anything,
    or ``mc``); ``attrs["fallback_reason"]`` is set when ``auto`` fell back.
    """
    require(method in ("auto", "exact", "mc"), "method", method,
            "must be one of 'auto', 'exact', 'mc'")
    if method != "mc":
        try:
            return lumped_events(problem, p, p_s, M, alpha, x_s0, K, record_every=record_every,
                                 max_states=max_states, **kw)
        except ConfigError as e:
            if method == "exact" or "max_states" not in str(e):
                raise
            reason = str(e)
    df = mc_events(problem, p, p_s, M, alpha, x_s0, K, record_every=record_every,
                   replicates=replicates, seed=seed, confidence=confidence)
    if method == "auto":
        df.attrs["fallback_reason"] = reason
    return df
