"""One kind of record (issue 19 item 5) and the compile step (item 6), end to end:
a rerun of a suite -- with or without the old ``--batched`` / ``FEDSIM_BATCHED=1`` --
recomputes no record, and the first run compiles each scenario kind once, in the parent,
as a step of its own on stderr."""

from __future__ import annotations

import json

from fedsim.validation.warmup import kind_key, tiny_scenario, warm_up
from fedsim.validation.worker import BATCH_ENV, run_replicate

from fedsim.cli import main


def _validate(out, extra=()):
    return main(["validate", "--suite", "smoke", "--theorem", "theorem1", "--workers", "2",
                 "--out", str(out), "--report", str(out / "r.pdf"), *extra])


def test_a_rerun_reuses_every_record_whatever_batched_says(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv(BATCH_ENV, raising=False)
    out = tmp_path / "run"
    assert _validate(out) == 0
    err = capsys.readouterr().err
    first = json.loads((out / "summary.json").read_text())["records"]
    assert first["computed"] == first["tasks"] > 0
    assert "compiling kernels" in err and "scenario kind(s) need" in err
    assert _validate(out, ["--batched"]) == 0
    err = capsys.readouterr().err
    again = json.loads((out / "summary.json").read_text())["records"]
    assert again["computed"] == 0 and again["reused"] == first["tasks"]
    assert "compiling kernels" not in err  # nothing pending, nothing to compile
    monkeypatch.setenv(BATCH_ENV, "1")
    assert _validate(out) == 0
    assert json.loads((out / "summary.json").read_text())["records"]["computed"] == 0


def test_kind_key_ignores_numbers_and_names_but_not_rules():
    a = {"name": "x", "seed": 1, "horizon": {"steps": 100},
         "algorithm": {"name": "fedasync", "Q": 1, "eta": 0.1, "delay_pmf": [0.5, 0.5]},
         "problem": {"kind": "quadratic", "n": 4, "dim": 2}}
    b = json.loads(json.dumps(a))
    b.update(name="y", seed=7, horizon={"time": 3.0})
    b["algorithm"].update(Q=10, eta=0.01, delay_pmf=[0.2, 0.3, 0.5])
    b["problem"].update(n=30, dim=9)
    assert kind_key(a) == kind_key(b)
    c = json.loads(json.dumps(a))
    c["problem"]["kind"] = "logistic"
    d = json.loads(json.dumps(a))
    d["algorithm"]["client_rule"] = "maml"
    assert len({kind_key(a), kind_key(c), kind_key(d)}) == 3


def test_tiny_scenario_caps_the_horizon_and_keeps_the_time_limit():
    assert tiny_scenario({"horizon": {"steps": 1000, "time": 5.0}})["horizon"] == {
        "steps": 8, "time": 5.0}
    assert tiny_scenario({"horizon": {"steps": 3}})["horizon"] == {"steps": 3}
    assert tiny_scenario({"horizon": {"time": 5.0}})["horizon"] == {"steps": 8, "time": 5.0}


def test_warm_up_runs_one_instance_per_kind_and_survives_a_bad_one(capsys):
    good = {"name": "w", "seed": 3, "horizon": {"steps": 50},
            "problem": {"kind": "quadratic", "n": 3, "dim": 2, "L": 1.0, "mu": 0.5},
            "algorithm": {"name": "fedasync", "Q": 1, "eta": 0.1}}
    other = json.loads(json.dumps(good))
    other["problem"]["n"] = 5  # same kind
    bad = json.loads(json.dumps(good))
    bad["algorithm"]["name"] = "no-such-algorithm"
    res = warm_up([{"scenario": good}, {"scenario": other}, {"scenario": bad}, {}],
                  progress=True)
    assert res["kinds"] == 2 and res["failed"] == 1
    err = capsys.readouterr().err
    assert "could not be warmed up" in err
    # the one good kind needs one replay kernel (FedAsync's rules on the quadratic view);
    # the line says how many, whether the cache held it or not
    assert res["kernels"] == 1 and "need 1 replay kernel(s)" in err
    assert run_replicate.warmup is warm_up


def test_warm_up_in_process_counts_the_same_kernels():
    """``workers=1`` (an in-process run) compiles in this process: the same kinds and
    kernels as the pool, and what it compiles is counted."""
    good = {"name": "w", "seed": 3, "horizon": {"steps": 50},
            "problem": {"kind": "quadratic", "n": 3, "dim": 2, "L": 1.0, "mu": 0.5},
            "algorithm": {"name": "fedasync", "Q": 1, "eta": 0.1}}
    res = warm_up([{"scenario": good}], progress=False, workers=1)
    assert res["processes"] == 1 and res["kinds"] == 1 and res["kernels"] == 1
    assert res["failed"] == 0 and res["compiled"] >= 0 and res["compile_cpu"] >= 0.0


def test_engine_values_in_blocks_equal_one_replicate_at_a_time(monkeypatch):
    """Search's Monte-Carlo fallback runs its replicates through run_replicates in blocks
    (one run_batch call each); every value is the one replicate's own, bit for bit."""
    import fedsim.validation.families.mc as mc
    import numpy as np

    sc = {"name": "w", "seed": 3, "horizon": {"steps": 40},
          "problem": {"kind": "quadratic", "n": 3, "dim": 2, "L": 1.0, "mu": 0.5},
          "algorithm": {"name": "fedasync", "Q": 2, "eta": 0.1}}
    monkeypatch.setattr(mc, "BLOCK", 3)
    got = mc.engine_values(sc, "grad_sq", 40, 7, seed=5)
    seeded = dict(sc, seed=int(np.random.SeedSequence([3, 6]).generate_state(1)[0]))
    want = [run_replicate({"scenario": seeded, "replicate": r, "metric": "grad_sq",
                           "horizons": [40]})["values"][0] for r in range(7)]
    assert got.tolist() == want and len(set(want)) == 7
