"""Issue 22's design of the paper suite, fixed before its run: replicate counts, fresh
seeds, the grids extended once past the previous edge picks, Fig. 2(b)'s horizon rule,
edge reporting and the comparison with the previous design's verdicts."""

from __future__ import annotations

import csv

import pytest
from fedsim.validation.paper import EXPERIMENTS, paper_tasks
from fedsim.validation.paper.area import TABLE3_GRID, TABLE4_GRID
from fedsim.validation.paper.common import MEASURE_BASE, TUNE_BASE, replicate_index
from fedsim.validation.paper.perfedavg import TABLE1_GRID
from fedsim.validation.paper.persafl import (
    FIG2B_HORIZON,
    FIG2B_MIN_ROUNDS,
    fig2b_experiment,
    sync_rounds_completed,
)
from fedsim.validation.paper.previous import PREVIOUS_CSV, beside_previous, change_of
from fedsim.validation.paper.stats import edge_picks

#: the previous design's measurement replicate indices (R = 10, 16 for Per-FedAvg)
PREVIOUS_MEASURE = set(range(16))


# one worker runs this module (make test: --dist loadgroup), so its module fixture runs once
pytestmark = pytest.mark.xdist_group("test_paper_design")


@pytest.fixture(scope="module")
def full():
    return {name: build(False) for name, build in EXPERIMENTS.items()}


def _grids(e):
    out = {}
    for s in e.settings:
        for a in s.arms:
            if a.grid is not None:
                out.setdefault((s.key, a.family), set()).add(a.grid)
    return out


def test_replicate_counts_and_fresh_seeds(full):
    for name, e in full.items():
        assert e.replicates == (64 if name == "perfedavg_table1" else 40), name
        assert e.tune_replicates == 3, name
        meas = {t.payload["replicate"] for t in paper_tasks([e], "measure", {})}
        assert meas == set(range(MEASURE_BASE, MEASURE_BASE + e.replicates)), name
        assert not meas & PREVIOUS_MEASURE
        tune = {t.payload["replicate"] for t in paper_tasks([e], "tune")}
        assert not meas & tune and all(t >= TUNE_BASE for t in tune)
    assert replicate_index(3) == MEASURE_BASE + 3 and replicate_index(0, "tune") == TUNE_BASE
    assert MEASURE_BASE - TUNE_BASE >= 10 ** 6  # no tuning index reaches the measurement's


def test_grids_extended_once_and_nowhere_else(full):
    assert TABLE1_GRID == (1.0, 4.0, 16.0) and TABLE3_GRID == (2.0, 8.0, 32.0, 128.0)
    assert TABLE4_GRID == (0.5, 2.0, 8.0)
    for g in _grids(full["perfedavg_table1"]).values():
        assert g == set(TABLE1_GRID)
    t3 = _grids(full["area_table3"])  # the same extension for every algorithm of Table 3
    assert {f for _, f in t3} == {"area", "fedbuff", "asfedavg", "sfedavg", "fedasync"}
    assert all(g == set(TABLE3_GRID) for g in t3.values())
    assert all(g == set(TABLE4_GRID) for g in _grids(full["area_table4"]).values())
    # the other experiments keep their grids
    assert all(g == {0.1, 0.3} for g in _grids(full["area_bias"]).values())


def test_fig2b_one_horizon_for_every_method(full):
    e = full["persafl_fig2b"]
    assert e.horizon == FIG2B_HORIZON == 540.0
    assert {a.scenario["horizon"]["time"] for a in e.settings[0].arms} == {FIG2B_HORIZON}


@pytest.mark.slow
def test_fig2b_horizon_follows_its_rule():
    """t_h = 540 is the smallest multiple of the old t_h = 60 at which every synchronous
    arm completes >= 30 rounds in every measurement replicate; 480 is not enough."""
    e = fig2b_experiment()
    reps = [replicate_index(r) for r in range(e.replicates)]
    at = sync_rounds_completed(e, FIG2B_HORIZON, reps)
    below = sync_rounds_completed(e, FIG2B_HORIZON - 60.0, reps)
    assert len(at) == 3
    assert all(min(v) >= FIG2B_MIN_ROUNDS for v in at.values())
    assert any(min(v) < FIG2B_MIN_ROUNDS for v in below.values())


def test_edge_picks_are_reported():
    sel = {"s": {"a": [{"grid": 1.0, "chosen": False, "edge": "bottom"},
                       {"grid": 4.0, "chosen": True, "edge": "top"}],
                 "b": [{"grid": 1.0, "chosen": False, "edge": "bottom"},
                       {"grid": 2.0, "chosen": True, "edge": None},
                       {"grid": 4.0, "chosen": False, "edge": "top"}]}}
    assert edge_picks(sel) == [{"setting": "s", "family": "a", "grid": 4.0, "edge": "top"}]


def test_previous_verdicts_ship_and_pair_with_a_new_run():
    with open(PREVIOUS_CSV, newline="") as fh:
        old = list(csv.DictReader(fh))
    tally = {}
    for r in old:
        tally.setdefault(r["experiment"], []).append(r["status"])
    # the previous round's published tallies (holds / reversed / unresolved)
    t3 = tally["area_table3"]
    assert (t3.count("holds"), t3.count("reversed"), t3.count("unresolved")) == (16, 19, 29)
    assert tally["perfedavg_table1"].count("unresolved") == 9
    new = [dict(r) for r in old[:3]]
    new[0]["status"] = "reversed" if old[0]["status"] == "holds" else "holds"
    new[1]["status"] = "unresolved"
    new.append(dict(old[0], claim="a claim the old design lacked"))
    rows = beside_previous(new, old)
    by = {r["claim"]: r for r in rows}
    assert by[old[0]["claim"]]["change"] in ("flipped", "resolved")
    assert by["a claim the old design lacked"]["change"] == "new"
    assert sum(r["change"] == "dropped" for r in rows) == len(old) - 3
    assert change_of("holds", "reversed") == "flipped"
    assert change_of("unresolved", "holds") == "resolved"
    assert change_of("holds", "unresolved") == "unresolved now"
    assert change_of("holds", "holds") == "same"


def test_previous_pages_draw_every_moved_claim(tmp_path):
    import matplotlib.pyplot as plt
    import pandas as pd
    from fedsim.validation.report.paper_previous import previous_pages

    assert previous_pages(tmp_path) == []
    with open(PREVIOUS_CSV, newline="") as fh:
        old = list(csv.DictReader(fh))
    new = [dict(r, status="unresolved") for r in old]  # every decided claim moves
    pd.DataFrame(beside_previous(new, old)).to_csv(tmp_path / "paper_vs_previous.csv",
                                                   index=False)
    pages = previous_pages(tmp_path)
    moved = sum(r["status"] != "unresolved" for r in old)
    assert moved > 40 and len(pages) >= 2  # the moved claims overflow onto a second page
    texts = [t.get_text() for f in pages for t in f.findobj(
        lambda o: hasattr(o, "get_text"))]
    assert sum(t == "unresolved now" for t in texts) == moved
    for f in pages:
        plt.close(f)
