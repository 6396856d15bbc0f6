"""``fedsim bounds THEOREM --scenario FILE``: every constant the scenario determines
(fedsim.validation.scenario_constants), hand-computed, and the unfilled ones with the reason."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from fedsim.theory.area import theorem7
from fedsim.validation.scenario_constants import scenario_constants

from fedsim import config
from fedsim.cli import main

EX = Path(__file__).parents[2] / "examples"


def _run(argv, capsys):
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


def test_theorem7_from_the_iterate_model_example(capsys):
    code, out, err = _run(["bounds", "theorem7", "--scenario",
                           str(EX / "area_iterate_model.toml"), "--K", "100,1000,10000"], capsys)
    assert code == 0, err
    assert "p_s = 0.25" in out and "R0 = " in out and "K: given on the command line" in out


def test_theorem7_constants_by_hand():
    sc = config.load(EX / "area_iterate_model.toml")
    got = scenario_constants(sc, "theorem7")
    # client rates 1, 1, 1, 3 (exponential compute) and server rate 2: total 8
    assert got.values["p"] == pytest.approx([1 / 8, 1 / 8, 1 / 8, 3 / 8], rel=1e-15)
    assert got.values["p_s"] == pytest.approx(2 / 8, rel=1e-15)
    # additive noise sd 0.1 in dim 3: sigma_g2 = tr S = 0.03, b = 1
    assert got.values["sigma"] == pytest.approx(math.sqrt(0.03), rel=1e-12)
    prob = config.build_problem(sc.problem)
    assert got.values["R0"] == pytest.approx(float(np.linalg.norm(prob.x_star)), rel=1e-15)
    assert got.values["K"] == 3000 and got.values["M"] == 2
    assert not got.missing
    res = got.resolve(theorem7(**got.values))
    assert all(h.holds for h in res.hypotheses), res.hypotheses


def test_algorithm_model_lists_p_with_the_reason_and_fails_h73(capsys):
    code, _, err = _run(["bounds", "theorem7", "--scenario", str(EX / "area_algorithm.toml")],
                        capsys)
    assert code == 2 and err.count("\n") == 1
    assert "p is required" in err and "not i.i.d." in err and "also missing: p_s" in err
    code, out, _ = _run(["bounds", "theorem7", "--scenario", str(EX / "area_algorithm.toml"),
                         "--p", "0.2,0.2,0.2", "--p-s", "0.4"], capsys)
    assert code == 0 and "NOT_APPLICABLE" in out and "H7.3" in out and "FAILS" in out


def test_tau_from_the_provable_staleness(tmp_path):
    # two clients, constant compute 1, no other delays, every upload: c_min = W = 1, so each
    # window holds floor(1/1) + 1 = 2 uploads of the other client: tau = 2
    sc = config.load(EX / "fedasync_quadratic.toml").replace({
        "problem.n": 2, "delays.compute": {"kind": "constant", "value": 1.0},
        "delays.download": {"kind": "constant", "value": 0.0},
        "delays.upload": {"kind": "constant", "value": 0.0}})
    got = scenario_constants(sc, "theorem1")
    assert got.values["tau"] == 2
    prob = config.build_problem(sc.problem)
    assert got.values["f_gap"] == pytest.approx(
        prob.f(np.zeros(prob.dim)) - float(prob.constants.values()["f_star_P"]))
    # exponential delays: no provable tau, listed with the reason
    got = scenario_constants(config.load(EX / "fedasync_quadratic.toml"), "theorem1")
    assert "tau" in got.missing and "unbounded" in got.missing["tau"]


def test_window_tau_and_option_c(capsys):
    got = scenario_constants(config.load(EX / "persafl_me_window.toml"), "theorem3")
    assert got.values["tau"] == 2 and "F_gap" in got.values
    assert got.facts["Option C"][0] is True


def test_list_columns_align(capsys):
    code, out, _ = _run(["bounds", "--list"], capsys)
    assert code == 0
    lines = [ln for ln in out.splitlines() if ln.strip()]
    starts = {ln.index("[", ln.index(" ")) for ln in lines}      # the label column
    assert len(starts) == 1, out
    mods = {ln.index(" fedsim.") for ln in lines}   # fedsim.theory... and fedsim.literature...
    assert len(mods) == 1, out


def test_mode_choices_in_usage(capsys):
    code, out, _ = _run(["bounds", "theorem8", "--help"], capsys)
    assert code == 0 and "{corrected,paper,general_alpha}" in out
