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
    assert not set(LITERATURE) & {e.name for e in build_experiments(small=True)}


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
