"""FedAsync in the bounded-window model of THEORY_SPEC 10.2(a) ([P] Assumption 1 exactly).

At server step t (0-based): the uploader ``i_t ~ Uniform{0..n-1}`` and the delay ``s_t ~ pi``
on ``{0..tau}`` are drawn i.i.d. (independent of each other, of the past and of the noise)
from the server's ``events`` stream, ``Omega(t) = max(t - s_t, 0)``, client ``i_t`` runs its
Q local steps from ``w^{Omega(t)}`` (its own ``noise`` stream) and
``w^{t+1} = w^t - beta Delta``.  The last ``tau + 1`` server models are kept in a ring
buffer.  There are no physical delays: the ``time`` column is the step index and the
concurrency curve is empty (NaN mean).  ``staleness_bound = max{s : pi_s > 0}``.
This is the paper's abstraction, not a physical one-job-per-client system.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fedsim.config import Scenario
from fedsim.engine.delay_blocks import BLOCK
from fedsim.engine.event_columns import EventColumns
from fedsim.engine.replay.driver import replay_table
from fedsim.engine.replay.table import EventTable
from fedsim.engine.setup import RunSetup, inner_counters
from fedsim.local import make_client_rule
from fedsim.rng import Streams
from fedsim.servers.base import Upload
from fedsim.trace import KINDS, Trace

__all__ = ["run_window", "window_table"]

K_UPLOAD = KINDS.index("upload")


def run_window(scenario: Scenario, problem, streams: Streams, progress: bool,
               spec: Any = None) -> Trace:
    """The window model (module docstring): its event table (:func:`window_table`)
    replayed (:func:`fedsim.engine.replay.driver.replay_table`) with the algorithm's client
    rule and FedAsync's server rule, in their replay forms.  A client rule with no replay
    form yet (``replay_form``) is still simulated and computed here step by step
    (:func:`_run_window_computing`)."""
    if spec is None:
        from fedsim.algorithms import get_algorithm
        spec = get_algorithm(scenario.algorithm.name)
    rule = make_client_rule(scenario.algorithm, problem)
    if not hasattr(rule, "replay_form"):
        return _run_window_computing(scenario, problem, streams, progress, spec)
    table = window_table(scenario, problem, streams, progress)
    server = spec.server(scenario.algorithm, problem)
    tr = replay_table(scenario, [table], rule.replay_form(), server.replay_form(),
                      replicates=[streams.replicate], problem=problem)[0]
    tr.info.update(table.info)
    return tr


def _run_window_computing(scenario: Scenario, problem, streams: Streams, progress: bool,
                          spec: Any) -> Trace:
    """The window model simulated and computed step by step with the rule objects (the
    path of client rules without a replay form)."""
    a = scenario.algorithm
    n = problem.n
    tau = int(a.tau)
    pmf = np.asarray(a.get("delay_pmf"), dtype=np.float64)
    pmf = pmf / pmf.sum()
    T = scenario.horizon.steps
    if math.isfinite(scenario.horizon.time):  # time is the step index; events at the horizon
        T = min(T, max(0, math.ceil(scenario.horizon.time) - 1))  # time are not processed
    run = RunSetup(scenario, problem, streams, progress, steps=T, simulate=False)
    rule, rec, log = run.rule, run.rec, run.log
    server = spec.server(a, problem)
    w = server.init(run.w)
    ring = np.tile(w, (tau + 1, 1))
    ev = streams.server("events")
    noise = run.make_noise()
    out = np.empty(problem.dim)
    updates = rec.client_updates
    j = 0
    who: list[int] = []
    lag: list[int] = []
    for t in range(T):
        if j == len(who):
            who = ev.integers(0, n, size=BLOCK * 8).tolist()
            lag = ev.choice(tau + 1, size=BLOCK * 8, p=pmf).tolist()
            j = 0
        i, s = who[j], lag[j]
        j += 1
        omega = t - s if s <= t else 0
        w_read = ring[omega % (tau + 1)]
        rule.round(i, w_read, out, noise[i])
        updates[i] += 1
        w, _ = server.apply(w, (Upload(i, w_read, out, t - omega),))
        ring[(t + 1) % (tau + 1)] = w
        if log.log(float(t + 1), K_UPLOAD, i, t - omega, float(t - omega), 1, w):
            break
    bound = float(np.max(np.nonzero(pmf > 0)[0])) if tau >= 0 else 0.0
    rec.info.update(inner_counters(rule))
    rec.info["time_is_step_index"] = True
    return log.finish(w, float(log.t), bound if math.isfinite(bound) else math.inf)


def _horizon(scenario: Scenario) -> int:
    """Steps of the window model: ``horizon.steps``, cut by a time horizon (time is the
    step index; events at the horizon time are not processed)."""
    T = scenario.horizon.steps
    if math.isfinite(scenario.horizon.time):
        T = min(T, max(0, math.ceil(scenario.horizon.time) - 1))
    return T


def _bound(pmf: np.ndarray) -> float:
    """``max{s : pi_s > 0}``."""
    return float(np.max(np.nonzero(pmf > 0)[0]))


def window_table(scenario: Scenario, problem, streams: Streams,
                 progress: bool = False) -> EventTable:
    """The window model's event table (REPLAY_SPEC 1; module docstring), no algebra: step
    t (1-based) is an ``"upload"`` of client ``i_t`` whose round reads ``w^{t-1-s_t}``
    (``c_read = max(t - 1 - s_t, 0)``, ``c_stale = t - 1 - c_read``), ``i_t`` and ``s_t``
    drawn from the server's ``events`` stream in blocks, as :func:`run_window` draws them.
    The replay applies the algorithm's client rule and FedAsync's server rule along it."""
    a = scenario.algorithm
    n = problem.n
    tau = int(a.tau)
    pmf = np.asarray(a.get("delay_pmf"), dtype=np.float64)
    pmf = pmf / pmf.sum()
    T = _horizon(scenario)
    Q = int(a.get("Q") or 1)
    log = EventColumns(n=n, steps=T, every=scenario.record.every, busy=False,
                       progress=progress)
    ev = streams.server("events")
    for t in range(T):
        if t % (BLOCK * 8) == 0:
            who = ev.integers(0, n, size=BLOCK * 8).tolist()
            lag = ev.choice(tau + 1, size=BLOCK * 8, p=pmf).tolist()
        i, s = who[t % (BLOCK * 8)], lag[t % (BLOCK * 8)]
        omega = t - s if s <= t else 0
        log.contribution(i, omega, Q, t - omega)
        log.completed(i)
        log.step(float(t + 1), K_UPLOAD, i, t - omega, float(t - omega), 1)
    return EventTable(**log.finish(sim_time=float(log.t), staleness_bound=_bound(pmf),
                                   info={"time_is_step_index": True}))
