"""Event tables and the one replay (docs/INTERNALS.md section 3).

* :mod:`fedsim.engine.replay.table` -- ``EventTable``: one replicate's timeline (steps,
  the contributions each consumes, per-run facts), what every timeline writer produces;
* :mod:`fedsim.engine.replay.event_timeline` -- the physical model's upload timeline of one
  replicate by a compiled copy of its event loop (Constant/Exponential delays);
* :mod:`fedsim.engine.replay.timeline` -- the same timeline as cumulative sums of each
  client's renewal stream and a merge (no SimPy), in chunks, for any delay model; both
  bitwise the SimPy writer's; :mod:`fedsim.engine.replay.uploads` groups it into server
  steps;
* :mod:`fedsim.engine.replay.kernel` -- ``table_kernel``: the one compiled loop applying a
  client rule and a server rule (their uniform forms, :mod:`fedsim.local.forms`) along an
  event table, with the ring of server states, divergence freezing and snapshots;
* :mod:`fedsim.engine.replay.group_kernel`, :mod:`fedsim.engine.replay.group` -- many
  replicates' tables in one compiled call (the outer loop calls that loop per replicate);
* :mod:`fedsim.engine.replay.metrics` -- the recorded metrics from the snapshots;
* :mod:`fedsim.engine.replay.driver` -- ``replay_table``: R tables -> R Traces;
* :mod:`fedsim.engine.replay.fedasync` -- the upload tables of a count trigger and FedAsync's
  array-shaped ``replay_fedasync``;
* :mod:`fedsim.engine.replay.area` -- AREA's table writer for ``run_batch`` (the iterate
  model's tables merged compiled, :mod:`~fedsim.engine.replay.area_timeline`; SimPy's
  otherwise), replayed by the one loop.

Each module's docstring states the exact part of the engine contract it relies on.
"""

from fedsim.engine.replay.fedasync import BatchResult, replay_fedasync, supports
from fedsim.engine.replay.timeline import FedAsyncTimeline, timeline_arrays
from fedsim.engine.replay.uploads import TimelineChunk

__all__ = ["BatchResult", "FedAsyncTimeline", "TimelineChunk", "replay_fedasync", "supports",
           "timeline_arrays"]
