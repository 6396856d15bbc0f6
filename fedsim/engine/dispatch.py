"""``run(scenario, replicate=0, progress=False) -> Trace``: the model's table, then the replay.

Every execution model is a table then a replay: the scenario's model
(:func:`fedsim.engine.models.model_of`: the algorithm's ``runners`` entry, then the model
registry) writes the replicate's :class:`~fedsim.engine.replay.table.EventTable` with the
writer its own rule chooses, and :func:`fedsim.engine.replay.driver.replay_table` applies
the client and server rules along it -- exactly what :func:`fedsim.engine.run_batch` does
for many replicates, so a trace is the same whichever door computes it.  The engine never
looks at an algorithm's or a model's name.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import Any

import numpy as np

from fedsim.config import Scenario
from fedsim.config.budget import check_budget
from fedsim.engine.models import model_of
from fedsim.engine.replay.driver import (
    Replayed,
    TableSet,
    check_personal,
    client_form,
    metric_plan,
    progress_bar,
    replay_table,
)
from fedsim.engine.setup import check_problem, problem_for
from fedsim.errors import require
from fedsim.local import make_client_rule
from fedsim.trace import Trace

__all__ = ["run", "write_tables", "replay_tables", "check_replay", "check_memory",
           "TIMELINE_PIECES"]

#: with a progress bar, the tables are written in about this many pieces of replicates
TIMELINE_PIECES = 20


def _as_set(written: Any) -> TableSet:
    return written if isinstance(written, TableSet) else TableSet(tables=list(written))


def _steps(w: TableSet) -> int:
    """The server steps of ``w``'s tables (a table its ``groups`` cover is not read)."""
    groups = w.groups or []
    covered = {int(k) for _, idx in groups for k in idx}
    return (sum(g.steps for g, _ in groups)
            + sum(w.tables[k].steps_done for k in range(len(w.tables)) if k not in covered))


def _shift(groups: Any, k: int) -> list | None:
    return None if groups is None else [(g, [int(j) + k for j in idx]) for g, idx in groups]


class _Joined(Sequence):
    """The tables of consecutive pieces, each piece's table built when asked for."""

    def __init__(self, pieces: list[tuple[int, TableSet]]) -> None:
        self.starts = [k for k, _ in pieces]
        self.sets = [w for _, w in pieces]
        self.size = pieces[-1][0] + len(pieces[-1][1].tables)

    def __len__(self) -> int:
        return self.size

    def _where(self, j: int) -> tuple[TableSet, int]:
        p = bisect.bisect_right(self.starts, j) - 1
        return self.sets[p], j - self.starts[p]

    def __getitem__(self, j):  # type: ignore[override]
        if isinstance(j, slice):
            return [self[i] for i in range(*j.indices(len(self)))]
        w, i = self._where(int(j))
        return w.tables[i]

    def end(self, j: int) -> tuple[float, np.ndarray]:
        w, i = self._where(int(j))
        end = getattr(w.tables, "end", None)
        if end is not None:
            return end(i)
        t = w.tables[i]
        return t.sim_time, t.client_updates


def write_tables(scenario: Scenario, problem: Any, replicates: Sequence[int], *,
                 progress: bool = False) -> TableSet:
    """The scenario's tables of ``replicates`` (its model's writer) as a
    :class:`~fedsim.engine.replay.driver.TableSet`.  ``progress``: a bar on stderr
    (``timeline``, unit ``step``) over the steps written, the replicates written in about
    :data:`TIMELINE_PIECES` pieces (each replicate's table is its own, so the pieces do
    not change one); a piece's ``extra_info`` keeps its own table indices."""
    write = model_of(scenario).write
    reps = list(replicates)
    if not progress:
        return _as_set(write(scenario, problem, reps))
    steps = scenario.horizon.steps
    bar = progress_bar(int(steps) * len(reps) if steps is not None else None, "timeline")
    size = max(1, -(-len(reps) // TIMELINE_PIECES))
    pieces = []
    for k in range(0, len(reps), size):
        w = _as_set(write(scenario, problem, reps[k:k + size]))
        pieces.append((k, w))
        bar.update(_steps(w))
    bar.close()
    first = pieces[0][1]
    if len(pieces) == 1:
        return first
    joined = _Joined(pieces)

    def extra(j: int, res: Replayed) -> dict[str, Any]:
        w, i = joined._where(j)
        return w.extra_info(i, res)

    groups = [g for k, w in pieces for g in (_shift(w.groups, k) or [])]
    return TableSet(tables=joined, client_rule=first.client_rule,
                    server_rule=first.server_rule,
                    extra_info=extra if first.extra_info is not None else None,
                    keep_personal=first.keep_personal, groups=groups or None)


def check_memory(scenario: Scenario) -> float | None:
    """For a model that declares its own memory part (``ExecutionModel.memory``), the
    scenario's estimate with that part against the budget: a ConfigError over it
    (:func:`fedsim.config.budget.check_budget`; the rest of the estimate was checked when
    the scenario was built).  ``None``: the model declares none."""
    memory = model_of(scenario).memory
    return None if memory is None else check_budget(scenario, model_memory=memory)


def check_replay(scenario: Scenario, problem: Any) -> None:
    """A personal metric the client rule cannot feed is a ConfigError before any table is
    written (:func:`~fedsim.engine.replay.driver.check_personal`)."""
    check_personal(metric_plan(scenario, problem),
                   client_form(make_client_rule(scenario.algorithm, problem)))


def replay_tables(scenario: Scenario, problem: Any, replicates: Sequence[int], *,
                  progress: bool = False) -> list[Trace]:
    """Table then replay for ``replicates`` on ``problem`` (:func:`check_replay` first).
    ``progress``: a bar on stderr over the steps written (:func:`write_tables`), then one
    over the replay's steps."""
    check_replay(scenario, problem)
    written = write_tables(scenario, problem, replicates, progress=progress)
    return replay_table(scenario, written.tables, written.client_rule, written.server_rule,
                        replicates=replicates, problem=problem, groups=written.groups,
                        extra_info=written.extra_info, keep_personal=written.keep_personal,
                        progress=progress)


def run(scenario: Scenario, replicate: int = 0, *, progress: bool = False) -> Trace:
    """Simulate ``scenario`` once with the streams of ``(scenario.seed, replicate)``."""
    require(isinstance(scenario, Scenario), "scenario", type(scenario).__name__,
            "must be a fedsim.config.Scenario")
    check_memory(scenario)
    problem = problem_for(scenario)
    check_problem(scenario, problem)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        return replay_tables(scenario, problem, [int(replicate)], progress=progress)[0]
