"""One compiled replay loop per combination of rules and view kind, whichever metrics a run
records: a run whose metrics the view's compiled metrics do not serve (here the quadratic's
``grad_maml_sq``, computed from snapshots) replays with the same loop as one they serve
(``grad_sq``, evaluated inline), and the shared metric's values are the same bits."""

from __future__ import annotations

import numpy as np

from fedsim.config import Scenario
from fedsim.engine import problem_for, run, run_batch
from fedsim.engine.replay.driver import metric_plan
from fedsim.engine.replay.group_kernel import built_kernels


def _scenario(metrics: list[str]) -> Scenario:
    return Scenario.from_dict({
        "name": "one-kernel", "seed": 5,
        "problem": {"kind": "quadratic", "n": 4, "dim": 3, "mu": 0.2, "L": 1.0,
                    "heterogeneity": 1.0, "noise": "additive", "noise_sd": 0.1, "seed": 0},
        "algorithm": {"name": "fedasync", "model": "window", "Q": 2, "eta": 0.1, "beta": 1.0,
                      "tau": 2, "client_rule": "sgd", "batch": 1},
        "horizon": {"steps": 30},
        "record": {"every": 3, "metrics": metrics, "maml_alpha": 0.1}})


def _kernels_of(sc: Scenario, reps: list[int]) -> tuple[set[str], list]:
    start = len(built_kernels())
    traces = run_batch(sc, reps)
    return set(built_kernels()[start:]), traces


def test_unserved_metrics_replay_with_the_served_runs_loop():
    served, unserved = _scenario(["grad_sq"]), _scenario(["grad_sq", "grad_maml_sq"])
    assert metric_plan(served, problem_for(served)).compiled
    assert not metric_plan(unserved, problem_for(unserved)).compiled
    k_served, a = _kernels_of(served, [0, 1])
    k_unserved, b = _kernels_of(unserved, [0, 1])
    assert len(k_served) == 1
    assert k_unserved == k_served
    for ta, tb in zip(a, b, strict=True):
        assert np.array_equal(ta.metrics["grad_sq"], tb.metrics["grad_sq"])
        assert np.array_equal(ta.final_w, tb.final_w)
    # the snapshot path's values are the entry's own (run: one replicate at a time)
    assert b[1].equals(run(unserved, 1))
    p = problem_for(unserved)
    assert b[0].metrics["grad_maml_sq"][0] == p.grad_F_maml_sq(np.zeros(3), 0.1)
