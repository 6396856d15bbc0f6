"""FedAsync (physical model, Option A) on a problem with a compiled view, along R timelines.

[P] Algorithm 1 line 4 / Algorithm 2 lines 5-7: at server step ``t`` the uploading client
``i_t`` sends ``Delta = w^{Omega} - w_{i,Q}``, ``w_{i,Q}`` being Q local SGD steps from
the model ``w^{Omega}`` it read, and the server sets ``w^{t+1} = w^t - beta Delta``.

Each replicate is replayed on its own (so its numbers cannot depend on the others, on
their number, on ``group`` nor on ``chunk``), a group of replicates at a time:

1. the schedule (uploader, ``omega``, times), bitwise the SimPy engine's, comes from the
   engine's event loop compiled (Constant/Exponential delays): with a step horizon a
   group's tables in one call (:func:`fedsim.engine.replay.upload_group.upload_group`),
   else per replicate, ``chunk`` uploads at a time
   (:class:`fedsim.engine.replay.event_timeline.EventTimeline`); for other delay models
   from :class:`fedsim.engine.replay.timeline.FedAsyncTimeline` (the vectorised merge);
2. the randomness of every round comes from the replicate's own streams
   (``fedsim.rng.Streams(seed, r).client(i, "noise")``, as PCG64 state rows built in bulk
   by :mod:`fedsim.rng.streams`, same bits): the problem's compiled ``draw``
   (:mod:`fedsim.problems.compiled`) takes a step's numbers, Q steps a round, inside the
   loop at the round's upload; a client's rounds are sequential, so it consumes its
   stream round after round as the engine does (which draws a round at its read);
3. the loop of :func:`fedsim.engine.replay.kernel.table_kernel` (a group of replicates per
   compiled call, :func:`fedsim.engine.replay.group.replay_group`) applies the client rule
   (:func:`fedsim.local.sgd.sgd_update_for` with the view's compiled oracle) and the server
   rule (:func:`fedsim.servers.fedasync.fedasync_step`) along the table -- the very
   functions the SimPy engine calls, so the iterates are the engine's bit for bit; the
   metrics are the view's compiled ones (for quadratics the closed forms
   :func:`~fedsim.problems.quadratic_view.quadratic_metrics` that
   ``QuadraticProblem.grad_f_sq`` etc. call too).

Divergence is per replicate, with the engine's rule (``not w.w <= DIVERGE_NORM^2``): the
replicate is marked at its first such step, its metrics at that step recorded, its model
and counts frozen there.

``BatchResult``: :mod:`fedsim.engine.replay.fedasync_result`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from time import perf_counter as _clock

import numpy as np

from fedsim.algorithms import get_algorithm
from fedsim.config import Scenario
from fedsim.engine.replay.driver import metric_plan, noise_streams
from fedsim.engine.replay.event_timeline import EventTimeline, delay_params, supports_plan
from fedsim.engine.replay.fedasync_result import BatchResult, batch_result
from fedsim.engine.replay.group import GROUP_STEPS, TableGroup, group_slices, replay_group
from fedsim.engine.replay.table import EventTable
from fedsim.engine.replay.timeline import DelayPlan, FedAsyncTimeline
from fedsim.engine.replay.upload_group import group_writes, upload_group
from fedsim.engine.replay.uploads import uploads_table
from fedsim.engine.setup import initial_model, metric_params, problem_for
from fedsim.engine.staleness import physical_staleness_bound
from fedsim.errors import require
from fedsim.local import make_client_rule
from fedsim.local.registry import get_client_rule
from fedsim.local.sgd import sgd_round
from fedsim.problems.compiled import compiled_view
from fedsim.rng.seeding import client_bitgens
from fedsim.rng.streams import client_states

__all__ = ["BatchResult", "replay_fedasync", "supports", "fedasync_tables", "upload_tables"]


def supports(scenario: Scenario) -> bool:
    """Whether :func:`replay_fedasync` implements ``scenario`` exactly, read from the
    registries and the problem (no algorithm or problem name is compared): the algorithm's
    model runs on the one-upload-per-step runner (``"fedasync_fast"``, whose server step is
    :func:`~fedsim.servers.fedasync.fedasync_apply`), its client rule's round is the
    compiled :func:`~fedsim.local.sgd.sgd_round` (``compiled_round``), the problem has a
    compiled view (:mod:`fedsim.problems.compiled`) for the rule's batch size, the trigger
    is every upload and every recorded metric is one of the view's."""
    a = scenario.algorithm
    if get_algorithm(a.name).runners.get(a.model) != "fedasync_fast":
        return False
    if getattr(get_client_rule(a.client_rule).cls, "compiled_round", None) is not sgd_round:
        return False
    if scenario.trigger.kind != "every_upload":
        return False
    cv = compiled_view(problem_for(scenario), int(a.get("batch")))
    alpha, lam = metric_params(scenario)
    return cv is not None and cv.has_metrics(scenario.record.metrics, maml_alpha=alpha,
                                             me_lam=lam)


def fedasync_tables(scenario: Scenario, replicates: Sequence[int], *, n: int, Q: int,
                    chunk: int = 4096) -> list[EventTable]:
    """FedAsync's event tables (one server step per upload, :func:`upload_tables`)."""
    return upload_tables(scenario, replicates, n=n, Q=Q, K=1, per_upload=True, chunk=chunk)


def upload_tables(scenario: Scenario, replicates: Sequence[int], *, n: int, Q: int, K: int,
                  per_upload: bool, chunk: int = 4096) -> list[EventTable]:
    """The event tables of ``replicates`` of an asynchronous physical scenario with a count
    trigger (a step every ``K`` uploads): the upload timeline of the compiled event loop
    (Constant/Exponential delays) or of the vectorised merge, ``chunk`` uploads at a time,
    up to the step horizon (``K`` uploads a step) or the time horizon, grouped into steps by
    :func:`~fedsim.engine.replay.uploads.uploads_table`.  The clients' cycles do not depend
    on the server, so the uploads are those of FedAsync's timeline."""
    T = scenario.horizon.steps
    U = int(T) * K if T is not None else None
    plan = DelayPlan(scenario)
    compiled_tl = supports_plan(plan)
    if compiled_tl:
        dst = client_states(scenario.seed, replicates, n, "delays")
        params = delay_params(plan)
    else:
        dbg = client_bitgens(scenario.seed, replicates, n, "delays")
    B = max(4, 16 // (Q if scenario.delays.compute_per == "step" else 1))
    blocks = 8 if U is None else int(min(8, max(1, math.ceil(1.2 * U / (n * B)))))
    bound = physical_staleness_bound(scenario.delays, n, Q,
                                     scenario.delays.compute_per == "step", K)
    out = []
    for k, r in enumerate(replicates):
        if compiled_tl:
            tl = EventTimeline(scenario, r, plan=plan, states=dst[k], params=params)
        else:
            tl = FedAsyncTimeline(scenario, r, blocks=blocks, bitgens=dbg[k], plan=plan)
        chunks = []
        u = 0
        by_time = False
        while U is None or u < U:
            S = chunk if U is None else min(chunk, U - u)
            c = tl.take(S)
            chunks.append(c)
            u += c.time.size
            if c.time.size < S:
                by_time = True
                break
        out.append(uploads_table(n, Q, chunks, uploads=u, stop_by_time=by_time,
                                 horizon_time=float(scenario.horizon.time),
                                 every=int(scenario.record.every), staleness_bound=bound,
                                 K=K, per_upload=per_upload))
    return out


def replay_fedasync(scenario: Scenario, replicates: Sequence[int], *, chunk: int | None = None,
                    keep_timeline: bool = False, mem_mb: float = 128.0,
                    group: int | None = None, w0: np.ndarray | None = None) -> BatchResult:
    """Replay ``scenario`` for ``replicates`` (module docstring).

    The replicates go group by group: a group's tables are written, replayed and dropped
    before the next group's are written (kept only with ``keep_timeline``), so memory is
    bounded by a group (about :data:`~fedsim.engine.replay.group.GROUP_STEPS` server
    steps, at most ``group`` replicates when given), not by the number of replicates.
    With a step horizon and Constant/Exponential delays a group's tables are written in
    one compiled call (:func:`~fedsim.engine.replay.upload_group.upload_group`), else per
    replicate, ``chunk`` uploads at a time (default: about ``mem_mb`` megabytes of
    timeline).  Neither changes a number: every replicate's trace is
    ``fedsim.engine.run(scenario, r)``'s bit for bit.  ``w0`` (R, d) overrides the initial
    model row by row (a test hook: e.g. a non-finite row to make one replicate diverge).
    """
    require(supports(scenario), "scenario", scenario.name,
            "is not a FedAsync physical Option A run on a problem with a compiled view "
            "(use fedsim.engine.run)")
    reps = [int(r) for r in replicates]
    require(len(reps) >= 1, "replicates", reps, "must hold at least one replicate")
    if group is not None:
        require(int(group) == group and group >= 1, "group", group, "must be an integer >= 1")
    c0 = _clock()
    problem = problem_for(scenario)
    n, d = problem.n, problem.dim
    a = scenario.algorithm
    Q = int(a.get("Q"))
    if chunk is None:
        chunk = int(min(65536, max(64, max(mem_mb, 1.0) * 1e6 / 64.0)))
    if w0 is not None:
        w0 = np.array(w0, dtype=np.float64).reshape(len(reps), d)
    spec = get_algorithm(a.name)
    cf = make_client_rule(a, problem).replay_form()
    sf = spec.server(a, problem).replay_form()
    plan = metric_plan(scenario, problem)
    start = initial_model(problem, scenario)
    dplan = DelayPlan(scenario)
    compiled = group_writes(scenario, dplan)
    T = int(scenario.horizon.steps) if scenario.horizon.steps is not None else 0
    if compiled:
        size = max(1, GROUP_STEPS // (T + 1))
    else:
        size = 256
    size = size if group is None else min(size, int(group))
    bound = physical_staleness_bound(scenario.delays, n, Q,
                                     scenario.delays.compute_per == "step", 1)
    sec = {"setup": _clock() - c0, "timeline": 0.0, "steps": 0.0}
    runs, tables, sims, counts = [], [], [], []
    for g in range(0, len(reps), size):
        sub = reps[g:g + size]
        c1 = _clock()
        if compiled:
            ug = upload_group(scenario, sub, n=n, Q=Q, staleness_bound=bound, plan=dplan)
            parts = [(ug.group, slice(0, len(sub)))]
            table = ug.table
        else:
            tabs = fedasync_tables(scenario, sub, n=n, Q=Q, chunk=chunk)
            parts = [(TableGroup(tabs[sl]), sl) for sl in group_slices(tabs)]
            table = tabs.__getitem__
        c2 = _clock()
        streams = noise_streams(scenario.seed, sub, n, cf.compiled)
        got = []
        for grp, sl in parts:
            w0s = [w0[g + k] if w0 is not None else start for k in range(sl.start, sl.stop)]
            got.extend(replay_group(grp, cf, sf, plan, streams[sl], w0s))
        for k, r in enumerate(got):
            if r.diverged_step is not None:
                s_t, c_u, _, _ = table(k).truncated(r.diverged_step)
            elif compiled:
                s_t, c_u = float(ug.sim_time[k]), ug.client_updates[k]
            else:
                s_t, c_u = tabs[k].sim_time, tabs[k].client_updates
            sims.append(s_t)
            counts.append(c_u)
        if keep_timeline:
            tables.extend(table(k) for k in range(len(sub)))
        runs.extend(got)
        sec["timeline"] += c2 - c1
        sec["steps"] += _clock() - c2
    return batch_result(reps, list(scenario.record.metrics), int(scenario.record.every), runs,
                        sims, counts, tables if keep_timeline else None,
                        {"seconds": sec, "chunk": chunk, "group": size,
                         "writer": "compiled_group" if compiled else "per_replicate"})
