"""The fast engine equals the straightforward per-step engine bit for bit (same seed)."""

from __future__ import annotations

import pytest

from fedsim.config import Scenario
from fedsim.engine import run
from fedsim.engine.models.physical.reference import run_reference

# the Moreau rule's compiled forms are shared by these modules: one worker compiles each once
pytestmark = pytest.mark.xdist_group("moreau_kernels")

BASE = {
    "name": "ref", "seed": 5,
    "problem": {"kind": "quadratic", "n": 5, "dim": 3, "mu": 0.2, "L": 1.0, "noise_sd": 0.2,
                "seed": 2},
    "algorithm": {"name": "fedasync", "Q": 3, "eta": 0.05, "beta": 0.9},
    "delays": {"download": {"kind": "exponential", "rate": 5.0},
               "compute": {"kind": "exponential", "rate": 3.0},
               "upload": {"kind": "lognormal", "mu": -1.0, "sigma": 0.5}},
    "horizon": {"steps": 300},
    "record": {"metrics": ["grad_sq", "dist_sq", "f_gap", "ergodic_f_gap"]},
}


def make(**over) -> Scenario:
    d = {k: (dict(v) if isinstance(v, dict) else v) for k, v in BASE.items()}
    for k, v in over.items():
        d[k] = {**d[k], **v} if isinstance(v, dict) and k in d else v
    return Scenario.from_dict(d)


CASES = {
    "fedasync-request-round": {},
    "fedasync-arrival-step-think": {
        "delays": {"read_at": "arrival", "compute_per": "step",
                   "think": {"kind": "uniform", "low": 0.0, "high": 0.4}}},
    "fedasync-truncnormal-per-step": {
        "delays": {"compute": {"kind": "normal", "mean": 0.3, "sd": 0.2, "low": 0.05},
                   "compute_per": "step"}},
    "fedasync-sampling-noise": {
        "problem": {"noise": "sampling", "shared_hessian": False}},
    "fedasync-maml": {"algorithm": {"client_rule": "maml", "alpha": 0.1}},
    "fedasync-moreau": {"algorithm": {"client_rule": "moreau", "lam": 9.0, "Q": 2}},
    "fedbuff-count": {"algorithm": {"name": "fedbuff", "Q": 3, "eta": 0.05, "buffer": 3,
                                    "staleness_weight": "inverse_sqrt"},
                      "trigger": {"kind": "every_k", "count": 3}},
    "fedbuff-poisson": {"algorithm": {"name": "fedbuff", "Q": 3, "eta": 0.05, "buffer": 2},
                        "trigger": {"kind": "poisson", "rate": 2.0}},
    "asfedavg-period": {"algorithm": {"name": "asfedavg", "client_rule": "upload", "Q": 2,
                                      "eta": 0.05, "buffer": 2},
                        "trigger": {"kind": "period", "period": 0.7}},
    "time-horizon": {"horizon": {"steps": 10**6, "time": 25.0}},
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_fast_engine_equals_per_step_reference(case):
    over = dict(CASES[case])
    alg = over.pop("algorithm", {})
    if alg.get("name") in ("fedbuff", "asfedavg"):  # replace the FedAsync table entirely
        over["algorithm"] = alg
        d = {**BASE, **over}
        d.update({k: {**BASE[k], **v} for k, v in over.items()
                  if k in BASE and k != "algorithm" and isinstance(v, dict)})
        sc = Scenario.from_dict(d)
    else:
        sc = make(**over, **({"algorithm": alg} if alg else {}))
    fast, ref = run(sc), run_reference(sc)
    assert fast.steps_done > 10
    assert fast.equals(ref)
    if "inner_solves" not in fast.info:  # the reference also solves for unfinished rounds
        assert fast.info == ref.info


def test_reference_detects_a_difference():
    """Negative control: a different seed is not 'equal'."""
    sc = make()
    assert not run(sc).equals(run_reference(make(seed=6)))


EXTRA = {
    "no-metrics": {"record": {"metrics": []}},
    "every-3": {"record": {"every": 3, "metrics": ["grad_sq", "f_gap"]}},
    "diverging": {"algorithm": {"eta": 40.0}, "horizon": {"steps": 5000}},
    "request-think": {"delays": {"think": {"kind": "exponential", "rate": 4.0}}},
    "arrival-q1": {"algorithm": {"Q": 1}, "delays": {"read_at": "arrival"}},
    "zero-noise": {"problem": {"noise_sd": 0.0}},
    "two-metrics-beta1": {"algorithm": {"beta": 1.0},
                          "record": {"metrics": ["grad_sq", "dist_sq"]}},
}


@pytest.mark.parametrize("case", sorted(EXTRA))
def test_fast_engine_hot_path_variants_equal_reference(case):
    """The FedAsync hot path's branches (lazy metric steps, divergence, think times, read at
    arrival, Q = 1, no noise, several inline metrics) against the per-step reference."""
    sc = make(**EXTRA[case])
    fast, ref = run(sc), run_reference(sc)
    assert fast.steps_done > 10
    assert fast.equals(ref)
    assert fast.metric_steps[0] == 0 and fast.metric_steps[-1] == fast.steps_done
    if case == "diverging":
        assert fast.diverged and fast.diverged_step == fast.steps_done < 5000
    if case in ("no-metrics", "two-metrics-beta1"):
        assert list(fast.metric_steps) == list(range(fast.steps_done + 1))


def test_option_c_counts_only_uploaded_rounds():
    """Option C's inner-solve counter covers the rounds that reached the server (Q solves
    each), not the rounds still in flight when the run stops."""
    sc = make(algorithm={"client_rule": "moreau", "lam": 9.0, "Q": 2})
    tr = run(sc)
    assert tr.info["inner_solves"] == 2 * tr.steps_done
    assert tr.equals(run_reference(sc))
