"""Issue 14 item 5: Ctrl-C (SIGINT to the whole process group, as a terminal sends it) stops
``fedsim validate`` and its pool or Dask workers quietly: one line on stderr, exit 130,
no worker traceback, no process left behind, the finished records kept."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# fedsim validate, with run_suite replaced by slow self-test tasks on the real backends
_SCRIPT = """
import sys, types
from fedsim.validation.montecarlo import Task, run_tasks

def run_suite(suite, *, out, workers=None, dask=None, **kw):
    tasks = [Task(f"r{i}", "fedsim.validation._selftest:normal_mean",
                  {"seed": 1, "replicate": i, "sleep": SLEEP}) for i in range(40)]
    run_tasks(tasks, out, workers=workers, dask=dask, progress=False)
    return {"verdicts": str(out / "verdicts.csv"), "report": None}

SLEEP = float(sys.argv.pop(1))

if __name__ == "__main__":
    sys.modules["fedsim.validation.suites"] = types.SimpleNamespace(run_suite=run_suite)
    from fedsim.cli import main
    raise SystemExit(main(sys.argv[1:]))
"""


def _restore_sigint() -> None:
    # a test runner started in the background may ignore SIGINT; a terminal does not
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _stored(run: Path) -> int:
    """Records committed to the run directory's database (0 before it exists)."""
    import sqlite3

    if not (run / "store.sqlite").exists():
        return 0
    try:
        db = sqlite3.connect(f"file:{run / 'store.sqlite'}?mode=ro", uri=True, timeout=5)
        try:
            return db.execute("SELECT count(*) FROM records").fetchone()[0]
        finally:
            db.close()
    except sqlite3.OperationalError:  # the tables are not created yet
        return 0


def _interrupt(argv: list[str], out: Path, min_records: int, timeout: float = 240.0):
    p = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, start_new_session=True, preexec_fn=_restore_sigint)
    t0 = time.monotonic()
    while _stored(out) < min_records:
        assert p.poll() is None, p.communicate()
        assert time.monotonic() - t0 < timeout, "no record appeared"
        time.sleep(0.2)
    os.killpg(p.pid, signal.SIGINT)
    o, e = p.communicate(timeout=120)
    # nothing of the group survives (pool workers, forkserver, Dask nannies and workers)
    _assert_group_gone(p.pid, 30, "processes of the interrupted run are still alive")
    return p.returncode, o, e


def _assert_group_gone(pgid: int, seconds: float, message: str) -> None:
    """Wait up to ``seconds`` for process group ``pgid`` to be empty; else kill it and fail."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    os.killpg(pgid, signal.SIGKILL)
    pytest.fail(message)


def _assert_quiet(rc: int, out: str, err: str, run: Path) -> None:
    assert rc == 130, err
    lines = err.strip().splitlines()
    assert lines == [f"fedsim: interrupted; finished replicates are saved in {run}; "
                     "re-run the same command to resume"], err
    assert "Traceback" not in err and out == ""


def test_ctrl_c_stops_the_process_pool_quietly(tmp_path):
    run = tmp_path / "run"
    # 0.5 s tasks: the first 16-task chunk commits after ~8 s, the interrupt comes while the
    # other chunks still run (40 tasks on 2 workers take ~10 s more)
    rc, o, e = _interrupt([sys.executable, "-c", _SCRIPT, "0.5", "validate", "--suite",
                           "quick", "--out", str(run), "--workers", "2"], run, 2)
    _assert_quiet(rc, o, e, run)
    assert 2 <= _stored(run) < 40


@pytest.mark.slow
def test_ctrl_c_stops_a_local_dask_cluster_quietly(tmp_path):
    run = tmp_path / "run"
    rc, o, e = _interrupt([sys.executable, "-c", _SCRIPT, "2.0", "validate", "--suite",
                           "quick", "--out", str(run), "--workers", "2", "--dask", "local"],
                          run, 2)
    _assert_quiet(rc, o, e, run)


@pytest.mark.slow
def test_ctrl_c_during_a_real_smoke_suite(tmp_path):
    run = tmp_path / "run"
    rc, o, e = _interrupt([sys.executable, "-m", "fedsim.cli", "validate", "--suite", "smoke",
                           "--out", str(run), "--report", str(tmp_path / "r.pdf"),
                           "--no-progress", "--workers", "2"], run, 3, timeout=600)
    _assert_quiet(rc, o, e, run)


def test_ctrl_c_while_the_subcommands_import(monkeypatch, capsys):
    """A Ctrl-C during fedsim's start-up imports (build_parser) is one line and exit 130,
    not a traceback."""
    import fedsim.cli as cli

    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "build_parser", interrupted)
    assert cli.main(["run", "x.toml"]) == 130
    err = capsys.readouterr().err
    assert err == "fedsim: interrupted while starting\n"



_KILLED = """
import sys
from fedsim.validation.montecarlo import Task, run_tasks
tasks = [Task(f"r{i}", "fedsim.validation._selftest:normal_mean",
              {"seed": 1, "replicate": i, "n": 10, "sleep": 0.3, "log": sys.argv[2],
               "tag": f"r{i}"}) for i in range(48)]
run_tasks(tasks, sys.argv[1], workers=2, progress=False)
"""


def test_kill_9_leaves_no_worker_and_loses_no_committed_record(tmp_path):
    """kill -9 of the run's process: its pool workers (and the forkserver) are gone within
    5 s (PR_SET_PDEATHSIG and the parent watchdog), no temporary file is left, and a resume
    keeps every committed record and computes only the others (issue 21 item 4)."""
    run, log = tmp_path / "run", tmp_path / "calls.log"
    p = subprocess.Popen([sys.executable, "-c", _KILLED, str(run), str(log)], cwd=ROOT,
                         start_new_session=True, stderr=subprocess.DEVNULL)
    t0 = time.monotonic()
    while _stored(run) < 16:
        assert p.poll() is None and time.monotonic() - t0 < 240, "no record appeared"
        time.sleep(0.2)
    p.kill()  # SIGKILL to the run's process only, not to its group
    p.wait()
    _assert_group_gone(p.pid, 5, "processes of the killed run were still alive 5 s after kill -9")
    from fedsim.validation.montecarlo_store import load_records

    before = load_records(run)
    assert len(before) == _stored(run) >= 16 and not list(run.rglob(".tmp-*"))
    log.unlink()
    r = subprocess.run([sys.executable, "-c", _KILLED, str(run), str(log)], cwd=ROOT,
                       timeout=300)
    assert r.returncode == 0
    after = load_records(run)
    assert len(after) == 48 and all(after[k] == v for k, v in before.items())
    assert sorted(log.read_text().split()) == sorted(set(after) - set(before))  # 0 recomputed
