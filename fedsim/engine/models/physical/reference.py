"""The straightforward asynchronous engine: the oracle the table -> replay path must match.

The asynchronous physical model (FedAsync, FedBuff, AS-FedAvg;
:mod:`fedsim.engine.models.physical.simpy_writer` writes its timeline, the replay applies
the rules), simulated and computed together the obvious way: a client process reads the
model, then yields one ``env.timeout`` for the download, one per local step (``compute_per
= "step"``; one for the whole computation otherwise) and one for the upload, applies each
local step with ``rule.step`` (noise drawn one step at a time from the client's ``noise``
stream) at that
step's simulated time, hands the upload to the server rule's ``apply`` (one server step
per upload when the algorithm declares it, else through the buffer), and finally thinks.
Delays come from the same
:class:`~fedsim.rng.delays.DelaySampler`.  The metrics are recorded as it goes
(:class:`~fedsim.engine.steplog.StepLog`, the Recorder's functions), the run stops at a
divergence.  It is many times slower and exists so that
``tests/engine/test_engine_reference.py`` can check that ``fedsim.engine.run``'s traces
are identical.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fedsim.config import Scenario
from fedsim.engine.models.physical.simpy_writer import K_AGG, K_UPLOAD
from fedsim.engine.setup import RunSetup, inner_counters, problem_for
from fedsim.engine.staleness import physical_staleness_bound
from fedsim.rng import Streams
from fedsim.servers.base import Upload
from fedsim.trace import Trace

__all__ = ["ReferenceRun", "run_reference"]


class ReferenceRun(RunSetup):
    """The per-step client process (module docstring)."""

    def __init__(self, scenario: Scenario, problem, streams: Streams, progress: bool,
                 spec: Any) -> None:
        super().__init__(scenario, problem, streams, progress)
        self.spec = spec
        self.server = spec.server(scenario.algorithm, problem)
        self.w = self.server.init(self.w)
        self.samplers = self.make_samplers(lean=True)
        self.noise = self.make_noise(lean=True)
        self.count = self.trigger_count()
        self.pending: list[tuple[Upload, float]] = []
        self.counts = [0] * self.n
        self.rec.busy(0.0, 1.0)
        self.bound = physical_staleness_bound(scenario.delays, self.n, self.rule.Q,
                                              scenario.delays.compute_per == "step",
                                              self.count)

    def run(self) -> Trace:
        for i in range(self.n):
            self.env.process(self._client(i))
        self.start_timer(lambda: bool(self.pending) and self._aggregate())
        self.run_until_done()
        self.rec.client_updates[:] = self.counts
        self.rec.info.update(inner_counters(self.rule))
        return self.log.finish(self.w, self.env.now, self.bound)

    def _receive(self, i: int, read, new, omega: int, t_read: float) -> bool:
        """Buffer one upload; aggregate when the count trigger fires.  True: stop."""
        self.pending.append((Upload(i, read.copy(), new.copy(), self.log.t - omega), t_read))
        if self.count is not None and len(self.pending) >= self.count:
            return self._aggregate()
        return False

    def _aggregate(self) -> bool:
        """One server step from the buffered uploads (the server rule's ``apply``)."""
        log, now = self.log, self.env.now
        ups = [u for u, _ in self.pending]
        stale_steps = max(u.staleness for u in ups)
        stale_time = max(now - tr for _, tr in self.pending)
        self.w, diag = self.server.apply(self.w, ups)
        k = diag["fill"]
        who = ups[0].client if k == 1 else -1
        self.pending.clear()
        return log.log(now, K_AGG, who, stale_steps, stale_time, k, self.w)

    def _client(self, i: int):
        env, log = self.env, self.log
        rule, rng, sampler = self.rule, self.noise[i], self.samplers[i]
        arrival = self.scenario.delays.read_at == "arrival"
        per_step = self.scenario.delays.compute_per == "step"
        step_per_upload = self.spec.step_per_upload
        while True:
            download, compute, upload, think = sampler.next_round()
            if arrival:
                yield env.timeout(download)
                if log.stopped:
                    return
            w_read = self.w.copy()
            omega, t_read = log.t, env.now
            if not arrival:
                yield env.timeout(download)
            w_local = w_read.copy()
            if per_step:
                for c in compute:
                    rule.step(i, w_local, rng)
                    yield env.timeout(c)
            else:
                for _ in range(rule.Q):
                    rule.step(i, w_local, rng)
                yield env.timeout(compute[0])
            yield env.timeout(upload)
            if log.stopped:
                return
            t = env.now
            self.counts[i] += 1
            if step_per_upload:
                self.w, _ = self.server.apply(self.w, (Upload(i, w_read, w_local),))
                if log.log(t, K_UPLOAD, i, log.t - omega, t - t_read, 1, self.w):
                    return
            elif self._receive(i, w_read, w_local, omega, t_read):
                return
            if think != 0.0:
                yield from self.think_pause(t, think)
                if log.stopped:
                    return


def run_reference(scenario: Scenario, replicate: int = 0) -> Trace:
    """Simulate an asynchronous physical scenario with the per-step reference engine."""
    from fedsim.algorithms import get_algorithm

    streams = Streams(scenario.seed, replicate)
    problem = problem_for(scenario)
    spec = get_algorithm(scenario.algorithm.name)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        return ReferenceRun(scenario, problem, streams, False, spec).run()
