"""Monte-Carlo runner: records, failures, resume after a kill, backends agree, atomic writes."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from fedsim.validation import montecarlo as mc
from fedsim.validation._selftest import replicate_generator
from fedsim.validation.montecarlo import Task, load_records, payload_hash, run_tasks
from hypothesis import given, settings
from hypothesis import strategies as st
from rawstore import dump, raw_record, set_column

FN = "fedsim.validation._selftest:normal_mean"


def _tasks(count: int, log: Path | None = None, **extra) -> list[Task]:
    out = []
    for r in range(count):
        p = {"seed": 11, "replicate": r, "n": 50, **extra}
        if log is not None:
            p.update(log=str(log), tag=f"r{r}")
        out.append(Task(f"rep{r:03d}", FN, p))
    return out


def _calls(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


def test_inprocess_records_hand_checked(tmp_path):
    tasks = _tasks(3) + [Task("boom", FN, {"fail": "error"}),
                         Task("div", FN, {"replicate": 4, "fail": "diverge"})]
    res = run_tasks(tasks, tmp_path, workers=1, progress=False)
    assert list(res) == [t.task_id for t in tasks]
    x = replicate_generator(11, 1).standard_normal(50)
    r1 = res["rep001"]
    assert r1["status"] == "ok" and r1["reason"] is None
    assert r1["value"]["mean"] == float(x.mean())  # bit-exact through JSON
    assert r1["value"]["first"] == x[:3].tolist()
    assert r1["payload_hash"] == payload_hash(tasks[1])
    # an exception is recorded with "ExcType: first line" and the run goes on
    body = {"task_id": "boom", "fn": FN, "status": "error", "value": None,
            "reason": "ValueError: synthetic failure in replicate 0",
            "payload_hash": payload_hash(tasks[3]), "payload": {"fail": "error"}}
    # the checksum is sha256 of the sorted-key compact JSON of the rest of the record
    digest = hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":"))
                            .encode()).hexdigest()
    assert res["boom"] == dict(body, checksum=digest)
    d = res["div"]
    assert d["status"] == "diverged" and d["reason"] == "iterate norm exceeded 1e12 at step 11"
    assert d["value"]["mean"] == float("inf")
    # one database row per task, no temporary file and no WAL left behind once closed
    for t in tasks:
        assert raw_record(tmp_path, t.task_id) == res[t.task_id]
    assert sorted(os.listdir(tmp_path)) == [".lock", "store.sqlite"]
    assert load_records(tmp_path) == res


def test_non_dict_result_is_an_error(tmp_path):
    res = run_tasks([Task("a", "os.path:basename", {})], tmp_path, workers=1, progress=False)
    assert res["a"]["status"] == "error" and res["a"]["reason"].startswith("TypeError")


def test_resume_after_simulated_kill_recomputes_nothing(tmp_path):
    """Kill at task 5 (KeyboardInterrupt, as Ctrl-C), re-run: finished tasks are not re-run."""
    log, flag = tmp_path / "calls.log", tmp_path / "KILL"
    tasks = _tasks(10, log)
    tasks[5] = Task(tasks[5].task_id, FN, {**tasks[5].payload, "interrupt_if": str(flag)})
    flag.touch()
    with pytest.raises(KeyboardInterrupt):
        run_tasks(tasks, tmp_path / "run", workers=1, progress=False)
    assert _calls(log) == [f"r{i}" for i in range(6)]
    assert set(load_records(tmp_path / "run")) == {f"rep{i:03d}" for i in range(5)}
    flag.unlink()
    res = run_tasks(tasks, tmp_path / "run", workers=1, progress=False)
    calls = _calls(log)
    assert calls[6:] == [f"r{i}" for i in range(5, 10)]  # only the unfinished ones
    assert all(calls.count(f"r{i}") == 1 for i in range(10) if i != 5)
    fresh = run_tasks(tasks, tmp_path / "fresh", workers=1, progress=False)
    assert res == fresh
    # a third run computes nothing at all
    n = len(_calls(log))
    assert run_tasks(tasks, tmp_path / "run", workers=2, progress=False) == res
    assert len(_calls(log)) == n


def test_resume_after_sigkill_of_a_real_process(tmp_path):
    """SIGKILL a run in a child process midway; the re-run keeps every written record,
    recomputes only unrecorded tasks, and equals an uninterrupted run."""
    log = tmp_path / "calls.log"
    tasks = _tasks(16, log, sleep=0.05)
    spec = tmp_path / "tasks.json"
    spec.write_text(json.dumps([[t.task_id, t.fn, t.payload] for t in tasks]))
    code = ("import json, sys\nfrom validation.montecarlo import Task, run_tasks\n"
            "ts = [Task(*x) for x in json.load(open(sys.argv[1]))]\n"
            "run_tasks(ts, sys.argv[2], workers=1, progress=False)\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(spec), str(tmp_path / "run")])
    try:
        deadline = time.monotonic() + 60
        while len(load_records(tmp_path / "run")) < 4 and time.monotonic() < deadline:
            if proc.poll() is not None:
                break
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the child finished before it could be killed"
    kept = load_records(tmp_path / "run")
    assert 4 <= len(kept) < 16
    n_before = len(_calls(log))
    res = run_tasks(tasks, tmp_path / "run", workers=1, progress=False)
    rerun = _calls(log)[n_before:]
    assert not {f"r{int(k[3:])}" for k in kept} & set(rerun)  # nothing recorded is recomputed
    assert len(rerun) == 16 - len(kept)
    assert all(res[k] == v for k, v in kept.items())
    assert res == run_tasks(tasks, tmp_path / "fresh", workers=1, progress=False)


def test_resume_after_parent_interrupt_with_pool(tmp_path, monkeypatch):
    """The parent is interrupted after its first chunk of records (one transaction) while
    a 2-process pool runs; the re-run (with another backend width) does not recompute the
    recorded tasks."""
    log = tmp_path / "calls.log"
    tasks = _tasks(40, log)
    real = mc.write_records
    written = []

    def write_then_die(run_dir, recs):
        if written:
            raise KeyboardInterrupt
        real(run_dir, recs)
        written.extend(r["task_id"] for r in recs)

    monkeypatch.setattr(mc, "write_records", write_then_die)
    with pytest.raises(KeyboardInterrupt):
        run_tasks(tasks, tmp_path / "run", workers=2, progress=False)
    monkeypatch.setattr(mc, "write_records", real)
    assert len(written) == 16  # one chunk, committed whole
    assert sorted(load_records(tmp_path / "run")) == sorted(written)
    n_before = len(_calls(log))
    res = run_tasks(tasks, tmp_path / "run", workers=3, progress=False)
    rerun = _calls(log)[n_before:]
    assert not {f"r{int(k[3:])}" for k in written} & set(rerun)
    assert sorted(rerun) == sorted(f"r{int(t.task_id[3:])}" for t in tasks
                                   if t.task_id not in written)
    assert res == run_tasks(tasks, tmp_path / "ref", workers=1, progress=False)


def test_diff_paths():
    assert mc._diff_paths({"a": 1, "b": {"c": 2, "d": [1]}}, {"a": 1, "b": {"c": 3, "d": [1]},
                                                              "e": 0}) == ["b.c", "e"]
    assert mc._diff_paths([1], [2]) == ["(payload)"]


def test_records_frame():
    recs = {"a": {"task_id": "a", "status": "ok", "reason": None, "value": {"x": 1.0}},
            "b": {"task_id": "b", "status": "error", "reason": "E: m", "value": None}}
    df = mc.records_frame(recs)
    assert list(df.columns) == ["task_id", "status", "reason", "x"]
    assert df.loc[0, "x"] == 1.0 and np.isnan(df.loc[1, "x"])
    assert list(mc.records_frame({}).columns) == ["task_id", "status", "reason"]


def test_errors_retried_diverged_kept(tmp_path):
    log = tmp_path / "calls.log"
    tasks = [Task("e", FN, {"fail": "error", "log": str(log), "tag": "e"}),
             Task("d", FN, {"fail": "diverge", "log": str(log), "tag": "d"}),
             Task("o", FN, {"log": str(log), "tag": "o"})]
    run_tasks(tasks, tmp_path, workers=1, progress=False)
    run_tasks(tasks, tmp_path, workers=1, progress=False)
    assert sorted(_calls(log)) == ["d", "e", "e", "o"]
    assert mc.RESUME_POLICY.startswith("ok and diverged records are kept")


def test_worker_crash_loses_nothing_and_is_recorded(tmp_path):
    """A task that kills its worker process (os._exit) is recorded as WorkerCrash;
    the others complete; after the cause is gone, a re-run recomputes only that task."""
    log, flag = tmp_path / "calls.log", tmp_path / "CRASH"
    tasks = _tasks(8, log)
    tasks[3] = Task(tasks[3].task_id, FN, {**tasks[3].payload, "crash_if": str(flag)})
    flag.touch()
    res = run_tasks(tasks, tmp_path / "run", workers=2, progress=False)
    assert res["rep003"]["status"] == "error"
    assert res["rep003"]["reason"].startswith("WorkerCrash")
    assert all(res[t.task_id]["status"] == "ok" for i, t in enumerate(tasks) if i != 3)
    flag.unlink()
    n_before = len(_calls(log))
    res2 = run_tasks(tasks, tmp_path / "run", workers=2, progress=False)
    assert _calls(log)[n_before:] == ["r3"]
    ref = run_tasks(tasks, tmp_path / "ref", workers=1, progress=False)
    assert res2 == ref


def _backends_agree(tmp_path, n, configs):
    tasks = _tasks(n) + [Task("boom", FN, {"fail": "error"}),
                         Task("div", FN, {"replicate": 2, "fail": "diverge"})]
    ref = run_tasks(tasks, tmp_path / "ref", workers=1, progress=False)
    for i, kw in enumerate(configs):
        assert run_tasks(tasks, tmp_path / f"c{i}", progress=False, **kw) == ref, kw
        assert dump(tmp_path / f"c{i}") == dump(tmp_path / "ref")  # the rows, byte for byte


def test_pool_and_inprocess_and_dask_identical(tmp_path):
    """Same records (bit for bit) in-process, in a 2-process pool and on a Dask LocalCluster
    reached through its tcp:// address (about 2-5 s, mostly the cluster's start-up)."""
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, silence_logs=40) as cluster:
        addr = cluster.scheduler_address
        assert addr.startswith("tcp://")
        _backends_agree(tmp_path, 12, [dict(workers=2), dict(dask=addr)])


@pytest.mark.slow
def test_backends_identical_more_workers(tmp_path):
    pytest.importorskip("dask.distributed")
    _backends_agree(tmp_path, 150, [dict(workers=2), dict(workers=3), dict(workers=None),
                                    dict(workers=3, dask="local"),
                                    dict(workers=1, dask="local")])


def test_payload_mismatch_raises_unless_overwrite(tmp_path):
    run_tasks(_tasks(2), tmp_path, workers=1, progress=False)
    changed = _tasks(2, n=7)
    with pytest.raises(mc.FedsimError, match=r"different payload \(differs in: n\)"):
        run_tasks(changed, tmp_path, workers=1, progress=False)
    res = run_tasks(changed, tmp_path, workers=1, progress=False, overwrite=True)
    assert len(res["rep000"]["value"]["first"]) == 3
    assert res["rep000"]["payload_hash"] == payload_hash(changed[0])


def test_corrupt_record_is_recomputed(tmp_path):
    tasks = _tasks(2)
    res = run_tasks(tasks, tmp_path, workers=1, progress=False)
    set_column(tmp_path, "rep001", "value", '{"first": [0.1, ')
    assert run_tasks(tasks, tmp_path, workers=1, progress=False) == res


def test_atomic_write_leaves_no_partial_file(tmp_path, monkeypatch):
    target = tmp_path / "x" / "rec.json"
    mc.atomic_write_json(target, {"a": 1})
    real_fsync = os.fsync

    def fsync_dies(fd):  # the record reached the temporary file, the disk is full
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", fsync_dies)
    with pytest.raises(OSError, match="disk full"):
        mc.atomic_write_json(target, {"a": 2})
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert json.loads(target.read_text()) == {"a": 1}  # old content intact
    assert os.listdir(target.parent) == ["rec.json"]  # temporary removed

    def no_replace(src, dst):
        raise OSError("rename failed")

    monkeypatch.setattr(mc.os, "replace", no_replace)
    with pytest.raises(OSError):
        mc.atomic_write_json(tmp_path / "y" / "new.json", {"b": 1})
    assert os.listdir(tmp_path / "y") == []


def test_bad_arguments_raise_config_error(tmp_path):
    with pytest.raises(mc.FedsimError, match="fn must be a dotted path"):
        Task("a", "no_colon", {})
    with pytest.raises(mc.FedsimError, match="task_id must be a non-empty string"):
        Task("", FN, {})
    with pytest.raises(mc.FedsimError, match="task_id must be unique"):
        run_tasks([Task("a", FN, {}), Task("a", FN, {})], tmp_path, workers=1)
    with pytest.raises(mc.FedsimError, match="workers must be None or an integer >= 1"):
        run_tasks([], tmp_path, workers=0)
    with pytest.raises(mc.FedsimError, match="dask must be None, 'local'"):
        run_tasks([], tmp_path, dask="nowhere")


def test_progress_bar_shows_eta(tmp_path, capsys):
    run_tasks(_tasks(3), tmp_path, workers=1, progress=True, desc="reps")
    err = capsys.readouterr().err
    assert "reps" in err and "3/3" in err and "<" in err  # tqdm's [elapsed<remaining]


@settings(max_examples=25, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=5),
                       st.one_of(st.integers(), st.floats(allow_nan=False), st.text(max_size=5)),
                       max_size=6))
def test_payload_hash_ignores_key_order_and_numpy_scalars(d):
    rev = dict(reversed(list(d.items())))
    assert payload_hash(Task("t", FN, d)) == payload_hash(Task("t", FN, rev))
    npd = {k: (np.float64(v) if isinstance(v, float) else v) for k, v in d.items()}
    assert payload_hash(Task("t", FN, d)) == payload_hash(Task("t", FN, npd))
    assert payload_hash(Task("t", FN, d)) != payload_hash(Task("t", FN, {**d, "__x": 1}))
