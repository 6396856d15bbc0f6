"""validation/paper/asypfl.py: the Fig. 2 / Fig. 3 builders, one replicate of their arms,
the four-arm contrast (hand-computed), and -- once the suite registers them -- the small
forms end to end through run_paper_suite."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from fedsim.validation.paper import EXPERIMENTS
from fedsim.validation.paper.asypfl import (
    METRICS,
    digits_problem,
    fig2_experiment,
    fig3_experiment,
    straggler_delays,
)
from fedsim.validation.paper.common import MEASURE_R, Contrast, Experiment
from fedsim.validation.paper.stats import judge, judge_contrast
from fedsim.validation.paper.worker import run_arm

from fedsim import config

SMALL2 = dict(replicates=2, tune_replicates=1, n=6, horizon=6.0, lams=(4.0,), grid=(1.0,))
SMALL3 = dict(replicates=4, tune_replicates=1, n=6, horizon=25.0, shares=(0.0, 0.5),
              grid=(1.0,))


# one worker runs this module (make test: --dist loadgroup), so its module fixture runs once
pytestmark = pytest.mark.xdist_group("test_paper_asypfl")


@pytest.fixture(scope="module")
def full():
    return fig2_experiment(), fig3_experiment()


def _families(e: Experiment) -> dict[str, list]:
    out: dict[str, list] = {}
    for a in e.settings[0].arms:
        out.setdefault(a.family, []).append(a)
    return out


def test_full_forms(full):
    f2, f3 = full
    for e in full:
        assert e.claim.startswith('"') and "Figure" in e.claim + e.source
        assert "LSTM" in e.analogue and "communication rounds" in e.analogue
        assert e.replicates == MEASURE_R and e.metrics == METRICS  # issue 22: R = 40
        fams = _families(e)
        named = set()
        for c in e.claims:
            named |= ({f for _, f in c.terms} if isinstance(c, Contrast) else {c.a, c.b})
        assert named <= set(fams)
        for arms in fams.values():  # the same step grid for every family
            assert sorted({a.grid for a in arms}) == [0.5, 2.0]
        for a in e.settings[0].arms:
            sc = config.Scenario.from_dict(a.scenario)  # every arm is a valid scenario
            assert sc.problem.params["validation_fraction"] == 0.2
            assert set(a.alias) == {"pers_acc", "pers_loss", "val_pers_acc"}
            assert set(a.alias.values()) <= set(sc.record.metrics)
        # the two-stage suite: lambda and the step are chosen on validation rows
        assert e.select_metric == "val_pers_acc" and e.select_max is True
        assert e.tune_replicates == 3
    lam = {a.scenario["algorithm"]["lam"] for a in _families(f2)["best"]}
    assert lam == {1.0, 4.0, 16.0, 64.0} and 0.0 not in lam
    assert {a.scenario["algorithm"]["lam"] for a in _families(f2)["lam0"]} == {0.0}
    assert set(_families(f3)) == {f"{m}_s{s}" for m in ("asypfl", "fedavg")
                                  for s in (0, 30, 60)}
    con = [c for c in f3.claims if isinstance(c, Contrast)]
    assert len(con) == 1 and sorted(c for c, _ in con[0].terms) == [-1.0, -1.0, 1.0, 1.0]
    # both methods of one share see the same delays
    for s in (0, 30, 60):
        ds = {json.dumps(a.scenario["delays"], sort_keys=True)
              for fam in (f"asypfl_s{s}", f"fedavg_s{s}") for a in _families(f3)[fam]}
        assert len(ds) == 1


def test_straggler_delays():
    d = straggler_delays(10, 0.3, 5.0)
    assert d["override"] == [{"clients": [0, 1, 2],
                              "download": {"kind": "exponential", "rate": 0.4},
                              "upload": {"kind": "exponential", "rate": 0.4}}]
    assert "override" not in straggler_delays(10, 0.0, 5.0)
    sc = config.Scenario.from_dict({
        "problem": digits_problem(10, 3),
        "algorithm": {"name": "fedavg", "client_rule": "sgd"}, "delays": d,
        "horizon": {"steps": 1}})
    assert sc.delays.for_client(2)["upload"].mean == pytest.approx(2.5)
    assert sc.delays.for_client(3)["upload"].mean == pytest.approx(0.5)


@pytest.mark.parametrize("which", ["fig2", "fig3"])
def test_one_replicate_of_every_family(which):
    e = fig2_experiment(**SMALL2) if which == "fig2" else fig3_experiment(**SMALL3)
    for fam, arms in _families(e).items():
        a = arms[0]
        out = run_arm({"scenario": a.scenario, "replicate": 0, "grid": e.grid.tolist(),
                       "metrics": list(e.metrics), "targets": {}, "alias": dict(a.alias)})
        for m in ("pers_acc", "val_pers_acc"):
            assert 0.0 <= out["final"][m] <= 1.0, (fam, m)
            assert len(out["curves"][m]) == 41
        assert out["final"]["pers_loss"] < math.log(10), fam  # learned something
        assert out["steps"] >= 1


def _rec(x: float) -> dict:
    return {"status": "ok", "value": {"final": {"pers_acc": x}}}


def test_contrast_hand_computed():
    e = fig3_experiment(**SMALL3)
    chosen = {"irregular": {a.family: a.key for a in e.settings[0].arms}}
    keys = chosen["irregular"]
    # per replicate: A(s1) - A(s0) - B(s1) + B(s0); e.g. replicate 0: 0.9-0.95-0.6+0.9 =
    # 0.25; every replicate gives 0.25 -> zero spread, a point interval at 0.25
    vals = {"asypfl_s0": (0.95, 0.95, 0.9, 0.9), "asypfl_s50": (0.90, 0.92, 0.9, 0.9),
            "fedavg_s0": (0.90, 0.90, 0.8, 0.8), "fedavg_s50": (0.60, 0.62, 0.55, 0.55)}
    recs = {f"paper/{e.name}/{keys[f]}/r{r}": _rec(v[r]) for f, v in vals.items()
            for r in range(4)}
    con = next(c for c in e.claims if isinstance(c, Contrast))
    out = judge_contrast(e, con, chosen, recs)
    assert out["diff"] == pytest.approx(0.25) and out["status"] == "holds"
    assert judge(e, con, chosen, recs) == out  # the suite's judge dispatches to it
    # replicate 3 of B(s1) at 1.35 gives -0.55 there: mean (0.75 - 0.55)/4, unresolved
    recs[f"paper/{e.name}/{keys['fedavg_s50']}/r3"] = _rec(1.35)
    out = judge_contrast(e, con, chosen, recs)
    assert out["diff"] == pytest.approx((0.75 - 0.55) / 4) and out["status"] == "unresolved"
    # B(s1) = 1.20, 1.22, 1.15, 1.16: per replicate -0.35, -0.35, -0.35, -0.36 -> reversed
    for r, x in enumerate((1.20, 1.22, 1.15, 1.16)):
        recs[f"paper/{e.name}/{keys['fedavg_s50']}/r{r}"] = _rec(x)
    out = judge_contrast(e, con, chosen, recs)
    assert out["diff"] == pytest.approx(-0.3525) and out["status"] == "reversed"


@pytest.mark.parametrize("name", ["asypfl_fig2", "asypfl_fig3"])
def test_small_forms_end_to_end(name, tmp_path):
    if name not in EXPERIMENTS:
        pytest.skip(f"{name} is not registered in validation.paper.EXPERIMENTS yet")
    from fedsim.validation.paper import run_paper_suite

    res = run_paper_suite(out=tmp_path / "run", report=None, workers=1, progress=False,
                          small=True, only=[name])
    s = json.loads((tmp_path / "run" / "paper" / f"{name}.json").read_text())
    assert res["experiments"][name] == s["verdict"]
    assert all(np.isfinite(r["pers_acc"][0]) for r in s["table"])
