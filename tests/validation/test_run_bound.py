"""``fedsim run SCENARIO --bound THEOREM[,MODE]`` (fedsim.validation.run_bound): the bound
with the scenario's constants, the tightness table, the plot panel, and the refusals."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fedsim.theory.area import theorem7
from fedsim.validation import run_bound
from fedsim.validation.scenario_constants import scenario_constants

from fedsim import config
from fedsim.cli import main
from fedsim.errors import ConfigError

EX = Path(__file__).parents[2] / "examples"


def test_bound_equals_the_theorem_at_the_scenario_constants(capsys, tmp_path):
    plot = tmp_path / "b.png"
    rc = main(["run", str(EX / "area_iterate_model.toml"), "--set", "horizon.steps=400",
               "--bound", "theorem7", "--no-progress", "--plot", str(plot)])
    out = capsys.readouterr().out
    assert rc == 0 and plot.stat().st_size > 0
    assert "bound/measured" in out and "CERTIFIED_CORRECTED" in out
    sc = config.load(EX / "area_iterate_model.toml").replace({"horizon.steps": 400})
    kw = scenario_constants(sc, "theorem7").values
    kw.pop("K")
    want = float(np.atleast_1d(theorem7(**kw, K=[400]).value)[-1])
    last = [ln.split() for ln in out.splitlines() if ln.strip().startswith("400 ")][0]
    assert float(last[2]) == pytest.approx(want, rel=1e-3)


def test_failing_hypotheses_are_named(capsys):
    rc = main(["run", str(EX / "persafl_me_window.toml"), "--set", "horizon.steps=50",
               "--bound", "theorem3,corrected", "--no-progress"])
    out = capsys.readouterr().out
    assert rc == 0 and "NOT_APPLICABLE" in out and "FAIL" in out and "eta ==" in out


def test_panel_marks_a_bound_that_does_not_apply():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import fedsim

    sc = config.load(EX / "persafl_me_window.toml").replace({"horizon.steps": 40})
    b = run_bound.prepare(sc, "theorem3,corrected")
    trace = fedsim.run(sc)
    run_bound.evaluate(b, trace)
    fig, ax = plt.subplots()
    run_bound.draw(b, trace, ax)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(lb.startswith("bound NOT APPLICABLE") and "eta ==" in lb for lb in labels)
    assert any("avg_grad_me_sq" in lb for lb in labels)     # the running average is drawn
    plt.close(fig)


@pytest.mark.parametrize("scenario, spec, needle", [
    ("area_algorithm.toml", "theorem7", "p is not determined by the scenario"),
    ("area_iterate_model.toml", "theorem9", "must name a theorem"),
    ("area_iterate_model.toml", "theorem7,bogus", "bogus"),
    ("persafl_me_window.toml", "theorem3,bogus", "mode must be one of"),
    ("fedasync_quadratic.toml", "theorem1", "tau is not determined"),
    ("fedasync_quadratic.toml", "theorem3", "grad_me_sq"),
    ("perfedavg_sync.toml", "perfedavg_theorem4_5", "needs algorithm.Q = 1"),
])
def test_refused_before_simulating(scenario, spec, needle):
    with pytest.raises(ConfigError) as e:
        run_bound.prepare(config.load(EX / scenario), spec)
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_cli_refusal_is_one_line(capsys):
    rc = main(["run", str(EX / "area_algorithm.toml"), "--bound", "theorem7", "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "p is not determined" in err


def test_perfedavg_with_one_local_step_is_prepared():
    sc = config.load(EX / "perfedavg_sync.toml").replace({"algorithm.Q": 1})
    b = run_bound.prepare(sc, "perfedavg_theorem4_5")
    assert b.kwargs["tau"] == 1 and b.column == "avg_grad_maml_sq"
