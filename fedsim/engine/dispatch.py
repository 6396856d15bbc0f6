"""``run(scenario, replicate=0, progress=False) -> Trace``: dispatch from a table.

An asynchronous physical run is a table then a replay: its runner writes the replicate's
:class:`~fedsim.engine.replay.table.EventTable` (:data:`TABLE_WRITERS`) and
:func:`fedsim.engine.replay.driver.replay_table` applies the client and server rules along
it, as :func:`fedsim.engine.run_batch` does for many replicates.

The algorithm registry (:mod:`fedsim.algorithms`) says which engine runner executes each
of an algorithm's execution models (``Algorithm.runners``: execution model -> runner
key); :data:`RUNNERS` maps a runner key to the function that simulates it.  The engine
never looks at an algorithm's name.  Runner keys:

* ``"fedasync_fast"`` -- one upload = one server step: the compiled event loop (many
  replicates a call, :func:`fedsim.engine.replay.upload_group.group_tables`, with a step
  horizon) or the vectorised merge writes the table
  (:func:`fedsim.engine.replay.fedasync.fedasync_tables`);
* ``"physical"`` -- buffered asynchronous clients, SimPy writes the table
  (:class:`fedsim.engine.physical.AsyncRun`);
* ``"window"`` -- THEORY_SPEC 10.2(a) (:mod:`fedsim.engine.window`);
* ``"sync"`` -- synchronous rounds (:mod:`fedsim.engine.sync`);
* ``"area"`` -- AREA's algorithm and iterate model: ``run`` has SimPy write the table
  (:func:`fedsim.engine.area.run_area`), ``run_batch`` the table writer
  :func:`fedsim.engine.replay.area.area_table_set` (the iterate model's compiled merge);
* ``"asypfl"`` -- AsyPFL's adaptive local epochs, SimPy writes the table and the replay's
  extras (:func:`fedsim.engine.asypfl.asypfl_tables`).

Every runner has the signature ``runner(scenario, problem, streams, progress, spec)``.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fedsim.algorithms import get_algorithm
from fedsim.config import Scenario
from fedsim.engine.area import run_area
from fedsim.engine.asypfl import asypfl_tables
from fedsim.engine.physical import AsyncRun
from fedsim.engine.recorded import recorded_tables
from fedsim.engine.replay.area import area_table_set
from fedsim.engine.replay.driver import (
    Replayed,
    TableSet,
    check_personal,
    client_form,
    metric_plan,
    progress_bar,
    replay_table,
)
from fedsim.engine.replay.fedasync import fedasync_tables, upload_tables
from fedsim.engine.replay.table import EventTable
from fedsim.engine.replay.upload_group import group_tables, group_writes
from fedsim.engine.setup import check_problem, problem_for, trigger_count
from fedsim.engine.staleness import physical_staleness_bound
from fedsim.engine.sync import sync_tables
from fedsim.engine.uniform_assign import uniform_assign_tables
from fedsim.engine.window import window_tables
from fedsim.errors import require
from fedsim.local import make_client_rule
from fedsim.rng import Streams
from fedsim.trace import Trace

__all__ = ["run", "RUNNERS", "TABLE_WRITERS", "table_writer", "replay_tables", "runner_for",
           "make_async_run", "write_tables", "TIMELINE_PIECES"]


def _physical_tables(scenario: Scenario, problem, replicates: Sequence[int]) -> list[EventTable]:
    """A count trigger: the upload timeline compiled or vectorised, grouped into steps
    (no contention: the clients' cycles do not depend on the server); a timer trigger:
    SimPy (:class:`~fedsim.engine.physical.AsyncRun`)."""
    spec = get_algorithm(scenario.algorithm.name)
    K = trigger_count(scenario)
    if K is not None:
        return upload_tables(scenario, list(replicates), n=problem.n,
                             Q=int(make_client_rule(scenario.algorithm, problem).Q), K=int(K),
                             per_upload=bool(spec.step_per_upload))
    return [AsyncRun(scenario, problem, Streams(scenario.seed, r), False, spec).table()
            for r in replicates]


def _fedasync_tables(scenario: Scenario, problem, replicates: Sequence[int]
                     ) -> list[EventTable]:
    """FedAsync's tables: many replicates' in one compiled call when the group writer
    serves (:mod:`fedsim.engine.replay.upload_group`: a step horizon, Constant/Exponential
    delays; the same tables), else per replicate."""
    Q = int(scenario.algorithm.get("Q"))
    if group_writes(scenario):
        dc = scenario.delays
        bound = physical_staleness_bound(dc, problem.n, Q, dc.compute_per == "step", 1)
        return group_tables(scenario, list(replicates), n=problem.n, Q=Q,
                            staleness_bound=bound)
    return fedasync_tables(scenario, list(replicates), n=problem.n, Q=Q)


#: runner key -> ``writer(scenario, problem, replicates) -> [EventTable per replicate]``
#: (or a :class:`~fedsim.engine.replay.driver.TableSet`: the tables with the rules, the
#: ``extra_info`` and ``keep_personal`` their replay takes): the execution models whose
#: runner writes a table; ``run`` and ``run_batch`` replay it
TABLE_WRITERS: dict[str, Callable[..., list[EventTable]]] = {
    "fedasync_fast": _fedasync_tables,
    "physical": _physical_tables,
    "sync": sync_tables,
    "window": window_tables,
    "asypfl": asypfl_tables,
    "area": area_table_set,
    "recorded": recorded_tables,
    "uniform_assign": uniform_assign_tables,
}


def table_writer(scenario: Scenario) -> Callable[..., list[EventTable]] | None:
    """The table writer of ``scenario``'s execution model (registry, then
    :data:`TABLE_WRITERS`), or ``None`` when its runner computes as it simulates."""
    key = get_algorithm(scenario.algorithm.name).runners[scenario.algorithm.model]
    return TABLE_WRITERS.get(key)


#: with a progress bar, the tables are written in about this many pieces of replicates
TIMELINE_PIECES = 20


def write_tables(scenario: Scenario, problem, replicates: Sequence[int], *,
                 progress: bool = False) -> TableSet:
    """The scenario's tables of ``replicates`` (its table writer) as a
    :class:`~fedsim.engine.replay.driver.TableSet`.  ``progress``: a bar on stderr
    (``timeline``, unit ``step``) over the steps written, the replicates written in about
    :data:`TIMELINE_PIECES` pieces (each replicate's table is its own, so the pieces do
    not change one); a piece's ``extra_info`` keeps its own table indices."""
    writer = table_writer(scenario)
    reps = list(replicates)
    if not progress:
        written = writer(scenario, problem, reps)
        return written if isinstance(written, TableSet) else TableSet(tables=written)
    steps = scenario.horizon.steps
    bar = progress_bar(int(steps) * len(reps) if steps is not None else None, "timeline")
    size = max(1, -(-len(reps) // TIMELINE_PIECES))
    pieces = []
    for k in range(0, len(reps), size):
        w = writer(scenario, problem, reps[k:k + size])
        w = w if isinstance(w, TableSet) else TableSet(tables=w)
        pieces.append((k, w))
        bar.update(sum(t.steps_done for t in w.tables))
    bar.close()
    first = pieces[0][1]
    if len(pieces) == 1:
        return first
    starts = [k for k, _ in pieces]

    def extra(j: int, res: Replayed) -> dict[str, Any]:
        p = bisect.bisect_right(starts, j) - 1
        return pieces[p][1].extra_info(j - starts[p], res)

    return TableSet(tables=[t for _, w in pieces for t in w.tables],
                    client_rule=first.client_rule, server_rule=first.server_rule,
                    extra_info=extra if first.extra_info is not None else None,
                    keep_personal=first.keep_personal)


def replay_tables(scenario: Scenario, problem, replicates: Sequence[int], *,
                  progress: bool = False) -> list[Trace]:
    """Table then replay for ``replicates`` (the scenario's model must write a table); a
    personal metric the client rule cannot feed is a ConfigError before the tables are
    written (:func:`~fedsim.engine.replay.driver.check_personal`).  ``progress``: a bar
    on stderr over the steps written (:func:`write_tables`), then one over the replay's
    steps."""
    check_personal(metric_plan(scenario, problem),
                   client_form(make_client_rule(scenario.algorithm, problem)))
    written = write_tables(scenario, problem, replicates, progress=progress)
    return replay_table(scenario, written.tables, written.client_rule, written.server_rule,
                        replicates=replicates, problem=problem,
                        extra_info=written.extra_info, keep_personal=written.keep_personal,
                        progress=progress)


def _replayed(scenario, problem, streams, progress, spec) -> Trace:
    return replay_tables(scenario, problem, [streams.replicate], progress=progress)[0]


#: runner key -> ``runner(scenario, problem, streams, progress, spec) -> Trace``
#: (AREA's: SimPy writes the table, the reference the merged timeline is tested against)
RUNNERS: dict[str, Callable[..., Trace]] = {
    **{key: _replayed for key in TABLE_WRITERS},
    "area": run_area,
}


def make_async_run(scenario: Scenario, problem, streams: Streams,
                   progress: bool = False) -> AsyncRun:
    """The asynchronous physical timeline writer of ``scenario``, not yet started
    (``.run()``: table then replay): for tests and ``benchmarks/engine.py --memory``."""
    spec = get_algorithm(scenario.algorithm.name)
    return AsyncRun(scenario, problem, streams, progress, spec)


def runner_for(scenario: Scenario) -> tuple[Callable[..., Trace], Any]:
    """``(runner, algorithm spec)`` of ``scenario`` (registry, then :data:`RUNNERS`)."""
    spec = get_algorithm(scenario.algorithm.name)
    key = spec.runners[scenario.algorithm.model]
    require(key in RUNNERS, "algorithm.model", scenario.algorithm.model,
            f"needs engine runner {key!r}, which is not one of {sorted(RUNNERS)}")
    return RUNNERS[key], spec


def run(scenario: Scenario, replicate: int = 0, *, progress: bool = False) -> Trace:
    """Simulate ``scenario`` once with the streams of ``(scenario.seed, replicate)``."""
    require(isinstance(scenario, Scenario), "scenario", type(scenario).__name__,
            "must be a fedsim.config.Scenario")
    streams = Streams(scenario.seed, replicate)
    problem = problem_for(scenario)
    check_problem(scenario, problem)
    runner, spec = runner_for(scenario)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        return runner(scenario, problem, streams, progress, spec)
