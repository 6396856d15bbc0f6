"""The straightforward asynchronous engine: the specification the fast engine must match.

Same scenarios as :mod:`fedsim.engine.physical`'s asynchronous physical model (FedAsync, FedBuff,
AS-FedAvg), written the obvious way: a client process reads the model, then yields one
``env.timeout`` for the download, one per local step (``compute_per = "step"``; one for
the whole computation otherwise) and one for the upload, applies each local step with
``rule.step`` (noise drawn one step at a time from the client's ``noise`` stream) at that
step's simulated time, hands the upload to the server rule's ``apply`` (one server step
per upload when the algorithm declares it, else through the buffer), and finally thinks.
Delays come from the same
:class:`~fedsim.engine.delay_blocks.DelaySampler`.  It is several times slower and exists so that
``tests/engine/test_engine_reference.py`` can check that the fast engine's traces are identical.
"""

from __future__ import annotations

import numpy as np

from fedsim.config import Scenario
from fedsim.engine.physical import K_UPLOAD, AsyncRun
from fedsim.engine.setup import problem_for
from fedsim.rng import Streams
from fedsim.servers.base import Upload
from fedsim.trace import Trace

__all__ = ["ReferenceRun", "run_reference"]


class ReferenceRun(AsyncRun):
    """The per-step client process (module docstring)."""

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
