"""``replay_table``: the rules of a scenario applied along R event tables, one Trace each.

The one driver every execution model's replay goes through (REPLAY_SPEC section 3).  Per
replicate ``r`` (each on its own, so that nothing depends on the others, their number or
the order they come in):

1. the ``noise`` streams ``fedsim.rng.Streams(seed, r).client(i, "noise")`` -- as PCG64
   state rows (:func:`fedsim.rng.streams.client_states`, keys of
   :func:`fedsim.rng.seeding.stream_keys`) for the compiled loop, as NumPy
   ``Generator``\\ s for the interpreted one;
2. the loop of :func:`fedsim.engine.replay.kernel.table_kernel` over the whole table
   (compiled when both rule forms are; else the same source interpreted, with the
   interpreted oracles), called for a group of replicates at a time by the outer loop of
   :mod:`fedsim.engine.replay.group_kernel` (:func:`~fedsim.engine.replay.group.
   replay_group`: groups of about :data:`~fedsim.engine.replay.group.GROUP_STEPS` steps,
   :func:`~fedsim.engine.replay.group.group_slices`; a rule with no replay form of its
   own, a group of one, with a fresh rule object per replicate);
3. the metrics from the snapshots (:class:`fedsim.engine.replay.metrics.MetricPlan`) and
   the Trace (:meth:`fedsim.engine.replay.table.EventTable.trace`), truncated at a
   divergence as the engine truncates it.

:func:`replay_one` is step 2 and 3 for one table, returning :class:`Replayed`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fedsim.algorithms import get_algorithm
from fedsim.config import Scenario
from fedsim.engine.replay.group import Replayed, TableGroup, group_slices, replay_group
from fedsim.engine.replay.metrics import MetricPlan
from fedsim.engine.replay.table import EventTable
from fedsim.engine.setup import initial_model, inner_counters, metric_params, problem_for
from fedsim.errors import require
from fedsim.local import make_client_rule
from fedsim.local.forms import ClientForm, ServerForm, round_form
from fedsim.problems.compiled import compiled_view
from fedsim.rng.seeding import client_bitgens
from fedsim.rng.streams import client_states
from fedsim.trace import PERSONAL as PERSONAL_METRICS
from fedsim.trace import Trace

__all__ = ["replay_table", "replay_records", "replay_one", "Replayed", "metric_plan",
           "noise_streams", "client_form", "check_personal", "progress_bar", "PROGRESS_CHUNKS",
           "TableSet"]

#: with a progress callback, :func:`replay_one` runs the loop in about this many chunks of
#: steps and reports between them (never from inside the compiled loop)
PROGRESS_CHUNKS = 100


@dataclass(frozen=True)
class TableSet:
    """What an execution model's writer (:class:`fedsim.engine.models.ExecutionModel`
    ``write``) may return in place of a plain list of tables: ``tables`` (one per
    replicate), ``client_rule``/``server_rule`` (default the scenario's),
    ``extra_info(k, replayed)``, ``keep_personal`` and ``groups`` as :func:`replay_table`
    takes them (``k`` the table's index, e.g. AsyPFL's per-round times of replicate
    ``k``)."""

    tables: Sequence[EventTable]
    client_rule: Any = None
    server_rule: Any = None
    extra_info: Callable[[int, Replayed], dict[str, Any]] | None = None
    keep_personal: bool = False
    #: the tables already laid end to end, ``(TableGroup, table indices)`` (a writer that
    #: writes many replicates' columns at once); ``tables`` may then build a replicate's
    #: table only when it is asked for (a Trace, a truncation)
    groups: Sequence[tuple[TableGroup, Sequence[int]]] | None = None


def metric_plan(scenario: Scenario, problem: Any) -> MetricPlan:
    """The metric plan of ``scenario`` (compiled view metrics when they serve; a view's
    metrics do not depend on the batch size)."""
    batch = scenario.algorithm.get("batch")
    cv = compiled_view(problem, int(batch) if batch is not None else 1)
    return MetricPlan(problem, scenario.record.metrics, cv, *metric_params(scenario))


def noise_streams(seed: int, replicates: Sequence[int], n: int, compiled: bool) -> Any:
    """Per replicate, the clients' ``noise`` streams: row ``k`` of an ``(R, n, 6)``
    state-row array (compiled) or a list of NumPy ``Generator``\\ s."""
    if compiled:
        return client_states(seed, replicates, n, "noise")
    gen = np.random.Generator
    return [[gen(bg) for bg in row] for row in client_bitgens(seed, replicates, n, "noise")]


def client_form(rule: Any) -> ClientForm:
    """A client rule's replay form: its own ``replay_form()`` (compiled, or the same
    functions interpreted), else its ``round`` method wrapped
    (:func:`fedsim.local.forms.round_form`)."""
    if isinstance(rule, ClientForm):
        return rule
    if hasattr(rule, "replay_form"):
        return rule.replay_form()
    return round_form(rule)


def check_personal(plan: MetricPlan, cf: ClientForm, keep_personal: bool = False) -> None:
    """ConfigError unless the client rule keeps the personal models that ``plan``'s
    personal metrics (``pers_*_beta`` and their ``val_`` twins) or ``keep_personal`` read
    (``cf.personal_row >= 0``; a rule's other state rows are scratch)."""
    if cf.personal_row >= 0:
        return
    name = next((m for m in plan.names if m.removeprefix("val_") in PERSONAL_METRICS), None)
    if name is not None:
        require(False, "record.metrics", name,
                "needs per-client personal models, which only an algorithm whose clients "
                "keep them records (algorithm.name = 'asypfl')")
    require(not keep_personal, "keep_personal", keep_personal,
            "needs a client rule that keeps personal models (ClientForm.personal_row)")


def progress_bar(total: int | None, desc: str) -> Any:
    """A tqdm bar on stderr over ``total`` server steps (the engine's bar: unit ``step``,
    cleared when closed)."""
    from tqdm import tqdm

    return tqdm(total=total, file=sys.stderr, unit="step", desc=desc, mininterval=0.5,
                leave=False)


def replay_one(table: EventTable, cf: ClientForm, sf: ServerForm, plan: MetricPlan,
               states: Any, w0: np.ndarray, *, keep_personal: bool = False,
               progress: Callable[[int], None] | None = None) -> Replayed:
    """Replay one table from ``w0`` with the clients' noise ``states`` (module
    docstring): :func:`~fedsim.engine.replay.group.replay_group` on a group of one.
    ``keep_personal``: snapshot the clients' personal models (``cf.personal_row``) at the
    recorded steps even when no personal metric is recorded (``Replayed.personal``).
    ``progress(steps)``: called with the number of steps replayed so far after each of
    about :data:`PROGRESS_CHUNKS` chunks of the loop (the loop resumes where it stopped,
    so the numbers do not depend on the chunks)."""
    check_personal(plan, cf, keep_personal)
    T = table.steps_done
    budget = None if progress is None else max(1, -(-T // PROGRESS_CHUNKS))
    st = states[None] if cf.compiled else [states]
    return replay_group(TableGroup([table]), cf, sf, plan, st, [w0],
                        keep_personal=keep_personal, keep_state=True, budget=budget,
                        progress=progress)[0]


def replay_records(scenario: Scenario, tables: Sequence[EventTable], client_rule: Any = None,
                   server_rule: Any = None, *, replicates: Sequence[int], problem: Any = None,
                   w0: np.ndarray | None = None,
                   groups: Sequence[tuple[TableGroup, Sequence[int]]] | None = None,
                   keep_personal: bool = False, keep_state: bool = False,
                   progress: bool = False) -> list[Replayed]:
    """Per table (``tables[k]`` is replicate ``replicates[k]`` of ``scenario``), the rules
    replayed along it: its :class:`Replayed` (``info``: the rule counters).  A table that
    ``groups`` covers is never read, so a writer's tables may be built only when asked for.

    ``client_rule``/``server_rule``: rule objects (or their
    :class:`~fedsim.local.forms.ClientForm` / ``ServerForm``); default the scenario's
    (:func:`fedsim.local.make_client_rule`, the algorithm's ``server``).  A client rule with
    no compiled form runs its own ``round`` (:func:`client_form`), a fresh rule object per
    replicate so that its counters are the replicate's.  ``w0`` (R, d): initial models row
    by row (default the scenario's ``w^0``).  ``groups``: tables already laid end to end
    by their writer, ``(TableGroup, table indices)``, each table at most once (the others
    are grouped by :func:`~fedsim.engine.replay.group.group_slices`);
    ``keep_personal``/``keep_state``: :func:`~fedsim.engine.replay.group.replay_group`'s.
    A personal metric or ``keep_personal`` with a rule that keeps no personal models is a
    ConfigError (:func:`check_personal`), raised before any replay.  ``progress``: one tqdm
    bar on stderr over the tables' steps (:func:`progress_bar`, updated between chunks of
    the loop)."""
    reps = [int(r) for r in replicates]
    require(len(reps) == len(tables), "replicates", len(reps),
            f"must name one replicate per table ({len(tables)})")
    problem = problem_for(scenario) if problem is None else problem
    a = scenario.algorithm
    rule = make_client_rule(a, problem) if client_rule is None else client_rule
    cf = client_form(rule)
    fallback = not isinstance(rule, ClientForm) and not hasattr(rule, "replay_form")
    srv = get_algorithm(a.name).server(a, problem) if server_rule is None else server_rule
    sf = srv if isinstance(srv, ServerForm) else srv.replay_form()
    plan = metric_plan(scenario, problem)
    check_personal(plan, cf, keep_personal)
    streams = noise_streams(scenario.seed, reps, problem.n, cf.compiled)
    if fallback:
        groups = [(None, [k]) for k in range(len(tables))]
    else:
        groups = list(groups or [])
        covered = {int(k) for _, idx in groups for k in idx}
        rest = [k for k in range(len(tables)) if k not in covered]
        groups += [(None, rest[sl]) for sl in group_slices([tables[k] for k in rest])]
    total = sum(g.steps if g is not None else sum(tables[k].steps_done for k in idx)
                for g, idx in groups)
    bar = progress_bar(total, "replay") if progress else None
    budget = None if bar is None else max(1, -(-total // PROGRESS_CHUNKS))
    problem_w0 = initial_model(problem, scenario) if w0 is None else None
    out: list[Replayed | None] = [None] * len(tables)
    base = 0
    for grp, idx in groups:
        idx = [int(k) for k in idx]
        if fallback and client_rule is None and idx[0] > 0:
            rule = make_client_rule(a, problem)
            cf = client_form(rule)
        if grp is None:
            grp = TableGroup([tables[k] for k in idx])
        w0s = ([problem_w0] * len(idx) if w0 is None
               else [np.array(w0[k], np.float64) for k in idx])
        tick = None if bar is None else (lambda t, b=base: bar.update(b + t - bar.n))
        st = (streams[np.asarray(idx, dtype=np.int64)] if isinstance(streams, np.ndarray)
              else [streams[k] for k in idx])
        res = replay_group(grp, cf, sf, plan, st, w0s, keep_personal=keep_personal,
                           keep_state=keep_state, budget=budget, progress=tick)
        base += grp.steps
        for k, rp in zip(idx, res, strict=True):
            if fallback:
                rp.info.update(inner_counters(rule))
            out[k] = rp
    if bar is not None:
        bar.close()
    return out  # type: ignore[return-value]


def replay_table(scenario: Scenario, tables: Sequence[EventTable], client_rule: Any = None,
                 server_rule: Any = None, *, replicates: Sequence[int], problem: Any = None,
                 w0: np.ndarray | None = None,
                 groups: Sequence[tuple[TableGroup, Sequence[int]]] | None = None,
                 extra_info: Callable[[int, Replayed], dict[str, Any]] | None = None,
                 keep_personal: bool = False, progress: bool = False) -> list[Trace]:
    """One Trace per table: :func:`replay_records` (its arguments), then the table's
    :meth:`~fedsim.engine.replay.table.EventTable.trace`, truncated at a divergence, with
    ``info`` the records' and ``extra_info(k, replayed)`` (facts an execution model derives
    from the replayed states, e.g. AsyPFL's final ``beta_k``)."""
    got = replay_records(scenario, tables, client_rule, server_rule, replicates=replicates,
                         problem=problem, w0=w0, groups=groups, keep_personal=keep_personal,
                         keep_state=extra_info is not None, progress=progress)
    out = []
    for k, rp in enumerate(got):
        table = tables[k]
        info = {**table.info, **rp.info}  # the timeline's facts, then the rules' counters
        if extra_info:
            info.update(extra_info(k, rp))
        out.append(table.trace(metric_steps=rp.metric_steps, metrics=rp.metrics,
                               final_w=rp.final_w, diverged_step=rp.diverged_step, info=info))
    return out
