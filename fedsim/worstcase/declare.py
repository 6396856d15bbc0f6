"""The public hook through which a theorem (built in or a plug-in's) declares the first-order
form of its method, so that its suite rows get the worst-case columns
(:mod:`fedsim.worstcase.verdict`).

A declaration is a function ``form(scenario, result, horizon) -> FirstOrderForm | str``:
given one verdict row's engine scenario (a dict), its :class:`~fedsim.theory.result.
BoundResult` and its horizon, it returns the PEP to solve, or a one-line reason why this row
has none (sigma > 0, a Hessian step, a horizon beyond the PEP, ...), which the row's
``worst_case_note`` shows.  Register it with :func:`register_first_order` under the
theorem's registered name, e.g. in the module that defines the plug-in's family (the
``fedsim.families`` entry point imports it)::

    from fedsim.worstcase import FirstOrderForm, FunctionClass, Schedule, delayed_gd
    from fedsim.worstcase.declare import register_first_order

    def form(scenario, result, horizon):
        if scenario["problem"].get("noise_sd", 0.0) > 0:
            return "sigma > 0: the bound is not the sigma = 0 core's"
        p, a = scenario["problem"], scenario["algorithm"]
        return FirstOrderForm(method=delayed_gd(a["eta"]),
                              function_class=FunctionClass(kind="strongly_convex",
                                                           L=p["L"], mu=p["mu"]),
                              schedule=Schedule.constant(0, horizon), measure="dist_sq",
                              scale=float(result.derived_constants["R0"]) ** 2)

    register_first_order("my_theorem", form)

The row's ``worst_case`` is ``scale`` times the PEP value (the PEP's measures are normalised:
``scale`` is the row's ``||x_0 - x_*||^2`` or ``f(x_0) - f_*``); ``witness`` names what the
column's ``worst_case_witness`` says.  The solve is cached in the run directory's store like
the built-in rows'.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, is_dataclass
from typing import Any

from fedsim.errors import require
from fedsim.worstcase.classes import FunctionClass
from fedsim.worstcase.pep import MEASURES
from fedsim.worstcase.schedule import Schedule

__all__ = ["FirstOrderForm", "register_first_order", "unregister_first_order",
           "first_order_form", "declared"]

FormFunction = Callable[[dict, Any, int], "FirstOrderForm | str"]
_FORMS: dict[str, FormFunction] = {}


@dataclass(frozen=True, kw_only=True)
class FirstOrderForm:
    """One row's PEP: ``method`` (:mod:`fedsim.worstcase.methods`: FedAsync, FedBuff, DelayAdaptive,
    ``delayed_gd``), ``function_class``, ``schedule``, ``measure``
    (:data:`~fedsim.worstcase.pep.MEASURES`), ``scale`` (row quantity = ``scale`` x PEP
    value), ``zeta_sq`` (heterogeneity at x*, or None), ``witness`` (a label)."""

    method: Any
    function_class: FunctionClass
    schedule: Schedule
    measure: str
    scale: float = 1.0
    zeta_sq: float | None = None
    witness: str = ""

    def __post_init__(self) -> None:
        require(self.measure in MEASURES, "measure", self.measure, f"must be one of {MEASURES}")
        require(hasattr(self.method, "iterates") and is_dataclass(self.method), "method",
                type(self.method).__name__, "must be a fedsim.worstcase method")
        require(self.scale >= 0, "scale", self.scale, "must be >= 0")

    def key(self) -> dict[str, Any]:
        """The cache key: every input of the solve, JSON-able."""
        return json.loads(json.dumps({
            "method": {"type": type(self.method).__name__, **asdict(self.method)},
            "class": asdict(self.function_class), "reads": self.schedule.reads(),
            "clients": [[c.client for c in cs] for cs in self.schedule.steps],
            "stale": [[c.stale for c in cs] for cs in self.schedule.steps],
            "steps": [[c.steps for c in cs] for cs in self.schedule.steps],
            "n": self.schedule.n, "measure": self.measure, "scale": self.scale,
            "zeta_sq": self.zeta_sq}, default=str))


def register_first_order(theorem: str, form: FormFunction, *, replace: bool = False) -> None:
    """Declare ``form`` (module doc) for the theorem registered as ``theorem``."""
    require(callable(form), "form", form, "must be callable")
    require(replace or theorem not in _FORMS, "theorem", theorem,
            "already has a first-order form (pass replace=True)")
    _FORMS[theorem] = form


def unregister_first_order(theorem: str) -> None:
    """Remove ``theorem``'s declaration (tests and plug-in development)."""
    _FORMS.pop(theorem, None)


def declared(theorem: str) -> bool:
    """Whether ``theorem`` has a first-order form."""
    return theorem in _FORMS


def first_order_form(theorem: str, scenario: dict, result: Any, horizon: int
                     ) -> FirstOrderForm | str:
    """The declared form of one row, or the reason it has none; a declaration that raises
    or returns something else gives a reason naming it (never a crash of the suite)."""
    fn = _FORMS.get(theorem)
    if fn is None:
        return "no first-order form declared"
    try:
        out = fn(scenario, result, int(horizon))
    except Exception as exc:  # a plug-in's bug is a note on its rows
        return f"first-order form of {theorem!r} failed: {type(exc).__name__}: {exc}"
    if not isinstance(out, (FirstOrderForm, str)):
        return f"first-order form of {theorem!r} returned {type(out).__name__}"
    return out
