"""Monte Carlo of AREA's iterate model on the norm family ([A] Theorem 8), by the replay.

Model: THEORY_SPEC 2.2 ([A] eqs (5)-(7)): i.i.d. events over {1..n, s} with probabilities
``(p_i, p_s)``, realised as independent Poisson clocks of rates ``p_i`` and ``p_s`` (their
jump chain has exactly these i.i.d. indices, [A] Example 3); ``xbar_{s,K}`` is the mean of
``x_{s,0..K-1}`` ([A] Theorem 8's ergodic average).  The instance's engine scenario (the
iterate model, ``record.metrics = ["ergodic_f_gap"]``, ``every = K``) is run for
``replicates`` replicates by ``fedsim.engine.run_batch(..., output="records")`` (the compiled
replay ``fedsim.engine.run_batch`` runs: one home for AREA's rules, the M subgradient
steps of ``G^M`` run explicitly; its records are the Traces' metrics bit for bit, without
building R Traces), replicate ``r`` on ``Streams(seed', r)`` with ``seed'`` derived from
the scenario's seed and ``seed`` as :func:`fedsim.validation.families.mc.engine_values`
derives it.  Returns the mean and
standard error of ``f(xbar_{s,K}) - f*``; a diverged replicate counts as ``+inf``.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
from fedsim.validation.families.mc import derived_seed

from fedsim.config import Scenario
from fedsim.engine import run_batch
from fedsim.errors import check_integer

__all__ = ["norm_ergodic_mc"]

_METRIC = "ergodic_f_gap"


def norm_ergodic_mc(scenario: dict[str, Any], replicates: int,
                    seed: int = 0) -> tuple[float, float]:
    """(mean, standard error) of ``f(xbar_{s,K}) - f*`` over ``replicates`` replays of
    ``scenario`` (module docstring; ``K = horizon.steps``)."""
    R = check_integer("replicates", replicates, low=2)
    sc = copy.deepcopy(scenario)
    sc["seed"] = derived_seed(scenario["seed"], seed)
    S = Scenario.from_dict(sc)
    K = int(S.horizon.steps)
    v = np.empty(R)
    for k, rp in enumerate(run_batch(S, range(R), output="records").runs):
        last = rp.metric_steps.size - 1
        v[k] = (float(rp.metrics[_METRIC][last])
                if rp.diverged_step is None and rp.metric_steps[last] == K else np.inf)
    mean = float(v.mean())
    return mean, float(np.sqrt(v.var(ddof=1) / R))
