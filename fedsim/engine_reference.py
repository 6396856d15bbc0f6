"""The straightforward asynchronous engine: the specification the fast engine must match.

Same scenarios as :mod:`fedsim.engine`'s asynchronous physical model (FedAsync, FedBuff,
AS-FedAvg), written the obvious way: a client process reads the model, then yields one
``env.timeout`` for the download, one per local step (``compute_per = "step"``; one for
the whole computation otherwise) and one for the upload, applies each local step with
``rule.step`` (noise drawn one step at a time from the client's ``noise`` stream) at that
step's simulated time, and finally thinks.  Delays come from the same
:class:`~fedsim.engine_common.DelaySampler`.  It is several times slower and exists so that
``tests/test_engine_reference.py`` can check that the fast engine's traces are identical.
"""

from __future__ import annotations

import numpy as np

from fedsim.config import Scenario
from fedsim.engine import K_UPLOAD, _AsyncRun, problem_for
from fedsim.rng import Streams
from fedsim.servers.fedasync import fedasync_apply
from fedsim.trace import Trace

__all__ = ["run_reference"]


class _ReferenceRun(_AsyncRun):
    lean_log = False

    def _client(self, i: int):
        env, log, w = self.env, self.log, self.w
        rule, rng, sampler = self.rule, self.noise[i], self.samplers[i]
        arrival = self.sc.delays.read_at == "arrival"
        per_step = self.sc.delays.compute_per == "step"
        n = self.n
        while True:
            dl, comp, ul, th = sampler.next_round()
            if arrival:
                yield env.timeout(dl)
                if log.stopped:
                    return
            w0 = w.copy()
            omega, t_read = log.t, env.now
            if not arrival:
                yield env.timeout(dl)
            wl = w0.copy()
            if per_step:
                for c in comp:
                    rule.step(i, wl, rng)
                    yield env.timeout(c)
            else:
                for _ in range(rule.Q):
                    rule.step(i, wl, rng)
                yield env.timeout(comp[0])
            yield env.timeout(ul)
            if log.stopped:
                return
            t = env.now
            self.counts[i] += 1
            if self.kind == "fedasync":
                delta = w0 - wl
                fedasync_apply(w, delta, self.beta)
                if log.log(t, K_UPLOAD, i, log.t - omega, t - t_read, 1, w):
                    return
            else:
                self._buffer(i, w0, wl, omega, t_read)
                if self.count is not None and self.buf.fill >= self.count:
                    if self._aggregate():
                        return
            if th != 0.0:
                self.idle += 1
                self.rec.busy(t, (n - self.idle) / n)
                yield env.timeout(th)
                self.idle -= 1
                self.rec.busy(env.now, (n - self.idle) / n)
                if log.stopped:
                    return


def run_reference(scenario: Scenario, replicate: int = 0) -> Trace:
    """Simulate an asynchronous physical scenario with the per-step reference engine."""
    streams = Streams(scenario.seed, replicate)
    problem = problem_for(scenario)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        return _ReferenceRun(scenario, problem, streams, False).run()
