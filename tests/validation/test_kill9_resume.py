"""``kill -9`` at three moments of validate, search and the paper suite, then resume
(issue 21, "Checked by"): the outputs are ``cmp``-identical to an uninterrupted run, no
committed row is lost or recomputed, no process of the killed run is alive 5 s later, and
no temporary file is left.

The kill comes from inside the process at an exact moment (:mod:`fedsim.faults`,
``FEDSIM_FAULT``): ``setup`` (run directory locked, nothing computed), mid-chunks (after the
2nd committed chunk, or the 3rd search point) and during the final write of the CSV (its
temporary file complete, not yet renamed).  "Not recomputed" is read from SQLite's rowid:
a row written again (``INSERT OR REPLACE``) gets a new rowid.  ``make test`` runs one
moment per command (mid-chunks, with a process pool for validate); the rest are ``slow``.
"""

from __future__ import annotations

import filecmp
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_PAPER = ("import sys\nfrom fedsim.validation.paper import run_paper_suite\n"
          "run_paper_suite(out=sys.argv[1], report=sys.argv[1] + '.pdf', workers=1, "
          "progress=False, small=True, only=['area_bias'])\n")

COMMANDS = {
    "validate": (["-m", "fedsim.cli", "validate", "--suite", "smoke", "--theorem", "theorem8",
                  "--replicates", "4", "--workers", "2", "--no-progress", "--out", "{out}",
                  "--report", "{out}.pdf"],
                 ["verdicts.csv"], "verdicts.csv"),
    "search": (["-m", "fedsim.cli", "search", "theorem8", "--family", "theorem8-norm",
                "--space", "K=2..9", "--fixed", "n=2", "--evals", "8", "--grid", "8",
                "--refine", "0", "--confirm", "0", "--workers", "1", "--no-progress",
                "--out", "{out}"],
               ["search.csv"], "search.csv"),
    "paper": (["-c", _PAPER, "{out}"],
              ["paper_verdicts.csv", "paper/area_bias.json", "paper/index.json"],
              "paper_verdicts.csv"),
}
MID = {"validate": "chunk@2", "search": "point@3", "paper": "chunk@2"}


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _run(cmd: str, out: Path, fault: str | None) -> int:
    argv = [a.format(out=out) for a in COMMANDS[cmd][0]]
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    env.pop("FEDSIM_FAULT", None)
    if fault is not None:
        env["FEDSIM_FAULT"] = fault
    p = subprocess.Popen([sys.executable, *argv], cwd=out.parent, env=env,
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        _, err = p.communicate(timeout=240)
    finally:
        if p.poll() is None:  # pragma: no cover - a hang: clean up, then fail below
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    deadline = time.monotonic() + 5.0
    while _group_alive(p.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    alive = _group_alive(p.pid)
    if alive:
        os.killpg(p.pid, signal.SIGKILL)
    assert not alive, f"{cmd} ({fault}): a process of the run was alive 5 s after it ended"
    if fault is None:
        assert p.returncode == 0, err
    return p.returncode


def _rows(out: Path) -> dict[tuple[str, str], tuple[int, str]]:
    """``(table, key) -> (rowid, checksum)`` of every committed row (read-only)."""
    db = out / "store.sqlite"
    if not db.exists():
        return {}
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = {("records", k): (r, c) for r, k, c in
                con.execute("SELECT rowid, task_id, checksum FROM records")}
        rows.update({("points", k): (r, c) for r, k, c in
                     con.execute("SELECT rowid, point, checksum FROM points")})
    finally:
        con.close()
    return rows


def _temporaries(*roots: Path) -> list[str]:
    return sorted(str(p) for r in roots if r.exists() for p in r.rglob("*")
                  if p.name.startswith(".tmp-") or p.name.endswith("-journal"))


# one worker runs this module (make test: --dist loadgroup), so its module fixture runs once
pytestmark = pytest.mark.xdist_group("test_kill9_resume")


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """One uninterrupted run of each command (computed on first use)."""
    cache: dict[str, Path] = {}

    def get(cmd: str) -> Path:
        if cmd not in cache:
            out = tmp_path_factory.mktemp(f"ref-{cmd}") / "run"
            _run(cmd, out, None)
            cache[cmd] = out
        return cache[cmd]

    return get


def _param(cmd: str, moment: str):
    fault = {"setup": "setup", "mid": MID[cmd], "write": f"write:{COMMANDS[cmd][2]}"}[moment]
    marks = () if moment == "mid" else (pytest.mark.slow,)
    return pytest.param(cmd, fault, id=f"{cmd}-{moment}", marks=marks)


@pytest.mark.parametrize("cmd,fault", [_param(c, m) for c in COMMANDS
                                       for m in ("setup", "mid", "write")])
def test_kill_9_then_resume(tmp_path, reference, cmd, fault):
    out = tmp_path / "run"
    rc = _run(cmd, out, fault)
    assert rc == -signal.SIGKILL, f"the run ended ({rc}) before reaching {fault}"
    committed = _rows(out)
    if fault.startswith(("chunk", "point")):
        assert committed, "the kill came before any committed row"
    _run(cmd, out, None)                                  # resume
    final = _rows(out)
    lost = [k for k in committed if k not in final]
    recomputed = [k for k in committed if k in final and final[k] != committed[k]]
    assert (lost, recomputed) == ([], []), (len(lost), len(recomputed))
    ref = reference(cmd)
    assert sorted(final) == sorted(_rows(ref))             # every task, once
    for name in COMMANDS[cmd][1]:
        assert filecmp.cmp(out / name, ref / name, shallow=False), name
    assert _temporaries(out, out.parent) == []


def test_watchdog_sees_an_unreaped_zombie_as_gone():
    """A killed run whose parent has not reaped it yet is a zombie; the pool workers'
    watchdog must treat it as gone (else a parent that reads the run's stderr to its end
    before reaping waits for ever on workers that hold it open)."""
    from fedsim.validation.montecarlo_backends import process_gone

    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert not process_gone(p.pid)
        os.kill(p.pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while not process_gone(p.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert process_gone(p.pid)
        assert Path(f"/proc/{p.pid}").exists(), "reaped already: not a zombie test"
    finally:
        p.wait()
    assert not process_gone(os.getpid())
