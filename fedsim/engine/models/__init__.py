"""The execution-model registry: one home per model, one registration line each.

Each home (``fedsim/engine/models/<model>``) holds its SimPy reference writer, its fast
writer(s) and the rule choosing between them, and declares an
:class:`~fedsim.engine.models.base.ExecutionModel` (key, writer, memory estimate,
diagnostics).  To add an execution model: write its home and add one
``register_model(...)`` line below (or call :func:`register_model` from your own code); an
algorithm then names its key in ``Algorithm.runners``.  ``fedsim.engine.run`` and
``run_batch`` read only this registry.
"""

from fedsim.engine.models import area, asypfl, physical, recorded, sync, uniform_assign, window
from fedsim.engine.models.base import (
    ExecutionModel,
    Staleness,
    get_model,
    model_of,
    models,
    register_model,
    unregister_model,
)

__all__ = ["ExecutionModel", "Staleness", "register_model", "unregister_model", "get_model",
           "model_of", "models"]

register_model(physical.MODEL)
register_model(window.MODEL)
register_model(sync.MODEL)
register_model(area.MODEL)
register_model(asypfl.MODEL)
register_model(recorded.MODEL)
register_model(uniform_assign.MODEL)
