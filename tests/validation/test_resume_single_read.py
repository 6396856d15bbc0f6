"""A resumed run reads and verifies each stored record once (``run_tasks``' single read
pass, which also makes ``audit_records``' count), reuses every good record, and the suites'
``summary.json`` says how long each phase took."""

from __future__ import annotations

import json
import sqlite3

from fedsim.validation import montecarlo_db as db
from fedsim.validation import suites
from fedsim.validation.montecarlo import Task, run_tasks
from fedsim.validation.montecarlo_store import audit_records
from rawstore import set_column

FN = "fedsim.validation._selftest:normal_mean"


def _tasks(count: int, **extra) -> list[Task]:
    return [Task(f"rep{r:03d}", FN, {"seed": 5, "replicate": r, "n": 20, **extra})
            for r in range(count)]


def _count_reads(monkeypatch) -> list[str]:
    seen: list[str] = []
    real = db.RunStore.get_record

    def counted(self, task_id):
        seen.append(task_id)
        return real(self, task_id)

    monkeypatch.setattr(db.RunStore, "get_record", counted)
    return seen


def test_a_resume_reads_each_record_once_and_reuses_all(tmp_path, monkeypatch):
    tasks = _tasks(6)
    ref = run_tasks(tasks, tmp_path, workers=1, progress=False)
    seen = _count_reads(monkeypatch)
    stats: dict = {}
    audits: list[dict] = []
    again = run_tasks(tasks, tmp_path, workers=1, progress=False, stats=stats,
                      on_audit=audits.append)
    assert again == ref
    assert sorted(seen) == sorted(t.task_id for t in tasks)  # once each, no second pass
    assert audits == [stats["records"]]
    assert stats["records"]["reused"] == 6 and stats["records"]["computed"] == 0
    assert set(stats["seconds"]) == {"read", "warmup", "tasks"}


def test_the_single_pass_counts_as_audit_records_does(tmp_path):
    """Damaged, stale, error and missing records: the runner's own count equals
    ``audit_records``' (taken before the run), and only the reused ones are kept."""
    tasks = _tasks(5) + [Task("bad", "fedsim.validation._selftest:no_such", {})]
    run_tasks(tasks, tmp_path, workers=1, progress=False)           # "bad": an error record
    set_column(tmp_path, "rep001", "checksum", "0" * 64)            # damaged
    with sqlite3.connect(tmp_path / db.STORE_FILE) as conn:
        conn.execute("DELETE FROM records WHERE task_id = 'rep003'")  # missing
    more = list(tasks)
    more[2] = Task("rep002", FN, {"seed": 5, "replicate": 2, "n": 21})  # stale payload
    before = audit_records(tmp_path, more)
    stats: dict = {}
    run_tasks(more, tmp_path, workers=1, progress=False, overwrite=True, stats=stats)
    got = stats["records"]
    assert {k: got[k] for k in before} == before
    assert (before["damaged"], before["stale_payload"], before["missing"],
            before["errors_retried"], before["reused"]) == (1, 1, 1, 1, 2)
    assert got["computed"] == 4


def test_a_resumed_suite_reads_each_record_once(tmp_path, monkeypatch):
    """``run_suite`` on a finished run directory: every record reused, each read once, and
    ``summary.json`` gives the phase seconds and the parent's CPU seconds."""
    out = tmp_path / "run"
    kw = dict(workers=1, out=out, report=None, progress=False, theorem="theorem1")
    suites.run_suite("smoke", **kw)
    seen = _count_reads(monkeypatch)
    suites.run_suite("smoke", **kw)
    s = json.loads((out / "summary.json").read_text())
    assert s["records"]["reused"] == s["records"]["tasks"] == len(seen) > 0
    assert len(set(seen)) == len(seen)
    assert set(s["phase_seconds"]) == {"build", "read", "warmup", "tasks", "verdicts"}
    assert all(v >= 0 for v in s["phase_seconds"].values())
    assert s["parent_cpu_seconds"] > 0
