"""Delay patterns within a staleness bound ``tau``: the search space over schedules.

A pattern gives ``[tau_0, ..., tau_{K-1}]`` with every ``tau_k <= tau`` (issue 32's
conventions, :mod:`fedsim.worstcase.schedule`: step ``k`` applies the gradient at
``x_{k - tau_k}``, ``x_j = x_0`` for ``j < 0``):

* ``constant``: ``tau_k = tau``;
* ``sawtooth``: ``tau_k = floor(tau * ((k + phase) mod period) / (period - 1))``, a ramp
  ``0 .. tau`` repeated every ``period`` steps (``period >= 2``);
* ``burst``: ``tau_k = tau`` when ``(k + phase) mod period < burst``, else 0 (``burst`` stale
  steps every ``period``);
* ``list``: ``delays`` repeated (every entry in ``[0, tau]``).

Why any such list is a schedule of FedAsync with ``tau + 1`` clients ([P]'s model: a client
reads the current version, computes, uploads; each upload is one server step): the job of
step ``t`` is in flight from version ``r_t = t - 1 - tau_t`` to step ``t``, so at most
``tau + 1`` jobs overlap at any version, and an interval graph with cliques of size at most
``tau + 1`` is coloured with ``tau + 1`` colours (clients) -- a client's next job starts after
its previous upload.  With sigma = 0 and one shared function the uploader's identity does not
change the iterates.
"""

from __future__ import annotations

from collections.abc import Sequence

from fedsim.errors import require

__all__ = ["PATTERNS", "pattern_delays"]

PATTERNS = ("constant", "sawtooth", "burst", "list")


def pattern_delays(pattern: str, tau: int, K: int, *, period: int = 2, phase: int = 0,
                   burst: int = 1, delays: Sequence[int] | None = None) -> list[int]:
    """The delays of ``pattern`` (module doc) for ``K`` steps, each in ``[0, tau]``."""
    require(pattern in PATTERNS, "pattern", pattern, f"must be one of {PATTERNS}")
    tau, K, period, phase = int(tau), int(K), int(period), int(phase)
    require(tau >= 0, "tau", tau, "must be >= 0")
    require(period >= 1, "period", period, "must be >= 1")
    if pattern == "constant":
        return [tau] * K
    if pattern == "sawtooth":
        require(period >= 2, "period", period, "must be >= 2 for a sawtooth")
        return [tau * ((k + phase) % period) // (period - 1) for k in range(K)]
    if pattern == "burst":
        require(0 <= int(burst) <= period, "burst", burst, f"must be in [0, period = {period}]")
        return [tau if (k + phase) % period < int(burst) else 0 for k in range(K)]
    ds = [int(d) for d in (delays or [])]
    require(len(ds) > 0, "delays", delays, "must hold at least one delay for pattern 'list'")
    require(all(0 <= d <= tau for d in ds), "delays", ds, f"must all be in [0, tau = {tau}]")
    return [ds[k % len(ds)] for k in range(K)]
