"""The architecture contract (``[tool.importlinter]`` in pyproject.toml) holds.

import-linter checks that the doors run one way (problems <- rules <- engine <- validation,
theory <- validation; the engine never imports theory; theory never imports the engine),
that the update rules never import SimPy, and that no two sibling modules import each other.
A negative control builds a tiny package that breaks the cycle rule and the layer rule and
asserts the same tool flags it, so this test can fail.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINT = [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command; "
        "sys.exit(lint_imports_command())"]


def _lint(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(cwd))
    return subprocess.run([*LINT, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def test_the_repository_keeps_its_contract():
    res = _lint(ROOT)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    assert "0 broken" in res.stdout


def test_a_cycle_and_a_wrong_door_are_flagged(tmp_path):
    pkg = tmp_path / "probe"
    (pkg / "low").mkdir(parents=True)
    (pkg / "high").mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "low" / "__init__.py").write_text("")
    (pkg / "high" / "__init__.py").write_text("")
    (pkg / "low" / "a.py").write_text("from probe.low import b\n")
    (pkg / "low" / "b.py").write_text("from probe.low import a\n")         # a cycle
    (pkg / "low" / "c.py").write_text("import probe.high\n")               # a door upwards
    (tmp_path / ".importlinter").write_text(textwrap.dedent("""
        [importlinter]
        root_package = probe

        [importlinter:contract:layers]
        name = layers
        type = layers
        layers =
            probe.high
            probe.low

        [importlinter:contract:cycles]
        name = cycles
        type = acyclic_siblings
        ancestors =
            probe
    """))
    res = _lint(tmp_path)
    assert res.returncode != 0
    assert "2 broken" in res.stdout, res.stdout[-2000:]
