"""The README works as written (issue 14 item 6).

* Its Python tour runs and prints exactly the block shown after it.
* Every shell command in it is spelled with ``.venv/bin/`` (a fresh shell has no ``fedsim`` on
  ``PATH``) or is ``make``, ``openssl``, ``source`` or ``d=...``.
* The cheap commands run as written (in a scratch copy of ``examples/``, so nothing lands in
  the repository) and print what the README shows: ``fedsim run`` (into ``runs/``),
  ``fedsim bounds`` (its first line), ``fedsim bounds --list``, ``fedsim search --list``.
* No link and no quoted path leaves the repository.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
BLOCKS = re.findall(r"```(\w*)\n(.*?)```", README, re.S)


def _commands() -> list[str]:
    cmds = []
    for lang, body in BLOCKS:
        if lang != "bash":
            continue
        body = body.replace("\\\n", " ")
        for line in body.splitlines():
            line = line.split("  #")[0].strip()
            if line and not line.startswith("#"):
                cmds.append(line)
    return cmds


def _fedsim(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "fedsim.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


def test_every_shell_command_names_the_venv():
    allowed = (".venv/bin/", "make ", "openssl ", "source ", "d=$(", "bash .ci/run")
    bad = [c for c in _commands() if not c.startswith(allowed)]
    assert not bad, f"commands that a fresh shell cannot run as written: {bad}"


def test_no_link_leaves_the_repository():
    links = re.findall(r"\]\(([^)]+)\)", README)
    assert links
    for target in links:
        assert not target.startswith(("../", "/")), target
        assert (ROOT / target).exists(), f"README links to a missing file: {target}"
    assert "../" not in README


def test_python_tour_prints_what_the_readme_shows():
    idx = next(k for k, (lang, _) in enumerate(BLOCKS) if lang == "python")
    code, shown = BLOCKS[idx][1], BLOCKS[idx + 1][1]
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=600, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    assert res.stdout == shown


@pytest.fixture()
def scratch(tmp_path):
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    return tmp_path


def _readme_command(prefix: str) -> list[str]:
    cmd = next(c for c in _commands() if c.startswith(prefix))
    return cmd.split()[1:]


def test_fedsim_run_as_written(scratch):
    args = _readme_command(".venv/bin/fedsim run ")
    assert any(a.startswith("runs/") for a in args), "fedsim run examples write into runs/"
    (scratch / "runs").mkdir()
    res = _fedsim([*args, "--no-progress"], scratch)
    assert res.returncode == 0, res.stderr
    assert (scratch / "runs" / "run.csv").stat().st_size > 0
    assert (scratch / "runs" / "run.png").stat().st_size > 0
    assert ": ok; steps=" in res.stdout


def test_fedsim_bounds_as_written(scratch):
    args = _readme_command(".venv/bin/fedsim bounds theorem1")
    res = _fedsim(args, scratch)
    assert res.returncode == 0, res.stderr
    shown = next(body for lang, body in BLOCKS if body.startswith("PersA-FL Theorem 1"))
    assert res.stdout.splitlines()[0] == shown.splitlines()[0]


@pytest.mark.parametrize("args", [["bounds", "--list"], ["search", "--list"]])
def test_listings_as_written(args, scratch):
    assert f".venv/bin/fedsim {' '.join(args)}" in README
    res = _fedsim(args, scratch)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip()
