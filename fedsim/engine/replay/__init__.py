"""Replicates in lockstep (issue 10): a vectorised schedule and a batched NumPy replay.

* :mod:`fedsim.engine.replay.timeline` -- the FedAsync physical timeline of one replicate as
  cumulative sums of each client's renewal stream and a merge (no SimPy), in chunks;
  bitwise the event sequence of ``fedsim.engine.run``.
* :mod:`fedsim.engine.replay.seeding` -- many ``fedsim.rng`` client streams at once (the
  ``SeedSequence`` hash vectorised; the same bits at ~1/10 of the cost).
* :mod:`fedsim.engine.replay.quadratic` -- the batched Option A local-SGD kernel on quadratics
  (and its Q-step fold).
* :mod:`fedsim.engine.replay.fedasync` -- FedAsync replayed along R timelines at once, as (R, d)
  arrays, with a ring buffer of past models; per-replicate divergence freezing.
* :mod:`fedsim.engine.replay.area` -- AREA's Appendix A iterate model on [A] Theorem 8's
  norm family (deterministic subgradients): merged renewal timelines, lockstep rows.

Each module's docstring states the exact part of the engine contract it relies on.
"""

from fedsim.engine.replay.fedasync import BatchResult, replay_fedasync, supports
from fedsim.engine.replay.timeline import FedAsyncTimeline, TimelineChunk, timeline_arrays

__all__ = ["BatchResult", "FedAsyncTimeline", "TimelineChunk", "replay_fedasync", "supports",
           "timeline_arrays"]
