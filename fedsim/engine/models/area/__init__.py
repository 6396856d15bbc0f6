"""AREA ([A] Algorithms 1-2) and its Appendix A iterate model (THEORY_SPEC 2.2).

Every event is one global iteration k (a client arrival, ``kind = "client"``, or an
aggregation, ``kind = "server"``); ``horizon.steps`` is K.  The model semantics are
:mod:`~fedsim.engine.models.area.simpy_writer`'s docstring.  The replay applies AREA's
rules -- the client rule :func:`fedsim.local.area.area_client_for` (``m_i = x_i - y_i``,
``y_i <- x_i``, ``x_i <- G^M_{i,alpha_k}[x_s]``, the step schedule
:func:`~fedsim.engine.models.area.schedule.step_schedule`) and the server rule
:func:`fedsim.servers.area.area_server` (``u_s += m_i / n``; ``x_s <- x_s + u_s``).

The writers, both free of model values:

* :func:`~fedsim.engine.models.area.simpy_writer.area_table` -- SimPy, either model (the
  reference; it records the per-client phases when asked,
  :func:`~fedsim.engine.models.area.simpy_writer.area_phases`, ``MODEL.phases``);
* :func:`~fedsim.engine.models.area.merge.area_tables` -- the iterate model's events as a
  compiled merge of independent renewal streams, many replicates at once, bitwise SimPy's.

The rule (:func:`merged_timeline`, the same for ``run`` and ``run_batch``): the merge for
the iterate model with a step horizon, no time horizon, a Poisson timer and ``read_at =
"request"``, its rows handed to the replay as the groups it laid out
(:func:`~fedsim.engine.models.area.merge.merged_group`); a replicate whose first K+1 times
hold a tie (probability 0 under the exponential clocks) and every other AREA run take
SimPy's table.  A Trace's ``info["k"]`` is its global iterations done; the diagnostic
``info["invariant_max"]`` (``run_batch(..., diagnostics=True)``) is
:func:`~fedsim.engine.models.area.schedule.area_invariant`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from fedsim.algorithms import get_algorithm
from fedsim.config import Scenario
from fedsim.engine.models.area.merge import area_tables, event_tables, merged_group
from fedsim.engine.models.area.schedule import area_client_rule, area_invariant
from fedsim.engine.models.area.simpy_writer import area_phases, area_table
from fedsim.engine.models.base import ExecutionModel
from fedsim.engine.replay import group as grouping
from fedsim.engine.replay.driver import Replayed, TableSet
from fedsim.engine.replay.table import EventTable
from fedsim.rng import Streams

__all__ = ["MODEL", "merged_timeline", "area_table_set"]


def merged_timeline(scenario: Scenario) -> bool:
    """Whether ``scenario``'s AREA tables come from the compiled merge (module docstring)."""
    h = scenario.horizon
    return (scenario.algorithm.model == "iterate_model" and h.steps is not None
            and not math.isfinite(h.time) and scenario.trigger.kind == "poisson"
            and scenario.delays.read_at == "request")


def _iterations(k: int, res: Replayed) -> dict[str, int]:
    return {"k": res.steps_done}


def area_table_set(scenario: Scenario, problem: Any, replicates: Sequence[int]) -> TableSet:
    """AREA's tables of ``replicates`` and its rules (module docstring)."""
    reps = [int(r) for r in replicates]
    a = scenario.algorithm
    cf = area_client_rule(scenario, problem).replay_form()
    sf = get_algorithm(a.name).server(a, problem).replay_form()
    groups = None
    if merged_timeline(scenario) and reps:
        tabs = area_tables(scenario, reps)
        M, every = int(a.get("M")), int(scenario.record.every)
        merged = event_tables(tabs, M, every)
        tables: list[EventTable] = [
            area_table(scenario, problem, Streams(scenario.seed, r)) if tabs.tie[k]
            else merged[k] for k, r in enumerate(reps)]
        ok = np.flatnonzero(~tabs.tie)
        per = max(1, grouping.GROUP_STEPS // (int(scenario.horizon.steps) + 1))
        groups = [(merged_group(tabs, ok[g:g + per], M, every), ok[g:g + per].tolist())
                  for g in range(0, ok.size, per)]
    else:
        tables = [area_table(scenario, problem, Streams(scenario.seed, r)) for r in reps]
    return TableSet(tables=tables, client_rule=cf, server_rule=sf, extra_info=_iterations,
                    groups=groups)


def diagnostics(scenario: Scenario, problem: Any, table: EventTable, replicate: int,
                steps: int) -> dict[str, float]:
    """``invariant_max``: :func:`~fedsim.engine.models.area.schedule.area_invariant` over
    the replicate's steps."""
    return {"invariant_max": area_invariant(scenario, problem, table, replicate, steps)}


MODEL = ExecutionModel(key="area", write=area_table_set, diagnostics=diagnostics,
                       rounds="async", phases=area_phases, doc=__doc__)
