"""``fedsim validate --suite literature``: the experiments' designs, their scenarios, and
one end-to-end CLI run of the small forms (slow)."""

from __future__ import annotations

import pandas as pd
import pytest
from fedsim.validation.paper import build_experiments, paper_tasks
from fedsim.validation.paper.common import tuned_families
from fedsim.validation.paper.literature import GRID, LITERATURE, SHAPE_GRID

from fedsim.config import Scenario


def test_full_designs_are_fixed_and_every_scenario_builds():
    for name, build in LITERATURE.items():
        e = build(False)
        assert e.replicates >= 10 and e.tune_replicates >= 3, name
        assert e.claim.startswith('"') and e.source and e.analogue and e.rule and e.claims
        for s in e.settings:
            for a in s.arms:
                # one grid for every family of an experiment
                assert a.grid in (SHAPE_GRID if name == "koloskova_shape" else GRID)
                sc = Scenario.from_dict(a.scenario)
                assert sc.algorithm.get("Q") == 1
        tune = paper_tasks([e], "tune")
        assert len(tune) == len(tuned_families(e)) * e.tune_replicates


def test_the_paper_suite_does_not_run_the_literature():
    # --suite paper builds build_experiments(None) = the EXPERIMENTS names (building them
    # all here took 9 s: the names are what decides)
    from fedsim.validation.paper import EXPERIMENTS

    assert not set(LITERATURE) & set(EXPERIMENTS)
    assert set(LITERATURE) <= {e.name for e in build_experiments(list(LITERATURE), small=True)}


@pytest.mark.slow
def test_cli_runs_the_small_literature_suite(tmp_path, monkeypatch, capsys):
    import fedsim.validation.paper as paper

    from fedsim.cli import main

    real = paper.build_experiments
    monkeypatch.setattr(paper, "build_experiments",
                        lambda only=None, small=False: real(only, True))
    rc = main(["validate", "--suite", "literature", "--out", str(tmp_path / "run"),
               "--report", str(tmp_path / "lit.pdf"), "--workers", "1", "--no-progress"])
    assert rc == 0
    rows = pd.read_csv(tmp_path / "run" / "paper_verdicts.csv")
    assert set(rows["experiment"]) == set(LITERATURE)
    assert (tmp_path / "lit.pdf").stat().st_size > 0
    assert "koloskova_44:" in capsys.readouterr().out


def test_shape_design_reads_the_provable_tau_max_and_fixed_slopes():
    from fedsim.validation.paper.literature import koloskova_shape, straggler, tau_max_bound

    # 4 busy workers with compute in [0.5, 1.5]: a job spans at most 3 cycles of each other
    # worker, plus one at each end -> 3 * (floor(1.5/0.5) + 1) = 12; the straggler's top is
    # 32 * 1.5 = 48 -> 3 * (floor(48/0.5) + 1) = 291 (fedsim.engine.physical_staleness_bound)
    assert tau_max_bound(straggler(1.0), 4) == 12.0
    assert tau_max_bound(straggler(32.0), 4) == 291.0
    e = koloskova_shape()
    factors = sorted(round(c.factor, 6) for c in e.claims)
    assert factors == sorted([round((291 / 12) ** 0.5, 6)] * 2 + [8.0, 8.0])
    assert all(c.stat == "final" and c.metric == "avg_grad_sq" for c in e.claims)
