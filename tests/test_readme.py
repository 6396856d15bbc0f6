"""The README works as written, in a fresh clone (issue 14 item 6, issue 18 item 7).

* Its Python tour runs and prints exactly the block shown after it.
* Every shell command in it is spelled with ``.venv/bin/`` (a fresh shell has no ``fedsim`` on
  ``PATH``) or is ``make``, ``openssl``, ``source``, ``mkdir -p`` or ``d=...``.
* The cheap commands run as written, through ``bash``, in a fresh copy of the repository's
  tracked files (what ``git clone`` gives: no ``runs/``, no ``.venv``; a ``.venv/bin/fedsim``
  that runs this interpreter's ``fedsim`` stands in for ``make``'s venv): ``fedsim run``,
  ``fedsim bounds`` (its first line), ``fedsim bounds --list``, ``fedsim search --list`` and
  the TLS recipe.  Nothing here creates ``runs/`` for them, and each may write only where
  the README says (``runs/``, ``.tls/``).
* No link and no quoted path leaves the repository.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
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


def test_every_shell_command_names_the_venv():
    allowed = (".venv/bin/", "make ", "openssl ", "source ", "d=$(", "bash .ci/run",
               "mkdir -p ")
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


def _tracked_files() -> list[str]:
    try:
        res = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                             timeout=60, check=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the fresh-clone copy needs `git ls-files`")
    return [f for f in res.stdout.decode().split("\0") if f]


@pytest.fixture()
def clone(tmp_path):
    """The tracked files as they are in the working tree (so uncommitted edits count), as a
    fresh clone has them, with a stand-in ``.venv/bin/fedsim``."""
    dst = tmp_path / "clone"
    for rel in _tracked_files():
        src = ROOT / rel
        if src.is_file():
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst / rel)
    assert not (dst / "runs").exists(), "runs/ is tracked: a fresh clone would hold it"
    bin_dir = dst / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    exe = bin_dir / "fedsim"
    # -P: the copy's folders must not shadow the installed package (fedsim.theory lives in
    # theory/, which only the install maps into the namespace)
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" -P -m fedsim.cli "$@"\n')
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return dst


def _files(d: Path) -> set[str]:
    return {str(p.relative_to(d)) for p in d.rglob("*")
            if p.is_file() and ".venv" not in p.parts}


def _bash(cmd: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    return subprocess.run(["bash", "-c", f"set -e\n{cmd}"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def _readme_command(part: str) -> str:
    return next(c for c in _commands() if part in c)


def _new_files(clone: Path, cmd: str) -> tuple[subprocess.CompletedProcess, set[str]]:
    before = _files(clone)
    res = _bash(cmd, clone)
    return res, _files(clone) - before


def test_fedsim_run_as_written_in_a_fresh_clone(clone):
    cmd = _readme_command(".venv/bin/fedsim run ")
    res, new = _new_files(clone, cmd)
    assert res.returncode == 0, res.stderr
    assert (clone / "runs" / "run.csv").stat().st_size > 0
    assert (clone / "runs" / "run.png").stat().st_size > 0
    assert ": ok; steps=" in res.stdout
    assert all(f.startswith("runs/") for f in new), new


def test_fedsim_bounds_as_written(clone):
    res, new = _new_files(clone, _readme_command(".venv/bin/fedsim bounds theorem1"))
    assert res.returncode == 0, res.stderr
    shown = next(body for lang, body in BLOCKS if body.startswith("PersA-FL Theorem 1"))
    assert res.stdout.splitlines()[0] == shown.splitlines()[0]
    assert not new, new


@pytest.mark.parametrize("args", [["bounds", "--list"], ["search", "--list"]])
def test_listings_as_written(args, clone):
    cmd = f".venv/bin/fedsim {' '.join(args)}"
    assert f"`{cmd}`" in README  # quoted inline in the prose
    res, new = _new_files(clone, cmd)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip()
    assert not new, new


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is not installed")
def test_tls_recipe_keeps_its_keys_in_an_ignored_folder(clone):
    cmds = [c for c in _commands() if c.startswith("openssl ")]
    assert len(cmds) == 3
    setup = [c for c in _commands() if c.startswith("mkdir -p ") and ".tls" in c]
    assert setup, "the TLS recipe creates its folder"
    res, new = _new_files(clone, "\n".join([*setup, *cmds]))
    assert res.returncode == 0, res.stderr
    assert {"ca.key", "ca.pem", "node.key", "node.pem"} <= {Path(f).name for f in new}
    assert all(f.startswith(".tls/") for f in new), new
    assert stat.S_IMODE((clone / ".tls").stat().st_mode) & 0o077 == 0
    ignored = subprocess.run(["git", "check-ignore", "-q", ".tls/ca.key"], cwd=ROOT)
    assert ignored.returncode == 0, ".tls/ is not git-ignored"
    for c in _commands():
        if c.startswith((".venv/bin/dask ", ".venv/bin/fedsim validate --suite full --dask tls")):
            for path in re.findall(r"\S+\.(?:pem|key)\b", c):
                assert path.startswith(".tls/"), (c, path)
