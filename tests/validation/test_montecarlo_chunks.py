"""Monte Carlo in chunks (issue 10 item 3): fixed-size chunks, batch calls, records per task.

* the backends send chunks of ``CHUNK`` tasks whatever the number of workers, and a task
  function with a batch variant is called once per chunk (hand-checked call log); a task
  function with a group key is chunked by group (``GROUP_CHUNK``; hand-computed sizes);
* a batch call that fails falls back to the tasks one by one: only the failing task is an
  error;
* ``fedsim.validation.worker.run_replicate`` (through the engine's ``run_batch``, the
  replay where it applies) gives, per replicate, the per-replicate engine's record bit for
  bit; a replicate's record is bitwise the same alone or inside any chunk,
  in-process, in a process pool and on Dask.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fedsim.validation import worker
from fedsim.validation._selftest import normal_mean
from fedsim.validation.montecarlo import Task, run_tasks
from fedsim.validation.montecarlo_backends import execute_batch, execute_task
from fedsim.validation.montecarlo_plan import CHUNK, GROUP_CHUNK, plan_chunks

from fedsim.config import Scenario

BFN = "fedsim.validation._selftest:normal_mean_batched"


def _tasks(count: int, blog: Path, fn: str = BFN, **extra) -> list[Task]:
    return [Task(f"t{r:03d}", fn, {"seed": 3, "replicate": r, "n": 20, "tag": f"r{r}",
                                   "batch_log": str(blog), **extra}) for r in range(count)]


def _batches(blog: Path) -> list[list[str]]:
    return [ln.split(",") for ln in blog.read_text().split()] if blog.exists() else []


def test_chunks_have_a_fixed_size_and_one_batch_call_each(tmp_path):
    n = 2 * CHUNK + 5
    for workers in (1, 2, 3):
        blog = tmp_path / f"b{workers}.log"
        res = run_tasks(_tasks(n, blog), tmp_path / f"w{workers}", workers=workers,
                        progress=False)
        calls = sorted(_batches(blog), key=lambda c: int(c[0][1:]))
        assert calls == [[f"r{r}" for r in range(s, min(s + CHUNK, n))]
                         for s in range(0, n, CHUNK)], workers
        for r in range(n):  # the values are normal_mean's, bit for bit
            v = res[f"t{r:03d}"]["value"]
            ref = normal_mean({"seed": 3, "replicate": r, "n": 20})
            assert v["mean"] == float(ref["mean"]) and v["first"] == ref["first"].tolist()


def test_a_failing_task_in_a_batch_is_the_only_error(tmp_path):
    blog = tmp_path / "b.log"
    tasks = _tasks(6, blog)
    tasks[2] = Task(tasks[2].task_id, BFN, {**tasks[2].payload, "fail": "error"})
    tasks[4] = Task(tasks[4].task_id, BFN, {**tasks[4].payload, "fail": "diverge"})
    res = run_tasks(tasks, tmp_path / "run", workers=1, progress=False)
    st = [res[t.task_id]["status"] for t in tasks]
    assert st == ["ok", "ok", "error", "ok", "diverged", "ok"]
    assert res["t002"]["reason"].startswith("ValueError: synthetic failure")
    assert _batches(blog) == [[f"r{r}" for r in range(6)]]  # tried once as a batch
    one_by_one = [execute_task(t, "h") for t in tasks]
    assert [r["value"] for r in one_by_one] == [res[t.task_id]["value"] for t in tasks]


def test_only_consecutive_tasks_of_one_function_share_a_batch(tmp_path):
    blog = tmp_path / "b.log"
    a = _tasks(3, blog)
    mid = Task("plain", "fedsim.validation._selftest:normal_mean", {"seed": 1, "replicate": 0})
    tasks = a[:2] + [mid] + a[2:]
    res = run_tasks(tasks, tmp_path / "run", workers=1, progress=False)
    assert all(r["status"] == "ok" for r in res.values())
    assert _batches(blog) == [["r0", "r1"], ["r2"]]
    recs = execute_batch([(t, "h") for t in a])
    assert [r["task_id"] for r in recs] == ["t000", "t001", "t002"]


def _scenario(steps: int = 300) -> dict:
    return Scenario.from_dict({
        "name": "mc-batch", "seed": 17,
        "problem": {"kind": "quadratic", "n": 6, "dim": 3, "mu": 0.2, "L": 1.0, "seed": 2,
                    "shared_hessian": True, "noise_sd": 0.3},
        "algorithm": {"name": "fedasync", "client_rule": "sgd", "Q": 3, "eta": 0.1,
                      "beta": 0.9},
        "delays": {"download": {"kind": "exponential", "rate": 4.0},
                   "compute": {"kind": "exponential", "rate": 1.0}},
        "horizon": {"steps": steps},
        "record": {"every": 10, "metrics": ["grad_sq", "dist_sq", "f_gap"]}}).to_dict()


def _replicate_tasks(fn: str, reps: range) -> list[Task]:
    sc = _scenario()
    return [Task(f"q/r{r}", fn, {"scenario": sc, "replicate": r, "metric": "avg_grad_sq",
                                 "horizons": [100, 300], "representative": r == 0})
            for r in reps]


def test_replay_worker_equals_the_engine_per_replicate(tmp_path, monkeypatch):
    """The default task function replays (issue 19) and its records equal those of the
    per-replicate engine bit for bit (the replay calls the engine's rules and metrics)."""
    import fedsim.engine.batch as batch_module

    reps = range(CHUNK + 3)  # two chunks: 16 + 3
    replay = run_tasks(_replicate_tasks("fedsim.validation.worker:run_replicate", reps),
                       tmp_path / "replay", workers=1, progress=False)
    assert batch_module.supports(Scenario.from_dict(
        _replicate_tasks("fedsim.validation.worker:run_replicate", [0])[0].payload["scenario"]))
    monkeypatch.setattr(batch_module, "supports", lambda scenario: False)  # engine per replicate
    plain = run_tasks(_replicate_tasks("fedsim.validation.worker:run_replicate", reps),
                      tmp_path / "plain", workers=1, progress=False)
    for r in reps:
        assert plain[f"q/r{r}"]["value"] == replay[f"q/r{r}"]["value"]
    monkeypatch.undo()
    # a replicate alone, or in a chunk of any size, gives the same record bit for bit
    for r in (0, 5, CHUNK + 1):
        (t,) = _replicate_tasks("fedsim.validation.worker:run_replicate", range(r, r + 1))
        stored = {k: v for k, v in replay[t.task_id].items() if k != "checksum"}  # the store's
        assert execute_task(t, replay[t.task_id]["payload_hash"]) == stored


def test_batched_records_identical_on_pool_and_dask(tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    tasks = _replicate_tasks("fedsim.validation.worker:run_replicate", range(CHUNK + 2))
    ref = run_tasks(tasks, tmp_path / "ref", workers=1, progress=False)
    assert run_tasks(tasks, tmp_path / "pool", workers=2, progress=False) == ref
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, silence_logs=40) as cluster:
        assert run_tasks(tasks, tmp_path / "dask", dask=cluster.scheduler_address,
                         progress=False) == ref


def test_task_function_is_the_replay_whatever_the_environment(monkeypatch):
    monkeypatch.delenv(worker.BATCH_ENV, raising=False)
    assert worker.task_function() == "fedsim.validation.worker:run_replicate"
    monkeypatch.setenv(worker.BATCH_ENV, "1")  # accepted, no effect
    assert worker.task_function() == "fedsim.validation.worker:run_replicate"
    assert callable(worker.run_replicate.batch)
    assert worker.run_replicate_batched is worker.run_replicate  # older run directories


GFN = "fedsim.validation._selftest:normal_mean_grouped"


def _grouped(sizes: list[int], blog: Path) -> list[Task]:
    out = []
    for g, size in enumerate(sizes):
        out += [Task(f"g{g}/r{r:03d}", GFN, {"seed": 5, "replicate": r, "n": 8, "group": f"g{g}",
                                             "tag": f"g{g}r{r}", "batch_log": str(blog)})
                for r in range(size)]
    return out


def test_groups_are_chunked_by_group(tmp_path):
    """Hand-computed chunks (GROUP_CHUNK = 64): a group of 150 is three chunks of 50;
    consecutive groups of 10, 20 and 30 share one chunk (60 <= 64); the next group of 40
    would pass 64 and opens a chunk; ungrouped tasks between them go in chunks of CHUNK."""
    assert GROUP_CHUNK == 64 and CHUNK == 16
    tasks = _grouped([150, 10, 20, 30, 40], tmp_path / "b.log")
    plain = [Task(f"p{r}", BFN, {"seed": 3, "replicate": r, "n": 4}) for r in range(20)]
    todo = [(t, "h") for t in tasks[:150] + plain + tasks[150:]]
    sizes = [len(c) for c in plan_chunks(todo)]
    assert sizes == [50, 50, 50, 16, 4, 60, 40]
    assert [t.task_id for c in plan_chunks(todo) for t, _ in c] == [t.task_id for t, _ in todo]
    # a group of exactly GROUP_CHUNK is one chunk; one more task splits it in two halves
    assert [len(c) for c in plan_chunks([(t, "h") for t in _grouped([64], tmp_path / "c")])] \
        == [64]
    assert [len(c) for c in plan_chunks([(t, "h") for t in _grouped([65], tmp_path / "c")])] \
        == [33, 32]


def test_grouped_chunks_are_one_batch_call_each_whatever_the_backend(tmp_path):
    ref = None
    for workers in (1, 2):
        blog = tmp_path / f"b{workers}.log"
        tasks = _grouped([70, 5, 6], blog)
        res = run_tasks(tasks, tmp_path / f"w{workers}", workers=workers, progress=False)
        calls = sorted(",".join(c) for c in _batches(blog))
        assert calls == sorted([",".join(f"g0r{r}" for r in range(35)),
                                ",".join(f"g0r{r}" for r in range(35, 70)),
                                ",".join([f"g1r{r}" for r in range(5)]
                                         + [f"g2r{r}" for r in range(6)])]), workers
        vals = [res[t.task_id]["value"] for t in tasks]
        assert vals == [normal_mean_ref(t.payload) for t in tasks]
        ref = vals if ref is None else ref
        assert vals == ref


def normal_mean_ref(payload: dict) -> dict:
    import json

    from fedsim.validation.montecarlo_store import canonical_json

    return json.loads(canonical_json(normal_mean(payload)))


def test_the_suites_task_function_groups_by_run_set():
    a = _replicate_tasks("fedsim.validation.worker:run_replicate", range(3))
    b = [Task(f"o/r{r}", t.fn, {**t.payload, "horizons": [100]}) for r, t in enumerate(a)]
    assert len({worker.run_replicate.group(t.payload) for t in a}) == 1
    assert worker.run_replicate.group(a[0].payload) != worker.run_replicate.group(b[0].payload)
    assert [len(c) for c in plan_chunks([(t, "h") for t in a + b])] == [6]
