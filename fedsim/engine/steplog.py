"""Server-step logs: compact columns and the step horizon.

:class:`TableLog` is the log of every timeline writer (the asynchronous physical model,
AREA, the window model, AsyPFL): it appends one server step, its contributions, the
uploads and the busy events to ``array.array`` columns and builds the
:class:`~fedsim.engine.replay.table.EventTable`; it holds no model and no metric.

:class:`StepLog` is the log of an engine that computes as it simulates (the reference
oracle, :mod:`fedsim.engine.models.physical.reference`): the same step columns, and it also checks
divergence (``||w|| > 1e150`` or non-finite), records metrics every ``record.every``
steps and drives the progress bar.
"""

from __future__ import annotations

import sys
from array import array
from typing import Any

import numpy as np

from fedsim.trace import DIVERGE_NORM, Recorder, Trace

__all__ = ["StepLog", "TableLog", "DIVERGE_SQ"]

#: ``||w||^2`` above which a run counts as diverged (``trace.DIVERGE_NORM`` squared)
DIVERGE_SQ = DIVERGE_NORM * DIVERGE_NORM
_dot = np.dot
_DIV2 = DIVERGE_SQ


class StepLog:
    """Server-step columns, metrics, divergence, progress and the step horizon."""

    def __init__(self, rec: Recorder, steps: int | None, w0: np.ndarray, progress: bool,
                 stop: Any = None) -> None:
        self.rec = rec
        self.T = steps if steps is not None else sys.maxsize
        self.t = 0
        self.time = array("d", [0.0])
        self.kind = array("b", [0])
        self.client = array("q", [-1])
        self.stale_steps = array("q", [0])
        self.stale_time = array("d", [0.0])
        self.fill = array("q", [0])
        self.diverged: int | None = None
        self.stopped = False
        self.stop_cb = stop
        self.every = rec.every
        self.pbar = None
        self.pstride = sys.maxsize
        if progress:
            from tqdm import tqdm

            self.pbar = tqdm(total=steps, file=sys.stderr, unit="step", mininterval=0.5,
                             leave=False)
            self.pstride = max(1, (steps or 100000) // 200)
        self.next_metric = self.every
        self.next_prog = self.pstride
        self.next_hook = min(self.next_metric, self.next_prog)
        self.ergodic = rec.ergodic
        self._app = (self.time.append, self.kind.append, self.client.append,
                     self.stale_steps.append,
                     self.stale_time.append, self.fill.append)
        rec.metrics_at(0, w0)
        if rec.ergodic:
            np.add(rec.wsum, w0, out=rec.wsum)

    def log(self, now: float, kind: int, client: int, stale_steps: int, stale_time: float,
            fill: int,
            w: np.ndarray) -> bool:
        """Append step ``t+1`` (model ``w`` after it); True when the run must stop."""
        t = self.t + 1
        self.t = t
        a = self._app
        a[0](now)
        a[1](kind)
        a[2](client)
        a[3](stale_steps)
        a[4](stale_time)
        a[5](fill)
        if not _dot(w, w) <= _DIV2:
            self.diverged = t
            self.halt()
            return True
        if t >= self.next_hook:
            self.hook(t, w)
        if self.ergodic:
            np.add(self.rec.wsum, w, out=self.rec.wsum)
        if t >= self.T:
            self.halt()
            return True
        return False

    def hook(self, t: int, w: np.ndarray) -> None:
        """Metrics / progress at step ``t`` (call when ``t >= next_hook``)."""
        if t >= self.next_metric:
            rec = self.rec
            if rec.ergodic:
                rec.metrics_at(t, w)
            else:  # Recorder.metrics_at, inlined for the hot path
                rec.m_steps.append(t)
                for fn, app in rec._pairs:
                    app(fn(w))
            self.next_metric = t + self.every
        if t >= self.next_prog:
            self.pbar.update(t - self.pbar.n)
            self.next_prog = t + self.pstride
        self.next_hook = min(self.next_metric, self.next_prog)

    def halt(self) -> None:
        """Stop the run (idempotent)."""
        if not self.stopped:
            self.stopped = True
            if self.stop_cb is not None:
                self.stop_cb()

    def finish(self, w: np.ndarray, sim_time: float, bound: float) -> Trace:
        """Build the Trace (closes the progress bar)."""
        rec = self.rec
        rec.time = np.frombuffer(self.time, dtype=np.float64).copy()
        rec.kind = np.frombuffer(self.kind, dtype=np.int8).copy()
        rec.client = np.frombuffer(self.client, dtype=np.int64).copy()
        rec.st_steps = np.frombuffer(self.stale_steps, dtype=np.int64).copy()
        rec.st_time = np.frombuffer(self.stale_time, dtype=np.float64).copy()
        rec.fill = np.frombuffer(self.fill, dtype=np.int64).copy()
        if self.pbar is not None:
            self.pbar.update(self.t - self.pbar.n)
            self.pbar.close()
        if self.diverged is not None and rec.m_steps[-1] != self.t:
            with np.errstate(all="ignore"):
                rec.metrics_at(self.t, w)
        return rec.finish(self.t, w, sim_time, self.diverged, bound)



class TableLog:
    """The step log of a timeline writer: the :class:`~fedsim.engine.replay.table.
    EventTable` columns, no model and no metric (docs/INTERNALS.md section 3).

    A writer calls :meth:`upload` when a client's round reaches the server,
    :meth:`contribute` for each upload a coming step consumes (arrival order), then
    :meth:`step`, which appends the step and stops the run at the step horizon (True:
    stop); :meth:`busy` records a change of the idle count (+1 / -1) with its gate (the
    table's ``b_*`` columns).  :meth:`table` builds the table.
    """

    def __init__(self, steps: int | None, stop: Any = None) -> None:
        self.T = steps if steps is not None else sys.maxsize
        self.t = 0
        self.stopped = False
        self.stop_cb = stop
        self.cols = {k: array(c) for k, c in (("time", "d"), ("kind", "b"), ("client", "q"),
                                               ("staleness_steps", "q"),
                                               ("staleness_time", "d"), ("buffer_fill", "q"),
                                               ("c_client", "q"), ("c_read", "q"),
                                               ("c_steps", "q"), ("c_stale", "q"),
                                               ("u_client", "q"), ("u_before", "q"),
                                               ("b_time", "d"), ("b_delta", "q"),
                                               ("b_gate", "q"), ("b_before", "q"))}
        self.ptr = array("q", [0])
        c = self.cols
        self._step_app = (c["time"].append, c["kind"].append, c["client"].append,
                          c["staleness_steps"].append, c["staleness_time"].append,
                          c["buffer_fill"].append)
        self._c_app = (c["c_client"].append, c["c_read"].append, c["c_steps"].append,
                       c["c_stale"].append)

    def upload(self, client: int) -> None:
        """Client ``client``'s round reached the server (counted in ``client_updates``)."""
        self.cols["u_client"].append(client)
        self.cols["u_before"].append(self.t)

    def contribute(self, client: int, read: int, steps: int, stale: int) -> None:
        """One upload the next step consumes: the step it read, its local steps, the
        staleness the server rule is given."""
        a = self._c_app
        a[0](client)
        a[1](read)
        a[2](steps)
        a[3](stale)

    def step(self, now: float, kind: int, client: int, stale_steps: int, stale_time: float,
             fill: int) -> bool:
        """Append step ``t + 1`` (its contributions are those given since the last step);
        True when the run must stop (the step horizon)."""
        a = self._step_app
        a[0](now)
        a[1](kind)
        a[2](client)
        a[3](stale_steps)
        a[4](stale_time)
        a[5](fill)
        self.ptr.append(len(self.cols["c_client"]))
        self.t += 1
        if self.t >= self.T:
            self.halt()
            return True
        return False

    def busy(self, time: float, delta: int, gate: int) -> None:
        """The idle count changes by ``delta`` at ``time``; ``gate``: the steps done when
        the idle period began."""
        c = self.cols
        c["b_time"].append(time)
        c["b_delta"].append(delta)
        c["b_gate"].append(gate)
        c["b_before"].append(self.t)

    def halt(self) -> None:
        """Stop the run (idempotent)."""
        if not self.stopped:
            self.stopped = True
            if self.stop_cb is not None:
                self.stop_cb()

    def table(self, *, n: int, sim_time: float, every: int, staleness_bound: float,
              info: dict[str, Any] | None = None) -> Any:
        """The :class:`~fedsim.engine.replay.table.EventTable` of the run so far."""
        from fedsim.engine.replay.table import EventTable, busy_curve

        c = {k: np.frombuffer(v, dtype=np.float64 if v.typecode == "d" else
                              (np.int8 if v.typecode == "b" else np.int64)).copy()
             if len(v) else np.empty(0, np.float64 if v.typecode == "d" else np.int64)
             for k, v in self.cols.items()}
        T = self.t
        ms = np.arange(0, T + 1, every, dtype=np.int64)
        if T % every:
            ms = np.append(ms, T)
        ct, cb = busy_curve(n, c["b_time"], c["b_delta"])
        return EventTable(**c, ptr=np.frombuffer(self.ptr, dtype=np.int64).copy(),
                          sim_time=sim_time, steps_done=T,
                          client_updates=np.bincount(c["u_client"], minlength=n),
                          concurrency_time=ct, concurrency_busy=cb, metric_steps=ms,
                          staleness_bound=staleness_bound, info=dict(info or {}))
