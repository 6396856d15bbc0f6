"""``fedsim validate --suite paper``: every experiment runs end to end in its small form,
resumes, and the CLI dispatches to it."""

from __future__ import annotations

import json

import pandas as pd
import pytest

import validation.paper as paper
from fedsim.cli import main
from validation.paper import EXPERIMENTS, build_experiments, paper_tasks, run_paper_suite
from validation.paper.stats import VERDICTS


def test_every_experiment_quotes_a_claim_with_its_source():
    for e in build_experiments(small=True):
        assert e.claim.startswith('"') and e.source and e.analogue and e.rule
        assert e.claims and e.replicates >= 2
        ids = [t.task_id for t in paper_tasks([e])]
        assert len(ids) == len(set(ids))


def test_full_forms_use_the_papers_settings():
    t3 = EXPERIMENTS["area_table3"](False)
    assert {s.key.split("-")[0] for s in t3.settings} == {"n4", "n64"}
    assert {s.key.split("-", 1)[1] for s in t3.settings} == {
        "iid-fixed", "iid-normal", "dirichlet-fixed", "dirichlet-normal"}
    fams = {a.family for s in t3.settings for a in s.arms}
    assert fams == {"area", "fedbuff", "asfedavg", "sfedavg", "fedasync"}
    pf = EXPERIMENTS["perfedavg_table1"](False)
    sc = pf.settings[0].arms[-1].scenario
    assert sc["problem"]["n_clients"] == 50 and sc["algorithm"]["participation"] == 0.2
    assert sc["algorithm"]["batch_hess"] != sc["algorithm"]["batch"]


@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_small_experiment_end_to_end(name, tmp_path):
    res = run_paper_suite(out=tmp_path / "run", report=tmp_path / "p.pdf", workers=1,
                          progress=False, small=True, only=[name])
    s = json.loads((tmp_path / "run" / "paper" / f"{name}.json").read_text())
    assert s["verdict"] in VERDICTS and res["experiments"][name] == s["verdict"]
    assert s["table"] and all(r["n"] == s["replicates"] for r in s["table"])
    for c in s["curves"].values():
        assert len(c["curve"]["mean"]) == len(s["grid"]) == 41
    df = pd.read_csv(res["verdicts"])
    assert set(df["status"]) <= {"holds", "reversed", "unresolved"}
    assert (tmp_path / "p.pdf").stat().st_size > 10_000
    # resume: a second run recomputes nothing (the records are not rewritten)
    recs = sorted((tmp_path / "run" / "results").rglob("*.json"))
    stamp = [p.stat().st_mtime_ns for p in recs]
    run_paper_suite(out=tmp_path / "run", report=None, workers=1, progress=False,
                    small=True, only=[name])
    assert [p.stat().st_mtime_ns for p in recs] == stamp


def test_cli_dispatches_paper(tmp_path, monkeypatch, capsys):
    calls = {}

    def fake(**kw):
        calls.update(kw)
        return run_paper_suite(**{**kw, "small": True, "only": ["persafl_fig2a"],
                                  "workers": 1})

    monkeypatch.setattr(paper, "run_paper_suite", fake)
    rc = main(["validate", "--suite", "paper", "--out", str(tmp_path / "o"), "--report",
               str(tmp_path / "r.pdf"), "--no-progress"])
    out = capsys.readouterr().out
    assert rc == 0 and "persafl_fig2a:" in out and calls["progress"] is False
