"""Monte-Carlo fallback of a family: replicates of the engine, a 99% Student-t interval.

Used where no exact oracle exists (e.g. [P] Theorem 2 on logistic problems): the engine
scenario of an instance is run ``replicates`` times in this process, replicate ``r`` with
``fedsim.rng.Streams(seed', r)`` where ``seed'`` is derived from the scenario's seed and
``seed`` (so the search's measurement and its confirmation run are independent), and the
mean is returned with the half-width of :func:`fedsim.validation.compare.summarize`'s interval.
"""

from __future__ import annotations

import copy

import numpy as np
from fedsim.validation.compare import CI_LEVEL, summarize
from fedsim.validation.families.base import Measurement

__all__ = ["engine_mc", "engine_values", "engine_runs", "derived_seed", "BLOCK"]

#: replicates per :func:`fedsim.validation.worker.run_replicates` call (a replicate's value
#: does not depend on the block: ``run_batch``'s contract; the block bounds the memory)
BLOCK = 256


def derived_seed(scenario_seed: int, seed: int) -> int:
    """``seed'`` of the module docstring: from the scenario's root seed and ``seed``."""
    return int(np.random.SeedSequence([int(scenario_seed), 1 + int(seed)]).generate_state(1)[0])


def engine_runs(scenario: dict, metric: str, horizon: int, replicates: int,
                seed: int = 0) -> list[dict]:
    """The records of ``replicates`` engine runs (:func:`fedsim.validation.worker.run_replicate`'s
    output: ``values`` -- ``metric`` at ``horizon`` --, ``max_staleness``, ``inner_failures``,
    ...), replicate ``r`` on ``Streams(seed', r)`` with ``seed'`` derived from the scenario's
    seed and ``seed`` (module docstring)."""
    from fedsim.validation.worker import run_replicates

    sc = copy.deepcopy(scenario)
    sc["seed"] = derived_seed(scenario["seed"], seed)
    outs: list[dict] = []
    for lo in range(0, int(replicates), BLOCK):  # one run_batch call per block: the replay
        hi = min(lo + BLOCK, int(replicates))   # runs a block's replicates together
        outs += run_replicates([{"scenario": sc, "replicate": r, "metric": metric,
                                 "horizons": [int(horizon)]} for r in range(lo, hi)])
    return outs


def engine_values(scenario: dict, metric: str, horizon: int, replicates: int,
                  seed: int = 0) -> np.ndarray:
    """``metric`` at ``horizon`` of :func:`engine_runs` (float64; a diverged run is
    ``+inf``)."""
    outs = engine_runs(scenario, metric, horizon, replicates, seed)
    return np.asarray([out["values"][0] for out in outs], dtype=np.float64)


def engine_mc(scenario: dict, metric: str, horizon: int, replicates: int,
              seed: int = 0) -> Measurement:
    """Mean of ``metric`` at ``horizon`` over ``replicates`` engine runs, method ``"mc"``."""
    vals = engine_values(scenario, metric, horizon, replicates, seed)
    s = summarize(vals, CI_LEVEL)
    half = float(s["ci_high"] - s["mean"]) if s["n_ok"] >= 2 else float("inf")
    return Measurement(float(s["mean"]), "mc", half, float(s["sem"]), int(s["n_ok"]),
                       f"engine, {replicates} replicates, Student-t {CI_LEVEL:.0%}")
