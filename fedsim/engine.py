"""The SimPy engine: one ``simpy.Environment`` per run (docs/INTERNALS.md section 3).

``run(scenario, replicate=0, progress=False) -> Trace`` dispatches on the algorithm and its
execution model:

* **asynchronous physical** (FedAsync = [P] Algorithms 1-2, FedBuff, AS-FedAvg; also the
  named ``expcycle`` model of THEORY_SPEC 10.2(b)) -- this module.  Each client is a
  generator process looping *read the model -> download -> local computation -> upload
  -> think*; it is always busy unless a think time is configured.  The server model is
  read when the download is requested (``delays.read_at = "request"``: the server sends
  its current model, [P] Section 3) or when the download completes (``"arrival"``).
  For speed, a FedAsync round costs one SimPy event and no generator: each client is a
  re-armed event whose callbacks run the cycle (:class:`_Client`, a state machine equal
  to the process above).  At the read the client runs its Q local steps on the live
  model and keeps only its update; the upload event applies it at
  ``((t_read + dl) + c_1 + ... ) + ul``, the additions a step-by-step process makes
  (nothing the round reads changes in between: its noise stream is its own).  FedBuff and
  AS-FedAvg clients are generator processes with one event per round.
  :mod:`fedsim.engine_reference` is the straightforward version (one timeout per
  download, local step and upload, noise drawn one step at a time); both give identical
  traces for the same seed (ties between events at exactly the same simulated time aside,
  which have probability 0 under continuous delays), tested in
  ``tests/test_engine_reference.py``.  Per client the engine holds ~2.4 KB (its two
  streams without their seed sequences, one delay block, the pending update;
  ``benchmarks/engine.py --memory``).
* **synchronous rounds** (FedAvg, Per-FedAvg, pFedMe) -- :mod:`fedsim.engine_sync`;
* **AREA** (``algorithm`` and ``iterate_model``) -- :mod:`fedsim.engine_area`;
* **window** model of THEORY_SPEC 10.2(a) -- :mod:`fedsim.engine_window`.
* **AsyPFL** (Ma et al., Algorithm 1, eqs. (3)-(4): persistent personal models, adaptive
  local epochs) -- :mod:`fedsim.engine_asypfl`.

Aggregation triggers (FedBuff, AS-FedAvg, AREA): every upload, every ``count`` uploads, a
Poisson timer (rate), a fixed period.  Stopping: ``horizon.steps`` server steps or the
simulated time ``horizon.time`` (events at exactly that time are not processed), whichever
comes first; the processes are then abandoned with the environment.  Everything is
simulated time; wall-clock time never enters a result.  A run whose model diverges
(non-finite, or norm > 1e150) is stopped and marked, never raised.
"""

from __future__ import annotations

import math
from heapq import heappush
from typing import Any

import numpy as np
import simpy
from simpy.events import NORMAL

from fedsim.config import Scenario, build_problem
from fedsim.engine_common import (
    _DIV2,
    DelaySampler,
    StepLog,
    at,
    lean_bitgen,
    physical_staleness_bound,
    urgent_at,
)
from fedsim.errors import require
from fedsim.local import make_client_rule
from fedsim.rng import Streams
from fedsim.servers.asfedavg import ASFedAvgServer
from fedsim.servers.fedbuff import FedBuffServer
from fedsim.trace import KINDS, Recorder, Trace

__all__ = ["run", "problem_for", "make_recorder", "initial_model"]

K_UPLOAD = KINDS.index("upload")
K_AGG = KINDS.index("aggregate")


_PROBLEMS: dict[str, Any] = {}
_PROBLEM_CACHE = 8


def problem_for(scenario: Scenario):
    """The scenario's problem (built once per distinct problem table; small LRU cache)."""
    cfg = scenario.problem
    key = repr(sorted(cfg.to_dict().items()))
    hit = _PROBLEMS.pop(key, None)
    if hit is None:
        hit = build_problem(cfg)
        if len(_PROBLEMS) >= _PROBLEM_CACHE:
            _PROBLEMS.pop(next(iter(_PROBLEMS)))
    _PROBLEMS[key] = hit
    return hit


def initial_model(problem, scenario: Scenario | None = None) -> np.ndarray:
    """``w^0`` (``x_{s,0}`` for AREA): ``algorithm.w0`` if set (a list of ``dim`` numbers or
    one number for every coordinate), else the zero vector."""
    w0 = None if scenario is None else scenario.algorithm.w0
    if w0 is None:
        return np.zeros(problem.dim)
    if isinstance(w0, tuple):
        require(len(w0) == problem.dim, "algorithm.w0", list(w0),
                f"must have dim = {problem.dim} entries")
        return np.array(w0, dtype=np.float64)
    return np.full(problem.dim, float(w0))


def make_recorder(scenario: Scenario, problem, capacity: int = 2) -> Recorder:
    """The metric recorder; MAML alpha / Moreau lam default to the client rule's."""
    a, r = scenario.algorithm, scenario.record
    alpha = r.maml_alpha
    if alpha is None and a.client_rule in ("maml", "fomaml", "hfmaml"):
        alpha = float(a.alpha)
    lam = r.me_lam if r.me_lam is not None else (a.lam if a.client_rule == "moreau" else None)
    return Recorder(problem, r.metrics, r.every, problem.n, capacity, alpha, lam)


def _check_problem(scenario: Scenario, problem) -> None:
    require(problem.n == scenario.problem.n, "problem.n", problem.n,
            f"must match the configured client count {scenario.problem.n}")


def run(scenario: Scenario, replicate: int = 0, *, progress: bool = False) -> Trace:
    """Simulate ``scenario`` once with the streams of ``(scenario.seed, replicate)``."""
    require(isinstance(scenario, Scenario), "scenario", type(scenario).__name__,
            "must be a fedsim.config.Scenario")
    streams = Streams(scenario.seed, replicate)
    problem = problem_for(scenario)
    _check_problem(scenario, problem)
    alg = scenario.algorithm
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        if alg.model == "window":
            from fedsim.engine_window import run_window
            return run_window(scenario, problem, streams, progress)
        if alg.name == "area":
            from fedsim.engine_area import run_area
            return run_area(scenario, problem, streams, progress)
        if alg.name == "fedavg":
            from fedsim.engine_sync import run_sync
            return run_sync(scenario, problem, streams, progress)
        if alg.name == "asypfl":
            from fedsim.engine_asypfl import run_asypfl
            return run_asypfl(scenario, problem, streams, progress)
        return _AsyncRun(scenario, problem, streams, progress).run()


class _Client(simpy.Event):
    """A FedAsync client of the hot path: its re-armed SimPy event and its round state.

    ``dcu``/``ths``: the current delay block (download, compute and upload columns in one
    array, :meth:`DelaySampler.block_flat`; think) and ``j`` the next round in it;
    ``dlt``: the pending update; ``omega``/``t_read``: the server step and the time of
    the read; ``th``: the think time after the pending upload.
    """

    __slots__ = ("callbacks", "_ok", "_value", "i", "rng", "sampler", "dlt", "dcu", "ths", "j",
                 "omega", "t_read", "th")

    def __init__(self, i: int, rng: np.random.Generator, sampler: DelaySampler,
                 dlt: np.ndarray) -> None:
        self.callbacks = None
        self._ok = True
        self._value = None
        self.i, self.rng, self.sampler, self.dlt = i, rng, sampler, dlt
        self.j = sampler.rounds
        self.omega, self.t_read, self.th = 0, 0.0, 0.0

    def refill(self) -> None:
        """The next block of delays (:meth:`DelaySampler.block_flat`)."""
        self.dcu, self.ths = self.sampler.block_flat()


class _AsyncRun:
    """State of one asynchronous physical run (FedAsync, FedBuff, AS-FedAvg)."""

    lean_log = True

    def __init__(self, scenario: Scenario, problem, streams: Streams, progress: bool) -> None:
        self.sc = scenario
        a = scenario.algorithm
        n, d = problem.n, problem.dim
        self.n = n
        self.env = simpy.Environment()
        self.done = self.env.event()
        self.rule = make_client_rule(a, problem)
        self.w = initial_model(problem, scenario)
        self.rec = make_recorder(scenario, problem)
        self.log = StepLog(self.rec, scenario.horizon.steps, self.w, progress, self._stop)
        steps = self.rule.Q if scenario.delays.compute_per == "step" else 1
        # fedsim.rng's client streams, held lean (engine_common.lean_bitgen)
        self.samplers = DelaySampler.for_clients(
            scenario.delays, [lean_bitgen(streams, i, "delays") for i in range(n)], steps)
        self.noise = [np.random.Generator(lean_bitgen(streams, i, "noise")) for i in range(n)]
        self.streams = streams
        self.snaps = np.zeros((n, d))  # FedBuff / AS-FedAvg: the model each client read
        self.deltas = self.snaps  # FedAsync: each client's pending update (same storage)
        self.out = np.empty(d)
        self.delta = np.empty(d)
        self.kind = a.name
        self.beta = float(a.get("beta"))
        tr = scenario.trigger
        self.count: int | None = None
        if self.kind == "fedbuff":
            self.buf: Any = FedBuffServer(d, a.get("server_lr"), a.get("staleness_weight"),
                                          a.get("staleness_exponent"))
        elif self.kind == "asfedavg":
            self.buf = ASFedAvgServer(d, self.beta)
        if self.kind != "fedasync":
            self.count = {"every_upload": 1, "every_k": tr.count}.get(tr.kind)
        self.pending: list[tuple[int, float, int]] = []
        self.counts = [0] * n
        self.idle = 0
        self.rec.busy(0.0, 1.0)
        bound_count = 1 if self.kind == "fedasync" else self.count
        self.bound = physical_staleness_bound(scenario.delays, n, self.rule.Q,
                                              scenario.delays.compute_per == "step",
                                              bound_count)

    def _stop(self) -> None:
        if not self.done.triggered:
            self.done.succeed()

    def run(self) -> Trace:
        env, sc = self.env, self.sc
        self.start()
        tr = sc.trigger
        if self.kind != "fedasync" and tr.kind in ("poisson", "period"):
            env.process(self._timer(tr.kind, tr.rate if tr.kind == "poisson" else tr.period))
        if math.isfinite(sc.horizon.time):
            urgent_at(env, sc.horizon.time).callbacks.append(lambda _ev: self.log.halt())
        env.run(until=self.done)
        if getattr(self, "lazy_metric_steps", False):  # metrics of steps 0, 1, ..., k
            log = self.log
            k = log.t - 1 if log.diverged == log.t else log.t  # a diverged step has none yet
            self.rec.m_steps[:] = range(k + 1)
        if self.log.lazy:  # FedAsync hot path: one upload per step, counted from the log
            cl = np.frombuffer(self.log.client, dtype=np.int64)[1:]
            self.counts = np.bincount(cl, minlength=self.n)
        self.rec.client_updates[:] = self.counts
        self.rec.info.update(self._rule_info())
        return self.log.finish(self.w, env.now, self.bound)

    def _rule_info(self) -> dict[str, Any]:
        r = self.rule
        if hasattr(r, "inner_iters"):
            return {"inner_iters": r.inner_iters, "inner_solves": r.inner_solves,
                    "inner_failures": r.inner_failures}
        return {}

    # -- processes -------------------------------------------------------------------
    def start(self) -> None:
        """Set the clients going (at the current simulated time)."""
        if self.kind == "fedasync" and self.lean_log:
            self._start_fedasync()
        else:
            for i in range(self.n):
                self.env.process(self._client(i))

    def _client(self, i: int):
        return self._client_buffered(i)

    def _start_fedasync(self) -> None:
        """FedAsync hot path: every client is a :class:`_Client` event driven by callbacks.

        Each client is the state machine of the per-step reference's generator process
        (*read -> download -> compute -> upload -> think*), with one SimPy event per round:
        at the read it computes its whole round with ``rule.round`` (which reads the live
        server model directly, so no snapshot is copied) and keeps only its update
        ``beta (w_read - w_Q)``; the upload event applies it.  Nothing the round depends on
        changes in between (the noise stream is the client's own).  A rule that counts
        its work (Option C's inner iterations) snapshots the model instead and runs the
        round at the upload, so that its counters cover uploaded rounds only, as before.
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
        rule_round, out, beta = self.rule.round, self.out, self.beta
        arrival = self.sc.delays.read_at == "arrival"
        subtract, multiply, copyto, wdot = np.subtract, np.multiply, np.copyto, w.dot
        # the round runs at the read, unless the rule counts work (Option C's inner
        # iterations): then at the upload, so that rounds still in flight at the end of
        # the run are not counted (the traces are the same either way)
        eager = not hasattr(self.rule, "inner_iters")
        app_t, app_c, app_o, app_r = log.fast_columns()
        queue, eid = env._queue, env._eid
        hook, busy = log.hook, rec.busy
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
        oc, ou = nb, nb * (1 + q)  # offsets of the compute and upload columns in c.dcu
        # shared callback lists (SimPy only iterates them), one per kind of wake-up
        CB_UP: list[Any] = []
        CB_READ: list[Any] = []
        CB_THINK: list[Any] = []

        def schedule(c: _Client, t_read: float, t: float, j: int, omega: int) -> None:
            """Read ``w`` at ``t_read`` ([P] Alg. 1 line 6), run the round, arm the upload
            (``t``: the read time, plus the download when the read is at the request)."""
            dlt = c.dlt
            if eager:
                rule_round(c.i, w, out, c.rng)
                subtract(w, out, dlt)
                if beta != 1.0:
                    multiply(dlt, beta, dlt)
            else:
                copyto(dlt, w)  # the snapshot; the round runs at the upload
            c.omega = omega
            c.t_read = t_read
            dcu = c.dcu
            if q == 1:
                t = t + dcu[oc + j]
            else:
                for k in range(oc + j * q, oc + j * q + q):
                    t = t + dcu[k]
            t = t + dcu[ou + j]
            c.th = c.ths[j]
            c.j = j + 1
            c.callbacks = CB_UP
            heappush(queue, (t, NORMAL, next(eid), c))

        def late_round(c: _Client) -> None:
            """The round of a rule with counters (Option C's inner iterations), run at the
            upload from the snapshot in ``c.dlt``, so that only uploaded rounds count."""
            dlt = c.dlt
            rule_round(c.i, dlt, out, c.rng)
            subtract(dlt, out, dlt)
            if beta != 1.0:
                multiply(dlt, beta, dlt)

        def begin(c: _Client, t: float) -> None:
            """Start a cycle at ``t``: read now (``request``) or after the download."""
            j = c.j
            if j == nb:
                c.refill()
                j = 0
            if arrival:
                c.j = j
                c.callbacks = CB_READ
                heappush(queue, (t + c.dcu[j], NORMAL, next(eid), c))
            else:
                schedule(c, t, t + c.dcu[j], j, log.t)

        def on_read(c: _Client) -> None:  # download done (read_at = "arrival")
            if not log.stopped:
                t = env._now
                schedule(c, t, t, c.j, log.t)

        def on_think(c: _Client) -> None:  # end of think time
            self.idle -= 1
            t = env._now
            busy(t, (n - self.idle) / n)
            if not log.stopped:
                begin(c, t)

        def on_upload(c: _Client) -> None:
            if log.stopped:
                return
            t = env._now
            if not eager:
                late_round(c)
            subtract(w, c.dlt, w)  # fedasync_apply, [P] Alg. 1 line 4
            step = log.t + 1
            log.t = step
            app_t(t)
            app_c(c.i)
            app_o(c.omega)
            app_r(c.t_read)
            if not wdot(w) <= _DIV2:
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
            th = c.th
            if th != 0.0:
                self.idle += 1
                busy(t, (n - self.idle) / n)
                c.callbacks = CB_THINK
                heappush(queue, (t + th, NORMAL, next(eid), c))
            elif arrival:
                begin(c, t)
            else:  # begin + schedule, inlined for the common case
                j = c.j
                if j == nb:
                    c.refill()
                    j = 0
                dlt = c.dlt
                if eager:
                    rule_round(c.i, w, out, c.rng)
                    subtract(w, out, dlt)
                    if beta != 1.0:
                        multiply(dlt, beta, dlt)
                else:
                    copyto(dlt, w)
                c.omega = step
                c.t_read = t
                dcu = c.dcu
                t = t + dcu[j]
                if q == 1:
                    t = t + dcu[oc + j]
                else:
                    for k in range(oc + j * q, oc + j * q + q):
                        t = t + dcu[k]
                t = t + dcu[ou + j]
                c.th = c.ths[j]
                c.j = j + 1
                c.callbacks = CB_UP
                heappush(queue, (t, NORMAL, next(eid), c))

        CB_UP.append(on_upload)
        CB_READ.append(on_read)
        CB_THINK.append(on_think)
        t0 = env._now
        for i in range(n):
            begin(_Client(i, self.noise[i], self.samplers[i], self.deltas[i]), t0)

    def _client_buffered(self, i: int):
        """FedBuff / AS-FedAvg client: the same cycle, uploads go to the server buffer."""
        env, log = self.env, self.log
        rule_round, rng, sampler = self.rule.round, self.noise[i], self.samplers[i]
        snap, out = self.snaps[i], self.out
        arrival = self.sc.delays.read_at == "arrival"
        n = self.n
        while True:
            dl, comp, ul, th = sampler.next_round()
            t = env.now
            if arrival:
                t = t + dl
                yield at(env, t)
                if log.stopped:
                    return
            np.copyto(snap, self.w)
            omega = log.t
            t_read = t
            if not arrival:
                t = t + dl
            for c in comp:
                t = t + c
            t = t + ul
            yield at(env, t)
            if log.stopped:
                return
            rule_round(i, snap, out, rng)
            self.counts[i] += 1
            self._buffer(i, snap, out, omega, t_read)
            if self.count is not None and self.buf.fill >= self.count:
                if self._aggregate():
                    return
            if th != 0.0:
                self.idle += 1
                self.rec.busy(t, (n - self.idle) / n)
                yield at(env, t + th)
                self.idle -= 1
                self.rec.busy(t + th, (n - self.idle) / n)
                if log.stopped:
                    return

    def _buffer(self, i: int, snap: np.ndarray, out: np.ndarray, omega: int,
                t_read: float) -> None:
        if self.kind == "fedbuff":
            np.subtract(snap, out, out=self.delta)
            self.buf.add(self.delta, self.log.t - omega)
        else:
            self.buf.add(out)
        self.pending.append((omega, t_read, i))

    def _aggregate(self) -> bool:
        log, now = self.log, self.env.now
        t0 = log.t
        sst = max(t0 - om for om, _, _ in self.pending)
        stt = max(now - tr for _, tr, _ in self.pending)
        k = self.buf.apply(self.w)
        who = self.pending[0][2] if k == 1 else -1
        self.pending.clear()
        return log.log(now, K_AGG, who, sst, stt, k, self.w)

    def _timer(self, kind: str, param: float):
        env, rng = self.env, self.streams.server("timer")
        t = env.now
        while True:
            t = t + (rng.exponential(1.0 / param) if kind == "poisson" else param)
            yield at(env, t)
            if self.log.stopped:
                return
            if self.buf.fill > 0 and self._aggregate():
                return
