"""The paper suite's task function: what it records along a run, batching, task order.

The worker records along the run only what a page or a claim reads (the curve metric, the
metrics with a target, the personal ones) and reads the others on the final model; the
records must be bit for bit those of recording every metric at every recorded step, and a
replicate's record must not depend on the other replicates of its batch.
"""

from __future__ import annotations

import json
import math

import pytest
from fedsim.validation.paper import build_experiments, paper_tasks
from fedsim.validation.paper.worker import (
    arm_group,
    run_arm,
    run_arms,
    series_metrics,
    warm_arms,
)


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def _one_arm_per_family(name: str) -> list[list]:
    """The small form's stage-2 tasks of ``name``: per family, its first arm's two
    replicates."""
    e = build_experiments([name], small=True)[0]
    arms: dict[str, list] = {}
    for t in paper_tasks([e], "measure", {}):
        arms.setdefault(t.task_id.rsplit("/r", 1)[0], []).append(t)
    fams: dict[str, list] = {}
    for key, ts in arms.items():
        fams.setdefault(key.rsplit("/", 1)[0] if "/g" in key else key, ts[:2])
    return list(fams.values())


def test_series_metrics_keep_what_a_page_or_claim_reads():
    base = {"metrics": ["test_acc", "test_loss", "f_gap"], "targets": {"test_acc": 0.8}}
    assert series_metrics(base) is None  # no curve given: every metric along the run
    assert series_metrics({**base, "curve": ["test_acc"]}) == ["test_acc"]
    assert series_metrics({**base, "curve": ["f_gap"], "targets": {}}) == ["f_gap"]
    # a metric that needs the clients' personal models is always recorded along the run
    pers = {"metrics": ["pers_acc", "f_gap"], "curve": ["busy"],
            "alias": {"pers_acc": "pers_acc_beta"}}
    assert series_metrics(pers) == ["pers_acc"]
    assert series_metrics({**pers, "alias": {"pers_acc": "pers_acc_me"}}) == []


def test_paper_tasks_keep_an_arms_replicates_together_and_in_order():
    for e in build_experiments(small=True):
        for stage in ("tune", "measure"):
            ts = paper_tasks([e], stage, {})
            keys = [arm_group(t.payload) for t in ts]
            runs = [k for i, k in enumerate(keys) if i == 0 or keys[i - 1] != k]
            assert len(runs) == len(set(runs)), (e.name, stage)  # each arm one run
            for i in range(1, len(ts)):
                if keys[i] == keys[i - 1]:
                    assert ts[i].payload["replicate"] == ts[i - 1].payload["replicate"] + 1
            assert all(t.payload["curve"] == [e.curve_metric] for t in ts)


@pytest.mark.parametrize("name", ["area_table4", "persafl_fig2b", "asypfl_fig3",
                                  "perfedavg_table1"])
def test_records_equal_recording_every_metric_along_the_run(name):
    """Hand-off check: the final values, the curve metric's curve, the times to target and
    the busy fraction of a run that records only its series are bit for bit those of the
    same run recording every metric at every recorded step (the payload without
    ``curve``), on every family of the experiment."""
    for ts in _one_arm_per_family(name):
        new = run_arms([t.payload for t in ts])
        for t, got in zip(ts, new, strict=True):
            full = run_arm({k: v for k, v in t.payload.items() if k != "curve"})
            assert set(got["final"]) == set(full["final"])
            for m, v in full["final"].items():
                assert _same(got["final"][m], v), (t.task_id, m, got["final"][m], v)
            cm = t.payload["curve"][0]
            if cm in full["curves"]:
                assert json.dumps(got["curves"][cm]) == json.dumps(full["curves"][cm])
            assert set(got["curves"]) <= {cm}
            assert got["time_to"] == full["time_to"]
            assert json.dumps(got["busy"]) == json.dumps(full["busy"])
            for k in ("concurrency_mean", "steps", "sim_time", "updates"):
                assert got[k] == full[k], (t.task_id, k)


def test_a_replicates_record_does_not_depend_on_its_batch():
    ts = [t for arm in _one_arm_per_family("area_table3")[:2] for t in arm]
    together = run_arms([t.payload for t in ts])
    alone = [run_arm(t.payload) for t in reversed(ts)][::-1]
    for a, b in zip(together, alone, strict=True):
        a, b = dict(a), dict(b)
        a.pop("cpu_seconds"), b.pop("cpu_seconds")
        assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def test_warm_up_runs_the_scenarios_the_worker_runs():
    ts = [t for arm in _one_arm_per_family("area_table4") for t in arm]
    res = warm_arms([t.payload for t in ts], progress=False)
    assert res["failed"] == 0 and res["kinds"] >= 1
    assert warm_arms([{"scenario": "not a dict"}], progress=False)["kinds"] == 0


def test_stage_two_starts_with_the_arms_that_cost_most_in_stage_one():
    """Stage 2's order (the chunks, never a record): untuned arms first (no cost known),
    then the tuned arms by decreasing mean tuning CPU seconds."""
    from fedsim.validation.paper.common import task_id

    e = build_experiments(["area_table3"], small=True)[0]
    recs = {}
    for k, t in enumerate(paper_tasks([e], "tune")):
        recs[t.task_id] = {"task_id": t.task_id, "status": "ok",
                           "value": {"final": {"f_gap": 1.0 + (k % 3)},
                                     "cpu_seconds": float(k)}}
    chosen = [a for s in e.settings for a in s.arms]
    mean_cpu = {}
    for a in chosen:
        v = [recs[task_id(e, a, r, "tune")]["value"]["cpu_seconds"]
             for r in range(e.tune_replicates) if task_id(e, a, r, "tune") in recs]
        mean_cpu[f"paper/{e.name}/{a.key}"] = sum(v) / len(v) if v else math.inf
    ts = paper_tasks([e], "measure", recs)
    order = [mean_cpu[t.task_id.rsplit("/r", 1)[0]] for t in ts]
    assert order == sorted(order, reverse=True) and len(set(order)) > 1
