"""The replay's memory-budget check, before its buffers are allocated.

A replay allocates per group (:func:`fedsim.engine.replay.group.replay_group`) the ring of
server states, the clients' states, the round buffers (one round's randomness ``(smax,
k)``, the step's reads and messages ``(kmax, d)``), the snapshots at the recorded steps
(with the personal models ``(records, n, d)`` when kept) and the metric buffers; a table
writer (:mod:`fedsim.engine.models.physical.group_writer`) its group's columns.  Their sizes follow
from the tables (the longest round, the most contributions of a step, the records) and can
be far above what the machine holds (a round of ``2e8`` local steps, a million records of
``n d`` personal models).  :func:`check_buffers` adds them up and raises a
:class:`~fedsim.errors.FedsimError` naming the total and the largest buffer when it is
over the process's memory budget (:func:`fedsim.config.budget.memory_budget`: 4 GiB,
``FEDSIM_MEMORY_BUDGET`` or ``fedsim run --memory-budget``), before anything is
allocated.
"""

from __future__ import annotations

from fedsim.config.budget import memory_budget
from fedsim.errors import FedsimError

__all__ = ["check_buffers", "ReplayMemoryError"]


class ReplayMemoryError(FedsimError):
    """A replay's buffers would exceed the memory budget."""


def _fmt(b: float) -> str:
    for unit, k in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if b >= k:
            return f"{b / k:.3g} {unit}"
    return f"{b:.0f} B"


def check_buffers(what: str, sizes: dict[str, int | float], budget: int | None = None) -> int:
    """The total of ``sizes`` (buffer name -> bytes); :class:`ReplayMemoryError` naming
    ``what``, the total, the largest buffer and the budget when the total is over
    ``budget`` (default :func:`~fedsim.config.budget.memory_budget`)."""
    budget = memory_budget() if budget is None else int(budget)
    total = int(sum(sizes.values()))
    if total > budget:
        big = max(sizes, key=lambda k: sizes[k])
        raise ReplayMemoryError(
            f"{what} needs {_fmt(total)} of buffers ({big}: {_fmt(sizes[big])}), over the "
            f"memory budget of {_fmt(budget)}; shorten the run or its records, or raise the "
            "budget (fedsim run --memory-budget SIZE, or FEDSIM_MEMORY_BUDGET)")
    return total
