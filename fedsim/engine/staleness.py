"""The provable staleness bound of the asynchronous physical model.

* :func:`cycle_support` -- the shortest upload-to-upload cycle and the longest
  read-to-upload window of one client, from its delays' supports;
* :func:`physical_staleness_bound` -- the bound on ``t - Omega(t)`` derived from them
  (derivation in its docstring).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["cycle_support", "physical_staleness_bound"]


def cycle_support(d: dict[str, Any], steps: int, read_at: str) -> tuple[float, float]:
    """``(c_min, W)``: the shortest upload-to-upload cycle and the longest read-to-upload window.

    ``c_min = lo(think) + lo(download) + q lo(compute) + lo(upload)`` and
    ``W = hi(download) + q hi(compute) + hi(upload)`` (``read_at="request"``) or
    ``q hi(compute) + hi(upload)`` (``"arrival"``), with ``q`` the compute draws per round.
    """
    lo = d["think"].lower + d["download"].lower + steps * d["compute"].lower + d["upload"].lower
    hi = steps * d["compute"].upper + d["upload"].upper
    if read_at == "request":
        hi += d["download"].upper
    return float(lo), float(hi)


def physical_staleness_bound(delays_cfg: Any, n: int, steps: int, per_step: bool,
                             count: int | None) -> float:
    """Provable ``sup_t (t - Omega(t))`` for the physical asynchronous model.

    Derivation.  Client j uploads at times ``u_1 < u_2 < ...`` with
    ``u_{k+1} - u_k >= c_min_j`` (a whole think + download + compute + upload cycle lies
    between two uploads of j).  An upload of client i at ``t_a`` was computed from the model
    read at ``t_r`` with ``t_a - t_r <= W_i`` (:func:`cycle_support`), and i itself does not
    upload in between.  A closed interval of length ``W_i`` holds at most
    ``floor(W_i / c_min_j) + 1`` uploads of j (the +1 covers uploads at both ends, i.e. ties
    resolved either way).  Hence the number of server steps applied between the read and
    i's upload is at most ``U_i = sum_{j != i} (floor(W_i / c_min_j) + 1)`` and FedAsync's
    staleness is at most ``max_i U_i``.  With a count trigger of ``K`` uploads (FedBuff,
    AS-FedAvg), the first aggregation after the read may need a single new upload (the
    buffer can already hold K-1), each later one K, and i's update is in the very next
    aggregation after it arrives, so the staleness is at most ``max_i ceil(U_i / K)``.
    Unbounded supports (``upper = inf`` or ``c_min_j = 0``) give ``inf``; timer triggers give
    ``inf``.
    """
    q = steps if per_step else 1
    cm, wi = np.empty(n), np.empty(n)
    for models, clients in delays_cfg.groups(n):
        cm[clients], wi[clients] = cycle_support(models, q, delays_cfg.read_at)
    if bool(np.any(cm <= 0)) or not bool(np.all(np.isfinite(wi))):
        return math.inf
    if count is None:
        return math.inf
    # The simulated clock is a float64 running sum, so realised gaps can fall below the
    # support minimum by ~n_cycles * 1e-16 relative; the 1e-9 slack covers ~1e7 cycles of
    # one client within a single window (beyond that the bound may be short by one; the
    # validation layer also checks measured staleness against it).
    f = np.floor(wi[:, None] / cm[None, :] * (1.0 + 1e-9)) + 1.0
    np.fill_diagonal(f, 0.0)
    u = f.sum(axis=1)
    best = float(np.max(np.ceil(u / count)))
    return float(best)

