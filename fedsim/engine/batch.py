"""``run_batch(scenario, replicates) -> list[Trace]``: many replicates of one scenario.

The front door for Monte Carlo.  Every execution model whose runner writes an event table
(:data:`fedsim.engine.dispatch.TABLE_WRITERS`: the asynchronous physical model of
FedAsync, FedBuff and AS-FedAvg, ``expcycle`` included) is written table by table and
replayed by :func:`fedsim.engine.replay.driver.replay_table` -- compiled when the rules
have compiled forms and the problem a compiled view, else the same functions interpreted,
many replicates per compiled call (:mod:`fedsim.engine.replay.group`); AREA's tables come
from :func:`fedsim.engine.replay.area.area_table_set`; any other model loops
:func:`fedsim.engine.run`.  ``run(scenario, r)`` takes the same table -> replay path, so a
trace is the same whichever entry computes it.

What a caller may rely on, whichever path runs:

* trace ``k`` is replicate ``replicates[k]`` of ``scenario``, with the streams of
  ``fedsim.rng.Streams(scenario.seed, replicates[k])`` only; it does not depend on the other
  replicates of the call nor on their number;
* it equals ``run(scenario, replicates[k])`` bit for bit (``Trace.equals``);
* ``staleness_bound`` is the engine's provable bound
  (:func:`fedsim.engine.staleness.physical_staleness_bound`, [P] Assumption 3's ``tau``).

``replay=False`` forces the per-replicate loop (a reference for tests and benchmarks).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from fedsim.config import Scenario
from fedsim.engine.dispatch import replay_tables, run, table_writer
from fedsim.engine.setup import check_problem, problem_for
from fedsim.errors import check_integer, require
from fedsim.trace import Trace

__all__ = ["run_batch", "supports"]


def supports(scenario: Scenario) -> bool:
    """Whether :func:`run_batch` replays ``scenario`` table by table (its execution model
    has a table writer, :data:`fedsim.engine.dispatch.TABLE_WRITERS`), else it loops
    ``run``.  Read from the registries, never a name."""
    require(isinstance(scenario, Scenario), "scenario", type(scenario).__name__,
            "must be a fedsim.config.Scenario")
    return table_writer(scenario) is not None


def run_batch(scenario: Scenario, replicates: Sequence[int], *,
              replay: bool = True) -> list[Trace]:
    """One :class:`~fedsim.trace.Trace` per replicate of ``scenario`` (module docstring)."""
    reps = [check_integer("replicates", r, low=0) for r in replicates]
    if not reps:
        return []
    if not (replay and supports(scenario)):
        return [run(scenario, r) for r in reps]
    problem = problem_for(scenario)
    check_problem(scenario, problem)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        return replay_tables(scenario, problem, reps)
