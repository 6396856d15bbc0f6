"""Which compiled view a problem has: ``compiled_oracles(problem, batch)``.

A problem with a compiled view hands the compiled rules (:mod:`fedsim.local`) and the
replay (:mod:`fedsim.engine.replay`) a tuple ``(grad, view, draws, metrics, mview)``:

* ``grad(view, i, w, z, g)``: the stochastic (sub)gradient oracle of client ``i``, written
  into ``g`` from the step's ``draws`` standard normals ``z`` (taken from the client's
  ``noise`` stream, a round's ``Q draws`` in one block);
* ``metrics(mview, codes, w, out)``: the recorded metrics ``METRIC_CODES[codes[k]]``
  (:data:`~fedsim.problems.quadratic_view.METRIC_CODES`: ``grad_sq``, ``dist_sq``,
  ``f_gap``) of the global objective at ``w``, the very functions behind the problem's own
  ``grad_f_sq``/``dist_sq``/``f_gap``.

Quadratics (:class:`~fedsim.problems.QuadraticProblem`, recognised by their stacked
Hessians and noise covariances, as :class:`fedsim.local.sgd.SGDRule` does):
:mod:`fedsim.problems.quadratic_view`.  Any other problem class may define
``compiled_oracles(batch)`` (:class:`~fedsim.problems.NormProblem`:
:mod:`fedsim.problems.norm_view`); it is used only while the problem's ``grad``, ``loss``,
``sample_batch`` and ``batch_grad`` are that class's own (a subclass or an instance that
replaces one runs interpreted, through its own methods).  Every other problem has none
(``None``): its rules run interpreted.
"""

from __future__ import annotations

from typing import Any

from fedsim.problems import quadratic_view as qv
from fedsim.problems.quadratic_view import METRIC_CODES

__all__ = ["compiled_oracles", "METRIC_CODES"]

#: the oracles a compiled view stands for (``sample_batch``/``batch_grad`` of its class)
_ORACLES = ("grad", "loss", "sample_batch", "batch_grad")


def compiled_oracles(problem: Any, batch: int) -> tuple | None:
    """``(grad, view, draws, metrics, mview)`` of ``problem`` for batches of ``batch``, or
    ``None`` when it has no compiled view (module docstring)."""
    cls = type(problem)
    hook = getattr(cls, "compiled_oracles", None)
    if hook is not None:
        owner = next(c for c in cls.__mro__ if "compiled_oracles" in vars(c))
        if any(getattr(cls, m) is not getattr(owner, m) or m in vars(problem)
               for m in _ORACLES):
            return None  # a subclass or the instance replaced an oracle: run it interpreted
        return hook(problem, batch)
    if hasattr(problem, "A_stack") and hasattr(problem, "C_stack"):
        view = qv.quadratic_view(problem, batch)
        return (qv.quadratic_sample_grad, view, qv.draws_per_step(view), qv.quadratic_metrics,
                qv.quadratic_metric_view(problem))
    return None
