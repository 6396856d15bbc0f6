"""The columns of an event table (REPLAY_SPEC 1), as a timeline writer appends them.

:class:`EventColumns` is what a SimPy (or plain) timeline writes instead of computing: one
row per server step (``time``, ``kind``, ``client``, ``staleness_steps``,
``staleness_time``, ``buffer_fill``; the contributions of step t are the rows
``ptr[t-1]:ptr[t]``), one row per contribution (``c_client``, ``c_read``: the server
version the client computed from, ``c_steps``, ``c_stale``), the rounds each client
completed (and, per completed round, the steps done when it was processed: ``u_client``,
``u_before``), the busy curve and its idle events (``b_time``, ``b_delta`` +1/-1,
``b_gate``: the steps done when the idle period began, ``b_before``: when this event was
processed; what a replay stopped by a divergence needs), and the step horizon
(``stopped`` once it is reached, or when the writer calls :meth:`halt`).  No model is
held and no rule is called.  :meth:`finish` returns the table's fields as a dict of NumPy
arrays (the names of ``fedsim.engine.replay.table.EventTable``), the metric steps those of
a run that does not diverge: 0, the multiples of ``record.every`` and the last step.
"""

from __future__ import annotations

import sys
from array import array
from typing import Any

import numpy as np

__all__ = ["EventColumns"]


class EventColumns:
    """Append-only event-table columns of one replicate (module docstring)."""

    def __init__(self, *, n: int, steps: int | None, every: int, stop: Any = None,
                 busy: bool = True, progress: bool = False) -> None:
        self.T = steps if steps is not None else sys.maxsize
        self.pbar = None
        self.next_prog = sys.maxsize
        if progress:  # the steps written (fedsim.engine.steplog.StepLog's bar)
            from tqdm import tqdm

            self.pbar = tqdm(total=steps, file=sys.stderr, unit="step", mininterval=0.5,
                             leave=False)
            self.pstride = max(1, (steps or 100000) // 200)
            self.next_prog = self.pstride
        self.every = int(every)
        self.t = 0
        self.stopped = False
        self.stop_cb = stop
        self.time = array("d")
        self.kind = array("b")
        self.client = array("i")
        self.stale_steps = array("q")
        self.stale_time = array("d")
        self.fill = array("i")
        self.ptr = array("q", [0])
        self.c_client = array("i")
        self.c_read = array("q")
        self.c_steps = array("i")
        self.c_stale = array("q")
        self.n = int(n)
        self.client_updates = np.zeros(self.n, dtype=np.int64)
        self.u_client = array("i")
        self.u_before = array("q")
        self.b_time = array("d")
        self.b_delta = array("q")
        self.b_gate = array("q")
        self.b_before = array("q")
        self.idle = 0
        #: the busy curve, from (0, 1) (``busy = False``: none, the window model)
        self.conc_t: list[float] = [0.0] if busy else []
        self.conc_b: list[float] = [1.0] if busy else []

    def contribution(self, client: int, read: int, steps: int, stale: int) -> None:
        """A contribution to the step being written (the next :meth:`step`)."""
        self.c_client.append(client)
        self.c_read.append(read)
        self.c_steps.append(steps)
        self.c_stale.append(stale)

    def completed(self, client: int) -> None:
        """Client ``client`` completed a round (its upload is being processed)."""
        self.client_updates[client] += 1
        self.u_client.append(client)
        self.u_before.append(self.t)

    def step(self, time: float, kind: int, client: int, stale_steps: int, stale_time: float,
             fill: int) -> bool:
        """Close step ``t + 1`` over the contributions written since the last one; True
        when the step horizon is reached (the writer must stop)."""
        self.t += 1
        self.time.append(time)
        self.kind.append(kind)
        self.client.append(client)
        self.stale_steps.append(stale_steps)
        self.stale_time.append(stale_time)
        self.fill.append(fill)
        self.ptr.append(len(self.c_client))
        if self.t >= self.next_prog:
            self.pbar.update(self.t - self.pbar.n)
            self.next_prog = self.t + self.pstride
        if self.t >= self.T:
            self.halt()
            return True
        return False

    def idle_start(self, time: float) -> int:
        """A client starts idling (thinking) at ``time``; returns its gate (steps done)."""
        self._idle(time, 1, self.t)
        return self.t

    def idle_end(self, time: float, gate: int) -> None:
        """The idle period that began at steps-done ``gate`` ends at ``time``."""
        self._idle(time, -1, gate)

    def _idle(self, time: float, delta: int, gate: int) -> None:
        self.idle += delta
        self.b_time.append(time)
        self.b_delta.append(delta)
        self.b_gate.append(gate)
        self.b_before.append(self.t)
        frac = (self.n - self.idle) / self.n  # fedsim.trace.Recorder.busy's rule
        if self.conc_t[-1] == time:
            self.conc_b[-1] = frac
        else:
            self.conc_t.append(time)
            self.conc_b.append(frac)

    def halt(self) -> None:
        """Stop the timeline (idempotent)."""
        if not self.stopped:
            self.stopped = True
            if self.stop_cb is not None:
                self.stop_cb()

    def finish(self, *, sim_time: float, staleness_bound: float,
               info: dict[str, Any] | None = None) -> dict[str, Any]:
        """The table's fields (module docstring)."""
        T = self.t
        if self.pbar is not None:
            self.pbar.update(T - self.pbar.n)
            self.pbar.close()
        ms = list(range(0, T + 1, self.every))
        if ms[-1] != T:
            ms.append(T)

        def col(a: array, dt: Any) -> np.ndarray:
            return np.frombuffer(a, dtype=dt).copy() if len(a) else np.zeros(0, dtype=dt)

        return {
            "time": col(self.time, np.float64), "kind": col(self.kind, np.int8),
            "client": col(self.client, np.int32),
            "staleness_steps": col(self.stale_steps, np.int64),
            "staleness_time": col(self.stale_time, np.float64),
            "buffer_fill": col(self.fill, np.int32), "ptr": col(self.ptr, np.int64),
            "c_client": col(self.c_client, np.int32), "c_read": col(self.c_read, np.int64),
            "c_steps": col(self.c_steps, np.int32), "c_stale": col(self.c_stale, np.int64),
            "u_client": col(self.u_client, np.int32), "u_before": col(self.u_before, np.int64),
            "b_time": col(self.b_time, np.float64), "b_delta": col(self.b_delta, np.int64),
            "b_gate": col(self.b_gate, np.int64), "b_before": col(self.b_before, np.int64),
            "sim_time": float(sim_time), "steps_done": T,
            "client_updates": self.client_updates.copy(),
            "concurrency_time": np.asarray(self.conc_t, dtype=np.float64),
            "concurrency_busy": np.asarray(self.conc_b, dtype=np.float64),
            "metric_steps": np.asarray(ms, dtype=np.int64),
            "staleness_bound": float(staleness_bound), "info": dict(info or {}),
        }
