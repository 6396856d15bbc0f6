"""Many replicates' FedAsync tables in one compiled call (the group writer): each
replicate's table is the per-replicate writer's, column for column; the group's columns
are those TableGroup concatenates; nothing depends on the group's size or order."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedsim.engine import run_batch
from fedsim.engine.models.physical import write
from fedsim.engine.models.physical.group_writer import (
    GroupTables,
    group_table_set,
    group_writes,
    upload_group,
)
from fedsim.engine.models.physical.upload_tables import fedasync_tables
from fedsim.engine.replay.group import TableGroup
from fedsim.engine.staleness import physical_staleness_bound
from fedsim.rng.delays import DelayPlan
from tests.engine.replay.test_replay_fedasync import CASES, scenario

TABLE_COLS = ("time", "kind", "client", "staleness_steps", "staleness_time", "buffer_fill",
              "ptr", "c_client", "c_read", "c_steps", "c_stale", "client_updates",
              "concurrency_time", "concurrency_busy", "metric_steps", "u_client", "u_before",
              "b_time", "b_delta", "b_gate", "b_before")


def _E(rate: float) -> dict:
    return {"kind": "exponential", "rate": rate}


GROUP_COLS = ("soff", "coff", "moff", "ptr", "kind", "buffer_fill", "c_client", "c_read",
              "c_steps", "c_stale", "rec")


def _bound(sc) -> float:
    return physical_staleness_bound(sc.delays, sc.problem.n, int(sc.algorithm.get("Q")),
                                    sc.delays.compute_per == "step", 1)


def _write(sc, reps):
    return upload_group(sc, reps, n=sc.problem.n, Q=int(sc.algorithm.get("Q")),
                        staleness_bound=_bound(sc), plan=DelayPlan(sc))


def assert_tables_equal(a, b) -> None:
    for c in TABLE_COLS:
        x, y = getattr(a, c), getattr(b, c)
        assert x.dtype == y.dtype and np.array_equal(x, y), c
    assert (a.sim_time, a.steps_done, a.staleness_bound, a.info) == (
        b.sim_time, b.steps_done, b.staleness_bound, b.info)


GROUP_CASES = {
    "basic": dict(steps=300),
    "think_constant_ties": CASES["constant_ties_think"],
    "arrival_think_steps_and_time": dict(
        delays={"download": _E(3.0), "compute": _E(1.0), "think": _E(2.0),
                "read_at": "arrival"}, steps=400, time=30.0),
    "per_step_compute_every_7": dict(delays={"compute": _E(2.0), "compute_per": "step"},
                                     steps=200, every=7),
    "q1": dict(Q=1, steps=250),
}


def _scenario(name: str):
    kw = dict(GROUP_CASES[name])
    time = kw.pop("time", None)
    sc = scenario(**kw)
    if time is not None:  # a step horizon and a time horizon: whichever comes first
        sc = dataclasses.replace(sc, horizon=dataclasses.replace(sc.horizon, time=time))
    return sc


@pytest.mark.parametrize("name", sorted(GROUP_CASES))
def test_each_table_is_the_per_replicate_writers(name: str) -> None:
    sc = _scenario(name)
    assert group_writes(sc, DelayPlan(sc))
    reps = [0, 3, 4]
    ug = _write(sc, reps)
    ref = fedasync_tables(sc, reps, n=sc.problem.n, Q=int(sc.algorithm.get("Q")), chunk=64)
    for k in range(len(reps)):
        assert_tables_equal(ug.table(k), ref[k])
        assert ug.sim_time[k] == ref[k].sim_time
        assert np.array_equal(ug.client_updates[k], ref[k].client_updates)
    grp = TableGroup(ref)
    for c in GROUP_COLS:
        x, y = getattr(ug.group, c), getattr(grp, c)
        assert x.dtype == y.dtype and np.array_equal(x, y), c
    assert (ug.group.H, ug.group.kmax, ug.group.smax, ug.group.n, len(ug.group)) == (
        grp.H, grp.kmax, grp.smax, grp.n, len(grp))


def test_a_time_horizon_inside_the_steps_stops_some_replicates() -> None:
    """The time horizon ends some replicates before their step horizon: their tables are
    shorter, the group's offsets follow, the others keep their steps."""
    sc = _scenario("arrival_think_steps_and_time")
    ug = _write(sc, list(range(6)))
    done = np.diff(ug.group.soff)
    assert (done < 400).any()
    assert all(ug.table(k).steps_done == done[k] for k in range(6))
    assert np.all(ug.sim_time[done < 400] == 30.0)


@settings(max_examples=12, deadline=None)
@given(reps=st.lists(st.integers(0, 40), min_size=1, max_size=6, unique=True))
def test_a_replicate_does_not_depend_on_its_group(reps: list[int]) -> None:
    sc = _scenario("think_constant_ties")
    ug = _write(sc, reps)
    for k, r in enumerate(reps):
        assert_tables_equal(ug.table(k), _write(sc, [r]).table(0))


@pytest.mark.parametrize("name", ["basic", "arrival_think_steps_and_time"])
def test_replay_is_the_same_with_either_writer(name: str) -> None:
    """The model's rule takes the group writer here; its records are the same bits for
    any piece size, and its tables (built when asked for) the per-replicate writer's."""
    from fedsim.engine import problem_for

    sc = _scenario(name)
    reps = list(range(7))
    written = write(sc, problem_for(sc), reps)
    assert isinstance(written.tables, GroupTables) and written.groups
    res = run_batch(sc, reps, output="records")
    for group in (1, 3):
        other = run_batch(sc, reps, output="records", group=group)
        assert np.array_equal(other.final_w, res.final_w)
        assert np.array_equal(other.sim_time, res.sim_time)
        assert np.array_equal(other.client_updates, res.client_updates)
        for m in res.metric_names:
            assert np.array_equal(other.grid[m], res.grid[m], equal_nan=True)
    ref = fedasync_tables(sc, reps, n=sc.problem.n, Q=int(sc.algorithm.get("Q")))
    for k in range(len(reps)):
        assert_tables_equal(written.tables[k], ref[k])
        assert res.sim_time[k] == ref[k].sim_time
        assert written.tables.end(k)[0] == ref[k].sim_time


def test_a_time_horizon_only_run_takes_the_per_replicate_writer() -> None:
    from fedsim.engine import problem_for

    for case in ("arrival_think_time_horizon", "uniform_think_merge"):
        sc = scenario(**CASES[case])
        assert not group_writes(sc, DelayPlan(sc))
        assert isinstance(write(sc, problem_for(sc), [0]), list)


def test_buffers_over_the_memory_budget_are_refused_before_allocation() -> None:
    """A FedsimError naming the size and the budget, from the writer's columns and from
    the replay's buffers, before either is allocated; within the budget the same run
    goes through."""
    from fedsim.config.budget import set_memory_budget
    from fedsim.engine.replay.buffers import ReplayMemoryError, check_buffers
    from fedsim.errors import FedsimError

    assert issubclass(ReplayMemoryError, FedsimError)
    sc = scenario(steps=2000, n=8)
    try:
        set_memory_budget(100_000)  # the timeline of 3 x 2000 uploads needs ~451 KiB
        with pytest.raises(ReplayMemoryError,
                           match=r"FedAsync timeline of 3 .* KiB .*budget of 97.7 KiB"):
            run_batch(sc, [0, 1, 2], output="records")
    finally:
        set_memory_budget(None)
    ug = _write(sc, [0, 1, 2])
    ref = run_batch(sc, [0, 1, 2], output="records")
    need = ug.group.steps * 8  # the replay's fills alone
    try:
        set_memory_budget(need - 1)
        with pytest.raises(ReplayMemoryError, match=r"replay of 3 replicate\(s\) \(6000 steps\)"):
            from fedsim.engine.replay.driver import replay_table
            replay_table(sc, [ug.table(k) for k in range(3)], replicates=[0, 1, 2])
    finally:
        set_memory_budget(None)
    assert check_buffers("x", {"a": 3, "b": 4}, budget=7) == 7
    with pytest.raises(ReplayMemoryError, match=r"x needs 8 B of buffers \(b: 5 B\)"):
        check_buffers("x", {"a": 3, "b": 5}, budget=7)
    assert ref.steps_done.tolist() == [2000] * 3


def test_run_and_run_batch_take_the_group_writers_tables() -> None:
    """``run``/``run_batch`` write FedAsync's tables with the group writer (several
    groups here), and their traces are the per-replicate tables' replays."""
    from fedsim.engine import run
    from fedsim.engine.replay.driver import replay_table

    sc = _scenario("think_constant_ties")
    reps = [0, 2, 5]
    ref = fedasync_tables(sc, reps, n=sc.problem.n, Q=int(sc.algorithm.get("Q")))
    got = group_table_set(sc, reps, n=sc.problem.n, Q=int(sc.algorithm.get("Q")),
                          staleness_bound=_bound(sc), plan=DelayPlan(sc),
                          steps=400)  # one replicate a group
    assert len(got.groups) == 3
    for a, b in zip(got.tables, ref, strict=True):
        assert_tables_equal(a, b)
    want = replay_table(sc, ref, replicates=reps)
    for k, tr in enumerate(run_batch(sc, reps)):
        assert tr.equals(want[k])
    assert run(sc, 5).equals(want[2])
