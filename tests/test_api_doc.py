"""docs/API.md: every code block runs, in order, in one namespace, from the repository root;
and the top-level names load lazily."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "API.md").read_text(), re.S)


def test_the_page_has_its_four_blocks():
    assert len(BLOCKS) == 4


def test_every_block_runs(monkeypatch):
    monkeypatch.chdir(ROOT)
    namespace: dict = {}
    for block in BLOCKS:
        exec(compile(block, "docs/API.md", "exec"), namespace)
    assert len(namespace["df"]) == namespace["trace"].steps_done + 1
    assert namespace["result"].status
    assert (namespace["bigger"].algorithm.eta, namespace["bigger"].problem.n) == (0.05, 20)


def test_import_fedsim_theory_loads_neither_the_engine_nor_simpy():
    code = ("import sys, fedsim, fedsim.theory, fedsim.validation\n"
            "bad = [m for m in sys.modules if m == 'simpy' or m.startswith('fedsim.engine')]\n"
            "assert not bad, bad\n"
            "fedsim.theory.bound\n"
            "bad = [m for m in sys.modules if m == 'simpy' or m.startswith('fedsim.engine')]\n"
            "assert not bad, bad\n"
            "fedsim.run\n"
            "assert 'fedsim.engine' not in sys.modules  # the engine loads on the first run\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize("package", ["fedsim", "fedsim.theory", "fedsim.validation"])
def test_every_public_name_resolves(package):
    import importlib

    mod = importlib.import_module(package)
    for name in mod.__all__:
        assert getattr(mod, name) is not None
    with pytest.raises(AttributeError, match="no attribute"):
        mod.no_such_name  # noqa: B018


def test_bound_refuses_unknown_and_missing_arguments():
    import fedsim.theory

    from fedsim.errors import ConfigError

    with pytest.raises(ConfigError, match="does not take Lipschitz"):
        fedsim.theory.bound("theorem7", Lipschitz=1.0)
    with pytest.raises(ConfigError, match="needs L, mu"):
        fedsim.theory.bound("theorem7")


def test_run_refuses_a_non_scenario():
    import fedsim

    with pytest.raises(fedsim.ConfigError, match="must be a Scenario, a scenario dict or a TOML"):
        fedsim.run(42)
