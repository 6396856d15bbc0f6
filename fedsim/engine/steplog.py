"""Server-step log: compact columns, divergence, metrics, progress, the step horizon.

:class:`StepLog` appends one server step to ``array.array`` columns (time, kind, client,
staleness in steps and in time, buffer fill), checks divergence (``||w|| > 1e150`` or
non-finite), records metrics every ``record.every`` steps, drives the progress bar and
stops the run at the step horizon.  Every execution model logs through it.
"""

from __future__ import annotations

import sys
from array import array
from typing import Any

import numpy as np

from fedsim.trace import DIVERGE_NORM, KINDS, Recorder, Trace

__all__ = ["StepLog", "DIVERGE_SQ"]

#: ``||w||^2`` above which a run counts as diverged (``trace.DIVERGE_NORM`` squared)
DIVERGE_SQ = DIVERGE_NORM * DIVERGE_NORM
_dot = np.dot
_K_UPLOAD = KINDS.index("upload")
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
        self.lazy = False
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

    def fast_columns(self) -> tuple[Any, Any, Any, Any]:
        """Switch to the lean FedAsync layout; returns the appenders of
        ``(time, client, omega, t_read)``.

        Every step is then an ``"upload"`` of one update whose staleness columns
        ``t - 1 - omega`` and ``time - t_read`` are computed at :meth:`finish`; the caller
        does the rest of :meth:`log` itself (``fedsim.engine.fedasync_fast``).
        """
        self.lazy = True
        self.omega = array("q", [0])
        self.t_read = array("d", [0.0])
        return self.time.append, self.client.append, self.omega.append, self.t_read.append

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
        if self.lazy:
            m = len(self.time)
            om = np.frombuffer(self.omega, dtype=np.int64)
            tr = np.frombuffer(self.t_read, dtype=np.float64)
            tm = np.frombuffer(self.time, dtype=np.float64)
            self.stale_steps = array("q", (np.arange(m, dtype=np.int64) - 1 - om).clip(0).tobytes())
            self.stale_time = array("d", (tm - tr).tobytes())
            self.kind = array("b", np.full(m, _K_UPLOAD, dtype=np.int8).tobytes())
            self.fill = array("q", np.ones(m, dtype=np.int64).tobytes())
            self.kind[0], self.fill[0] = 0, 0
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

