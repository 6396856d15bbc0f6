"""The in-point budget of ``fedsim search`` stops a point stuck in one C call (issue 21):
the point runs in a worker process that is killed, and its row says "stopped by budget"."""

from __future__ import annotations

import dataclasses
import json
import os
import time

import pandas as pd
import pytest
from fedsim.validation.families import get_family
from fedsim.validation.search import SearchSettings, run_search


def stuck_builder(q):
    """theorem8-norm's builder, except that K = 3 spends minutes in one C call
    (``sum`` over a range: no bytecode runs, so SIGALRM's handler never does)."""
    if int(q["K"]) == 3:
        sum(range(10**13))
    return get_family("theorem8-norm").builder(q)


def _kids(pid: int) -> set[int]:
    try:
        return {int(x) for x in open(f"/proc/{pid}/task/{pid}/children").read().split()}
    except OSError:  # pragma: no cover - no /proc, or the process is gone
        return set()


def _children() -> set[int]:
    """The pool workers started by this process: the children of its children (the
    forkserver and the resource tracker stay for the life of the process, by design)."""
    return {g for c in _kids(os.getpid()) for g in _kids(c)}


def test_point_stuck_in_a_c_call_is_stopped_by_budget(tmp_path):
    base = get_family("theorem8-norm")
    fam = dataclasses.replace(base, name="stuck-norm", title="stuck", doc="stuck",
                              builder=stuck_builder)
    before = _children()
    st = SearchSettings(budget=8.0, grid=2, refine=0, confirm=0, workers=2, progress=False)
    t0 = time.monotonic()
    from fedsim.validation import families as vf

    vf.register_family(fam)
    try:
        df = run_search("stuck-norm", "K=2..3", st, out=tmp_path, fixed={"n": 2})
    finally:
        vf.unregister_family("stuck-norm")
    secs = time.monotonic() - t0
    assert secs < 8.0 + 10.0, secs          # the budget, plus the worker's start and kill
    rows = df.set_index("K")
    assert rows.loc[2, "status"] != "TIMEOUT" and rows.loc[2, "measured"] > 0
    assert rows.loc[3, "status"] == "TIMEOUT"
    assert "stopped by budget" in rows.loc[3, "oracle"]
    assert "worker process was killed" in rows.loc[3, "oracle"]
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["timed_out"] == 1 and s["budget_exhausted"]
    deadline = time.monotonic() + 5
    while _children() - before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not (_children() - before), "a point worker outlived the search"


@pytest.mark.parametrize("space", ["K=2..5, p_s=0.2..0.4"])
def test_points_measured_in_the_worker_equal_in_process(tmp_path, space):
    """Same code, same seeds: the worker process gives the numbers this process gives."""
    frames = []
    for workers in (1, 2):
        st = SearchSettings(budget=120, grid=4, refine=0, confirm=0, workers=workers,
                            progress=False)
        out = tmp_path / f"w{workers}"
        run_search("theorem8-norm", space, st, out=out, fixed={"n": 2})
        frames.append(pd.read_csv(out / "search.csv").drop(columns=["seconds"]))
    pd.testing.assert_frame_equal(frames[0], frames[1])
