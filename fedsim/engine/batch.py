"""``run_batch(scenario, replicates) -> list[Trace]``: many replicates of one scenario.

The front door for Monte Carlo (issue 10).  Where the compiled replay of
:mod:`fedsim.engine.replay` implements a scenario exactly (:func:`supports`: FedAsync,
physical model, Option A local SGD, every-upload trigger, and AREA's Appendix A iterate
model, each on a problem whose compiled view (:func:`fedsim.problems.compiled.compiled_view`)
compiles the recorded metrics -- quadratics, the norm family, and for FedAsync logistic and
softmax regression too), the replicates are replayed along their timelines by one compiled
loop, the engine's traces bit for bit; otherwise the replicates run one after the other
through :func:`fedsim.engine.run`.

What a caller may rely on, whichever path runs:

* trace ``k`` is replicate ``replicates[k]`` of ``scenario``, with the streams of
  ``fedsim.rng.Streams(scenario.seed, replicates[k])`` only; it does not depend on the other
  replicates of the call nor on their number;
* the timeline columns (``time``, ``kind_code``, ``client``, ``staleness_steps``,
  ``staleness_time``, ``buffer_fill``, ``metric_steps``, ``client_updates``, the concurrency
  curve, ``steps_done``, ``sim_time``, divergence) are those of ``run(scenario, r)`` bit for
  bit; the metrics and ``final_w`` equal them to rounding (the replay folds a round's Q
  local steps into one product and batches rows into GEMMs: ~1e-16 relative per server
  step, tested at 1e-10), and are bitwise equal on the fallback path;
* ``staleness_bound`` is the engine's provable bound
  (:func:`fedsim.engine.staleness.physical_staleness_bound`, [P] Assumption 3's ``tau``).

``replay=False`` forces the per-replicate loop (a reference for tests and benchmarks).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from fedsim.config import Scenario
from fedsim.engine.dispatch import run
from fedsim.engine.replay import replay_fedasync
from fedsim.engine.replay import supports as _replay_supports
from fedsim.engine.replay.area import replay_area, supports_area
from fedsim.engine.setup import check_problem, problem_for
from fedsim.errors import check_integer, require
from fedsim.trace import Trace

__all__ = ["run_batch", "supports"]


def supports(scenario: Scenario) -> bool:
    """Whether :func:`run_batch` replays ``scenario`` in lockstep (else it loops ``run``)."""
    require(isinstance(scenario, Scenario), "scenario", type(scenario).__name__,
            "must be a fedsim.config.Scenario")
    return _replay_supports(scenario) or supports_area(scenario)


def run_batch(scenario: Scenario, replicates: Sequence[int], *,
              replay: bool = True) -> list[Trace]:
    """One :class:`~fedsim.trace.Trace` per replicate of ``scenario`` (module docstring)."""
    reps = [check_integer("replicates", r, low=0) for r in replicates]
    if not reps:
        return []
    if not (replay and supports(scenario)):
        return [run(scenario, r) for r in reps]
    problem = problem_for(scenario)
    check_problem(scenario, problem)
    if supports_area(scenario):
        return replay_area(scenario, reps, problem, staleness_bound=math.inf)
    res = replay_fedasync(scenario, reps, keep_timeline=True)
    return [res.trace(k) for k in range(len(reps))]
