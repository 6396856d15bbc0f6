"""The SimPy engine: one ``simpy.Environment`` per run (docs/INTERNALS.md section 3).

``run(scenario, replicate=0, progress=False) -> Trace`` dispatches on the algorithm and its
execution model:

* **asynchronous physical** (FedAsync = [P] Algorithms 1-2, FedBuff, AS-FedAvg; also the
  named ``expcycle`` model of THEORY_SPEC 10.2(b)) -- this module.  Each client is a
  generator process looping *read the model -> download -> local computation -> upload
  -> think*; it is always busy unless a think time is configured.  The server model is
  read when the download is requested (``delays.read_at = "request"``: the server sends
  its current model, [P] Section 3) or when the download completes (``"arrival"``).
  For speed, a round costs one SimPy event: the client snapshots the model at the read,
  computes the arrival time ``((t_read + dl) + c_1 + ... ) + ul`` by the same additions a
  step-by-step process would make, and runs its Q local steps when the upload event
  fires (nothing it reads changes in between).  :mod:`fedsim.engine_reference` is the
  straightforward version (one timeout per download, local step and upload, noise drawn
  one step at a time); both give identical traces for the same seed (ties between events
  at exactly the same simulated time aside, which have probability 0 under continuous
  delays), tested in ``tests/test_engine_reference.py``.
* **synchronous rounds** (FedAvg, Per-FedAvg, pFedMe) -- :mod:`fedsim.engine_sync`;
* **AREA** (``algorithm`` and ``iterate_model``) -- :mod:`fedsim.engine_area`;
* **window** model of THEORY_SPEC 10.2(a) -- :mod:`fedsim.engine_window`.

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
        return _AsyncRun(scenario, problem, streams, progress).run()


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
        if a.name == "fedasync" and self.lean_log:
            self.log.fast_columns()
        steps = self.rule.Q if scenario.delays.compute_per == "step" else 1
        self.samplers = [DelaySampler(scenario.delays.for_client(i),
                                      streams.client(i, "delays"), steps) for i in range(n)]
        self.noise = [streams.client(i, "noise") for i in range(n)]
        self.streams = streams
        self.snaps = np.zeros((n, d))
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
        for i in range(self.n):
            env.process(self._client(i))
        tr = sc.trigger
        if self.kind != "fedasync" and tr.kind in ("poisson", "period"):
            env.process(self._timer(tr.kind, tr.rate if tr.kind == "poisson" else tr.period))
        if math.isfinite(sc.horizon.time):
            urgent_at(env, sc.horizon.time).callbacks.append(lambda _ev: self.log.halt())
        env.run(until=self.done)
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
    def _client(self, i: int):
        if self.kind == "fedasync":
            return self._client_fedasync(i)
        return self._client_buffered(i)

    def _client_fedasync(self, i: int):
        """FedAsync hot path: one event per round, lean step log (same results as log.log)."""
        env, log, w = self.env, self.log, self.w
        rule_round, rng, sampler = self.rule.round, self.noise[i], self.samplers[i]
        snap, out, delta = self.snaps[i], self.out, self.delta
        beta = self.beta
        arrival = self.sc.delays.read_at == "arrival"
        copyto, subtract, dot = np.copyto, np.subtract, np.dot
        app_t, app_c, app_o, app_r = log.time.append, log.client.append, \
            log.omega.append, log.t_read.append
        queue, eid, new, Event = env._queue, env._eid, object.__new__, simpy.Event
        hook = log.hook
        T, ergodic = log.T, log.ergodic
        # every-step metrics without a progress bar: record inline (StepLog.hook's effect)
        inline = log.every == 1 and log.pbar is None and not ergodic
        m_step = self.rec.m_steps.append
        pairs = self.rec._pairs
        wsum = self.rec.wsum if ergodic else None
        n = self.n
        ev = new(Event)
        ev._ok, ev._value = True, None
        q, nb = sampler.q, sampler.rounds
        j = nb
        while True:
            if j == nb:
                dls, cps, uls, ths = sampler.block()
                j = 0
            dl = dls[j]
            t = env._now
            if arrival:
                t = t + dl
                yield at(env, t)
                if log.stopped:
                    return
            copyto(snap, w)
            omega = log.t
            t_read = t
            if not arrival:
                t = t + dl
            if q == 1:
                t = t + cps[j]
            else:
                for k in range(j * q, j * q + q):
                    t = t + cps[k]
            t = t + uls[j]
            th = ths[j]
            j += 1
            # engine_common.at(env, t), inlined, with one event object per client re-armed
            # each round: SimPy sets ``callbacks = None`` once it has processed an event and
            # keeps no other reference to it, so resetting ``callbacks`` makes it pending again.
            ev.callbacks = []
            heappush(queue, (t, NORMAL, next(eid), ev))
            yield ev
            if log.stopped:
                return
            rule_round(i, snap, out, rng)
            subtract(snap, out, out=delta)
            if beta != 1.0:
                np.multiply(delta, beta, out=delta)
            subtract(w, delta, out=w)  # fedasync_apply, [P] Alg. 1 line 4
            step = log.t + 1
            log.t = step
            app_t(t)
            app_c(i)
            app_o(omega)
            app_r(t_read)
            if not dot(w, w) <= _DIV2:
                log.diverged = step
                log.halt()
                return
            if inline:
                m_step(step)
                for fn, app in pairs:
                    app(fn(w))
            elif step >= log.next_hook:
                hook(step, w)
            if ergodic:
                np.add(wsum, w, out=wsum)
            if step >= T:
                log.halt()
                return
            if th != 0.0:
                self.idle += 1
                self.rec.busy(t, (n - self.idle) / n)
                yield at(env, t + th)
                self.idle -= 1
                self.rec.busy(t + th, (n - self.idle) / n)
                if log.stopped:
                    return

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
