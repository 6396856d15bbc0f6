"""fedsim.plot: the per-client timeline rebuilt from the delay streams matches the trace;
``fedsim run --plot`` writes the figure."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from fedsim import config
from fedsim.cli import main
from fedsim.engine import run
from fedsim.plot import Interval, client_timeline, timeline_matches

EX = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize("name,sync", [("fedasync_quadratic.toml", False),
                                       ("fedbuff_quadratic.toml", False),
                                       ("perfedavg_sync.toml", True)])
def test_timeline_matches_the_trace(name, sync):
    sc = config.load(EX / name)
    sc = dataclasses.replace(sc, horizon=config.HorizonConfig(steps=120))
    tr = run(sc, 2)
    tl = client_timeline(sc, 2, tr.sim_time)
    assert timeline_matches(tr, tl, sync)
    for iv in tl:
        assert iv.end >= iv.start >= 0.0
    # negative control: the timeline of another replicate does not match this trace
    assert not timeline_matches(tr, client_timeline(sc, 3, tr.sim_time), sync)
    # shifting one upload breaks the match
    k = next(j for j, iv in enumerate(tl) if iv.phase == "upload")
    bad = list(tl)
    bad[k] = Interval(bad[k].client, "upload", bad[k].start, bad[k].end + 0.5, bad[k].round)
    assert not timeline_matches(tr, bad, sync) or sync


def test_sync_rounds_wait_for_the_slowest():
    sc = config.load(EX / "perfedavg_sync.toml")
    tl = client_timeline(sc, 0, 30.0)
    by: dict[int, list[Interval]] = {}
    for iv in tl:
        by.setdefault(iv.round, []).append(iv)
    rounds = sorted(by)
    for r0, r1 in zip(rounds, rounds[1:], strict=False):
        assert min(iv.start for iv in by[r1]) == pytest.approx(max(iv.end for iv in by[r0]))


def test_run_plot_cli(tmp_path, capsys):
    out = tmp_path / "run.png"
    rc = main(["run", str(EX / "fedasync_quadratic.toml"), "--steps", "100",
               "--no-progress", "--plot", str(out)])
    assert rc == 0 and out.stat().st_size > 10_000
