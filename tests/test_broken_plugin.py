"""A broken plug-in is reported in one line naming it; every other command keeps working.

A scratch directory on ``PYTHONPATH`` holds a ``dist-info`` whose entry points name a module
that raises on import, in each of fedsim's three groups, and an object of the wrong kind.
``fedsim --help``, ``fedsim bounds``, ``fedsim run`` and ``fedsim search --list`` still work
and exit 0, and stderr says which plug-ins were skipped, one line each, no traceback.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from plugin_site import fake_distribution

ROOT = Path(__file__).resolve().parents[1]


def _broken_site(tmp: Path) -> Path:
    return fake_distribution(
        tmp / "site", "broken-fedsim-plugin",
        "[fedsim.theorems]\nbad_theorem = broken_fedsim_plugin:THEOREM\n"
        "wrong_kind = broken_fedsim_plugin_ok:NOT_A_THEOREM\n"
        "[fedsim.families]\nbad-family = broken_fedsim_plugin:FAMILY\n"
        "[fedsim.suite_rows]\nbad-rows = broken_fedsim_plugin:ROWS\n",
        {"broken_fedsim_plugin": "raise ImportError('deliberately broken')\n",
         "broken_fedsim_plugin_ok": "NOT_A_THEOREM = 42\n"})


def _fedsim(args: list[str], site: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run([sys.executable, "-m", "fedsim.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def test_every_command_survives_a_broken_plugin(tmp_path):
    site = _broken_site(tmp_path)
    r = _fedsim(["--help"], site, tmp_path)
    assert r.returncode == 0 and "validate" in r.stdout
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert any("'bad_theorem' (fedsim.theorems = broken_fedsim_plugin:THEOREM)" in x
               and "ImportError: deliberately broken" in x for x in lines), r.stderr
    assert any("'wrong_kind'" in x and "must name a Theorem" in x for x in lines), r.stderr
    assert "Traceback" not in r.stderr and len(lines) == 2     # one line per broken plug-in
    r = _fedsim(["bounds", "theorem8", "--M", "4", "--p", "0.3,0.3", "--p-s", "0.4",
                 "--sigma2", "0", "--B", "1", "--R", "1", "--K", "9"], site, tmp_path)
    assert r.returncode == 0 and "value" in r.stdout, r.stderr
    toml = ROOT / "examples" / "fedasync_quadratic.toml"
    r = _fedsim(["run", str(toml), "--out", str(tmp_path / "runs")], site, tmp_path)
    assert r.returncode == 0, r.stderr
    r = _fedsim(["search", "--list"], site, tmp_path)
    assert r.returncode == 0 and "theorem8-norm" in r.stdout
    assert "'bad-family' (fedsim.families" in r.stderr and "Traceback" not in r.stderr
