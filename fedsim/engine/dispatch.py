"""``run(scenario, replicate=0, progress=False) -> Trace``: dispatch from a table.

The algorithm registry (:mod:`fedsim.algorithms`) says which engine runner executes each
of an algorithm's execution models (``Algorithm.runners``: execution model -> runner
key); :data:`RUNNERS` maps a runner key to the function that simulates it.  The engine
never looks at an algorithm's name.  Runner keys:

* ``"fedasync_fast"`` -- one upload = one server step, callback clients
  (:mod:`fedsim.engine.fedasync_fast`);
* ``"physical"`` -- buffered asynchronous clients (:mod:`fedsim.engine.physical`);
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
from fedsim.engine.fedasync_fast import FastAsyncRun
from fedsim.engine.physical import AsyncRun
from fedsim.engine.setup import check_problem, problem_for
from fedsim.engine.sync import run_sync
from fedsim.engine.window import run_window
from fedsim.errors import require
from fedsim.rng import Streams
from fedsim.trace import Trace

__all__ = ["run", "RUNNERS", "runner_for", "make_async_run"]


def _physical(scenario, problem, streams, progress, spec) -> Trace:
    return AsyncRun(scenario, problem, streams, progress, spec).run()


def _fedasync_fast(scenario, problem, streams, progress, spec) -> Trace:
    return FastAsyncRun(scenario, problem, streams, progress, spec).run()


#: runner key -> ``runner(scenario, problem, streams, progress, spec) -> Trace``
RUNNERS: dict[str, Callable[..., Trace]] = {
    "fedasync_fast": _fedasync_fast,
    "physical": _physical,
    "window": run_window,
    "sync": run_sync,
    "area": run_area,
    "asypfl": run_asypfl,
}


def make_async_run(scenario: Scenario, problem, streams: Streams,
                   progress: bool = False) -> AsyncRun:
    """The asynchronous physical run object of ``scenario`` (the fast FedAsync one when the
    registry says so), not yet started: for tests and ``benchmarks/engine.py --memory``."""
    spec = get_algorithm(scenario.algorithm.name)
    fast = spec.runners[scenario.algorithm.model] == "fedasync_fast"
    return (FastAsyncRun if fast else AsyncRun)(scenario, problem, streams, progress, spec)


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
