"""The SimPy engine: ``run(scenario, replicate=0, progress=False) -> Trace``, and
``run_batch(scenario, replicates) -> list[Trace]`` for many replicates at once.

One ``simpy.Environment`` per run (docs/INTERNALS.md section 3).  Modules, one idea each
(imports run downwards only; nothing here imports ``theory``):

* :mod:`~fedsim.engine.dispatch`      -- :func:`run` and the runner table;
* :mod:`~fedsim.engine.setup`         -- what every mode starts from (problem, ``w^0``,
  recorder, stop, horizon, timer, think pause, counters);
* :mod:`~fedsim.engine.physical`      -- asynchronous physical model: SimPy writes its event
  table (no algebra); the replay applies the rules (:mod:`fedsim.engine.replay.driver`);
* :mod:`~fedsim.engine.reference`     -- the per-step oracle that computes as it simulates;
* :mod:`~fedsim.engine.window`, :mod:`~fedsim.engine.sync`, :mod:`~fedsim.engine.area`,
  :mod:`~fedsim.engine.asypfl` -- the other execution models;
* :mod:`~fedsim.rng.delays`, :mod:`~fedsim.engine.steplog`,
  :mod:`~fedsim.engine.staleness` -- delays, the server-step log, the staleness bound;
* :mod:`~fedsim.engine.simpy_fast`    -- the only access to SimPy's private fields;
* :mod:`~fedsim.engine.batch`         -- :func:`run_batch` and :func:`supports`: the batched
  replay where it applies, else a loop over :func:`run`;
* :mod:`~fedsim.engine.replay`        -- event tables, compiled timelines and the one
  compiled replay (no SimPy).
"""

from fedsim.engine.batch import run_batch, supports
from fedsim.engine.dispatch import RUNNERS, run, runner_for
from fedsim.engine.setup import initial_model, make_recorder, problem_for
from fedsim.engine.staleness import physical_staleness_bound

__all__ = ["run", "run_batch", "supports", "RUNNERS", "runner_for", "problem_for",
           "make_recorder", "initial_model", "physical_staleness_bound"]
