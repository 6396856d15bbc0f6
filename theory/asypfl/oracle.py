"""Exact oracle of [Y]'s tick model (eqs. (3)-(4)) on quadratics (docs/theory/asypfl.md 6.6).

``F_k(w) = 1/2 (w - b_k)^T A_k (w - b_k) + c_k``; the stochastic gradient of client k is
``A_k (w - b_k) + e_k`` with ``e_k ~ N(0, C_k)`` fresh at every tick (C_k = the covariance of
the gradient actually used, per-sample / batch).  At every tick tau each client takes one
local step, ``trained_k = w_k - eta_tau g_k``; client k communicates at the ticks of
``Pi_k = {l pi_k E}``: the server adds ``p^k (trained_k - snap_k)`` (eq. (4)) and the client
downloads the new global model (``w_k = snap_k = w^{tau+1}``), else ``w_k = trained_k``.

The state ``z = (1, w, w_1..w_M, snap_1..snap_M)`` evolves affinely with additive Gaussian
noise, so its first and second moments propagate exactly:
``m' = Phi m``, ``P' = Phi P Phi^T + Psi Cov(e) Psi^T``.  Reader 1's 1-d version was checked
against a 2e5-run Monte Carlo (M = 3, pi = (1,2,3), E = 2), and reader 2's independent
oracle reproduces it to every printed digit.

fedsim's AsyPFL engine is this model only for one client (server step t <-> tick t E);
for n >= 2 it is not (sequential reads, adaptive pi_k, decay index r_k), so validation of
n >= 2 instances uses this oracle, not a simulation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fedsim.errors import require

__all__ = ["tick_oracle"]


def tick_oracle(*, A: Sequence[Any], b: Sequence[Any], p: Sequence[float], pi: Sequence[int],
                E: int, eta: Callable[[int], float] | float, w0: Any, T: int,
                C: Sequence[Any] | None = None, c: Sequence[float] | None = None
                ) -> dict[str, np.ndarray]:
    """Exact ``E F(w^tau) - F*`` for tau = 0..T, plus the trajectory and sync chi^2.

    Returns ``{"gap": (T+1,), "chi2_traj": (T+1,), "chi2_sync": (T+1,), "w_star": (d,),
    "F_star": float}``; ``eta`` is a number or a function of the tick.
    """
    As = [np.atleast_2d(np.asarray(a, dtype=np.float64)) for a in A]
    M, d = len(As), As[0].shape[0]
    bs = [np.asarray(v, dtype=np.float64).reshape(d) for v in b]
    p = np.asarray(p, dtype=np.float64)
    require(len(bs) == M and p.size == M and len(pi) == M, "A", M,
            "A, b, p and pi must have one entry per client")
    Cs = [np.zeros((d, d)) if C is None else np.atleast_2d(np.asarray(C[k], float))
          for k in range(M)]
    cs = np.zeros(M) if c is None else np.asarray(c, dtype=np.float64)
    eta_fn = eta if callable(eta) else (lambda _t, e=float(eta): e)
    Abar = sum(p[k] * As[k] for k in range(M))
    wstar = np.linalg.solve(Abar, sum(p[k] * As[k] @ bs[k] for k in range(M)))
    Fk = [0.5 * (wstar - bs[k]) @ As[k] @ (wstar - bs[k]) + cs[k] for k in range(M)]
    Fstar = float(np.dot(p, Fk))
    N = 1 + (2 * M + 1) * d
    iw = slice(1, 1 + d)

    def il(k: int) -> slice:
        return slice(1 + d + k * d, 1 + d + (k + 1) * d)

    def isn(k: int) -> slice:
        return slice(1 + (M + 1) * d + k * d, 1 + (M + 2) * d + k * d)

    m = np.zeros(N)
    m[0] = 1.0
    x0 = np.asarray(w0, dtype=np.float64).reshape(d)
    m[iw] = x0
    for k in range(M):
        m[il(k)] = x0
        m[isn(k)] = x0
    P = np.outer(m, m)
    gaps, cht, chs = [], [], []
    pAb = sum(p[k] * As[k] @ bs[k] for k in range(M))

    def record() -> None:
        Ew, Eww = m[iw], P[iw, iw]
        g = 0.0
        for k in range(M):
            g += p[k] * (0.5 * np.trace(As[k] @ Eww) - bs[k] @ As[k] @ Ew
                         + 0.5 * bs[k] @ As[k] @ bs[k] + cs[k])
        gaps.append(g - Fstar)
        bt = bsy = 0.0
        for k in range(M):
            v = np.zeros((d, N))
            v[:, il(k)] += As[k]
            v[:, 0] -= As[k] @ bs[k]
            for j in range(M):
                v[:, il(j)] -= p[j] * As[j]
                v[:, 0] += p[j] * As[j] @ bs[j]
            bt = max(bt, float(np.trace(v @ P @ v.T)) + float(np.trace(Cs[k])))
            u = np.zeros((d, N))
            u[:, iw] += As[k] - Abar
            u[:, 0] += -As[k] @ bs[k] + pAb
            bsy = max(bsy, float(np.trace(u @ P @ u.T)) + float(np.trace(Cs[k])))
        cht.append(bt)
        chs.append(bsy)

    record()
    I = np.eye(d)
    for tau in range(int(T)):
        e = float(eta_fn(tau))
        Phi = np.zeros((N, N))
        Psi = np.zeros((N, M * d))
        Phi[0, 0] = 1.0
        Phi[iw, iw] = I
        comm = [(tau + 1) % (int(pi[k]) * E) == 0 for k in range(M)]
        # trained_k = (I - e A_k) w_k + e A_k b_k - e e_k
        for k in range(M):
            tr_w, tr_1 = I - e * As[k], e * As[k] @ bs[k]
            noise = slice(k * d, (k + 1) * d)
            if comm[k]:
                Phi[iw, il(k)] += p[k] * tr_w
                Phi[iw, 0] += p[k] * tr_1
                Phi[iw, isn(k)] -= p[k] * I
                Psi[iw, noise] += -p[k] * e * I
        for k in range(M):
            tr_w, tr_1 = I - e * As[k], e * As[k] @ bs[k]
            noise = slice(k * d, (k + 1) * d)
            if comm[k]:  # w_k = snap_k = new global
                Phi[il(k), :] = Phi[iw, :]
                Phi[isn(k), :] = Phi[iw, :]
                Psi[il(k), :] = Psi[iw, :]
                Psi[isn(k), :] = Psi[iw, :]
            else:
                Phi[il(k), il(k)] = tr_w
                Phi[il(k), 0] = tr_1
                Psi[il(k), noise] = -e * I
                Phi[isn(k), isn(k)] = I
        cov = np.zeros((M * d, M * d))
        for k in range(M):
            cov[k * d:(k + 1) * d, k * d:(k + 1) * d] = Cs[k]
        m = Phi @ m
        P = Phi @ P @ Phi.T + Psi @ cov @ Psi.T
        record()
    if not math.isfinite(gaps[-1]):  # pragma: no cover - diverging step sizes
        raise FloatingPointError("tick_oracle: non-finite moments (step too large?)")
    return {"gap": np.array(gaps), "chi2_traj": np.array(cht), "chi2_sync": np.array(chs),
            "w_star": wstar, "F_star": Fstar}
