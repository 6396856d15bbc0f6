"""Issue 14 item 3: verified run directories (record checksums and schemas, the oracle cache,
the run-directory lock, ``fedsim report`` on damaged directories)."""

from __future__ import annotations

import hashlib
import json
import math
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from fedsim.validation import cases as common
from fedsim.validation import montecarlo_store as store
from fedsim.validation._selftest import write_synthetic_run
from fedsim.validation.montecarlo import Task, run_tasks
from fedsim.validation.montecarlo_db import close_store
from fedsim.validation.montecarlo_schema import check_record, record_checksum
from fedsim.validation.rundir import check_run_dir, write_manifest
from rawstore import edit_record, raw_record, set_column, task_ids

from fedsim.config import load
from fedsim.errors import FedsimError

ROOT = Path(__file__).resolve().parents[2]
FN = "fedsim.validation._selftest:normal_mean"
REPLICATE = "fedsim.validation.worker:run_replicate"


def _sel(count: int, log: Path | None = None) -> list[Task]:
    out = []
    for r in range(count):
        p = {"seed": 3, "replicate": r, "n": 20}
        if log is not None:
            p.update(log=str(log), tag=f"r{r}")
        out.append(Task(f"rep{r}", FN, p))
    return out


def _replicate_tasks(count: int = 3) -> list[Task]:
    """Real ``run_replicate`` tasks on a small FedAsync quadratic (fast)."""
    d = load(ROOT / "examples" / "fedasync_quadratic.toml").to_dict()
    d["horizon"] = {"steps": 40}
    d["record"] = {"every": 10, "metrics": ["grad_sq"]}
    return [Task(f"fa/r{r}", REPLICATE, {"scenario": d, "replicate": r, "metric": "grad_sq",
                                         "horizons": [20, 40], "representative": r == 0})
            for r in range(count)]


def _edit(path: Path, fn) -> None:
    """Edit a JSON file (oracle cache entries)."""
    rec = json.loads(path.read_text())
    fn(rec)
    path.write_text(json.dumps(rec))


def _calls(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


# ------------------------------------------------------------------ records


def test_every_record_written_verifies_and_checksum_is_sha256_of_the_rest(tmp_path):
    res = run_tasks(_replicate_tasks(), tmp_path, workers=1, progress=False)
    for tid in res:
        stored = raw_record(tmp_path, tid)
        assert check_record(stored) is None
        body = {k: v for k, v in stored.items() if k != "checksum"}
        text = json.dumps(body, sort_keys=True, separators=(",", ":"))
        assert stored["checksum"] == hashlib.sha256(text.encode()).hexdigest()
        assert stored["fn"] == REPLICATE and len(stored["value"]["values"]) == 2


def test_value_times_three_is_caught_by_the_checksum_and_recomputed(tmp_path):
    tasks = _replicate_tasks()
    ref = run_tasks(tasks, tmp_path, workers=1, progress=False)
    edit_record(tmp_path, "fa/r1",
                lambda r: r["value"].update(values=[3 * v for v in r["value"]["values"]]))
    audit = store.audit_records(tmp_path, tasks)
    assert audit["damaged"] == 1 and audit["reused"] == 2
    assert audit["damaged_reasons"] == {
        "checksum mismatch (the record was edited or damaged)": 1}
    assert audit["damaged_examples"] == ["fa/r1"]
    assert run_tasks(tasks, tmp_path, workers=1, progress=False) == ref
    assert store.audit_records(tmp_path, tasks)["reused"] == 3


@pytest.mark.parametrize("edit, reason", [
    (lambda r: r.update(value={}), "value.values is missing"),
    (lambda r: r["value"].update(values=[0.1]), "value.values has 1 entries for 2 horizons"),
    (lambda r: r["value"].update(values="big"), "value.values must be a list of numbers"),
    (lambda r: r["value"].update(steps_done=True), "value.steps_done must be an integer"),
    (lambda r: r["value"].update(extra=1), "value.extra is not a field"),
    (lambda r: r.update(status="diverged"), "a diverged record must have value.diverged"),
    (lambda r: r.update(value=None), "a ok record must have an object value"),
    (lambda r: r.update(payload_hash="x"), "payload_hash must be 64 hex digits"),
    (lambda r: r.update(status="maybe"), "status must be one of"),
])
def test_schema_violations_with_a_valid_checksum_are_recomputed(tmp_path, edit, reason):
    """Even a record re-stamped with a correct checksum is refused if its types are wrong
    (value={} gave a traceback in suites.collect before)."""
    tasks = _replicate_tasks()
    ref = run_tasks(tasks, tmp_path, workers=1, progress=False)
    def restamp(r):
        edit(r)
        r["checksum"] = record_checksum(r)

    edit_record(tmp_path, "fa/r1", restamp)
    rec, problem = store.verify_record(tmp_path, "fa/r1")
    assert rec is None and problem.startswith(reason)
    assert store.audit_records(tmp_path, tasks)["damaged"] == 1
    assert run_tasks(tasks, tmp_path, workers=1, progress=False) == ref


@pytest.mark.parametrize("damage, reason", [
    (lambda d: set_column(d, "rep2", "value", raw_record(d, "rep2")["value"] and
                          '{"first": [0.1'), "not valid JSON"),
    (lambda d: set_column(d, "rep2", "value", b"\xff\xfe\x00garbage"), "not valid JSON"),
    (lambda d: set_column(d, "rep2", "payload", "[1, 2]"), "payload must be an object"),
    (lambda d: set_column(d, "rep2", "value", ""), "not valid JSON"),
    (lambda d: set_column(d, "rep2", "checksum", "0" * 63), "checksum must be 64 hex digits"),
])
def test_garbled_records_are_recomputed_and_counted(tmp_path, damage, reason):
    log = tmp_path / "calls.log"
    tasks = _sel(4, log)
    ref = run_tasks(tasks, tmp_path / "run", workers=1, progress=False)
    damage(tmp_path / "run")
    audit = store.audit_records(tmp_path / "run", tasks)
    assert audit["damaged"] == 1 and next(iter(audit["damaged_reasons"])).startswith(reason)
    n = len(_calls(log))
    assert run_tasks(tasks, tmp_path / "run", workers=1, progress=False) == ref
    assert _calls(log)[n:] == ["r2"]   # only the damaged one ran again


def test_legacy_records_without_checksum_are_recomputed_once(tmp_path):
    """Records written before checksums (no fn, no checksum) are recomputed, not trusted;
    the results are identical (the task functions are deterministic)."""
    log = tmp_path / "calls.log"
    tasks = _sel(3, log)
    ref = run_tasks(tasks, tmp_path / "run", workers=1, progress=False)
    for t in tasks:  # the old layout: one JSON file per record, without checksum and fn
        rec = raw_record(tmp_path / "run", t.task_id)
        rec.pop("checksum"), rec.pop("fn")
        h = hashlib.sha256(t.task_id.encode()).hexdigest()
        p = tmp_path / "run" / "results" / h[:2] / f"{h}.json"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(rec))
    (tmp_path / "run" / "store.sqlite").unlink()
    audit = store.audit_records(tmp_path / "run", tasks)  # migrated: none of them trusted
    assert audit["missing"] == 3 and audit["reused"] == 0
    assert not (tmp_path / "run" / "results").exists()
    n = len(_calls(log))
    assert run_tasks(tasks, tmp_path / "run", workers=1, progress=False) == ref
    assert sorted(_calls(log)[n:]) == ["r0", "r1", "r2"]
    assert store.audit_records(tmp_path / "run", tasks)["reused"] == 3


# ------------------------------------------------------------------ oracle cache


@pytest.fixture
def cache(tmp_path):
    common.set_oracle_cache(tmp_path / "oc")
    yield tmp_path / "oc"
    common.set_oracle_cache(None)
    close_store(tmp_path / "oc")


def _set_oracle(run_dir, column, fn):
    """Replace ``column`` of the one oracle row by ``fn(old text)`` (as damage would)."""
    import sqlite3

    con = sqlite3.connect(run_dir / "store.sqlite")
    ((key, old),) = con.execute(f"SELECT key, {column} FROM oracle").fetchall()
    con.execute(f"UPDATE oracle SET {column} = ? WHERE key = ?", (fn(old), key))
    con.commit()
    con.close()


def _oracle(calls: list, value=(0.25, 1.5)):
    def compute():
        calls.append(1)
        return list(value)
    return common.cached("area", ("cfg", 3), compute)


@pytest.mark.parametrize("column,damage", [
    ("value", lambda t: t[: len(t) // 2]),                        # truncated
    ("value", lambda t: t.replace("0.25", "0.75")),               # edited value
    ("value", lambda t: "\x00\xff"),                              # garbage
    ("checksum", lambda t: ""),                                   # no checksum
    ("value", lambda t: '"x"'),                                   # not a number
    ("args", lambda t: "('cfg', 4)"),                             # other arguments
])
def test_damaged_oracle_cache_entry_is_recomputed(cache, column, damage, capsys):
    calls: list = []
    assert _oracle(calls) == [0.25, 1.5] and len(calls) == 1
    assert _oracle(calls) == [0.25, 1.5] and len(calls) == 1      # a verified hit
    assert sorted(p.name for p in cache.iterdir()) == ["store.sqlite"]  # one store, no JSON
    _set_oracle(cache, column, damage)
    assert _oracle(calls) == [0.25, 1.5] and len(calls) == 2      # recomputed, not used
    assert "oracle cache entry" in capsys.readouterr().err
    assert common.oracle_cache_stats() == {"hits": 1, "computed": 2, "damaged": 1}
    assert _oracle(calls) == [0.25, 1.5] and len(calls) == 2      # and rewritten soundly


def test_old_oracle_cache_folder_is_migrated_into_the_store(tmp_path, capsys):
    """An ``oracle-cache/*.json`` folder of an older fedsim moves into the store once (a
    damaged file is counted and recomputed); the folder is gone afterwards."""
    run = tmp_path / "run"
    common.set_oracle_cache(tmp_path / "fresh")
    calls: list = []
    try:
        _oracle(calls)
    finally:
        common.set_oracle_cache(None)
        close_store(tmp_path / "fresh")
    import sqlite3

    con = sqlite3.connect(tmp_path / "fresh" / "store.sqlite")
    key, tag, args, value, checksum = con.execute("SELECT * FROM oracle").fetchone()
    con.close()
    (run / "oracle-cache").mkdir(parents=True)
    (run / "oracle-cache" / f"{key}.json").write_text(json.dumps(
        {"tag": tag, "args": args, "value": json.loads(value), "checksum": checksum}))
    (run / "oracle-cache" / "area-broken.json").write_text("{")
    common.set_oracle_cache(run)
    try:
        assert _oracle(calls) == [0.25, 1.5] and len(calls) == 1   # migrated: a hit
        assert common.oracle_cache_stats() == {"hits": 1, "computed": 0, "damaged": 0}
    finally:
        common.set_oracle_cache(None)
        close_store(run)
    assert not (run / "oracle-cache").exists()
    assert "1 oracle values" in capsys.readouterr().err


# ------------------------------------------------------------------ lock

_HOLDER = """
import sys, time
from fedsim.validation.montecarlo_store import lock_run_dir
with lock_run_dir(sys.argv[1]):
    print("locked", flush=True)
    time.sleep(60)
"""


@pytest.fixture
def holder(tmp_path):
    run = tmp_path / "run"
    p = subprocess.Popen([sys.executable, "-c", _HOLDER, str(run)], stdout=subprocess.PIPE,
                         text=True, cwd=ROOT)
    assert p.stdout.readline().strip() == "locked"
    yield run, p
    p.kill()
    p.wait()


def test_second_writer_is_refused_with_the_holders_pid(holder, tmp_path):
    run, p = holder
    with pytest.raises(store.RunDirBusy, match=rf"in use by another fedsim process \(pid "
                                               rf"{p.pid}\)"):
        run_tasks(_sel(2), run, workers=1, progress=False)
    assert not (run / "store.sqlite").exists() or task_ids(run) == []
    with pytest.raises(FedsimError, match=f"being written by another fedsim process .pid "
                                          f"{p.pid}"):
        check_run_dir(run)
    # the kernel drops the lock with its process, even on SIGKILL; the file stays harmless
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert (run / ".lock").exists()
    assert len(run_tasks(_sel(2), run, workers=1, progress=False)) == 2


def test_second_validate_process_exits_2_with_one_line(holder):
    run, p = holder
    r = subprocess.run([sys.executable, "-m", "fedsim.cli", "validate", "--suite", "smoke",
                        "--out", str(run), "--report", str(run / "r.pdf"), "--no-progress"],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and f"in use by another fedsim process (pid {p.pid})" in lines[0]


def test_lock_is_reentrant_in_one_process(tmp_path):
    with store.lock_run_dir(tmp_path), store.lock_run_dir(tmp_path):
        assert store.run_dir_holder(tmp_path) is None
        run_tasks(_sel(1), tmp_path, workers=1, progress=False)
    assert (tmp_path / ".lock").read_text() == ""


# ------------------------------------------------------------------ fedsim report


@pytest.fixture
def run_dir(tmp_path):
    d = tmp_path / "run"
    write_synthetic_run(d, replicates=3)
    (d / "store.sqlite").write_bytes(b"")
    write_manifest(d, suite="synthetic", replicates=3, seed=0, tasks=0)
    check_run_dir(d)  # intact: no error
    return d


def _truncate_rows(p: Path) -> None:
    lines = p.read_text().splitlines(keepends=True)
    p.write_text("".join(lines[: len(lines) // 2]))


def _edit_meta(p: Path) -> None:
    m = sorted((p.parent / "meta").glob("*.json"))[0]
    m.write_text(m.read_text().replace('"title"', '"title" ', 1))


DAMAGE = {
    "garbage verdicts": (lambda p: p.write_bytes(b"\x89PNG\x00\xff" * 50), "not UTF-8"),
    "text garbage verdicts": (lambda p: p.write_text("no,csv\nhere\n"), "lacks the columns"),
    "empty verdicts": (lambda p: p.write_text(""), "verdicts.csv is empty"),
    "truncated rows": (_truncate_rows, "rows, suite.json says"),
    "cut mid-line": (lambda p: p.write_bytes(p.read_bytes()[:-7]), "does not end with a"),
    "edited cell": (lambda p: p.write_text(p.read_text().replace("holds", "violated", 1)),
                    "sha256 differs"),
    "bad verdict": (lambda p: p.write_text(p.read_text().replace(",holds,", ",maybe,", 1)),
                    "has the verdict 'maybe'"),
    "garbage meta": (lambda p: sorted((p.parent / "meta").glob("*.json"))[0]
                     .write_bytes(b"\xff\x00{{"), "is not valid JSON"),
    "meta not object": (lambda p: sorted((p.parent / "meta").glob("*.json"))[0]
                        .write_text("[]"), "not an object with theorem and scenario"),
    "edited meta": (_edit_meta, "is not the file the run wrote"),
    "extra meta": (lambda p: (p.parent / "meta" / "x.json").write_text(
        '{"theorem": "a", "scenario": "b"}'), "meta/x.json is not part of the run"),
    "garbage suite.json": (lambda p: (p.parent / "suite.json").write_text("{"),
                           "suite.json is not valid JSON"),
    "no suite.json": (lambda p: (p.parent / "suite.json").unlink(), "suite.json is missing"),
}


@pytest.mark.parametrize("kind", sorted(DAMAGE))
def test_report_refuses_a_damaged_run_directory_exit_2_one_line(run_dir, kind, capsys):
    from fedsim.cli import main

    damage, needle = DAMAGE[kind]
    damage(run_dir / "verdicts.csv")
    assert main(["report", str(run_dir), "--out", str(run_dir / "r.pdf")]) == 2
    cap = capsys.readouterr()
    lines = cap.err.strip().splitlines()
    assert len(lines) == 1, cap.err
    assert lines[0].startswith(f"fedsim: error: run directory {run_dir} is damaged")
    assert needle in lines[0]
    assert not (run_dir / "r.pdf").exists() and cap.out == ""


def test_pre_manifest_suite_json_gets_structural_checks(run_dir):
    (run_dir / "suite.json").write_text(json.dumps({"suite": "quick", "replicates": None,
                                                    "seed": 1, "tasks": 4}))
    check_run_dir(run_dir)        # an old run directory is still accepted
    _truncate_rows(run_dir / "verdicts.csv")
    check_run_dir(run_dir)        # (a row-boundary truncation needs the manifest to show)
    (run_dir / "verdicts.csv").write_bytes((run_dir / "verdicts.csv").read_bytes()[:-3])
    with pytest.raises(FedsimError, match="does not end with a newline"):
        check_run_dir(run_dir)


# ------------------------------------------------------------------ the suite end to end


@pytest.mark.slow
def test_smoke_suite_counts_damaged_records_and_keeps_verdicts(tmp_path):
    """A resumed smoke suite with damaged records and oracle cache entries recomputes them,
    counts them in summary.json and on stderr, and writes byte-identical verdicts."""
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "fedsim.cli", "validate", "--suite", "smoke", "--out",
           str(out), "--report", str(tmp_path / "r.pdf"), "--no-progress", "--workers", "2"]
    subprocess.run(cmd, check=True, cwd=ROOT, capture_output=True, timeout=1200)
    ref = (out / "verdicts.csv").read_bytes()
    s0 = json.loads((out / "summary.json").read_text())
    assert s0["records"]["damaged"] == 0 and s0["records"]["reused"] == 0
    recs = task_ids(out)
    edit_record(out, recs[0], lambda r: r["value"].update(
        values=[3 * v for v in r["value"]["values"]]))
    edit_record(out, recs[1], lambda r: r.update(value={}))
    set_column(out, recs[2], "value", raw_record(out, recs[2])["value"] and '{"values": [')
    import sqlite3

    con = sqlite3.connect(out / "store.sqlite")
    cache = [k for (k,) in con.execute("SELECT key FROM oracle ORDER BY key")]
    if cache:
        con.execute("UPDATE oracle SET value = substr(value, 1, 3) WHERE key = ?", (cache[0],))
        con.commit()
    con.close()
    r = subprocess.run(cmd, check=True, cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert "3 stored record(s) failed verification" in r.stderr
    s1 = json.loads((out / "summary.json").read_text())
    assert s1["records"]["damaged"] == 3 and s1["records"]["computed"] == 3
    assert s1["records"]["reused"] == s1["records"]["tasks"] - 3
    assert s1["oracle_cache"]["damaged"] == (1 if cache else 0)
    assert (out / "verdicts.csv").read_bytes() == ref
    assert math.isfinite(s1["seconds"]) and os.path.getsize(out / "suite.json") > 0
