"""``run(scenario, replicate=0, progress=False) -> Trace``: dispatch from a table.

An asynchronous physical run is a table then a replay: its runner writes the replicate's
:class:`~fedsim.engine.replay.table.EventTable` (:data:`TABLE_WRITERS`) and
:func:`fedsim.engine.replay.driver.replay_table` applies the client and server rules along
it, as :func:`fedsim.engine.run_batch` does for many replicates.

The algorithm registry (:mod:`fedsim.algorithms`) says which engine runner executes each
of an algorithm's execution models (``Algorithm.runners``: execution model -> runner
key); :data:`RUNNERS` maps a runner key to the function that simulates it.  The engine
never looks at an algorithm's name.  Runner keys:

* ``"fedasync_fast"`` -- one upload = one server step: the compiled event loop or the
  vectorised merge writes the table (:func:`fedsim.engine.replay.fedasync.fedasync_tables`);
* ``"physical"`` -- buffered asynchronous clients, SimPy writes the table
  (:class:`fedsim.engine.physical.AsyncRun`);
* ``"window"`` -- THEORY_SPEC 10.2(a) (:mod:`fedsim.engine.window`);
* ``"sync"`` -- synchronous rounds (:mod:`fedsim.engine.sync`);
* ``"area"`` -- AREA's algorithm and iterate model (:mod:`fedsim.engine.area`);
* ``"asypfl"`` -- AsyPFL's adaptive local epochs (:mod:`fedsim.engine.asypfl`).

Every runner has the signature ``runner(scenario, problem, streams, progress, spec)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from fedsim.algorithms import get_algorithm
from fedsim.config import Scenario
from fedsim.engine.area import run_area
from fedsim.engine.asypfl import run_asypfl
from fedsim.engine.physical import AsyncRun
from fedsim.engine.replay.driver import replay_table
from fedsim.engine.replay.fedasync import fedasync_tables
from fedsim.engine.replay.table import EventTable
from fedsim.engine.setup import check_problem, problem_for
from fedsim.engine.sync import run_sync
from fedsim.engine.window import run_window
from fedsim.errors import require
from fedsim.rng import Streams
from fedsim.trace import Trace

__all__ = ["run", "RUNNERS", "TABLE_WRITERS", "runner_for", "make_async_run"]


def _physical_table(scenario, problem, streams, progress, spec) -> EventTable:
    return AsyncRun(scenario, problem, streams, progress, spec).table()



def _fedasync_table(scenario, problem, streams, progress, spec) -> EventTable:
    Q = int(scenario.algorithm.get("Q"))
    return fedasync_tables(scenario, [streams.replicate], n=problem.n, Q=Q)[0]


#: runner key -> ``writer(scenario, problem, streams, progress, spec) -> EventTable``
TABLE_WRITERS: dict[str, Callable[..., EventTable]] = {
    "fedasync_fast": _fedasync_table,
    "physical": _physical_table,
}


def _replayed(writer: Callable[..., EventTable]) -> Callable[..., Trace]:
    def runner(scenario, problem, streams, progress, spec) -> Trace:
        table = writer(scenario, problem, streams, progress, spec)
        return replay_table(scenario, [table], replicates=[streams.replicate],
                            problem=problem)[0]
    return runner


#: runner key -> ``runner(scenario, problem, streams, progress, spec) -> Trace``
RUNNERS: dict[str, Callable[..., Trace]] = {
    **{key: _replayed(w) for key, w in TABLE_WRITERS.items()},
    "window": run_window,
    "sync": run_sync,
    "area": run_area,
    "asypfl": run_asypfl,
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
