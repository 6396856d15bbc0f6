"""``run_batch(scenario, replicates)``: the one door for many replicates of one scenario.

The front door for Monte Carlo and search.  Every execution model writes event tables
(its home's writer, :mod:`fedsim.engine.models`), which the one replay
(:func:`fedsim.engine.replay.driver.replay_records`) replays -- compiled when the rules
have compiled forms and the problem a compiled view, else the same functions interpreted,
many replicates per compiled call.  A caller asks for one of two outputs:

* ``output="traces"`` (default): one :class:`~fedsim.trace.Trace` per replicate;
  ``diagnostics=True`` adds the model's diagnostic facts to each ``info`` (AREA's
  ``invariant_max``);
* ``output="records"``: a :class:`~fedsim.engine.records.BatchResult` -- the metrics on
  the common grid as ``(R, records)`` arrays, the final models, divergences, simulated
  times and upload counts, and each replicate's :class:`~fedsim.engine.replay.group.
  Replayed` (``runs``) -- with no Trace built; the replicates go ``group`` at a time
  (default about :data:`~fedsim.engine.replay.group.GROUP_STEPS` server steps), each
  piece's tables written, replayed and dropped before the next, so memory is bounded by
  a piece.

What a caller may rely on, whichever output and path:

* row/trace ``k`` is replicate ``replicates[k]`` of ``scenario``, with the streams of
  ``fedsim.rng.Streams(scenario.seed, replicates[k])`` only; it does not depend on the other
  replicates of the call, their number, ``group`` or the workers running the call;
* a trace equals ``run(scenario, replicates[k])`` bit for bit (``Trace.equals``), and a
  record holds the trace's numbers;
* ``staleness_bound`` is the engine's provable bound
  (:func:`fedsim.engine.staleness.physical_staleness_bound`, [P] Assumption 3's ``tau``).

``replay=False`` loops :func:`fedsim.engine.run` (a reference for tests and benchmarks).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from fedsim.config import Scenario
from fedsim.engine.dispatch import (
    check_memory,
    check_replay,
    replay_tables,
    run,
    write_tables,
)
from fedsim.engine.models import model_of
from fedsim.engine.records import BatchResult, batch_result
from fedsim.engine.replay import group as grouping
from fedsim.engine.replay.driver import replay_records
from fedsim.engine.setup import check_problem, problem_for
from fedsim.errors import ConfigError, check_integer, require
from fedsim.trace import Trace

__all__ = ["run_batch", "supports", "diagnose", "OUTPUTS"]

#: what :func:`run_batch` returns, by ``output``
OUTPUTS = ("traces", "records")


def supports(scenario: Scenario) -> bool:
    """Whether :func:`run_batch` replays ``scenario`` table by table: its execution model is
    registered (:func:`fedsim.engine.models.model_of`).  Read from the registries, never a
    name."""
    require(isinstance(scenario, Scenario), "scenario", type(scenario).__name__,
            "must be a fedsim.config.Scenario")
    try:
        model_of(scenario)
    except ConfigError:
        return False
    return True


def run_batch(scenario: Scenario, replicates: Sequence[int], *, output: str = "traces",
              diagnostics: bool = False, group: int | None = None,
              replay: bool = True) -> list[Trace] | BatchResult:
    """The replicates of ``scenario`` as ``output`` (module docstring)."""
    require(output in OUTPUTS, "output", output, f"must be one of {list(OUTPUTS)}")
    if group is not None:
        check_integer("group", group, low=1)
    reps = [check_integer("replicates", r, low=0) for r in replicates]
    if output == "traces" and not reps:
        return []
    require(output == "traces" or reps, "replicates", reps,
            "must hold at least one replicate for records")
    if output == "traces" and not (replay and supports(scenario)):
        return [run(scenario, r) for r in reps]
    check_memory(scenario)
    problem = problem_for(scenario)
    check_problem(scenario, problem)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        if output == "records":
            return _records(scenario, problem, reps, group)
        if group is None:
            out = replay_tables(scenario, problem, reps)
        else:
            out = [t for g in range(0, len(reps), group)
                   for t in replay_tables(scenario, problem, reps[g:g + group])]
        if diagnostics:
            diagnose(scenario, problem, reps, out)
        return out


def diagnose(scenario: Scenario, problem: Any, reps: Sequence[int], traces: list[Trace]
             ) -> None:
    """Add the model's diagnostics (``ExecutionModel.diagnostics``; none: nothing) to the
    ``info`` of ``traces[k]``, replicate ``reps[k]`` of ``scenario`` on ``problem``."""
    diag = model_of(scenario).diagnostics
    if diag is None:
        return
    written = write_tables(scenario, problem, reps)
    for k, tr in enumerate(traces):
        tr.info.update(diag(scenario, problem, written.tables[k], reps[k], tr.steps_done))


def _records(scenario: Scenario, problem: Any, reps: list[int], group: int | None
             ) -> BatchResult:
    """``output="records"`` (module docstring): piece by piece, write, replay, drop."""
    check_replay(scenario, problem)
    T = scenario.horizon.steps
    size = group if group is not None else (
        max(1, grouping.GROUP_STEPS // (int(T) + 1)) if T is not None else 256)
    runs, sims, counts = [], [], []
    for g in range(0, len(reps), size):
        sub = reps[g:g + size]
        w = write_tables(scenario, problem, sub)
        got = replay_records(scenario, w.tables, w.client_rule, w.server_rule,
                             replicates=sub, problem=problem, groups=w.groups,
                             keep_personal=w.keep_personal,
                             keep_state=w.extra_info is not None)
        end = getattr(w.tables, "end", None)
        for k, rp in enumerate(got):
            if w.extra_info is not None:
                rp.info.update(w.extra_info(k, rp))
            if rp.diverged_step is not None:
                s_t, c_u = w.tables[k].truncated(rp.diverged_step)[:2]
            elif end is not None:
                s_t, c_u = end(k)
            else:
                s_t, c_u = w.tables[k].sim_time, w.tables[k].client_updates
            runs.append(rp)
            sims.append(s_t)
            counts.append(c_u)
    return batch_result(reps, list(scenario.record.metrics), int(scenario.record.every), runs,
                        sims, counts, {"group": size})
