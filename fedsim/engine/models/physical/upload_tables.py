"""The asynchronous physical model's upload tables for a count trigger, replicate by replicate.

The clients' cycles do not depend on the server (no contention), so with a count trigger
(a step every ``K`` uploads) the run's uploads are those of FedAsync's upload timeline:
the compiled copy of the event loop (:mod:`fedsim.engine.models.physical.event_loop`,
Constant/Exponential delays) or the vectorised merge of the clients' renewal streams
(:mod:`fedsim.engine.models.physical.merge`, any delay model), ``chunk`` uploads at a
time, grouped into server steps by :func:`~fedsim.engine.models.physical.uploads.
uploads_table`.  Both are tested bitwise equal to SimPy's writer
(:class:`~fedsim.engine.models.physical.simpy_writer.AsyncRun`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from fedsim.config import Scenario
from fedsim.engine.models.physical.event_loop import EventTimeline, delay_params, supports_plan
from fedsim.engine.models.physical.merge import FedAsyncTimeline
from fedsim.engine.models.physical.uploads import uploads_table
from fedsim.engine.replay.table import EventTable
from fedsim.engine.staleness import physical_staleness_bound
from fedsim.rng.delays import DelayPlan
from fedsim.rng.seeding import client_bitgens
from fedsim.rng.streams import client_states

__all__ = ["fedasync_tables", "upload_tables"]


def fedasync_tables(scenario: Scenario, replicates: Sequence[int], *, n: int, Q: int,
                    chunk: int = 4096) -> list[EventTable]:
    """FedAsync's event tables (one server step per upload, :func:`upload_tables`)."""
    return upload_tables(scenario, replicates, n=n, Q=Q, K=1, per_upload=True, chunk=chunk)


def upload_tables(scenario: Scenario, replicates: Sequence[int], *, n: int, Q: int, K: int,
                  per_upload: bool, chunk: int = 4096,
                  plan: DelayPlan | None = None) -> list[EventTable]:
    """The event tables of ``replicates`` of an asynchronous physical scenario with a count
    trigger (a step every ``K`` uploads): the upload timeline of the compiled event loop
    (Constant/Exponential delays) or of the vectorised merge, ``chunk`` uploads at a time,
    up to the step horizon (``K`` uploads a step) or the time horizon, grouped into steps by
    :func:`~fedsim.engine.models.physical.uploads.uploads_table`.  The clients' cycles do not depend
    on the server, so the uploads are those of FedAsync's timeline.  ``plan``: the scenario's
    :class:`~fedsim.rng.delays.DelayPlan` when the caller has it."""
    T = scenario.horizon.steps
    U = int(T) * K if T is not None else None
    plan = DelayPlan(scenario) if plan is None else plan
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
