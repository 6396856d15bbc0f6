"""EventTable's facts (one compiled pass, ``table._table_facts``) equal their NumPy
derivation on random tables, steps with no contribution included."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedsim.engine.replay.table import EventTable
from fedsim.errors import FedsimError


def _table(per_step, reads, steps):
    T = len(per_step)
    P = int(sum(per_step))
    return EventTable(time=np.arange(1.0, T + 1), kind=np.ones(T), client=np.zeros(T),
                      staleness_steps=np.zeros(T), staleness_time=np.zeros(T),
                      buffer_fill=per_step, ptr=np.concatenate(([0], np.cumsum(per_step))),
                      c_client=np.zeros(P), c_read=reads, c_steps=steps, c_stale=np.zeros(P),
                      sim_time=float(T), steps_done=T, client_updates=[P],
                      concurrency_time=[0.0], concurrency_busy=[1.0], metric_steps=[0, T],
                      staleness_bound=np.inf, u_client=np.zeros(P), u_before=np.zeros(P))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=12), st.data())
def test_facts_equal_numpy(per_step, data):
    T = len(per_step)
    cons = np.repeat(np.arange(1, T + 1), per_step)
    reads = np.array([data.draw(st.integers(-1, int(t))) for t in cons], dtype=np.int64)
    steps = np.array([data.draw(st.integers(-1, 5)) for _ in cons], dtype=np.int64)
    ok = cons.size == 0 or (reads.min() >= 0 and (cons - reads).min() >= 1
                            and steps.min() >= 0)
    if not ok:
        with pytest.raises(FedsimError, match="c_read|c_steps"):
            _table(per_step, reads, steps)
        return
    tb = _table(per_step, reads, steps)
    assert tb.max_lag() == (max(1, int((cons - reads).max())) if cons.size else 1)
    assert tb.max_contributions() == max(per_step)
    assert tb.max_steps() == (int(steps.max()) if cons.size else 0)
