"""The engine: ``run(scenario, replicate=0, progress=False) -> Trace`` and
``run_batch(scenario, replicates, output="traces"|"records")`` for many replicates.

Every run is a table then a replay (docs/INTERNALS.md section 3).  Modules, one idea each
(imports run downwards only; nothing here imports ``theory``):

* :mod:`~fedsim.engine.dispatch` -- :func:`run` (the model's table, then the replay);
* :mod:`~fedsim.engine.batch` -- :func:`run_batch`, the one door for many replicates
  (traces or records, :mod:`~fedsim.engine.records`), and :func:`supports`;
* :mod:`~fedsim.engine.models` -- the execution-model registry and one home per model
  (``physical``, ``window``, ``sync``, ``area``, ``asypfl``): each home's SimPy reference
  writer, fast writers and the rule choosing between them; :func:`timeline_phases`, a
  replicate's per-client phases as its home's reference writer records them
  (:mod:`~fedsim.engine.models.phases`);
* :mod:`~fedsim.engine.replay` -- the event table and the one replay (driver, kernels,
  metrics, buffers; no SimPy);
* :mod:`~fedsim.engine.setup` -- what every SimPy writer starts from;
  :mod:`~fedsim.engine.steplog`, :mod:`~fedsim.engine.staleness`,
  :mod:`~fedsim.engine.simpy_fast` -- the server-step log, the staleness bound, the only
  access to SimPy's private fields.  Streams and delay draws for all clients have one home,
  :mod:`fedsim.rng` (outside the engine).
"""

from fedsim.engine.batch import run_batch, supports
from fedsim.engine.dispatch import run
from fedsim.engine.models.phases import timeline_phases
from fedsim.engine.setup import initial_model, make_recorder, problem_for
from fedsim.engine.staleness import physical_staleness_bound

__all__ = ["run", "run_batch", "supports", "problem_for", "make_recorder", "initial_model",
           "physical_staleness_bound", "timeline_phases"]
