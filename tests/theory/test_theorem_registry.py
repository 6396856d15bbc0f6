"""The theorem registry (theory/registry.py) and its ``fedsim.theorems`` plug-ins.

Every built-in theorem has a paper label, a module docstring citing an equation number, a
hypotheses table and statuses; a plug-in package found on ``sys.path`` through its
``*.dist-info/entry_points.txt`` (no pip install) shows up in ``fedsim bounds --list`` and
is callable through the CLI.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from fedsim.theory import registry
from fedsim.theory.registry import Theorem, get_theorem, register_theorem, theorems
from fedsim.theory.result import BoundResult, Hypothesis, Status

from fedsim.cli import main
from fedsim.errors import ConfigError

PLUGIN = Path(__file__).parent / "plugin"
BUILTIN = ["theorem1", "theorem2", "theorem3", "theorem7", "theorem8"]


def test_builtins_in_order():
    assert [t.name for t in theorems()][:5] == BUILTIN


@pytest.mark.parametrize("name", BUILTIN)
def test_every_builtin_is_documented(name):
    th = get_theorem(name)
    assert re.match(r"^\[[A-Z]\] .+ Theorem \d+$", th.label)
    assert th.paper and th.statuses and th.horizon in ("T", "K")
    assert re.search(r"eqs?\. \(\w?\d+\)", th.statement), th.statement[:200]
    hyps = th.hypothesis_list()
    assert hyps and all(isinstance(h, Hypothesis) and h.holds is None and h.detail
                        for h in hyps)
    assert th.module.startswith("fedsim.theory.") and callable(th.function)
    assert not hasattr(th, "scenarios")        # validation keeps its grids to itself


def test_get_unknown_and_duplicates():
    with pytest.raises(ConfigError, match="theorem must be one of"):
        get_theorem("theorem99")
    th = get_theorem("theorem1")
    with pytest.raises(ConfigError, match="already registered"):
        register_theorem(name="theorem1", function=lambda **kw: None, label="[X] X Theorem 1")
    assert get_theorem("theorem1") is th
    with pytest.raises(ConfigError, match="name must be an identifier"):
        Theorem(name="a b", function=print, label="x")


def test_register_and_call_a_toy(capsys):
    def toy(*, x: float, k: int = 2) -> BoundResult:
        """Toy: ``x k`` (eq. (1))."""
        return BoundResult(value=x * k, status=Status.PROOF_LEVEL, theorem="Toy")

    register_theorem(name="toy_inline", function=toy, label="[T] Toy Theorem 2")
    try:
        assert theorems()[-1].name == "toy_inline"
        assert get_theorem("toy_inline")(x=1.5).value == 3.0
        assert main(["bounds", "toy_inline", "--x", "1.5", "--k", "3", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["value"] == 4.5
    finally:
        registry.unregister("toy_inline")
    assert "toy_inline" not in [t.name for t in theorems()]


@pytest.fixture
def plugin(monkeypatch):
    monkeypatch.syspath_prepend(str(PLUGIN))
    loaded = registry.load_plugins(force=True)
    yield loaded
    registry.unregister("toy")


def test_plugin_entry_point(plugin, capsys):
    assert "toy" in plugin
    th = get_theorem("toy")
    assert th.label == "[T] Toy Theorem 1" and th.module == "fedsim_toy_theorem"
    with pytest.raises(SystemExit) as e:
        main(["bounds", "--list"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    lines = {ln.split()[0]: ln for ln in out.splitlines()}
    assert list(lines)[:5] == BUILTIN and "toy" in lines
    assert "[T] Toy Theorem 1" in lines["toy"] and "[P] PersA-FL Theorem 1" in lines["theorem1"]
    assert main(["bounds", "toy", "--a", "2", "--T", "4,16", "--n", "3", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["value"] == [3.0, 1.5] and d["status"] == "PROOF_LEVEL"
    assert main(["bounds", "toy", "--a", "2", "--T", "4", "--halve"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert "Toy Theorem 1" in first and "0.5" in first


def test_plugin_options_are_typed(plugin, capsys):
    with pytest.raises(SystemExit) as e:
        main(["bounds", "toy", "--a", "2", "--T", "4", "--n", "1.5"])
    assert e.value.code == 2
    assert "not an integer" in capsys.readouterr().err
    assert main(["bounds", "toy", "--T", "4"]) == 2
    assert "a is required for toy" in capsys.readouterr().err


def test_builtin_bounds_unchanged_by_plugins(plugin):
    r = get_theorem("theorem1")(L=1.0, Q=2, tau=2, b=1, sigma_g2=0.2, gamma_g2=1.0,
                                f_gap=50.0, T=38880)
    s30 = math.sqrt(30.0)
    assert math.isclose(r.value, 50 / (9 * s30) + 4 / (15 * s30) + 1 / 27, rel_tol=1e-12)
