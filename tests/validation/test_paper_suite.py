"""``fedsim validate --suite paper``: every experiment runs end to end in its small form,
resumes, and the CLI dispatches to it."""

from __future__ import annotations

import json

import fedsim.validation.paper as paper
import pandas as pd
import pytest
from fedsim.validation.paper import EXPERIMENTS, build_experiments, paper_tasks, run_paper_suite
from fedsim.validation.paper.common import MEASURE_BASE, TUNE_BASE, tuned_families
from fedsim.validation.paper.stats import VERDICTS
from rawstore import dump

from fedsim.cli import main


def test_every_experiment_quotes_a_claim_with_its_source():
    for e in build_experiments(small=True):
        assert e.claim.startswith('"') and e.source and e.analogue and e.rule
        assert e.claims and e.replicates >= 2
        tune = paper_tasks([e], "tune")
        meas = paper_tasks([e], "measure", {})
        ids = [t.task_id for t in tune + meas]
        assert len(ids) == len(set(ids))
        # stage 1: every grid arm, seeds disjoint from stage 2's replicate indices
        assert len(tune) == len(tuned_families(e)) * e.tune_replicates
        assert all(t.payload["replicate"] >= TUNE_BASE for t in tune)
        assert {t.payload["replicate"] for t in meas} == set(
            range(MEASURE_BASE, MEASURE_BASE + e.replicates))
        # stage 2: one arm per family and setting, the same replicates for every arm
        fams = sum(len({a.family for a in s.arms}) for s in e.settings)
        assert len(meas) == fams * e.replicates


def test_full_forms_fix_the_design_in_advance():
    """The replicate counts and the two-stage rule are part of the experiment, not chosen
    after a run (issue 12: "decide larger R or a paired design before re-looking")."""
    for name, build in EXPERIMENTS.items():
        e = build(False)
        assert e.replicates >= 10 and e.tune_replicates >= 3, name
    t4 = EXPERIMENTS["area_table4"](False)
    assert {s.key.split("-")[0] for s in t4.settings} == {"n4", "n64"}
    assert all(c.stat == "time_to" and c.factor == 0.5 for c in t4.claims)
    # times to a target are exact only if every server step is recorded
    assert all(a.scenario["record"]["every"] == 1 for s in t4.settings for a in s.arms)
    t3 = EXPERIMENTS["area_table3"](False)
    assert {c.metric for c in t3.claims} == {"test_acc", "test_loss"}


def test_fig2b_classes_follow_the_floor_rule():
    """FIG2B_CLASSES is the smallest c whose untrained model scores <= 0.5 personalised
    accuracy with both budgets (persafl.py); c - 1 must fail the rule."""
    from fedsim.validation.paper.persafl import FIG2B_CLASSES, fig2b_problem, zero_model_floor

    ok = zero_model_floor(fig2b_problem(30, FIG2B_CLASSES))
    below = zero_model_floor(fig2b_problem(30, FIG2B_CLASSES - 1))
    assert max(ok.values()) <= 0.5 < max(below.values())


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
    rows = dump(tmp_path / "run")
    stamp = (tmp_path / "run" / "store.sqlite").stat().st_mtime_ns
    run_paper_suite(out=tmp_path / "run", report=None, workers=1, progress=False,
                    small=True, only=[name])
    assert dump(tmp_path / "run") == rows
    assert (tmp_path / "run" / "store.sqlite").stat().st_mtime_ns == stamp  # no write


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


def test_run_suite_paper_goes_to_the_paper_suite(tmp_path, monkeypatch):
    import fedsim.validation.suites as suites

    seen = {}

    def fake(**kw):
        seen.update(kw)
        return {"experiments": {}}

    monkeypatch.setattr(paper, "run_paper_suite", fake)
    assert suites.run_suite("paper", out=tmp_path / "o", report=None, workers=1,
                            progress=False) == {"experiments": {}}
    assert seen["out"] == tmp_path / "o" and seen["report"] is None
    monkeypatch.chdir(tmp_path)
    suites.run_suite("paper", workers=1, progress=False)
    assert seen["out"] == "runs/paper" and seen["report"] == "reports/paper-experiments.pdf"
    with pytest.raises(Exception, match="paper"):
        suites.run_suite("nope")


def test_cli_passes_the_tls_security_to_the_paper_suite(tmp_path, monkeypatch):
    """--dask-tls-* reach the paper suite's run_tasks (they were dropped before)."""
    import fedsim.validation.cli as vcli

    sentinel = object()
    seen = {}
    monkeypatch.setattr(vcli, "dask_security", lambda args: sentinel)
    monkeypatch.setattr(paper, "run_paper_suite",
                        lambda **kw: seen.update(kw) or {"verdicts": "v", "report": None,
                                                         "experiments": {}})
    assert main(["validate", "--suite", "paper", "--out", str(tmp_path / "o"), "--report",
                 str(tmp_path / "r.pdf"), "--no-progress"]) == 0
    assert seen["dask_security"] is sentinel


def test_validate_batched_flag_is_an_accepted_no_op_with_a_notice(tmp_path, monkeypatch,
                                                                   capsys):
    """--batched (and FEDSIM_BATCHED=1) are accepted and print one line: the replay is the
    default task function either way."""
    import fedsim.validation.suites as suites
    from fedsim.validation.worker import BATCH_ENV, task_function

    monkeypatch.delenv(BATCH_ENV, raising=False)
    seen = {}

    def fake(suite, **kw):
        seen["fn"] = task_function()
        raise KeyboardInterrupt  # stop here: only the task function matters

    monkeypatch.setattr(suites, "run_suite", fake)
    rc = main(["validate", "--suite", "smoke", "--batched", "--out", str(tmp_path / "o"),
               "--report", str(tmp_path / "r.pdf"), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 130 and seen["fn"] == "fedsim.validation.worker:run_replicate"
    assert err.count("--batched / FEDSIM_BATCHED have no effect") == 1
    monkeypatch.setenv(BATCH_ENV, "1")
    rc = main(["validate", "--suite", "smoke", "--out", str(tmp_path / "o2"),
               "--report", str(tmp_path / "r2.pdf"), "--no-progress"])
    assert rc == 130 and "have no effect" in capsys.readouterr().err
