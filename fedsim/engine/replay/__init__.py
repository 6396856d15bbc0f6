"""The event table and the one replay (docs/INTERNALS.md section 3); no SimPy, no writer.

* :mod:`~fedsim.engine.replay.table` -- ``EventTable``: one replicate's timeline (steps, the
  contributions each consumes, per-run facts), what every execution model's writer hands on;
* :mod:`~fedsim.engine.replay.driver` -- ``replay_records`` / ``replay_table``: R tables ->
  R records or Traces, and ``TableSet``, what a writer may return in place of a list;
* :mod:`~fedsim.engine.replay.kernel` -- ``table_kernel``: the one compiled loop applying a
  client rule and a server rule (their forms, :mod:`fedsim.local.forms`) along a table;
* :mod:`~fedsim.engine.replay.group_kernel`, :mod:`~fedsim.engine.replay.group` -- many
  replicates' tables in one compiled call;
* :mod:`~fedsim.engine.replay.metrics` -- the recorded metrics from the snapshots;
* :mod:`~fedsim.engine.replay.buffers` -- the memory check before any buffer is allocated.

The streams it draws from (compiled state rows, seeded in bulk) and the delay draws of a
plan live in :mod:`fedsim.rng`.

The writers live in their execution models' homes (:mod:`fedsim.engine.models`).
"""
