"""``sim_time = inf`` is an error with its reason in every place a run is recorded
(issue 21): validate's replicate records, the paper suite's arm records, search's points,
as in ``fedsim run``."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from fedsim.validation.montecarlo import Task, run_tasks

from fedsim import config
from fedsim.errors import NonFiniteTimeError, check_sim_time

#: a FedBuff scenario (its delays are replaced by ones whose times overflow)
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fedbuff_quadratic.toml"


def _tiny_rate_scenario(tmp_path: Path) -> dict:
    text = EXAMPLE.read_text()
    start, end = text.index("[delays]"), text.index("[trigger]")
    block = "".join(f'{k} = {{kind = "exponential", rate = 1e-308}}\n'
                    for k in ("download", "compute", "upload"))
    text = text[:start] + "[delays]\n" + block + 'compute_per = "round"\n\n' + text[end:]
    text = text.replace("[horizon]\nsteps = 500", "[horizon]\nsteps = 20")
    (tmp_path / "r.toml").write_text(text)
    return config.load(tmp_path / "r.toml").to_dict()


def test_check_sim_time_hand_cases():
    check_sim_time(0.0, 0)
    check_sim_time(1e300, 5)
    for bad in (math.inf, -math.inf, math.nan):
        with pytest.raises(NonFiniteTimeError, match="simulated time overflowed"):
            check_sim_time(bad, 3)


def test_validate_and_paper_records_say_why(tmp_path):
    sc = _tiny_rate_scenario(tmp_path)
    from fedsim.engine import run

    # FedBuff runs table -> replay: the compiled upload timeline stops at the first event
    # at inf, and the run reports sim_time = inf as the event engine did
    assert math.isinf(run(config.Scenario.from_dict(sc), 0).sim_time)
    tasks = [Task("rep", "fedsim.validation.worker:run_replicate",
                  {"scenario": sc, "replicate": 0, "metric": "grad_sq", "horizons": [10]}),
             Task("arm", "fedsim.validation.paper.worker:run_arm",
                  {"scenario": sc, "replicate": 0, "grid": [0.0, 1.0], "metrics": ["grad_sq"]})]
    recs = run_tasks(tasks, tmp_path / "rd", workers=1, progress=False)
    for tid in ("rep", "arm"):
        assert recs[tid]["status"] == "error"
        assert recs[tid]["reason"].startswith("NonFiniteTimeError: simulated time overflowed")
        assert "sim_time = inf" in recs[tid]["reason"]


def test_search_point_with_infinite_time_is_refused_with_the_reason(tmp_path, monkeypatch):
    """A search point whose Monte-Carlo run overflows the simulated time is a REFUSED row
    with the reason, never a measurement."""
    from fedsim.validation import search
    from fedsim.validation.families import get_family

    def overflowing(self, **kw):
        check_sim_time(math.inf, 7)

    fam = get_family("theorem8-norm")
    inst = fam.build(fam.complete({"K": 2, "n": 2}))
    monkeypatch.setattr(type(inst), "measure", overflowing)
    st = search.SearchSettings(budget=60, grid=1, refine=0, confirm=0, workers=1,
                               progress=False)
    row = search.evaluate(fam, {"K": 2, "n": 2}, st, tmp_path)
    assert row["status"] == "REFUSED" and math.isnan(row["measured"])
    assert "simulated time overflowed float64 (sim_time = inf) after 7 steps" in row["oracle"]


def _replayed_overflow_scenario() -> dict:
    """FedAsync on a quadratic (run by the replay) whose every round lasts > 1e308."""
    return {"name": "overflow", "seed": 3,
            "problem": {"kind": "quadratic", "n": 4, "dim": 2, "mu": 0.5, "L": 1.0,
                        "heterogeneity": 1.0, "noise_sd": 0.1, "seed": 0},
            "algorithm": {"name": "fedasync", "client_rule": "sgd", "Q": 1, "eta": 0.1,
                          "beta": 1.0},
            "delays": {k: {"kind": "uniform", "low": 1e307, "high": 1.7e308}
                       for k in ("download", "compute", "upload")},
            "horizon": {"steps": 20}, "record": {"every": 1, "metrics": ["grad_sq"]}}


def test_the_replay_ends_an_overflowing_timeline_with_the_reason(tmp_path):
    """The replay's merged timeline (uniform delays) never spins when the time overflows:
    ``run_batch`` raises the same error ``check_sim_time`` gives, and validate records it."""
    from fedsim.engine.batch import run_batch, supports

    sc = _replayed_overflow_scenario()
    scenario = config.Scenario.from_dict(sc)
    assert supports(scenario)
    with pytest.raises(NonFiniteTimeError, match="sim_time = inf"):
        run_batch(scenario, [0, 1])
    task = Task("rep", "fedsim.validation.worker:run_replicate",
                {"scenario": sc, "replicate": 0, "metric": "grad_sq", "horizons": [10]})
    rec = run_tasks([task], tmp_path / "rd", workers=1, progress=False)["rep"]
    assert rec["status"] == "error"
    assert rec["reason"].startswith("NonFiniteTimeError: simulated time overflowed")
