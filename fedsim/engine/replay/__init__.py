"""Replicates in lockstep (issue 10): a vectorised schedule and a batched NumPy replay.

* :mod:`fedsim.engine.replay.event_timeline` -- the FedAsync physical timeline of one
  replicate by a compiled copy of the engine's event loop (Constant/Exponential delays);
* :mod:`fedsim.engine.replay.timeline` -- the same timeline as cumulative sums of each
  client's renewal stream and a merge (no SimPy), in chunks, for any delay model; both
  bitwise the event sequence of ``fedsim.engine.run``.
* :mod:`fedsim.engine.replay.streams` -- ``fedsim.rng``'s PCG64 streams as state rows, drawn
  from compiled code (NumPy's numbers and states, bit for bit).
* :mod:`fedsim.engine.replay.seeding` -- many ``fedsim.rng`` client streams at once (the
  ``SeedSequence`` hash vectorised; the same bits at ~1/10 of the cost).
* :mod:`fedsim.engine.replay.kernel` -- the one compiled replay loop: a client rule and a
  server rule (bound per combination, from :mod:`fedsim.local` / :mod:`fedsim.servers`) and
  a problem's compiled view along a timeline,
  a ring buffer of past models, metrics at the recorded steps, divergence freezing.
* :mod:`fedsim.engine.replay.fedasync` -- FedAsync replayed along R timelines, replicate by
  replicate, through the kernel with the very rules the SimPy engine calls.
* :mod:`fedsim.engine.replay.area` -- AREA's Appendix A iterate model on [A] Theorem 8's
  norm family (deterministic subgradients): merged renewal timelines, lockstep rows.

Each module's docstring states the exact part of the engine contract it relies on.
"""

from fedsim.engine.replay.fedasync import BatchResult, replay_fedasync, supports
from fedsim.engine.replay.timeline import FedAsyncTimeline, TimelineChunk, timeline_arrays

__all__ = ["BatchResult", "FedAsyncTimeline", "TimelineChunk", "replay_fedasync", "supports",
           "timeline_arrays"]
