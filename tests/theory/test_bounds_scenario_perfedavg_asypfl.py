"""``fedsim bounds --scenario`` for [F] Per-FedAvg Theorem 4.5 and [Y] AsyPFL Theorems 1-2
(fedsim.validation.scenario_constants): a scenario of a suite family gives that family's
bound exactly, the example files fill what they determine, and what they cannot fill is
named with the reason (issue 34 item 3)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fedsim.theory.asypfl import theorem1
from fedsim.theory.perfedavg import theorem4_5
from fedsim.validation.families.asypfl import ASYPFL1_QUAD
from fedsim.validation.families.perfedavg import PERFEDAVG_QUAD
from fedsim.validation.scenario_constants import scenario_constants

from fedsim import config
from fedsim.cli import main

EX = Path(__file__).parents[2] / "examples"


@pytest.mark.parametrize("family, theorem, fn", [
    (PERFEDAVG_QUAD, "perfedavg_theorem4_5", theorem4_5),
    (ASYPFL1_QUAD, "asypfl_theorem1", theorem1),
])
def test_a_family_scenario_gives_the_family_bound(family, theorem, fn):
    inst = family.build({"K": 40} if theorem.startswith("perfedavg") else {"T": 20})
    got = scenario_constants(config.Scenario.from_dict(inst.scenario), theorem)
    assert got.missing == {}
    res = fn(**got.values, mode=inst.mode)
    assert float(res.value) == pytest.approx(float(inst.bound.value), rel=1e-12)


def test_perfedavg_example_fills_its_constants_and_fails_r_below_one(capsys):
    sc = config.load(EX / "perfedavg_sync.toml")
    got = scenario_constants(sc, "perfedavg_theorem4_5")
    v = got.values
    assert (v["tau"], v["n"], v["r"], v["beta"], v["D"], v["Dp"], v["Dpp"], v["variant"]) == \
        (5, 10, 0.5, 0.05, 4, 4, 4, "MAML")
    assert v["sigma_G2"] == pytest.approx(0.1 ** 2 * 4, rel=1e-12)   # tr(C_i) = dim sd^2
    rc = main(["bounds", "perfedavg_theorem4_5", "--scenario",
               str(EX / "perfedavg_sync.toml")])
    out = capsys.readouterr().out
    assert rc == 0 and "NOT_APPLICABLE" in out and "H9 r == 1" in out
    assert "variant = MAML  (client_rule = 'maml')" in out


def test_asypfl_pi_is_refused_with_the_reason_beyond_one_client(capsys):
    got = scenario_constants(config.load(EX / "asypfl_logistic.toml"), "asypfl_theorem1")
    assert set(got.missing) == {"pi"} and "tick model" in got.missing["pi"]
    assert len(got.values["p"]) == len(got.values["sigma2"]) == 6 and got.values["E"] == 2
    rc = main(["bounds", "asypfl_theorem1", "--scenario", str(EX / "asypfl_logistic.toml")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "pi_k from the measured delays" in err


def test_a_rule_the_theorem_does_not_analyse_is_named():
    got = scenario_constants(config.load(EX / "fedasync_quadratic.toml"),
                             "perfedavg_theorem4_5")
    assert "synchronous FedAvg rounds with a MAML client rule" in got.missing["tau"]


def test_asypfl_one_client_with_e_above_one_is_not_the_tick_model():
    sc = config.load(EX / "asypfl_logistic.toml").replace(
        {"problem.n_clients": 1, "delays.override": []})
    got = scenario_constants(sc, "asypfl_theorem1")
    assert got.values["pi"] == [1] and got.values["E"] == 2 and got.missing == {}
    res = got.resolve(theorem1(**got.values))
    fails = [h.name for h in res.hypotheses if h.holds is False]
    assert "tick model (scenario)" in fails and res.status.name == "NOT_APPLICABLE"
