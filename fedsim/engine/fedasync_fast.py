"""FedAsync's hot path on the asynchronous physical model: one SimPy event per round.

Every client is a :class:`FastClient` event driven by callbacks: the state machine of the
per-step reference's generator process (*read -> download -> compute -> upload -> think*),
with one SimPy event per round that is re-armed every round (SimPy sets ``callbacks =
None`` once it has processed an event and keeps no other reference to it).  The server
step is :func:`fedsim.servers.fedasync.fedasync_apply` ([P] Alg. 1 line 4, compiled), the
client round the client rule's ``round``; the algorithm registry selects this runner
(execution model ``"physical"`` of FedAsync), the engine never looks at a name.  Events go
onto SimPy's heap through :func:`fedsim.engine.simpy_fast.pusher`; each client keeps the
time its event is due (``due``), so no callback reads the private clock.
"""

from __future__ import annotations

from heapq import heappush
from typing import Any

import numpy as np
import simpy

from fedsim.engine.delay_blocks import DelaySampler
from fedsim.engine.physical import AsyncRun
from fedsim.engine.simpy_fast import NORMAL, pusher
from fedsim.engine.steplog import DIVERGE_SQ
from fedsim.servers.fedasync import fedasync_apply

__all__ = ["FastClient", "FastAsyncRun"]


class FastClient(simpy.Event):
    """A FedAsync client of the hot path: its re-armed SimPy event and its round state.

    ``cycle``/``think``: the current delay block (download, compute and upload columns in
    one array, :meth:`DelaySampler.block_flat`; think times) and ``j`` the next round in it;
    ``dlt``/``new``: the model read and the model after the pending round;
    ``omega``/``t_read``: the server step and the time of the read; ``think_next``: the
    think time after the pending upload; ``due``: the time the client's event is
    scheduled at (the simulated time when its callback runs).
    """

    __slots__ = ("callbacks", "_ok", "_value", "i", "rng", "sampler", "dlt", "new", "cycle",
                 "think", "j", "omega", "t_read", "think_next", "due")

    def __init__(self, i: int, rng: np.random.Generator, sampler: DelaySampler,
                 dlt: np.ndarray, new: np.ndarray) -> None:
        self.callbacks = None
        self._ok = True
        self._value = None
        self.i, self.rng, self.sampler, self.dlt, self.new = i, rng, sampler, dlt, new
        self.j = sampler.rounds
        self.omega, self.t_read, self.think_next, self.due = 0, 0.0, 0.0, 0.0

    def refill(self) -> None:
        """The next block of delays (:meth:`DelaySampler.block_flat`)."""
        self.cycle, self.think = self.sampler.block_flat()


class FastAsyncRun(AsyncRun):
    """FedAsync on the physical model with callback clients (module docstring)."""

    def start(self) -> None:
        """Every client is a :class:`FastClient` event driven by callbacks.

        Each client is the state machine of the per-step reference's generator process
        (*read -> download -> compute -> upload -> think*), with one SimPy event per round:
        at the read it copies the model and computes its whole round with ``rule.round``;
        the upload event applies :func:`fedasync_apply` to the read and the new model.
        Nothing the round depends on changes in between (the noise stream is the client's
        own).  A rule that counts its work (Option C's inner iterations) snapshots the
        model instead and runs the round at the upload, so that its counters cover
        uploaded rounds only, as before.
        The upload time is ``((t_read + dl) + c_1 + ...) + ul``, the additions the
        reference makes.  Its one
        event object is re-armed every round: SimPy sets ``callbacks = None`` once it has
        processed an event and keeps no other reference to it.  The three callbacks
        (upload, download done for ``read_at = "arrival"``, end of think time) each resume
        the cycle where the reference's process would.  Steps are logged in the lean
        :meth:`StepLog.fast_columns` layout and every-step metrics recorded inline (what
        ``StepLog.log`` / ``hook`` would do; ``metric_steps`` is filled in at the end).
        """
        env, log, w, rec = self.env, self.log, self.w, self.rec
        rule_round, beta = self.rule.round, self.server.beta
        arrival = self.scenario.delays.read_at == "arrival"
        copyto, wdot = np.copyto, w.dot
        # the round runs at the read, unless the rule counts work (Option C's inner
        # iterations): then at the upload, so that rounds still in flight at the end of
        # the run are not counted (the traces are the same either way)
        eager = not hasattr(self.rule, "inner_iters")
        app_t, app_c, app_o, app_r = log.fast_columns()
        queue, eid = pusher(env)
        hook, busy, idle = log.hook, rec.busy, self.idle
        T, ergodic = log.T, log.ergodic
        inline = log.every == 1 and log.pbar is None and not ergodic
        pairs = rec._pairs
        fn1 = app1 = None
        if inline and len(pairs) == 1:
            (fn1, app1), = pairs
        self.lazy_metric_steps = inline
        wsum = rec.wsum if ergodic else None
        n = self.n
        q, nb = self.samplers[0].q, self.samplers[0].rounds  # the same for every client
        compute_at, upload_at = nb, nb * (1 + q)  # compute and upload columns in c.cycle
        # shared callback lists (SimPy only iterates them), one per kind of wake-up
        CB_UP: list[Any] = []
        CB_READ: list[Any] = []
        CB_THINK: list[Any] = []

        def schedule(c: FastClient, t_read: float, t: float, j: int, omega: int) -> None:
            """Read ``w`` at ``t_read`` ([P] Alg. 1 line 6), run the round, arm the upload
            (``t``: the read time, plus the download when the read is at the request)."""
            copyto(c.dlt, w)  # the model read
            if eager:
                rule_round(c.i, w, c.new, c.rng)
            c.omega = omega
            c.t_read = t_read
            cycle = c.cycle
            if q == 1:
                t = t + cycle[compute_at + j]
            else:
                for k in range(compute_at + j * q, compute_at + j * q + q):
                    t = t + cycle[k]
            t = t + cycle[upload_at + j]
            c.think_next = c.think[j]
            c.j = j + 1
            c.callbacks = CB_UP
            c.due = t
            heappush(queue, (t, NORMAL, next(eid), c))

        def late_round(c: FastClient) -> None:
            """The round of a rule with counters (Option C's inner iterations), run at the
            upload from the snapshot in ``c.dlt``, so that only uploaded rounds count."""
            rule_round(c.i, c.dlt, c.new, c.rng)

        def begin(c: FastClient, t: float) -> None:
            """Start a cycle at ``t``: read now (``request``) or after the download."""
            j = c.j
            if j == nb:
                c.refill()
                j = 0
            if arrival:
                c.j = j
                c.callbacks = CB_READ
                c.due = t + c.cycle[j]
                heappush(queue, (c.due, NORMAL, next(eid), c))
            else:
                schedule(c, t, t + c.cycle[j], j, log.t)

        def on_read(c: FastClient) -> None:  # download done (read_at = "arrival")
            if not log.stopped:
                t = c.due
                schedule(c, t, t, c.j, log.t)

        def on_think(c: FastClient) -> None:  # end of think time
            idle[0] -= 1
            t = c.due
            busy(t, (n - idle[0]) / n)
            if not log.stopped:
                begin(c, t)

        def on_upload(c: FastClient) -> None:
            if log.stopped:
                return
            t = c.due
            if not eager:
                late_round(c)
            fedasync_apply(w, c.dlt, c.new, beta)  # [P] Alg. 1 line 4
            step = log.t + 1
            log.t = step
            app_t(t)
            app_c(c.i)
            app_o(c.omega)
            app_r(c.t_read)
            if not wdot(w) <= DIVERGE_SQ:
                log.diverged = step
                log.halt()
                return
            if fn1 is not None:
                app1(fn1(w))
            elif inline:
                for fn, app in pairs:
                    app(fn(w))
            elif step >= log.next_hook:
                hook(step, w)
            if ergodic:
                np.add(wsum, w, out=wsum)
            if step >= T:
                log.halt()
                return
            think = c.think_next
            if think != 0.0:
                idle[0] += 1
                busy(t, (n - idle[0]) / n)
                c.callbacks = CB_THINK
                c.due = t + think
                heappush(queue, (c.due, NORMAL, next(eid), c))
            elif arrival:
                begin(c, t)
            else:  # begin + schedule, inlined for the common case
                j = c.j
                if j == nb:
                    c.refill()
                    j = 0
                copyto(c.dlt, w)
                if eager:
                    rule_round(c.i, w, c.new, c.rng)
                c.omega = step
                c.t_read = t
                cycle = c.cycle
                t = t + cycle[j]
                if q == 1:
                    t = t + cycle[compute_at + j]
                else:
                    for k in range(compute_at + j * q, compute_at + j * q + q):
                        t = t + cycle[k]
                t = t + cycle[upload_at + j]
                c.think_next = c.think[j]
                c.j = j + 1
                c.callbacks = CB_UP
                c.due = t
                heappush(queue, (t, NORMAL, next(eid), c))

        CB_UP.append(on_upload)
        CB_READ.append(on_read)
        CB_THINK.append(on_think)
        t0 = env.now
        news = np.zeros((n, self.d))
        for i in range(n):
            begin(FastClient(i, self.noise[i], self.samplers[i], self.snaps[i], news[i]), t0)


    def finish_counts(self) -> None:
        """Metrics of steps 0, 1, ..., k when recorded inline; uploads per client counted
        from the log (one upload per step)."""
        log = self.log
        if self.lazy_metric_steps:
            k = log.t - 1 if log.diverged == log.t else log.t  # a diverged step has none yet
            self.rec.m_steps[:] = range(k + 1)
        cl = np.frombuffer(log.client, dtype=np.int64)[1:]
        self.counts = np.bincount(cl, minlength=self.n)
