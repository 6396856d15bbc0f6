"""``examples/literature/``: one scenario per literature algorithm; each parses (fast) and
runs end to end through ``fedsim run`` at a tiny horizon (slow: each compiles its kernels
cold)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from fedsim.cli import main
from fedsim.config.io import load

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples" / "literature").glob("*.toml"))
ALGORITHMS = {"async_sgd_adaptive": "async_sgd", "picky_sgd": "picky_sgd",
              "fedasync_xie": "fedasync_xie", "fedasync_xie_prox": "fedasync_xie",
              "recorded_schedule": "async_sgd"}


def test_one_example_per_algorithm():
    assert {p.stem for p in EXAMPLES} == set(ALGORITHMS)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_parses(path, monkeypatch):
    monkeypatch.chdir(ROOT)  # the recorded schedule's path is read from the working directory
    sc = load(path)
    assert sc.algorithm.name == ALGORITHMS[path.stem]


@pytest.mark.slow
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_example_runs_tiny(path, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    out = tmp_path / f"{path.stem}.csv"
    assert main(["run", str(path), "--set", "horizon.steps=20", "--out", str(out),
                 "--no-progress"]) == 0
    df = pd.read_csv(out)
    assert int(df["step"].max()) == 20
    assert ": ok; steps=20" in capsys.readouterr().out


@pytest.mark.slow  # one engine run (the async_sgd kernel, cold)
def test_the_paper_worker_reads_avg_metrics_as_running_averages():
    from fedsim.validation.paper.literature import LITERATURE
    from fedsim.validation.paper.worker import run_arm

    import fedsim

    e = LITERATURE["koloskova_shape"](True)
    arm = e.settings[0].arms[0]
    rec = run_arm({"scenario": arm.scenario, "replicate": 5, "grid": e.grid.tolist(),
                   "metrics": list(e.metrics), "targets": {}, "curve": [e.curve_metric]})
    df = fedsim.run(fedsim.Scenario.from_dict(arm.scenario), replicate=5).metrics_frame()
    # (1/K) sum_{t<K} ||grad f(x_t)||^2 at the last record, as the trace's own frame has it
    assert rec["final"]["avg_grad_sq"] == df["avg_grad_sq"].iloc[-1]
    assert rec["steps"] == 40
