"""No test and no code path writes to a system device path (issue 21: a helper's fuzz case
once ran ``report --out /dev/null`` as root and replaced /dev/null with a file).

Three checks: (1) every ``/dev/...`` literal in the package and the tests is one of a
short list of read-only or refused uses; (2) ``tests/conftest.py`` compares the identity of
the system device nodes before and after the whole session (a replaced node fails the
run); (3) each output option of every subcommand, pointed at a device node of our own, is
refused and the node stays a device.
"""

from __future__ import annotations

import ast
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SYSTEM_DEVICES, device_identity

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).parent))
from cli_corpus import make_device  # noqa: E402

#: (file, literal) pairs allowed to name a system device: each reads it or expects a refusal
ALLOWED = {
    ("tests/core/test_safefile.py", "/dev/zero"),           # `run /dev/zero`: refused input
    ("tests/core/cli_corpus.py", "/dev/zero"),              # the same, in the fuzz corpus
    ("tests/core/test_fuzz_inputs.py", "/dev/null/x.csv"),  # a parent that cannot exist
    ("tests/core/hostile_corpus.py", "/dev/full"),          # a case's stdout (> /dev/full)
}
#: files that only ``lstat`` the system devices (the session guard) or list them (this one)
READ_ONLY = {"tests/conftest.py", "tests/core/test_no_device_writes.py"}


def _literals(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
            and isinstance(n.value, str) and n.value.startswith("/dev/")}


def test_device_paths_named_only_where_allowed():
    found = set()
    for top in ("fedsim", "theory", "validation", "tests", "benchmarks"):
        for p in sorted((ROOT / top).rglob("*.py")):
            rel = p.relative_to(ROOT).as_posix()
            if rel in READ_ONLY:
                continue
            found |= {(rel, lit) for lit in _literals(p)}
    assert found <= ALLOWED, sorted(found - ALLOWED)


def test_os_devnull_only_opened_for_stdout_after_a_broken_pipe():
    """``os.devnull`` is opened in one place, as a file descriptor for stdout (never a
    path handed to a writer that replaces files)."""
    users = []
    for top in ("fedsim", "theory", "validation"):
        for p in sorted((ROOT / top).rglob("*.py")):
            if "os.devnull" in p.read_text(encoding="utf-8"):
                users.append(p.relative_to(ROOT).as_posix())
    assert users == ["fedsim/cli.py"]


def test_the_session_guard_sees_the_system_devices():
    ids = device_identity()
    assert "/dev/null" in ids and ids["/dev/null"][0], ids
    assert set(ids) <= set(SYSTEM_DEVICES)


@pytest.mark.parametrize("argv", [
    ["run", str(ROOT / "examples" / "fedasync_quadratic.toml"), "--steps", "5", "--out", "{dev}"],
    ["run", str(ROOT / "examples" / "fedasync_quadratic.toml"), "--steps", "5",
     "--metrics-out", "{dev}"],
    ["run", str(ROOT / "examples" / "fedasync_quadratic.toml"), "--steps", "5", "--plot",
     "{dev}"],
    ["validate", "--suite", "smoke", "--out", "{tmp}/v", "--report", "{dev}"],
    ["validate", "--suite", "smoke", "--out", "{dev}"],
    ["search", "theorem8", "--family", "theorem8-norm", "--space", "K=2..3", "--out", "{dev}",
     "--budget", "5s"],
])
def test_output_options_refuse_a_device(tmp_path, argv):
    dev = tmp_path / "dev"
    make_device(dev)
    args = [a.format(dev=dev, tmp=tmp_path) for a in argv]
    p = subprocess.run([sys.executable, "-m", "fedsim.cli", *args], cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr
    m = os.lstat(dev).st_mode
    assert stat.S_ISCHR(m) or stat.S_ISFIFO(m)
