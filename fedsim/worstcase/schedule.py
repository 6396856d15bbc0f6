"""Schedules: who uploads at each server step and which server version each upload read.

A :class:`Schedule` is a tuple of server steps ``t = 1..K``; step ``t`` consumes the
contributions ``(client, read, stale, steps)`` in order -- the columns ``c_client``,
``c_read``, ``c_stale``, ``c_steps`` of the engine's event table (``docs/INTERNALS.md``
section 3: ``c_read`` is the server version the round started from, ``0 = w^0``).

Conventions of issue 32's prototype for a delay list ``[tau_0, ..., tau_{K-1}]``: step
``k`` (0-based) applies the gradient at ``x_{k - tau_k}`` with ``x_j = x_0`` for ``j < 0``,
i.e. server step ``t = k + 1`` reads version ``max(0, k - tau_k)``; ``K = len(delays)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fedsim.errors import require

__all__ = ["Contribution", "Schedule"]


@dataclass(frozen=True)
class Contribution:
    """One upload consumed by a server step: ``client``, the version ``read`` it started
    from, the staleness ``stale`` the server rule is given and its local ``steps`` (``None``:
    the method's own Q)."""

    client: int
    read: int
    stale: int
    steps: int | None = None


@dataclass(frozen=True)
class Schedule:
    """``steps[t - 1]``: the contributions of server step ``t``; ``n``: the clients;
    ``pattern``: how it was made (``"constant tau=1"``, ``"cyclic [...]"``, ``"table"``,
    ``"list"``) -- a time-invariant pattern is what the rate certificate needs."""

    steps: tuple[tuple[Contribution, ...], ...]
    n: int = 1
    pattern: str = "list"

    def __post_init__(self) -> None:
        for t, contribs in enumerate(self.steps, start=1):
            for c in contribs:
                require(0 <= c.read < t, f"schedule step {t} read", c.read,
                        f"must name a version in [0, {t - 1}]")
                require(0 <= c.client < self.n, f"schedule step {t} client", c.client,
                        f"must be in [0, {self.n - 1}]")

    @property
    def K(self) -> int:
        """The number of server steps."""
        return len(self.steps)

    def max_staleness(self) -> int:
        """The largest ``(t - 1) - read`` over the contributions (0 with none)."""
        return max((t - 1 - c.read for t, cs in enumerate(self.steps, start=1) for c in cs),
                   default=0)

    @classmethod
    def from_delays(cls, delays: Sequence[int], clients: Sequence[int] | None = None,
                    pattern: str = "list") -> Schedule:
        """One upload per step, step ``k`` reading ``max(0, k - delays[k])`` (module doc);
        ``clients[k]`` uploads it (default: client 0 throughout)."""
        ds = [int(d) for d in delays]
        require(all(d >= 0 for d in ds), "delays", list(delays), "must be >= 0")
        cl = [0] * len(ds) if clients is None else [int(c) for c in clients]
        require(len(cl) == len(ds), "clients", len(cl), f"must have {len(ds)} entries")
        steps = tuple((Contribution(client=cl[k], read=max(0, k - d), stale=min(d, k)),)
                      for k, d in enumerate(ds))
        return cls(steps=steps, n=max(cl, default=0) + 1, pattern=pattern)

    @classmethod
    def constant(cls, tau: int, K: int, n: int = 1) -> Schedule:
        """Constant delay ``tau`` for ``K`` steps; the uploads go round-robin over ``n``
        clients."""
        return cls.from_delays([int(tau)] * K, [k % n for k in range(K)],
                               pattern=f"constant tau={int(tau)}")

    @classmethod
    def cyclic(cls, delays: Sequence[int], K: int, n: int = 1) -> Schedule:
        """The delay pattern ``delays`` repeated for ``K`` steps, round-robin over ``n``."""
        ds = [int(d) for d in delays]
        require(len(ds) > 0, "delays", list(delays), "must not be empty")
        return cls.from_delays([ds[k % len(ds)] for k in range(K)], [k % n for k in range(K)],
                               pattern=f"cyclic {ds}")

    @classmethod
    def from_table(cls, table: Any, K: int | None = None) -> Schedule:
        """The first ``K`` steps (default: all) of an engine ``EventTable``, read through its
        public columns ``ptr``, ``c_client``, ``c_read``, ``c_stale``, ``c_steps`` and
        ``client_updates`` (the number of clients)."""
        T = int(table.steps_done) if K is None else min(int(K), int(table.steps_done))
        ptr = table.ptr
        steps = tuple(tuple(Contribution(client=int(table.c_client[p]),
                                         read=int(table.c_read[p]),
                                         stale=int(table.c_stale[p]),
                                         steps=int(table.c_steps[p]))
                            for p in range(int(ptr[t - 1]), int(ptr[t])))
                      for t in range(1, T + 1))
        return cls(steps=steps, n=int(len(table.client_updates)), pattern="table")

    def reads(self) -> list[list[int]]:
        """The versions read, step by step (a compact view for reports and tests)."""
        return [[c.read for c in cs] for cs in self.steps]
