"""``fedsim bounds`` reads each theorem's options from its function's signature (theory/cli.py)."""

from __future__ import annotations

import inspect

import pytest
from fedsim.theory.cli import options
from fedsim.theory.registry import get_theorem, theorems

from fedsim.cli import main

THM1 = ["bounds", "theorem1", "--L", "1", "--Q", "2", "--tau", "2", "--b", "1", "--sigma-g2",
        "0.2", "--gamma-g2", "1", "--f-gap", "50", "--T", "38880"]


@pytest.mark.parametrize("th", theorems(), ids=lambda t: t.name)
def test_one_option_per_keyword_argument(th):
    sig = inspect.signature(th.function)
    opts = {o.name: o for o in options(th)}
    assert list(opts) == list(sig.parameters)
    for name, par in sig.parameters.items():
        assert opts[name].required == (par.default is inspect.Parameter.empty)
        assert opts[name].flag == "--" + name.replace("_", "-")


def test_kinds_from_annotations():
    kinds = {o.name: o.kind for o in options(get_theorem("theorem1"))}
    assert kinds["L"] == "number" and kinds["Q"] == kinds["tau"] == kinds["b"] == "integer"
    assert kinds["T"] == "horizons" and kinds["mode"] == kinds["f_lower"] == "choice"
    k7 = {o.name: o.kind for o in options(get_theorem("theorem7"))}
    assert k7["p"] == k7["r_init"] == "vector" and k7["K"] == "iterations"
    assert k7["paper_literal"] == "flag" and k7["M"] == "integer" and k7["level"] == "choice"
    assert {o.name: o.choices for o in options(get_theorem("theorem3"))}["mode"] == (
        "corrected", "paper_literal", "general_eta")


@pytest.mark.parametrize("flag, value", [("--Q", "1.5"), ("--tau", "2.5"), ("--T", "100,,200"),
                                         ("--T", "100,"), ("--T", ""), ("--Q", "inf")])
def test_integers_and_lists_are_strict(flag, value, capsys):
    i = THM1.index(flag)
    argv = THM1[:i + 1] + [value] + THM1[i + 2:]
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("fedsim: error: argument " + flag)


def test_integer_spellings_and_curves(capsys):
    i = THM1.index("--Q")
    assert main(THM1[:i + 1] + ["2e0"] + THM1[i + 2:]) == 0   # 2e0 is the integer 2
    assert "1.100024519" in capsys.readouterr().out
    argv = ["bounds", "theorem8", "--M", "1", "--p", "0.3,0.3", "--p-s", "0.4", "--sigma2",
            "0.01", "--B", "1", "--R", "1", "--K", "9,100"]
    assert main(argv) == 0
    assert "per horizon" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(argv[:-1] + ["9,100.5"])


def test_f_lower_is_an_option(capsys):
    assert main(THM1 + ["--f-lower", "global_inf"]) == 0
    assert "PROOF_LEVEL" in capsys.readouterr().out.splitlines()[0]
