"""AREA's runs replayed by ``run_batch`` along the tables of
:func:`fedsim.engine.models.area.area_table_set` (the iterate model's compiled merge, norm
family and Theorem 7 quadratics; other AREA runs SimPy's tables): per replicate the
engine's trace, bit for bit.

Timelines (times, kinds, clients, staleness, buffer fill) must be bitwise the engine's, and
so must the metrics and the final model (the replay calls the engine's compiled rules and
the problem's compiled metrics; ``Trace.equals``); a replicate's trace must not depend on
the batch; a diverging replicate must end where the engine's does without touching the
others; tied event times defer to the engine.
"""

from __future__ import annotations

import numpy as np
import pytest

from fedsim.algorithms import get_algorithm
from fedsim.config import Scenario
from fedsim.engine import problem_for, run, run_batch, supports
from fedsim.engine.models.area import merged_timeline
from fedsim.engine.models.area.merge import area_tables
from fedsim.engine.models.area.schedule import area_client_rule
from fedsim.engine.models.area.simpy_writer import area_table
from fedsim.engine.replay.driver import replay_table
from fedsim.rng import Streams

TIMELINE = ("time", "kind_code", "client", "staleness_steps", "staleness_time",
            "buffer_fill", "metric_steps", "client_updates", "concurrency_time",
            "concurrency_busy")


def norm_scenario(n: int = 6, dim: int = 1, K: int = 150, M: int = 3, every: int = 7,
                  alpha: dict | None = None, trigger: dict | None = None,
                  compute: dict | None = None, per: str = "round", w0=1.0,
                  centers=None, metrics=("ergodic_f_gap", "f_gap", "dist_sq"),
                  seed: int = 3, override: list | None = None) -> Scenario:
    prob = {"kind": "norm", "B": 1.5, "n": n, "dim": dim}
    if centers is not None:
        prob["centers"] = centers
    return Scenario.from_dict({
        "name": "area-norm", "seed": seed, "problem": prob,
        "algorithm": {"name": "area", "model": "iterate_model", "client_rule": "area",
                      "M": M, "batch": 1, "w0": w0,
                      "alpha": alpha or {"kind": "constant", "value": 0.05}},
        "delays": {"compute": compute or {"kind": "exponential", "rate": 1.0},
                   "compute_per": per, **({"override": override} if override else {})},
        "trigger": trigger or {"kind": "poisson", "rate": 3.0},
        "horizon": {"steps": K},
        "record": {"every": every, "metrics": list(metrics)}})


def simpy_reference(sc: Scenario, r: int):
    """Replicate ``r`` through SimPy's table (the reference writer), replayed."""
    p = problem_for(sc)
    a = sc.algorithm
    tr = replay_table(sc, [area_table(sc, p, Streams(sc.seed, r))],
                      area_client_rule(sc, p).replay_form(),
                      get_algorithm(a.name).server(a, p).replay_form(), replicates=[r],
                      problem=p)[0]
    tr.info["k"] = tr.steps_done
    return tr


def assert_engine(sc: Scenario, b, r: int) -> None:
    """``b`` is SimPy's table replayed, bit for bit, and ``run``'s trace."""
    assert run(sc, r).equals(b)
    a = simpy_reference(sc, r)
    for c in TIMELINE:
        assert np.array_equal(getattr(a, c), getattr(b, c)), c
    assert (a.diverged, a.diverged_step, a.steps_done, a.sim_time, a.info) == (
        b.diverged, b.diverged_step, b.steps_done, b.sim_time, b.info)
    assert a.staleness_bound == b.staleness_bound and a.concurrency_mean == b.concurrency_mean
    assert list(a.metrics) == list(b.metrics)
    for m in a.metrics:
        x, y = a.metrics[m], b.metrics[m]
        fin = np.isfinite(x)
        assert np.array_equal(fin, np.isfinite(y)), m
        np.testing.assert_allclose(y[fin], x[fin], rtol=1e-10, atol=0, err_msg=m)
    if not a.diverged:
        np.testing.assert_allclose(b.final_w, a.final_w, rtol=1e-10, atol=1e-300)
    assert a.equals(b)  # in fact bit for bit: the same compiled rules and metrics


CASES = {
    "basic": {},
    "dim3_distinct_centers": dict(dim=3, n=4, centers=[[0.0, 1.0, 0.0], [1.0, 0.0, 0.0],
                                                       [0.0, 0.0, 1.0], [1.0, 1.0, 1.0]],
                                  w0=[3.0, -2.0, 0.5]),
    "c_over_k_plus_d_every1": dict(alpha={"kind": "c_over_k_plus_d", "c": 2.0, "d": 10.0},
                                   every=1, K=80),
    "uneven_rates": dict(trigger={"kind": "poisson", "rate": 0.37},
                         compute={"kind": "exponential", "rate": 2.5},
                         override=[{"clients": [1, 4], "compute": {"kind": "exponential",
                                                                   "rate": 9.0}}]),
    "grad_and_moreau_metrics": dict(dim=2, n=3, centers=[[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]],
                                    w0=[2.0, 2.0], metrics=("grad_sq", "f_gap",
                                                            "ergodic_f_gap")),
    "fast_clients": dict(compute={"kind": "exponential", "rate": 4.0},
                         trigger={"kind": "poisson", "rate": 0.5}),
    "many_clients_k_on_grid": dict(n=30, M=10, K=140, every=35),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_replay_equals_engine(name: str) -> None:
    sc = norm_scenario(**CASES[name])
    assert supports(sc) and merged_timeline(sc)
    reps = [0, 1, 4]
    for r, b in zip(reps, run_batch(sc, reps), strict=True):
        assert_engine(sc, b, r)


def test_a_replicate_does_not_depend_on_the_batch() -> None:
    sc = norm_scenario()
    big = run_batch(sc, list(range(9)))
    for r in (0, 5, 8):
        (one,) = run_batch(sc, [r])
        assert one.equals(big[r])
    sub = run_batch(sc, [8, 5])
    assert sub[0].equals(big[8]) and sub[1].equals(big[5])


def test_diverging_replicates_end_where_the_engine_does() -> None:
    # a huge step: the local rounds overshoot by ~alpha B M and |x_s| passes 1e150 at a
    # replicate-dependent step (replicate 4 never does within K)
    sc = norm_scenario(alpha={"kind": "constant", "value": 1e150}, K=400, every=5)
    reps = list(range(6))
    traces = run_batch(sc, reps)
    assert [t.diverged_step for t in traces] == [156, 379, 51, 94, None, 86]
    for r, b in zip(reps, traces, strict=True):
        assert_engine(sc, b, r)


def test_one_diverged_row_leaves_the_others_bitwise() -> None:
    sc = norm_scenario(alpha={"kind": "constant", "value": 1e150}, K=400, every=5)
    alone = run_batch(sc, [4])[0]  # the one that does not diverge
    mixed = run_batch(sc, [2, 4, 3])  # beside two that diverge at steps 51 and 94
    assert not alone.diverged and mixed[0].diverged and mixed[2].diverged
    assert mixed[1].equals(alone)


def test_tied_event_times_defer_to_the_engine(monkeypatch) -> None:
    """Ties have probability 0 under the model's exponential clocks; a replicate whose
    timeline has one takes SimPy's table (forced here), the others the merged one."""
    import fedsim.engine.models.area as ra

    sc = norm_scenario(K=60)
    real, simpy_table = ra.area_tables, ra.area_table

    def tied_for_one(scenario, reps):
        tabs = real(scenario, reps)
        tabs.tie[:] = [r == 1 for r in reps]
        return tabs

    calls = []
    monkeypatch.setattr(ra, "area_tables", tied_for_one)
    monkeypatch.setattr(ra, "area_table",
                        lambda s, p, st: calls.append(st.replicate) or simpy_table(s, p, st))
    out = run_batch(sc, [0, 1, 2])
    assert calls == [1]
    for r, b in enumerate(out):
        assert_engine(sc, b, r)


def test_the_merge_by_hand() -> None:
    """Two clients and a timer merged by hand: order, staleness, fill, a tie, and the
    requests for more draws."""
    from fedsim.engine.models.area.merge import K_CLIENT, K_SERVER, merge_events

    C = np.array([[1.0, 1.0, 1.0, 1.0], [0.5, 0.7, 0.9, 1.1]])
    S = np.array([1.5, 1.5, 1.5])
    cols = [np.zeros(5), np.zeros(5, np.int8), np.zeros(5, np.int64), np.zeros(5, np.int64),
            np.zeros(5), np.zeros(5, np.int64)]
    nc = np.array([4, 4])
    # times: c1 0.5, c0 1.0, c1 1.2, s 1.5; the 5th (c1 2.1 vs c0 2.0) is not a tie
    assert merge_events(C, nc, S, 3, 4, *cols, K_CLIENT, K_SERVER) == 1
    time, kind, client, st, stt, fill = cols
    assert list(time[1:]) == [0.5, 1.0, 1.2, 1.5]
    assert list(client[1:]) == [1, 0, 1, -1]
    assert list(kind[1:]) == [K_CLIENT, K_CLIENT, K_CLIENT, K_SERVER]
    assert list(st[1:]) == [0, 1, 2, 0]        # steps since the client's previous event
    np.testing.assert_array_equal(stt[1:], [0.5, 1.0, 0.7, 0.0])
    assert list(fill[1:]) == [1, 2, 3, 3]      # pending messages; the server takes 3
    S2 = np.array([1.0, 1.0])                  # the timer fires at 1.0 with client 0: a tie
    assert merge_events(C, nc, S2, 2, 4, *cols, K_CLIENT, K_SERVER) == 2
    assert merge_events(C, nc, S2, 1, 4, *cols, K_CLIENT, K_SERVER) == -2  # timer short
    assert merge_events(C, np.array([1, 4]), S, 3, 4, *cols, K_CLIENT, K_SERVER) == -1


def test_the_two_delay_draw_paths_agree() -> None:
    """The compiled PCG64 draws and the ClientDelayStream draws give the same tables (both
    are the engine's blocks)."""
    base = {k: v for k, v in CASES["uneven_rates"].items() if k not in ("n", "trigger")}
    for trig in ({"kind": "poisson", "rate": 0.37}, {"kind": "poisson", "rate": 20.0}):
        sc = norm_scenario(n=5, K=300, trigger=trig, **base)
        a, b = area_tables(sc, [0, 3, 11]), area_tables(sc, [0, 3, 11], compiled=False)
        for f in ("time", "kind", "client", "stale_steps", "stale_time", "fill", "tie"):
            assert np.array_equal(getattr(a, f), getattr(b, f)), (trig, f)


def test_other_area_runs_replay_simpy_tables() -> None:
    """Algorithm 2 and a time horizon (SimPy's tables) are replayed too, and so is the
    iterate model on logistic data (its own compiled view), bit for bit the engine's
    traces."""
    variants = []
    d = norm_scenario(K=60).to_dict()
    d["algorithm"]["model"] = "algorithm"
    variants.append(d)
    d = norm_scenario(K=60).to_dict()
    d["horizon"] = {"time": 20.0}
    variants.append(d)
    d = norm_scenario(K=40).to_dict()
    d["problem"] = {"kind": "logistic", "n_clients": 6, "dim": 3, "samples_per_client": 8,
                    "seed": 0}
    d["record"]["metrics"] = ["grad_sq"]
    variants.append(d)
    for k, d in enumerate(variants):
        sc = Scenario.from_dict(d)
        assert supports(sc) and merged_timeline(sc) == (k == 2)
        for r, b in zip([0, 2], run_batch(sc, [0, 2]), strict=True):
            assert_engine(sc, b, r)


def test_tables_of_a_batch_equal_the_single_ones() -> None:
    sc = norm_scenario(n=7, K=500, **{k: v for k, v in CASES["uneven_rates"].items()
                                      if k != "n"})
    reps = [0, 2, 9, 11]
    many = area_tables(sc, reps)
    for k, r in enumerate(reps):
        one = area_tables(sc, [r])
        for f in ("time", "kind", "client", "stale_steps", "stale_time", "fill", "tie"):
            assert np.array_equal(getattr(one, f)[0], getattr(many, f)[k]), f


def theorem7_scenario(K: int = 400, every: int = 50, noise_sd: float = 0.3, M: int = 2,
                      dim: int = 2, batch: int = 1) -> Scenario:
    return Scenario.from_dict({
        "name": "area-quad", "seed": 5,
        "problem": {"kind": "quadratic", "n": 3, "dim": dim, "mu": 0.5, "L": 1.0,
                    "heterogeneity": 1.0, "noise_sd": noise_sd, "shared_hessian": False,
                    "seed": 2},
        "algorithm": {"name": "area", "model": "iterate_model", "client_rule": "area",
                      "M": M, "batch": batch, "alpha": {"kind": "theorem7"}},
        "delays": {"compute": {"kind": "exponential", "rate": 1.0},
                   "override": [{"clients": [2], "compute": {"kind": "exponential",
                                                             "rate": 3.0}}]},
        "trigger": {"kind": "poisson", "rate": 2.0},
        "horizon": {"steps": K},
        "record": {"every": every, "metrics": ["dist_sq", "grad_sq", "f_gap"]}})


@pytest.mark.parametrize("kw", [{}, {"noise_sd": 0.0}, {"every": 7, "M": 3, "dim": 3},
                                {"batch": 4}])
def test_theorem7_quadratic_replay_equals_engine(kw) -> None:
    """Theorem 7's quadratics: the rounds' normals are the engine's (each client's noise
    stream, M d per event, in event order)."""
    sc = theorem7_scenario(**kw)
    assert supports(sc)
    reps = [0, 3, 4]
    both = run_batch(sc, reps)
    for r, b in zip(reps, both, strict=True):
        assert_engine(sc, b, r)
    assert run_batch(sc, [4])[0].equals(both[2])


def test_replicate_groups_do_not_change_a_trace(monkeypatch) -> None:
    """The replicates are replayed a group at a time; groups of one give the same bits."""
    import fedsim.engine.replay.group as rg

    sc = theorem7_scenario(K=150)
    whole = run_batch(sc, [0, 1, 2])
    monkeypatch.setattr(rg, "GROUP_STEPS", 1)
    assert all(a.equals(b) for a, b in zip(run_batch(sc, [0, 1, 2]), whole, strict=True))


def test_server_streams_equal_fedsim_rng() -> None:
    from fedsim.rng import Streams
    from fedsim.rng.seeding import server_bitgens

    for r, bg in zip([0, 5, 123], server_bitgens(42, [0, 5, 123], "timer"), strict=True):
        x = np.random.Generator(bg).standard_normal(8)
        assert np.array_equal(x, Streams(42, r).server("timer").standard_normal(8))


def test_quadratic_ergodic_gap_equals_engine() -> None:
    """The ergodic gap on a quadratic (noise drawn per event) off the record grid: the
    merged tables replayed in a group equal the engine's SimPy table replayed alone."""
    quad = Scenario.from_dict({
        "name": "area-quad", "seed": 2,
        "problem": {"kind": "quadratic", "n": 4, "dim": 3, "mu": 0.5, "L": 1.0,
                    "heterogeneity": 1.0, "noise_sd": 0.1, "shared_hessian": False, "seed": 0},
        "algorithm": {"name": "area", "model": "iterate_model", "client_rule": "area", "M": 2,
                      "alpha": {"kind": "theorem7"}},
        "delays": {"compute": {"kind": "exponential", "rate": 1.0}},
        "trigger": {"kind": "poisson", "rate": 2.0}, "horizon": {"steps": 303},
        "record": {"every": 10, "metrics": ["f_gap", "ergodic_f_gap"]}})
    reps = [0, 3, 5]
    for r, b in zip(reps, run_batch(quad, reps), strict=True):
        assert_engine(quad, b, r)


def test_area_run_shows_the_timeline_and_the_replay(capsys) -> None:
    """``run(progress=True)`` of AREA draws the writer's ``timeline:`` bar and then the
    replay's ``replay:`` bar on stderr, and the trace is the one without bars."""
    sc = norm_scenario(K=200)
    plain = run(sc, 1)
    capsys.readouterr()
    shown = run(sc, 1, progress=True)
    err = capsys.readouterr().err
    assert "timeline:" in err and "replay:" in err and "/200" in err
    assert err.index("timeline:") < err.index("replay:")
    assert shown.equals(plain)


def test_area_records_are_the_traces_metrics() -> None:
    """``run_batch``'s records (the Monte Carlo's, no Traces) hold its traces' metrics,
    records, divergence and final models bit for bit, merged and SimPy tables alike."""

    alg = norm_scenario(K=90).to_dict()
    alg["algorithm"]["model"] = "algorithm"
    diverging = norm_scenario(alpha={"kind": "constant", "value": 1e150}, K=400, every=5)
    for sc in (norm_scenario(n=5, K=130, every=13), Scenario.from_dict(alg),
               theorem7_scenario(K=120, every=40), diverging):
        reps = [0, 2, 3, 4]
        for rp, tr in zip(run_batch(sc, reps, output="records").runs, run_batch(sc, reps),
                          strict=True):
            assert np.array_equal(rp.metric_steps, tr.metric_steps)
            assert rp.diverged_step == tr.diverged_step and rp.steps_done == tr.steps_done
            assert np.array_equal(rp.final_w, tr.final_w)
            for m, v in rp.metrics.items():
                assert np.array_equal(v, tr.metrics[m], equal_nan=True), m


def test_merged_group_is_the_group_of_the_merged_tables() -> None:
    """The group laid out from the merge's arrays holds, column for column, what the
    group of :func:`event_tables`' tables of the same rows concatenates."""
    from fedsim.engine.models.area.merge import event_tables, merged_group
    from fedsim.engine.replay.group import TableGroup

    sc = norm_scenario(n=5, K=90, every=20, M=4)
    tabs = area_tables(sc, [0, 1, 2, 5, 8])
    rows = np.array([4, 0, 2])
    a = merged_group(tabs, rows, 4, 20)
    tables = event_tables(tabs, 4, 20)
    b = TableGroup([tables[k] for k in rows])
    assert len(a) == len(b) == 3 and (a.n, a.H, a.kmax, a.smax) == (b.n, b.H, b.kmax, b.smax)
    for c in ("soff", "coff", "moff", "ptr", "kind", "buffer_fill", "c_client", "c_read",
              "c_steps", "c_stale", "rec"):
        x, y = getattr(a, c), getattr(b, c)
        assert x.dtype == y.dtype and np.array_equal(x, y), c


def test_area_records_with_a_tied_replicate(monkeypatch) -> None:
    """A tied replicate's records come from SimPy's table, in its place among the merged
    ones, all equal to run_batch's."""
    import fedsim.engine.models.area as ra

    sc = norm_scenario(K=60)
    real = ra.area_tables

    def tied_for_one(scenario, reps):
        tabs = real(scenario, reps)
        tabs.tie[:] = [r == 2 for r in reps]
        return tabs

    monkeypatch.setattr(ra, "area_tables", tied_for_one)
    reps = [0, 2, 3]
    for rp, tr in zip(run_batch(sc, reps, output="records").runs, run_batch(sc, reps),
                      strict=True):
        assert np.array_equal(rp.final_w, tr.final_w)
        for m, v in rp.metrics.items():
            assert np.array_equal(v, tr.metrics[m], equal_nan=True), m
