"""fedsim.plot: the per-client timeline is the phases the run's home recorded (no delay
drawn in fedsim.plot); ``fedsim run --plot`` writes the figure."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from phases_cases import FEDASYNC, const, scenario, table_trace

import fedsim.plot
from fedsim import config
from fedsim.cli import main
from fedsim.engine import problem_for, run, timeline_phases
from fedsim.engine.dispatch import write_tables
from fedsim.plot import Interval, client_timeline, intervals, plot_run

EX = Path(__file__).resolve().parents[2] / "examples"


def test_intervals_by_hand():
    """Client 0: download 1, compute 2, upload 1; client 1: 0.5, 1, 1 then think 0.5
    (tests/plot/test_phases.py::test_fedasync_by_hand); cut at t = 5."""
    sc = scenario(algorithm=FEDASYNC, delays={
        "download": const(1.0), "compute": const(2.0), "upload": const(1.0),
        "override": [{"clients": [1], "download": const(0.5), "compute": const(1.0),
                      "think": const(0.5)}]})
    I = Interval
    assert client_timeline(sc, 0, 5.0) == [
        I(0, "download", 0.0, 1.0, 0), I(0, "compute", 1.0, 3.0, 0), I(0, "upload", 3.0, 4.0, 0),
        I(1, "download", 0.0, 0.5, 0), I(1, "compute", 0.5, 1.5, 0), I(1, "upload", 1.5, 2.5, 0),
        I(1, "think", 2.5, 3.0, 0),
        I(1, "download", 3.0, 3.5, 1), I(1, "compute", 3.5, 4.5, 1), I(1, "upload", 4.5, 5.5, 1),
        I(0, "download", 4.0, 5.0, 1)]
    # the default end is the run's: every recorded phase of positive length
    assert len(client_timeline(sc, 0)) == 5 * 3 + 2


@pytest.mark.parametrize("name", ["fedasync_quadratic.toml", "fedbuff_quadratic.toml",
                                  "perfedavg_sync.toml"])
def test_the_timeline_is_the_runs(name):
    sc = config.load(EX / name)
    sc = dataclasses.replace(sc, horizon=config.HorizonConfig(steps=120))
    tr = run(sc, 2)
    ph = timeline_phases(sc, 2)
    assert ph.matches(tr)
    # negative control: another replicate's phases are not this run's
    assert not timeline_phases(sc, 3).matches(tr)
    tl = intervals(ph, tr.sim_time)
    for iv in tl:
        assert tr.sim_time > iv.start and iv.end > iv.start >= 0.0
    # every upload the trace counts ends an upload phase drawn
    ends = {(iv.client, iv.end) for iv in tl if iv.phase == "upload"}
    up = ph.arrived()
    assert all((int(c), float(t)) in ends for c, t in zip(ph.client[up], ph.upload_end[up],
                                                           strict=True))
    assert np.array_equal(np.bincount(ph.client[up], minlength=ph.n), tr.client_updates)


def test_sync_rounds_wait_for_the_slowest():
    sc = config.load(EX / "perfedavg_sync.toml")
    tl = client_timeline(sc, 0, 30.0)
    by: dict[int, list[Interval]] = {}
    for iv in tl:
        by.setdefault(iv.round, []).append(iv)
    rounds = sorted(by)
    for r0, r1 in zip(rounds, rounds[1:], strict=False):
        assert min(iv.start for iv in by[r1]) == max(iv.end for iv in by[r0])


def test_run_plot_cli(tmp_path, capsys):
    out = tmp_path / "run.png"
    rc = main(["run", str(EX / "fedasync_quadratic.toml"), "--steps", "100",
               "--no-progress", "--plot", str(out)])
    assert rc == 0 and out.stat().st_size > 10_000


AREA = {"name": "area", "client_rule": "area", "model": "algorithm", "M": 2,
        "alpha": {"kind": "constant", "value": 0.1}}
EXP = {"download": {"kind": "exponential", "rate": 5.0},
       "compute": {"kind": "exponential", "rate": 1.0},
       "upload": {"kind": "exponential", "rate": 5.0}}


def test_plot_run_draws_the_recorded_timeline(tmp_path, monkeypatch):
    """plot_run draws the home's recorded phases with their arrivals (AREA Algorithm 2,
    which had no timeline before) and flags a trace that is not the phases' run.  The
    traces are the tables' (no replay)."""
    drawn = []
    real = fedsim.plot.draw_gantt

    def spy(ax, timeline, n, t_end, **kw):
        drawn.append((ax, timeline, kw["arrivals"]))
        real(ax, timeline, n, t_end, **kw)

    monkeypatch.setattr(fedsim.plot, "draw_gantt", spy)
    # the figures are checked as drawn, not rasterised (test_run_plot_cli writes one)
    from matplotlib.figure import Figure

    notes = []
    monkeypatch.setattr(Figure, "savefig", lambda fig, fh, **kw: notes.append(
        [t.get_text() for ax in fig.axes for t in ax.texts]))
    sc = scenario(algorithm=AREA, delays=EXP, n=3, steps=30,
                  trigger={"kind": "every_k", "count": 2})
    ph = timeline_phases(sc, 1)
    tr = table_trace(ph.table)
    plot_run(sc, tr, tmp_path / "area.png", replicate=1)
    ax, tl, arrivals = drawn[-1]
    assert tl == intervals(ph, tr.sim_time) and tl
    up = ph.arrived()
    assert arrivals == list(zip(ph.client[up].tolist(), ph.upload_end[up].tolist(),
                                strict=True))
    assert "its table is the trace's" in ax.get_title(loc="left")
    assert notes == [[]]
    # negative control: replicate 0's trace drawn as replicate 1's
    plot_run(sc, table_trace(timeline_phases(sc, 0).table), tmp_path / "bad.png", replicate=1)
    assert "WARNING" in drawn[-1][0].get_title(loc="left")


def test_plot_run_refuses_the_window_model(tmp_path, monkeypatch):
    """The window model's figure has no gantt, the one-line refusal instead."""
    from matplotlib.figure import Figure

    drawn, notes = [], []
    monkeypatch.setattr(fedsim.plot, "draw_gantt", lambda *a, **kw: drawn.append(a))
    monkeypatch.setattr(Figure, "savefig", lambda fig, fh, **kw: notes.append(
        [t.get_text() for ax in fig.axes for t in ax.texts]))
    win = scenario(algorithm=dict(FEDASYNC, model="window", tau=2,
                                  delay_pmf=[0.5, 0.25, 0.25]), delays={}, n=3, steps=20)
    tr = table_trace(write_tables(win, problem_for(win), [0]).tables[0])
    plot_run(win, tr, tmp_path / "window.png")
    assert drawn == []
    assert notes == [["no timeline for the 'window' execution model: its clients have no "
                         "phases in simulated time (ExecutionModel.phases)"]]


@pytest.mark.slow
def test_run_plot_cli_draws_area_s_recorded_timeline(tmp_path, monkeypatch):
    """``fedsim run --plot`` on AREA's Algorithm 2 example draws the recorded timeline of
    the replicate it ran, checked against its trace (the title says so).  Slow: 19 CPU s
    cold, compiling AREA's replay kernel."""
    drawn = []
    real = fedsim.plot.draw_gantt

    def spy(ax, *a, **kw):
        real(ax, *a, **kw)
        drawn.append(ax)

    monkeypatch.setattr(fedsim.plot, "draw_gantt", spy)
    out = tmp_path / "area.png"
    rc = main(["run", str(EX / "area_algorithm.toml"), "--steps", "60", "--replicate", "1",
               "--no-progress", "--plot", str(out)])
    assert rc == 0 and out.stat().st_size > 10_000
    assert "its table is the trace's" in drawn[-1].get_title(loc="left")
