"""Fast Monte Carlo of AREA on the 1-D norm family, with the M-step client map in closed form.

Model: THEORY_SPEC 2.2 ([A] eqs (5)-(7)), i.i.d. events over {1..n, s}; at a client event
``x_i <- G^M(x_s)``, ``y_i <- x_i`` (old); at a server event ``x_s <- mean_j y_j``;
``Ssum`` accumulates ``x_s`` before each event, so ``xbar_{s,K} = Ssum_K / K`` ([A] Theorem 8's
ergodic average).  For ``f_i(x) = B|x - c_i|`` with the subgradient 0 at the kink (the
problem's selection), M steps of size ``h = alpha B`` from ``d = x - c`` give, with
``j0 = ceil(|d|/h)``:

* ``|d| >= M h``: ``d - M h sign(d)`` (the kink is not passed);
* otherwise ``e = d - j0 h sign(d)`` (``|e| < h``); if ``e = 0`` it stays there, else the
  iterate alternates between ``e`` and ``e - h sign(e)``: after the remaining ``M - j0``
  steps it is ``e`` if that number is even, else ``e - h sign(e)``.

This is the same map as M explicit subgradient steps up to rounding, so its cost does not
grow with M (the explicit loop of :func:`fedsim.theory.lumped_mc.mc_events` does).  Returns the
mean and standard error of ``f(xbar_{s,K}) - f*``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["norm_gm", "norm_ergodic_mc"]


def norm_gm(x: np.ndarray, c: np.ndarray, h: float, M: int) -> np.ndarray:
    """``G^M`` of ``B|x - c|`` (step ``h = alpha B``), elementwise (module docstring)."""
    d = x - c
    ad = np.abs(d)
    sg = np.sign(d)
    far = ad >= M * h
    j0 = np.ceil(ad / h)
    e = d - j0 * h * sg
    odd = ((M - j0) % 2) == 1
    near = np.where(odd & (e != 0), e - h * np.sign(e), e)
    return c + np.where(far, d - M * h * sg, near)


def norm_ergodic_mc(centres: np.ndarray, B: float, f_star: float, p: np.ndarray, p_s: float,
                    M: int, alpha: float, x_s0: float, K: int, replicates: int,
                    seed: int = 0, chunk: int = 50_000) -> tuple[float, float]:
    """(mean, standard error) of ``f(xbar_{s,K}) - f*`` over ``replicates`` runs."""
    c = np.asarray(centres, dtype=np.float64).reshape(-1)
    n = c.size
    cum = np.cumsum(np.append(np.asarray(p, dtype=np.float64), p_s))
    cum[-1] = np.inf
    h = float(alpha) * float(B)
    s1 = s2 = 0.0
    sizes = [min(chunk, replicates - s) for s in range(0, replicates, chunk)]
    for ss, r in zip(np.random.SeedSequence(seed).spawn(len(sizes)), sizes, strict=True):
        rng = np.random.default_rng(ss)
        x = np.full((r, n), float(x_s0))
        y = x.copy()
        xs = np.full(r, float(x_s0))
        S = np.zeros(r)
        rows = np.arange(r)
        for _ in range(K):
            J = np.searchsorted(cum, rng.random(r), side="right")
            S += xs
            srv = J == n
            new_xs = y[srv].mean(axis=1)
            cl = ~srv
            who = J[cl]
            rr = rows[cl]
            y[rr, who] = x[rr, who]
            x[rr, who] = norm_gm(xs[cl], c[who], h, M)
            xs[srv] = new_xs
        v = B * np.abs((S / K)[:, None] - c[None, :]).mean(axis=1) - f_star
        s1 += float(v.sum())
        s2 += float(v @ v)
    mean = s1 / replicates
    var = max(s2 / replicates - mean**2, 0.0) * replicates / (replicates - 1)
    return mean, float(np.sqrt(var / replicates))
