"""The asynchronous physical model's timeline writer: SimPy clients, no algebra.

The asynchronous physical execution model (FedAsync = [P] Algorithms 1-2, FedBuff,
AS-FedAvg; also the named ``expcycle`` model of THEORY_SPEC 10.2(b)); docs/INTERNALS.md
section 3.  Each client is a generator process looping *read the model -> download ->
local computation -> upload -> think*; it is always busy unless a think time is
configured.  The server model is read when the download is requested (``delays.read_at =
"request"``: the server sends its current model, [P] Section 3) or when the download
completes (``"arrival"``); the upload arrives at ``((t_read + dl) + c_1 + ... ) + ul``, the
additions a step-by-step process makes.  Uploads are buffered and a server step consumes
the buffer when the trigger fires (every upload -- one step per upload for an algorithm
that declares ``step_per_upload`` --, every ``count`` uploads, a Poisson timer (rate), a
fixed period).  Stopping: ``horizon.steps`` server steps or the simulated time
``horizon.time`` (events at exactly that time are not processed), whichever comes first.

:class:`AsyncRun` draws only the ``delays`` and ``timer`` streams and writes the
run's :class:`~fedsim.engine.replay.table.EventTable` (:class:`~fedsim.engine.steplog.
TableLog`): per step its time, kind (``"upload"`` for one step per upload, else
``"aggregate"``), client (-1 for several), staleness (the largest of its uploads, in steps
and in time) and fill; per upload the step it read and its staleness at arrival.  No rule
runs here: :func:`fedsim.engine.dispatch.run` and :func:`fedsim.engine.run_batch` replay the
client and server rules along the table (:mod:`fedsim.engine.replay.driver`), and a run
that diverges at step ``t`` is truncated there as the engine stops
(:meth:`~fedsim.engine.replay.table.EventTable.truncated`).  The fast writers of
:mod:`fedsim.engine.models.physical` are tested bitwise equal to this one;
:mod:`~fedsim.engine.models.physical.reference` is the plain per-step engine that computes
as it simulates (the oracle of the tests).
"""

from __future__ import annotations

from functools import partial
from typing import Any

from fedsim.algorithms import get_algorithm
from fedsim.config import Scenario
from fedsim.engine.models.phases import PhaseLog, Phases, record
from fedsim.engine.replay.table import EventTable
from fedsim.engine.setup import RunSetup
from fedsim.engine.staleness import physical_staleness_bound
from fedsim.rng import Streams
from fedsim.trace import KINDS

__all__ = ["AsyncRun", "async_phases", "K_UPLOAD", "K_AGG"]

K_UPLOAD = KINDS.index("upload")
K_AGG = KINDS.index("aggregate")


class AsyncRun(RunSetup):
    """The timeline of one asynchronous physical run (module docstring): :meth:`table`
    simulates it."""

    def __init__(self, scenario: Scenario, problem, streams: Streams, progress: bool,
                 spec: Any, phases: PhaseLog | None = None) -> None:
        super().__init__(scenario, problem, streams, False, table=True)
        self.spec = spec
        self.phases = phases
        self.per_upload = bool(spec.step_per_upload)
        self.samplers = self.make_samplers(lean=True)
        self.Q = int(self.rule.Q)
        self.count = self.trigger_count()
        self.pending: list[tuple[int, int, float, int]] = []
        self.bound = physical_staleness_bound(scenario.delays, self.n, self.rule.Q,
                                              scenario.delays.compute_per == "step",
                                              self.count)

    def start(self) -> None:
        """Set the clients going (at the current simulated time)."""
        for i in range(self.n):
            self.env.process(self._client(i))

    def table(self) -> EventTable:
        """Simulate to the horizon and return the event table."""
        self.start()
        self.start_timer(lambda: bool(self.pending) and self._aggregate())
        self.run_until_done()
        return self.log.table(n=self.n, sim_time=self.env.now,
                              every=int(self.scenario.record.every),
                              staleness_bound=self.bound)

    def _client(self, i: int):
        """A client cycle: read -> download -> compute -> upload -> buffer -> think."""
        log, sampler, ph = self.log, self.samplers[i], self.phases
        arrival = self.scenario.delays.read_at == "arrival"
        mark = None if ph is None else partial(ph.begin, i)
        while True:
            download, compute, upload, think = sampler.next_round()
            got = yield from self.read_and_upload(download, compute, upload, arrival, None,
                                                  None, mark)
            if got is None:
                return
            omega, t_read, t = got
            log.upload(i)
            if ph is not None:
                ph.arrive(i, omega)
            self.pending.append((i, omega, t_read, log.t - omega))
            if self.count is not None and len(self.pending) >= self.count:
                if self._aggregate():
                    return
            if think != 0.0:
                if ph is not None:
                    ph.think(i, think)
                yield from self.think_pause(t, think)
                if log.stopped:
                    return

    def _aggregate(self) -> bool:
        """One server step consuming the buffered uploads.  True: stop."""
        log, now = self.log, self.env.now
        ups = self.pending
        for i, omega, _, stale in ups:
            log.contribute(i, omega, self.Q, stale)
        k = len(ups)
        # no server step happens while uploads wait, so staleness at arrival = at the step
        stale_steps = max(u[3] for u in ups)
        stale_time = max(now - u[2] for u in ups)
        who = ups[0][0] if k == 1 else -1
        self.pending = []
        return log.step(now, K_UPLOAD if self.per_upload else K_AGG, who, stale_steps,
                        stale_time, k)


def async_phases(scenario: Scenario, problem: Any, replicate: int) -> Phases:
    """The replicate's per-client phases, recorded by :class:`AsyncRun` with its table
    (the reference the fast writers equal bit for bit, so these are the run's phases)."""
    spec = get_algorithm(scenario.algorithm.name)
    return record(lambda log: AsyncRun(scenario, problem, Streams(scenario.seed, replicate),
                                       False, spec, log).table(), problem.n)
