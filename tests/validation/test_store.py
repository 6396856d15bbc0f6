"""The run directory's SQLite store (issue 21 item 2): search points verified and
recomputed, the old JSON layout migrated once, the lock held by search, the database
readable with pandas, the budget enforced inside a point."""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
import time

import pandas as pd
import pytest
from fedsim.validation import search as search_mod
from fedsim.validation.montecarlo import Task, run_tasks
from fedsim.validation.montecarlo_db import STORE_FILE, open_store
from fedsim.validation.montecarlo_store import RunDirBusy, lock_run_dir
from fedsim.validation.search import SearchSettings, run_search
from rawstore import dump, points, raw_record, set_point_body

FN = "fedsim.validation._selftest:normal_mean"
ST = SearchSettings(budget=60, grid=4, refine=0, confirm=0, workers=1, progress=False)


def _tasks(n: int) -> list[Task]:
    return [Task(f"rep{r}", FN, {"seed": 3, "replicate": r, "n": 20}) for r in range(n)]


def test_records_readable_with_pandas(tmp_path):
    res = run_tasks(_tasks(3), tmp_path, workers=1, progress=False)
    db = sqlite3.connect(tmp_path / STORE_FILE)
    df = pd.read_sql("SELECT task_id, status, value FROM records ORDER BY task_id", db)
    db.close()
    assert list(df["task_id"]) == ["rep0", "rep1", "rep2"]
    assert [json.loads(v) for v in df["value"]] == [res[t]["value"] for t in df["task_id"]]


def test_edited_or_truncated_point_is_recomputed_and_counted(tmp_path):
    a = run_search("theorem8-norm", "K=3..8, M=[10]", ST, out=tmp_path, fixed={"n": 2})
    pts = points(tmp_path)
    p0, body, _ = pts[0]
    edited = json.loads(body)
    edited["row"]["measured"] = 123.456          # an edit without the checksum
    set_point_body(tmp_path, p0, json.dumps(edited))
    set_point_body(tmp_path, pts[1][0], pts[1][1][:40])   # a truncated body
    b = run_search("theorem8-norm", "K=3..8, M=[10]", ST, out=tmp_path, fixed={"n": 2})
    keep = [c for c in a.columns if c != "seconds"]   # the recomputed ones took other times
    pd.testing.assert_frame_equal(a[keep].reset_index(drop=True), b[keep].reset_index(drop=True))
    assert 123.456 not in set(b["measured"])
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["damaged_points_recomputed"] == 2
    assert [p[0] for p in points(tmp_path)] == [p[0] for p in pts]
    assert points(tmp_path)[2:] == pts[2:]


def test_search_takes_the_run_directory_lock(tmp_path):
    with lock_run_dir(tmp_path):  # held by this process: re-entrant, the search runs
        run_search("theorem8-norm", "K=[3,4], M=[10]", ST, out=tmp_path, fixed={"n": 2})
    import subprocess
    import sys

    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time\nfrom fedsim.validation.montecarlo_store import lock_run_dir\n"
        "with lock_run_dir(sys.argv[1]):\n    print('locked', flush=True)\n"
        "    time.sleep(60)\n"), str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(RunDirBusy, match=f"pid {holder.pid}"):
            run_search("theorem8-norm", "K=[3,4], M=[10]", ST, out=tmp_path, fixed={"n": 2})
    finally:
        holder.kill()
        holder.wait()


def test_old_json_layout_is_migrated_once(tmp_path, capsys):
    ref = run_tasks(_tasks(4), tmp_path / "ref", workers=1, progress=False)
    old = tmp_path / "old"
    for tid, rec in ref.items():  # the layout of an older fedsim: one JSON file per record
        h = hashlib.sha256(tid.encode()).hexdigest()
        p = old / "results" / h[:2] / f"{h}.json"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(rec, sort_keys=True, indent=1))
    p.write_text(p.read_text()[:30])   # one of them cut
    res = run_tasks(_tasks(4), old, workers=1, progress=False)
    assert res == ref
    err = capsys.readouterr().err
    assert "moved 3 records, 0 search points and 0 oracle values" in err and "(1 damaged" in err
    assert not (old / "results").exists()
    assert dump(old) == dump(tmp_path / "ref")
    run_tasks(_tasks(4), old, workers=1, progress=False)
    assert "moved" not in capsys.readouterr().err   # once


def test_a_damaged_database_file_is_a_one_line_error(tmp_path):
    (tmp_path / STORE_FILE).write_bytes(b"this is not a database" * 100)
    from fedsim.errors import FedsimError

    with pytest.raises(FedsimError, match="not a readable fedsim database"):
        run_tasks(_tasks(1), tmp_path, workers=1, progress=False)


def test_a_point_that_overruns_the_budget_is_stopped_and_not_stored(tmp_path, monkeypatch):
    fam = search_mod.get_family("theorem8-norm")
    real = type(fam.build({**fam.complete({})}))

    def slow_measure(self, **kw):
        time.sleep(30)

    monkeypatch.setattr(real, "measure", slow_measure)
    t0 = time.perf_counter()
    row = search_mod.evaluate(fam, {"K": 3}, ST, tmp_path, time_left=0.3)
    assert time.perf_counter() - t0 < 10
    assert row["status"] == "TIMEOUT" and row["method"] == "stopped"
    assert math.isnan(row["ratio"]) and "budget ran out" in row["oracle"]
    assert open_store(tmp_path).get_point(row["point"]) == (None, None)


def test_raw_record_matches_what_run_tasks_returns(tmp_path):
    res = run_tasks(_tasks(2), tmp_path, workers=1, progress=False)
    assert raw_record(tmp_path, "rep1") == res["rep1"]
