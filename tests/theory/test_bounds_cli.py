"""End-to-end tests of ``fedsim bounds`` (theory/cli.py) through fedsim.cli.main.

Deterministic; no statistical tests.  The golden numbers are those of
tests/test_theory_persafl.py (Thm 1 at L=1, Q=2, tau=2, b=1, sigma_g2=0.2,
gamma_g2=1, f_gap=50, T=38880: value = 50/(9 sqrt30) + 4/(15 sqrt30) + 1/27).
"""

from __future__ import annotations

import json
import math
import sys
import types

import pytest
from fedsim.theory.cli import constants_from_file, to_json
from fedsim.theory.persafl import theorem1

from fedsim.cli import main
from fedsim.problems.constants import Constant, ConstantsTable, Tag

THM1 = ["bounds", "theorem1", "--L", "1", "--Q", "2", "--tau", "2", "--b", "1", "--sigma-g2",
        "0.2", "--gamma-g2", "1", "--f-gap", "50", "--T", "38880"]
S30 = math.sqrt(30.0)
THM1_VALUE = 50 / (9 * S30) + 4 / (15 * S30) + 1 / 27


def _strict(text: str):
    def bad(c):
        raise ValueError(f"non-strict JSON constant {c}")

    return json.loads(text, parse_constant=bad)


def _run(argv, capsys):
    try:
        code = main(argv)
    except SystemExit as exc:  # an argparse usage error (one line, exit 2)
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


def test_theorem1_table(capsys):
    code, out, err = _run(THM1, capsys)
    assert code == 0 and err == ""
    first = out.splitlines()[0]
    assert "PersA-FL Theorem 1 [paper]" in first and "CERTIFIED_PAPER" in first
    assert "1.100024519" in first
    for part in ("terms:", "gap", "staleness", "hypotheses:", "step sizes: eta=", "T_min=38880"):
        assert part in out


def test_theorem1_json(capsys):
    code, out, _ = _run(THM1 + ["--json"], capsys)
    assert code == 0
    d = _strict(out)
    assert d["status"] == "CERTIFIED_PAPER" and d["mode"] == "paper"
    assert math.isclose(d["value"], THM1_VALUE, rel_tol=1e-12)
    assert math.isclose(d["step_sizes"]["eta"], 1 / (72 * S30), rel_tol=1e-12)
    assert {h["name"] for h in d["hypotheses"]} >= {"beta == 1", "T >= 160 L (Q+7)(tau+1)^3"}


def test_infinite_values_are_strings_in_json(capsys):
    i = THM1.index("--gamma-g2")
    argv = THM1[:i + 1] + ["inf"] + THM1[i + 2:]
    code, out, _ = _run(argv + ["--json"], capsys)
    d = _strict(out)
    assert d["status"] == "NOT_APPLICABLE" and d["value"] == "inf"
    assert d["terms"]["value_if_hypotheses_ignored"] == "inf"
    assert float(d["value"]) == math.inf
    r = theorem1(L=1, Q=2, tau=2, b=1, sigma_g2=0.2, gamma_g2=math.inf,
                 f_gap=50, T=[10.0, 1e6])
    assert _strict(to_json(r))["derived_constants"]["s2"] == "inf"


def test_curve_of_T(capsys):
    argv = THM1[:-1] + ["1000,38880,1e6"]
    code, out, _ = _run(argv, capsys)
    assert code == 0
    assert "status = NOT_APPLICABLE" in out.splitlines()[0]  # worst over horizons
    table = out.split("per horizon:")[1].strip().splitlines()
    assert table[0].split()[:2] == ["T", "value"] and len(table) == 4
    assert table[1].split()[-1] == "NOT_APPLICABLE"
    assert table[2].split()[-1] == "CERTIFIED_PAPER"
    code, out, _ = _run(argv + ["--json"], capsys)
    d = _strict(out)
    assert len(d["value"]) == 3 and math.isclose(d["value"][1], THM1_VALUE, rel_tol=1e-12)
    assert d["derived_constants"]["status_per_T"][1] == "CERTIFIED_PAPER"


def test_modes_and_flags(capsys):
    code, out, _ = _run(THM1 + ["--mode", "general_eta", "--eta", "0.01"], capsys)
    assert code == 0 and "PROOF_LEVEL" in out.splitlines()[0]
    thm2 = ["bounds", "theorem2", "--L", "1", "--rho", "0", "--G", "inf", "--alpha", "0.5",
            "--sigma-g2", "0.2", "--sigma-h2", "0", "--gamma-g2", "1", "--gamma-h2", "0.4",
            "--b", "4", "--Q", "2", "--tau", "2", "--F-gap", "10", "--T", "1024"]
    code, out, _ = _run(thm2, capsys)
    assert code == 0 and "status = VACUOUS" in out.splitlines()[0]  # quadratic: G = inf
    thm3 = ["bounds", "theorem3", "--L", "1", "--lam", "10", "--nu", "0.1", "--sigma-g2", "0.2",
            "--gamma-g2", "1", "--b", "2", "--Q", "1", "--tau", "1", "--F-gap", "5", "--T",
            "23040"]
    code, out, _ = _run(thm3, capsys)
    assert "CERTIFIED_CORRECTED" in out.splitlines()[0] and "3.812044951" in out.splitlines()[0]
    code, out, _ = _run(thm3 + ["--affine-additive", "--json"], capsys)
    assert math.isclose(_strict(out)["terms"]["bias"], 4 / 81, rel_tol=1e-12)
    code, out, _ = _run(thm3 + ["--mode", "paper_literal"], capsys)
    assert "PAPER_LITERAL_KNOWN_ERRATUM" in out.splitlines()[0]


@pytest.mark.parametrize(
    "argv",
    [
        ["bounds", "theorem1", "--bogus", "1"],
        ["bounds", "theorem1", "--L", "x"],
        THM1 + ["--mode", "corrected"],
        ["bounds", "theorem9"],
        ["bounds"],
    ],
)
def test_bad_options_exit_2_one_line(argv, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("fedsim: error:")


@pytest.mark.parametrize(
    "change, start",
    [
        (("--L", "-1"), "fedsim: error: L must be > 0, got L=-1.0"),
        (("--Q", "0"), "fedsim: error: Q must be >= 1"),
        (("--T", "nan"), "fedsim: error: argument --T: expected whole numbers of steps >= 1"),
        (("--T", "1.5"), "fedsim: error: argument --T: expected whole numbers of steps >= 1"),
        (("--tau", None), "fedsim: error: tau is required for theorem1"),
    ],
)
def test_bad_values_exit_2_one_line(change, start, capsys):
    flag, val = change
    i = THM1.index(flag)
    argv = THM1[:i] + THM1[i + 2:] if val is None else THM1[:i + 1] + [val] + THM1[i + 2:]
    code, out, err = _run(argv, capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(start)


def test_area_theorems_when_available(capsys):
    pytest.importorskip("fedsim.theory.area")
    argv = ["bounds", "theorem8", "--M", "1", "--p", "0.3,0.3", "--p-s", "0.4", "--sigma2",
            "0.01", "--B", "1", "--R", "1", "--K", "9,100", "--json"]
    code, out, _ = _run(argv, capsys)
    assert code == 0
    d = _strict(out)
    assert d["status"] == "CERTIFIED_CORRECTED" and len(d["value"]) == 2
    argv = ["bounds", "theorem7", "--L", "2", "--mu", "1", "--M", "2", "--p", "0.3,0.3",
            "--p-s", "0.4", "--sigma", "0.1", "--zeta", "1", "--R0", "1", "--K", "100",
            "--level", "rate_shape"]
    code, out, _ = _run(argv, capsys)
    assert code == 0 and "RATE_SHAPE_ONLY" in out.splitlines()[0]
    code, _, err = _run(argv[:-1] + ["bogus"], capsys)
    assert code == 2 and "--level: invalid choice" in err and "rate_shape" in err


# ----------------------------------------------------------------------------- problem files
class _FakeProblem:
    constants = ConstantsTable([
        Constant("L", 1.0, Tag.EXACT, "test"),
        Constant("sigma_g2", 0.2, Tag.EXACT, "test"),
        Constant("gamma_g2", math.inf, Tag.INFINITE, "unequal A_i"),
        Constant("G", math.inf, Tag.INFINITE, "quadratic"),
    ])


def _fake_config(monkeypatch, **attrs):
    mod = types.ModuleType("fedsim.config")
    for k, v in attrs.items():
        setattr(mod, k, v)
    monkeypatch.setitem(sys.modules, "fedsim.config", mod)


def test_constants_from_file_maps_the_table(monkeypatch, tmp_path):
    path = tmp_path / "s.toml"
    path.write_text("# read by the fake loader\n")
    alg = types.SimpleNamespace(Q=2, eta=None, batch=1, beta=1.0, alpha=None, lam=None, nu=None,
                                M=None, tau=2)
    scen = types.SimpleNamespace(problem="P", algorithm=alg,
                                 horizon=types.SimpleNamespace(steps=38880))
    _fake_config(monkeypatch, load=lambda p: scen,
                 build_problem=lambda cfg: _FakeProblem() if cfg == "P" else None)
    d = constants_from_file(path)
    assert d == {"L": 1.0, "sigma_g2": 0.2, "gamma_g2": math.inf, "G": math.inf, "Q": 2,
                 "b": 1, "beta": 1.0, "tau": 2, "T": 38880, "K": 38880}
    assert constants_from_file(path, include_algorithm=False) == {
        "L": 1.0, "sigma_g2": 0.2, "gamma_g2": math.inf, "G": math.inf}


def test_scenario_option_uses_file_constants(tmp_path, capsys):
    """--scenario fills the constants (fedsim.validation.scenario_constants); an option wins."""
    from fedsim import config

    path = tmp_path / "s.toml"
    path.write_text('name = "w"\nseed = 1\n[problem]\nkind = "quadratic"\nn = 3\ndim = 2\n'
                    'mu = 0.5\nL = 1.0\nshared_hessian = true\nseed = 3\n'
                    '[algorithm]\nname = "fedasync"\nmodel = "window"\ntau = 2\nQ = 2\n'
                    'eta = 0.001\nbatch = 1\n[horizon]\nsteps = 38880\n')
    prob = config.build_problem(config.load(path).problem)
    c = prob.constants.values()
    code, out, _ = _run(["bounds", "theorem1", "--scenario", str(path), "--f-gap", "50",
                         "--gamma-g2", "1", "--json"], capsys)
    assert code == 0
    d = _strict(out)
    want = theorem1(L=float(c["L"]), Q=2, tau=2, b=1, sigma_g2=float(c["sigma_g2"]),
                    gamma_g2=1.0, f_gap=50.0, T=38880, eta=0.001, beta=1.0)
    assert math.isclose(d["value"], float(want.value), rel_tol=1e-12)


def test_real_scenario_file(tmp_path, capsys):
    """Integration with fedsim.config: a shared-Hessian quadratic gives Thm 2 an infinite
    bound (G = inf); the scenario's step and client rule decide the hypotheses."""
    config = pytest.importorskip("fedsim.config")
    if not (hasattr(config, "load") and hasattr(config, "build_problem")):
        pytest.skip("fedsim.config has no load()/build_problem() yet")
    path = tmp_path / "quad.toml"
    path.write_text('name = "q"\nseed = 1\n[problem]\nkind = "quadratic"\nn = 3\ndim = 2\n'
                    'mu = 0.5\nL = 1.0\nshared_hessian = true\nseed = 3\n'
                    '[algorithm]\nname = "fedasync"\nclient_rule = "maml"\nalpha = 0.1\n'
                    'Q = 2\nbatch = 1\n[horizon]\nsteps = 38880\n')
    code, out, _ = _run(["bounds", "theorem2", "--scenario", str(path), "--tau", "2",
                         "--F-gap", "10", "--json"], capsys)
    assert code == 0
    d = _strict(out)
    # the run's step (the default eta = 0.01) is not the prescribed one: named, not applicable
    assert d["status"] == "NOT_APPLICABLE" and d["value"] == "inf"
    assert any(h["name"].startswith("eta ==") and h["holds"] is False for h in d["hypotheses"])
    assert d["terms"]["value_if_hypotheses_ignored"] == "inf"  # G = inf: vacuous anyway
    # the same problem run with Option A: Theorem 2 (Option B) does not apply, and says why
    path.write_text(path.read_text().replace('client_rule = "maml"\nalpha = 0.1\n', ""))
    code, out, _ = _run(["bounds", "theorem2", "--scenario", str(path), "--tau", "2",
                         "--F-gap", "10", "--alpha", "0.1", "--json"], capsys)
    d = _strict(out)
    assert code == 0 and d["status"] == "NOT_APPLICABLE"
    assert any(h["name"].startswith("Option B") and h["holds"] is False
               for h in d["hypotheses"])
