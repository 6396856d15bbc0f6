"""The SimPy engine: one ``simpy.Environment`` per run (docs/INTERNALS.md section 3).

The asynchronous physical execution model; :func:`fedsim.engine.run` dispatches to it (and
to the other models) from the table of :mod:`fedsim.engine.dispatch`:

* **asynchronous physical** (FedAsync = [P] Algorithms 1-2, FedBuff, AS-FedAvg; also the
  named ``expcycle`` model of THEORY_SPEC 10.2(b)) -- this module and, for FedAsync's
  hot path, :mod:`fedsim.engine.fedasync_fast`.  Each client is a
  generator process looping *read the model -> download -> local computation -> upload
  -> think*; it is always busy unless a think time is configured.  The server model is
  read when the download is requested (``delays.read_at = "request"``: the server sends
  its current model, [P] Section 3) or when the download completes (``"arrival"``).
  For speed, a FedAsync round costs one SimPy event and no generator: each client is a
  re-armed event whose callbacks run the cycle
  (:class:`fedsim.engine.fedasync_fast.FastClient`, a state machine equal to the process
  above).  At the read the client runs its Q local steps on the live
  model and keeps only its update; the upload event applies it at
  ``((t_read + dl) + c_1 + ... ) + ul``, the additions a step-by-step process makes
  (nothing the round reads changes in between: its noise stream is its own).  FedBuff and
  AS-FedAvg clients are generator processes with one event per round; their uploads are
  buffered here and handed to the server rule's ``apply`` (:mod:`fedsim.servers.base`)
  when the trigger fires.
  :mod:`fedsim.engine.reference` is the straightforward version (one timeout per
  download, local step and upload, noise drawn one step at a time); both give identical
  traces for the same seed (ties between events at exactly the same simulated time aside,
  which have probability 0 under continuous delays), tested in
  ``tests/engine/test_engine_reference.py``.  Per client the engine holds ~2.4 KB (its two
  streams without their seed sequences, one delay block, the pending update;
  ``benchmarks/engine.py --memory``).
* **synchronous rounds** (FedAvg, Per-FedAvg, pFedMe) -- :mod:`fedsim.engine.sync`;
* **AREA** (``algorithm`` and ``iterate_model``) -- :mod:`fedsim.engine.area`;
* **window** model of THEORY_SPEC 10.2(a) -- :mod:`fedsim.engine.window`.
* **AsyPFL** (Ma et al., Algorithm 1, eqs. (3)-(4): persistent personal models, adaptive
  local epochs) -- :mod:`fedsim.engine.asypfl`.

Aggregation triggers (FedBuff, AS-FedAvg, AREA): every upload, every ``count`` uploads, a
Poisson timer (rate), a fixed period.  Stopping: ``horizon.steps`` server steps or the
simulated time ``horizon.time`` (events at exactly that time are not processed), whichever
comes first; the processes are then abandoned with the environment.  Everything is
simulated time; wall-clock time never enters a result.  A run whose model diverges
(non-finite, or norm > 1e150) is stopped and marked, never raised.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fedsim.config import Scenario
from fedsim.engine.setup import RunSetup, inner_counters
from fedsim.engine.staleness import physical_staleness_bound
from fedsim.rng import Streams
from fedsim.servers.base import Upload
from fedsim.trace import KINDS, Trace

__all__ = ["AsyncRun", "K_UPLOAD", "K_AGG"]

K_UPLOAD = KINDS.index("upload")
K_AGG = KINDS.index("aggregate")


class AsyncRun(RunSetup):
    """One asynchronous physical run: clients on a shared SimPy clock, uploads buffered
    and applied by the algorithm's server rule when the trigger fires (every ``count``
    uploads, or a timer)."""

    lean = True

    def __init__(self, scenario: Scenario, problem, streams: Streams, progress: bool,
                 spec: Any) -> None:
        super().__init__(scenario, problem, streams, progress)
        self.spec = spec
        self.server = spec.server(scenario.algorithm, problem)
        self.w = self.server.init(self.w)
        self.samplers = self.make_samplers(lean=self.lean)
        self.noise = self.make_noise(lean=self.lean)
        n, d = self.n, self.d
        self.snaps = np.zeros((n, d))  # the model each client read (its pending update)
        self.out = np.empty(d)
        self.count = self.trigger_count()
        self.pending: list[tuple[Upload, float]] = []
        self.counts = [0] * n
        self.rec.busy(0.0, 1.0)
        self.bound = physical_staleness_bound(scenario.delays, n, self.rule.Q,
                                              scenario.delays.compute_per == "step",
                                              self.count)

    def run(self) -> Trace:
        self.start()
        self.start_timer(lambda: bool(self.pending) and self._aggregate())
        self.run_until_done()
        self.finish_counts()
        self.rec.client_updates[:] = self.counts
        self.rec.info.update(inner_counters(self.rule))
        return self.log.finish(self.w, self.env.now, self.bound)

    def finish_counts(self) -> None:
        """Hook of the fast path (its counts come from the step log)."""

    def start(self) -> None:
        """Set the clients going (at the current simulated time)."""
        for i in range(self.n):
            self.env.process(self._client(i))

    def _client(self, i: int):
        """A client cycle: read -> download -> compute -> upload -> buffer -> think."""
        log = self.log
        rule_round, rng, sampler = self.rule.round, self.noise[i], self.samplers[i]
        snap, out = self.snaps[i], self.out
        arrival = self.scenario.delays.read_at == "arrival"
        while True:
            download, compute, upload, think = sampler.next_round()
            got = yield from self.read_and_upload(download, compute, upload, arrival,
                                                  self.w, snap)
            if got is None:
                return
            omega, t_read, t = got
            rule_round(i, snap, out, rng)
            self.counts[i] += 1
            if self._receive(i, snap, out, omega, t_read):
                return
            if think != 0.0:
                yield from self.think_pause(t, think)
                if log.stopped:
                    return

    def _receive(self, i: int, read: np.ndarray, new: np.ndarray, omega: int,
                 t_read: float) -> bool:
        """Buffer one upload; aggregate when the count trigger fires.  True: stop."""
        self.pending.append((Upload(i, read.copy(), new.copy(), self.log.t - omega), t_read))
        if self.count is not None and len(self.pending) >= self.count:
            return self._aggregate()
        return False

    def _aggregate(self) -> bool:
        """One server step from the buffered uploads (the server rule's ``apply``)."""
        log, now = self.log, self.env.now
        ups = [u for u, _ in self.pending]
        # no server step happens while uploads wait, so staleness at arrival = at the step
        stale_steps = max(u.staleness for u in ups)
        stale_time = max(now - tr for _, tr in self.pending)
        self.w, diag = self.server.apply(self.w, ups)
        k = diag["fill"]
        who = ups[0].client if k == 1 else -1
        self.pending.clear()
        return log.log(now, K_AGG, who, stale_steps, stale_time, k, self.w)
