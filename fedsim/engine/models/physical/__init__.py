"""The asynchronous physical model: FedAsync, FedBuff, AS-FedAvg (``physical`` and ``expcycle``).

Every client loops *read -> download -> compute -> upload -> think* on its own delays; the
server steps when its trigger fires (every upload, every ``count`` uploads, a Poisson or
periodic timer).  The writers, all bitwise the SimPy reference's table:

* :class:`~fedsim.engine.models.physical.simpy_writer.AsyncRun` -- SimPy (the reference;
  the writer of a timer trigger, whose steps depend on the server's clock);
* :func:`~fedsim.engine.models.physical.upload_tables.upload_tables` -- a count trigger:
  the uploads of the compiled event loop (:mod:`~fedsim.engine.models.physical.event_loop`,
  Constant/Exponential delays) or of the vectorised merge
  (:mod:`~fedsim.engine.models.physical.merge`, any delay model), grouped into steps;
* :func:`~fedsim.engine.models.physical.group_writer.group_table_set` -- one server step
  per upload with a step horizon and Constant/Exponential delays: many replicates'
  columns in one compiled call, handed to the replay as the groups it laid out.

``AsyncRun`` also records a replicate's per-client phases when asked
(:func:`~fedsim.engine.models.physical.simpy_writer.async_phases`, ``MODEL.phases``).
:func:`write` is the rule choosing between them (the same for ``run`` and ``run_batch``);
:mod:`~fedsim.engine.models.physical.reference` is the per-step oracle that computes as it
simulates (tests only).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from fedsim.algorithms import get_algorithm
from fedsim.config import Scenario
from fedsim.engine.models.base import ExecutionModel, Staleness
from fedsim.engine.models.physical.group_writer import group_table_set, group_writes
from fedsim.engine.models.physical.simpy_writer import AsyncRun, async_phases
from fedsim.engine.models.physical.upload_tables import upload_tables
from fedsim.engine.replay.driver import TableSet
from fedsim.engine.replay.table import EventTable
from fedsim.engine.setup import trigger_count
from fedsim.engine.staleness import physical_staleness_bound
from fedsim.local import make_client_rule
from fedsim.rng import Streams
from fedsim.rng.delays import DelayPlan

__all__ = ["MODEL", "write"]


def write(scenario: Scenario, problem: Any, replicates: Sequence[int]
          ) -> list[EventTable] | TableSet:
    """The tables of ``replicates`` (module docstring): a timer trigger, SimPy; a count
    trigger of one upload whose upload is the step (``step_per_upload``) with a step
    horizon and Constant/Exponential delays, the group writer; any other count trigger, the
    per-replicate upload tables.  The :class:`DelayPlan` is built once."""
    spec = get_algorithm(scenario.algorithm.name)
    K = trigger_count(scenario)
    reps = [int(r) for r in replicates]
    if K is None:
        return [AsyncRun(scenario, problem, Streams(scenario.seed, r), False, spec).table()
                for r in reps]
    Q = int(make_client_rule(scenario.algorithm, problem).Q)
    per_upload = bool(spec.step_per_upload)
    plan = DelayPlan(scenario)
    if K == 1 and per_upload and group_writes(scenario, plan):
        dc = scenario.delays
        bound = physical_staleness_bound(dc, problem.n, Q, dc.compute_per == "step", 1)
        return group_table_set(scenario, reps, n=problem.n, Q=Q, staleness_bound=bound,
                               plan=plan)
    return upload_tables(scenario, reps, n=problem.n, Q=Q, K=int(K), per_upload=per_upload,
                         plan=plan)


def staleness(scenario: Scenario) -> Staleness:
    """The provable staleness of the scenario's physical timelines, from the delay
    supports (:func:`fedsim.engine.staleness.physical_staleness_bound`)."""
    d = scenario.delays
    bound = physical_staleness_bound(d, scenario.problem.n, int(scenario.algorithm.get("Q") or 1),
                                     d.compute_per == "step", trigger_count(scenario))
    if math.isfinite(bound):
        return Staleness(float(int(bound)), "provable staleness of the physical model from the "
                                            "delay supports (fedsim.engine.staleness)")
    return Staleness(math.inf, "the physical model's staleness is not bounded: a delay with "
                               "unbounded support (e.g. exponential) or a timer trigger gives "
                               "no provable tau")


MODEL = ExecutionModel(key="physical", write=write, staleness=staleness, rounds="async",
                       phases=async_phases,
                       doc=__doc__)
