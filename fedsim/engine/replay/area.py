"""AREA's event tables for many replicates: the table writer ``run_batch`` replays.

[A] Algorithms 1-2 and the Appendix A iterate model (:mod:`fedsim.engine.area`, THEORY_SPEC
2.2) as :class:`~fedsim.engine.replay.driver.TableSet` s: one
:class:`~fedsim.engine.replay.table.EventTable` per replicate and AREA's rules in the
replay's shape -- the client rule :func:`fedsim.local.area.area_client_for` (``m_i = x_i -
y_i``, ``y_i <- x_i``, ``x_i <- G^M_{i,alpha_k}[x_s]``) and the server rule
:func:`fedsim.servers.area.area_server` (the arrival ``u_s += m_i / n``, the aggregation
``x_s <- x_s + u_s``), replayed by the one loop (:mod:`fedsim.engine.replay.kernel`, many
replicates per compiled call: :mod:`fedsim.engine.replay.group_kernel`).  Nothing here
computes a model value.

The tables: the iterate model with a step horizon, a Poisson timer and ``read_at =
"request"`` (its events a merge of independent renewal streams) from the compiled merge
:func:`fedsim.engine.replay.area_timeline.area_tables` (bitwise the SimPy writer's; a
replicate whose first K+1 times hold a tie -- probability 0 under the exponential clocks --
takes SimPy's table, whose order of tied events is the engine's); any other AREA run from
the SimPy writer :func:`fedsim.engine.area.area_table`, replicate by replicate.  A Trace's
``info["k"]`` is its global iterations done (:func:`fedsim.engine.area.run_area`'s).

:func:`area_records` replays the same tables with the same rules but stops at the
replay's records (:class:`~fedsim.engine.replay.group.Replayed`: the metrics at the
recorded steps, the divergence, the final model), for a Monte Carlo that reads one number
per replicate ([A] Theorem 8's ``f(xbar_{s,K}) - f*``, ``fedsim.validation.families.
norm_mc``): building R Traces costs more than replaying them on a short horizon.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from fedsim.algorithms import get_algorithm
from fedsim.config import Scenario
from fedsim.engine.area import area_client_rule, area_table
from fedsim.engine.replay.area_timeline import area_tables, event_tables, merged_group
from fedsim.engine.replay.driver import (
    Replayed,
    TableSet,
    check_personal,
    metric_plan,
    noise_streams,
)
from fedsim.engine.replay.group import GROUP_STEPS, TableGroup, group_slices, replay_group
from fedsim.engine.replay.table import EventTable
from fedsim.engine.setup import check_problem, initial_model, problem_for
from fedsim.local.forms import ClientForm, ServerForm
from fedsim.rng import Streams

__all__ = ["merged_timeline", "area_table_set", "area_records"]


def merged_timeline(scenario: Scenario) -> bool:
    """Whether ``scenario``'s AREA tables come from the compiled merge (module docstring):
    the iterate model, a step horizon and no time horizon, a Poisson timer, ``read_at =
    "request"``."""
    h = scenario.horizon
    return (scenario.algorithm.model == "iterate_model" and h.steps is not None
            and not math.isfinite(h.time) and scenario.trigger.kind == "poisson"
            and scenario.delays.read_at == "request")


def _iterations(k: int, res: Replayed) -> dict[str, int]:
    return {"k": res.steps_done}


def _forms(scenario: Scenario, problem) -> tuple[ClientForm, ServerForm]:
    """The scenario's AREA rule forms (the client rule carries the step schedule)."""
    a = scenario.algorithm
    return (area_client_rule(scenario, problem).replay_form(),
            get_algorithm(a.name).server(a, problem).replay_form())


def area_table_set(scenario: Scenario, problem, replicates: Sequence[int]) -> TableSet:
    """AREA's tables of ``replicates`` and its rules (module docstring)."""
    reps = [int(r) for r in replicates]
    if merged_timeline(scenario):
        tabs = area_tables(scenario, reps)
        merged = event_tables(tabs, int(scenario.algorithm.get("M")), int(scenario.record.every))
        tables: list[EventTable] = [
            area_table(scenario, problem, Streams(scenario.seed, r)) if tabs.tie[k]
            else merged[k] for k, r in enumerate(reps)]
    else:
        tables = [area_table(scenario, problem, Streams(scenario.seed, r)) for r in reps]
    cf, sf = _forms(scenario, problem)
    return TableSet(tables=tables, client_rule=cf, server_rule=sf, extra_info=_iterations)


def _take(streams: Any, rows: Sequence[int]) -> Any:
    """Rows ``rows`` of :func:`~fedsim.engine.replay.driver.noise_streams`' result."""
    if isinstance(streams, np.ndarray):
        return streams[np.asarray(rows, dtype=np.int64)]
    return [streams[k] for k in rows]


def area_records(scenario: Scenario, replicates: Sequence[int]) -> list[Replayed]:
    """Replicate ``replicates[k]``'s records, the :class:`~fedsim.engine.replay.group.
    Replayed` that ``fedsim.engine.run_batch`` turns into its Trace (module docstring): the
    tables of :func:`area_table_set` replayed grouped by the one kernel
    (:func:`~fedsim.engine.replay.group.replay_group`) from the scenario's initial model
    with the clients' ``noise`` streams, as ``run_batch`` replays them, so the metrics are
    the Trace's bit for bit (tested).  The merged tables go to the kernel as groups laid
    out from the merge's arrays (:func:`~fedsim.engine.replay.area_timeline.merged_group`,
    about :data:`~fedsim.engine.replay.group.GROUP_STEPS` steps each); tied replicates and
    other AREA runs as SimPy's tables."""
    problem = problem_for(scenario)
    check_problem(scenario, problem)
    reps = [int(r) for r in replicates]
    cf, sf = _forms(scenario, problem)
    plan = metric_plan(scenario, problem)
    check_personal(plan, cf)
    streams = noise_streams(scenario.seed, reps, problem.n, cf.compiled)
    w0 = initial_model(problem, scenario)
    out: list[Replayed | None] = [None] * len(reps)
    simpy = list(range(len(reps)))
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        if merged_timeline(scenario) and reps:
            tabs = area_tables(scenario, reps)
            M, every = int(scenario.algorithm.get("M")), int(scenario.record.every)
            ok = np.flatnonzero(~tabs.tie)
            per = max(1, GROUP_STEPS // (int(scenario.horizon.steps) + 1))
            for a in range(0, ok.size, per):
                rows = ok[a:a + per]
                res = replay_group(merged_group(tabs, rows, M, every), cf, sf, plan,
                                   _take(streams, rows), [w0] * rows.size)
                for k, rp in zip(rows.tolist(), res, strict=True):
                    out[k] = rp
            simpy = np.flatnonzero(tabs.tie).tolist()
        tables = [area_table(scenario, problem, Streams(scenario.seed, reps[k])) for k in simpy]
        for sl in group_slices(tables):
            idx = simpy[sl]
            res = replay_group(TableGroup(tables[sl]), cf, sf, plan, _take(streams, idx),
                               [w0] * len(idx))
            for k, rp in zip(idx, res, strict=True):
                out[k] = rp
    return out  # type: ignore[return-value]
