"""The one place where fedsim touches SimPy's private fields (``env._queue``, ``env._eid``).

Why.  SimPy's public ``env.timeout(delay)`` schedules an event at ``env.now + delay``.  The
engine computes arrival times by the very additions the per-step reference engine makes
(``((t_read + download) + compute_1 + ...) + upload``) and must put the event at exactly
that float: ``now + (t - now)`` can differ from ``t`` in the last bit, which would change a
trace.  So events are pushed onto SimPy's event heap directly, with SimPy's documented
entry layout ``(time, priority, event id, event)`` (``simpy.core.Environment.schedule``
does the same push with ``now + delay``).

Everything here depends on SimPy 4's internals, so ``setup.cfg`` pins ``simpy>=4.1,<5``
(tested with 4.1.2); nothing else in fedsim may read a private SimPy attribute.
"""

from __future__ import annotations

from collections.abc import Callable
from heapq import heappush
from typing import Any

import simpy
from simpy.events import NORMAL, URGENT

__all__ = ["at", "urgent_at", "pusher", "stop_event", "NORMAL", "URGENT"]

_new_event = object.__new__


def at(env: simpy.Environment, t: float, priority: int = NORMAL) -> simpy.Event:
    """An already-triggered event processed at absolute time ``t >= env.now``.

    ``env.timeout(t - now)`` would fire at ``now + (t - now)``, which can differ from ``t``
    in the last bit (module docstring).
    """
    ev = _new_event(simpy.Event)
    ev.env = env
    ev.callbacks = []
    ev._ok = True
    ev._value = None
    heappush(env._queue, (t, priority, next(env._eid), ev))
    return ev


def urgent_at(env: simpy.Environment, t: float) -> simpy.Event:
    """An event at absolute time ``t`` processed before every normal event at ``t``."""
    return at(env, t, URGENT)


def pusher(env: simpy.Environment) -> tuple[list[Any], Any]:
    """``(queue, ids)``: SimPy's event heap and its event-id counter, for a hot loop that
    pushes ``(t, NORMAL, next(ids), event)`` itself (one ``heappush`` per round, no
    function call in between; the layout of :func:`at`).  The event must be a triggered
    event whose ``callbacks`` list is set (SimPy sets it to ``None`` once processed, so one
    object can be re-armed)."""
    return env._queue, env._eid


def stop_event(env: simpy.Environment) -> tuple[simpy.Event, Callable[[], None]]:
    """``(done, stop)``: the event ``env.run(until=done)`` waits for and an idempotent
    ``stop()`` that triggers it (public API only; here so that every mode shares it)."""
    done = env.event()

    def stop() -> None:
        if not done.triggered:
            done.succeed()

    return done, stop
