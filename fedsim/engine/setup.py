"""What every execution model starts from: one setup, shared by all modes.

:class:`RunSetup` builds, for one ``(scenario, replicate)``: the problem's client rule, the
initial model ``w^0`` (:func:`initial_model`), the metric recorder (:func:`make_recorder`),
the SimPy environment with its ``done`` event and idempotent ``stop()``, the server-step
log with the step horizon (:class:`~fedsim.engine.steplog.StepLog`), and offers the pieces
the modes used to write each for itself: the per-client delay samplers and noise streams,
the compute draws per round, the aggregation trigger's count, the aggregation timer
process, the simulated-time horizon stop, the think-time pause and the client rule's
inner-iteration counters.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import simpy

from fedsim.config import Scenario, build_problem
from fedsim.engine.simpy_fast import at, stop_event, urgent_at
from fedsim.engine.steplog import StepLog, TableLog
from fedsim.errors import require
from fedsim.local import make_client_rule
from fedsim.rng import Streams
from fedsim.rng.delays import DelaySampler
from fedsim.rng.seeding import lean_bitgen
from fedsim.trace import Recorder

__all__ = ["RunSetup", "problem_for", "initial_model", "make_recorder", "metric_params",
           "check_problem", "inner_counters", "trigger_count"]

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


def metric_params(scenario: Scenario) -> tuple[float | None, float | None]:
    """``(maml_alpha, me_lam)`` of the recorded metrics: ``record.maml_alpha`` /
    ``record.me_lam``, defaulting to the client rule's ``alpha`` / ``lam``."""
    a, r = scenario.algorithm, scenario.record
    alpha = r.maml_alpha
    if alpha is None and a.client_rule in ("maml", "fomaml", "hfmaml"):
        alpha = float(a.alpha)
    lam = r.me_lam if r.me_lam is not None else (a.lam if a.client_rule == "moreau" else None)
    return alpha, lam


def make_recorder(scenario: Scenario, problem, capacity: int = 2) -> Recorder:
    """The metric recorder (:func:`metric_params`)."""
    r = scenario.record
    return Recorder(problem, r.metrics, r.every, problem.n, capacity, *metric_params(scenario))


def trigger_count(scenario: Scenario) -> int | None:
    """Uploads per aggregation of a count trigger (``every_upload``: 1), else None (a
    timer)."""
    tr = scenario.trigger
    return {"every_upload": 1, "every_k": tr.count}.get(tr.kind)


def check_problem(scenario: Scenario, problem) -> None:
    """The problem has the configured number of clients."""
    require(problem.n == scenario.problem.n, "problem.n", problem.n,
            f"must match the configured client count {scenario.problem.n}")


def inner_counters(rule: Any) -> dict[str, Any]:
    """A client rule's work counters (Option C's inner solves), or ``{}``."""
    if hasattr(rule, "inner_iters"):
        return {"inner_iters": rule.inner_iters, "inner_solves": rule.inner_solves,
                "inner_failures": rule.inner_failures}
    return {}


class RunSetup:
    """The state every execution model starts from (module docstring).

    ``log_model`` is the array whose metrics are recorded at step 0 (default ``w``);
    ``steps`` overrides the step horizon (the window model folds its time horizon in);
    ``simulate = False`` makes no SimPy environment (the window model has no events);
    ``personal`` (n x dim) are the clients' own personal models when the algorithm keeps
    them (AsyPFL's beta_k), attached to the recorder before step 0 is recorded.
    ``table = True``: a timeline writer -- no recorder, the log is a
    :class:`~fedsim.engine.steplog.TableLog` (no model, no metric).
    """

    def __init__(self, scenario: Scenario, problem, streams: Streams, progress: bool, *,
                 log_model: np.ndarray | None = None, steps: int | None = None,
                 simulate: bool = True, personal: np.ndarray | None = None,
                 table: bool = False) -> None:
        self.scenario = scenario
        self.algorithm = scenario.algorithm
        self.problem = problem
        self.streams = streams
        self.n, self.d = problem.n, problem.dim
        self.rule = make_client_rule(scenario.algorithm, problem)
        self.w = initial_model(problem, scenario)
        self.writes_table = table
        self.rec = None if table else make_recorder(scenario, problem)
        if not table:
            self.rec.personal = personal
        self.env: simpy.Environment | None = None
        stop: Callable[[], None] | None = None
        if simulate:
            self.env = simpy.Environment()
            self.done, stop = stop_event(self.env)
        self.stop = stop
        T = scenario.horizon.steps if steps is None else steps
        if table:
            self.log = TableLog(T, stop)
        else:
            self.log = StepLog(self.rec, T, self.w if log_model is None else log_model,
                               progress, stop)
        self.idle = [0]  # clients thinking (busy fraction (n - idle) / n)

    # -- per-client streams -------------------------------------------------------------
    @property
    def compute_draws(self) -> int:
        """Compute delays drawn per round: the rule's Q with ``compute_per = "step"``, else 1."""
        return self.rule.Q if self.scenario.delays.compute_per == "step" else 1

    def make_samplers(self, *, lean: bool = False) -> list[DelaySampler]:
        """One :class:`DelaySampler` per client on its ``delays`` stream (``lean``: shared
        specs and bare bit generators, :func:`~fedsim.rng.seeding.lean_bitgen`)."""
        sc, steps = self.scenario, self.compute_draws
        if lean:
            return DelaySampler.for_clients(
                sc.delays, [lean_bitgen(self.streams, i, "delays") for i in range(self.n)],
                steps)
        return [DelaySampler(sc.delays.for_client(i), self.streams.client(i, "delays"), steps)
                for i in range(self.n)]

    def make_noise(self, *, lean: bool = False) -> list[np.random.Generator]:
        """Every client's ``noise`` stream."""
        if lean:
            return [np.random.Generator(lean_bitgen(self.streams, i, "noise"))
                    for i in range(self.n)]
        return [self.streams.client(i, "noise") for i in range(self.n)]

    # -- trigger, timer, horizon --------------------------------------------------------
    def trigger_count(self) -> int | None:
        """Uploads per aggregation of a count trigger (:func:`trigger_count`)."""
        return trigger_count(self.scenario)

    def start_timer(self, fire: Callable[[], bool]) -> None:
        """A Poisson or periodic aggregation timer (server ``timer`` stream), if the trigger
        is one: at each tick ``fire()`` runs unless the run stopped; True ends the timer."""
        tr = self.scenario.trigger
        if tr.kind not in ("poisson", "period"):
            return
        env, log, streams = self.env, self.log, self.streams
        kind = tr.kind
        param = tr.rate if kind == "poisson" else tr.period

        def timer():
            rng = streams.server("timer")
            t = env.now
            while True:
                t = t + (rng.exponential(1.0 / param) if kind == "poisson" else param)
                yield at(env, t)
                if log.stopped or fire():
                    return

        env.process(timer())

    def run_until_done(self) -> None:
        """Arm the simulated-time horizon (events at exactly ``horizon.time`` are not
        processed) and run the environment until the log stops it."""
        t_end = self.scenario.horizon.time
        if math.isfinite(t_end):
            urgent_at(self.env, t_end).callbacks.append(lambda _ev: self.log.halt())
        self.env.run(until=self.done)

    def read_and_upload(self, download: float, compute: Any, upload: float, arrival: bool,
                        model: np.ndarray, snap: np.ndarray,
                        mark: Callable[[float, float, float, float], Any] | None = None
                        ) -> Iterator[simpy.Event]:
        """Generator: one client round's timeline, from now to its upload.

        The client reads ``model`` into ``snap`` when the download is requested
        (``arrival`` false) or when it completes (``delays.read_at``), then computes and
        uploads; times add up as ``((t_read + download) + c_1 + ...) + upload``
        (``model = None``: a timeline writer, nothing is copied).  Returns
        ``(omega, t_read, t_upload)`` -- ``omega`` the server step read -- or ``None`` if the
        run stopped meanwhile.  Use as ``got = yield from setup.read_and_upload(...)``.
        ``mark``, if given, is called with the round's start, download end, compute end
        and upload as soon as they are computed, before the upload is waited for (a phase
        record, :meth:`fedsim.engine.models.phases.PhaseLog.begin`; not called for a run
        that stopped during an ``arrival`` download).
        """
        env, log = self.env, self.log
        t = t0 = env.now
        if arrival:
            t = t + download
            yield at(env, t)
            if log.stopped:
                return None
        if model is not None:
            np.copyto(snap, model)
        omega = log.t
        t_read = t
        if not arrival:
            t = t + download
        t_download = t
        for c in compute:
            t = t + c
        t_compute = t
        t = t + upload
        if mark is not None:
            mark(t0, t_download, t_compute, t)
        yield at(env, t)
        if log.stopped:
            return None
        return omega, t_read, t

    def think_pause(self, t: float, th: float) -> Iterator[simpy.Event]:
        """Generator: a client thinks from ``t`` to ``t + th`` and is not busy meanwhile;
        the busy fraction ``(n - idle)/n`` is recorded at both ends.  Use as
        ``yield from setup.think_pause(t, th)`` inside a client process."""
        idle, n, rec, log = self.idle, self.n, self.rec, self.log
        idle[0] += 1
        gate = log.t
        if self.writes_table:
            log.busy(t, 1, gate)
        else:
            rec.busy(t, (n - idle[0]) / n)
        yield at(self.env, t + th)
        idle[0] -= 1
        if self.writes_table:
            log.busy(t + th, -1, gate)
        else:
            rec.busy(t + th, (n - idle[0]) / n)
