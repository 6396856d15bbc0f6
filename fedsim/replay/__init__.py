"""Replicates in lockstep (issue 10): a vectorised schedule and a batched NumPy replay.

* :mod:`fedsim.replay.timeline` -- the FedAsync physical timeline of one replicate as
  cumulative sums of each client's renewal stream and a merge (no SimPy), in chunks;
  bitwise the event sequence of ``fedsim.engine.run``.
* :mod:`fedsim.replay.seeding` -- many ``fedsim.rng`` client streams at once (the
  ``SeedSequence`` hash vectorised; the same bits at ~1/10 of the cost).
* :mod:`fedsim.replay.quadratic` -- the batched Option A local-SGD kernel on quadratics
  (and its Q-step fold).
* :mod:`fedsim.replay.fedasync` -- FedAsync replayed along R timelines at once, as (R, d)
  arrays, with a ring buffer of past models; per-replicate divergence freezing.

Each module's docstring states the exact part of the engine contract it relies on.
"""

from fedsim.replay.fedasync import BatchResult, replay_fedasync, supports
from fedsim.replay.timeline import FedAsyncTimeline, TimelineChunk, timeline_arrays

__all__ = ["BatchResult", "FedAsyncTimeline", "TimelineChunk", "replay_fedasync", "supports",
           "timeline_arrays"]
