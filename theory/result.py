"""BoundResult: a bound value that always says what kind of number it is.

THEORY_SPEC section 1.4.  Every theorem evaluator returns a :class:`BoundResult`
with a :class:`Status`, the ordered ``terms`` (for a sum, ``value == sum(terms)``),
every hypothesis with holds ``True``/``False``/``None`` (unknown) and why, the
step sizes the theorem prescribes and the errata applied.

Array inputs: evaluators accept an array of horizons (T or K) and then return a
BoundResult whose ``value`` and ``terms`` entries are float64 arrays of the same
shape; status is the status of the *worst* horizon (see :func:`worst_status`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np

__all__ = ["Status", "Hypothesis", "BoundResult", "worst_status", "IS_BOUND"]


class Status(StrEnum):
    """Kind of number a bound is (THEORY_SPEC section 1.4)."""

    CERTIFIED_PAPER = "CERTIFIED_PAPER"
    CERTIFIED_CORRECTED = "CERTIFIED_CORRECTED"
    PAPER_LITERAL_KNOWN_ERRATUM = "PAPER_LITERAL_KNOWN_ERRATUM"
    PROOF_LEVEL = "PROOF_LEVEL"
    ASYMPTOTIC_LEADING_TERMS = "ASYMPTOTIC_LEADING_TERMS"
    RATE_SHAPE_ONLY = "RATE_SHAPE_ONLY"
    NOT_APPLICABLE = "NOT_APPLICABLE"
    VACUOUS = "VACUOUS"


#: statuses whose value is a valid upper bound (when hypotheses hold)
IS_BOUND: frozenset[Status] = frozenset(
    {Status.CERTIFIED_PAPER, Status.CERTIFIED_CORRECTED, Status.PROOF_LEVEL, Status.VACUOUS}
)

_SEVERITY = [
    Status.CERTIFIED_PAPER,
    Status.CERTIFIED_CORRECTED,
    Status.PROOF_LEVEL,
    Status.PAPER_LITERAL_KNOWN_ERRATUM,
    Status.ASYMPTOTIC_LEADING_TERMS,
    Status.RATE_SHAPE_ONLY,
    Status.VACUOUS,
    Status.NOT_APPLICABLE,
]


def worst_status(statuses: list[Status]) -> Status:
    """The least favourable status of a list (NOT_APPLICABLE is the worst)."""
    return max(statuses, key=_SEVERITY.index)


@dataclass(frozen=True)
class Hypothesis:
    """One hypothesis of a theorem: ``holds`` is True, False or None (cannot be checked)."""

    name: str
    holds: bool | None
    detail: str = ""

    def __iter__(self):  # allows ``name, holds, detail = h``
        return iter((self.name, self.holds, self.detail))


def _fmt(x: Any) -> str:
    if isinstance(x, np.ndarray):
        if x.size <= 4:
            return "[" + ", ".join(_fmt(float(v)) for v in x.ravel()) + "]"
        return f"array(shape={x.shape}, min={np.min(x):.6g}, max={np.max(x):.6g})"
    if isinstance(x, float):
        if math.isinf(x) or math.isnan(x):
            return str(x)
        return f"{x:.10g}"
    return str(x)


@dataclass
class BoundResult:
    """Value, status, terms, hypotheses, derived constants and step sizes of one bound."""

    value: float | np.ndarray
    status: Status
    terms: dict[str, float | np.ndarray] = field(default_factory=dict)
    remainder: str | None = None
    hypotheses: list[Hypothesis] = field(default_factory=list)
    derived_constants: dict[str, Any] = field(default_factory=dict)
    step_sizes: dict[str, Any] = field(default_factory=dict)
    errata_applied: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    theorem: str = ""
    mode: str = ""

    @property
    def is_bound(self) -> bool:
        """True if ``value`` is a valid upper bound (status certifies it)."""
        return self.status in IS_BOUND

    @property
    def failing_hypotheses(self) -> list[Hypothesis]:
        """Hypotheses that are checked and fail."""
        return [h for h in self.hypotheses if h.holds is False]

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly dict (arrays become lists, inf stays float inf)."""

        def conv(v: Any) -> Any:
            if isinstance(v, np.ndarray):
                return v.tolist()
            if isinstance(v, np.generic):
                return v.item()
            if isinstance(v, dict):
                return {k: conv(x) for k, x in v.items()}
            if isinstance(v, (list, tuple)):
                return [conv(x) for x in v]
            return v

        return {
            "theorem": self.theorem,
            "mode": self.mode,
            "value": conv(self.value),
            "status": self.status.value,
            "terms": conv(self.terms),
            "remainder": self.remainder,
            "hypotheses": [
                {"name": h.name, "holds": h.holds, "detail": h.detail} for h in self.hypotheses
            ],
            "derived_constants": conv(self.derived_constants),
            "step_sizes": conv(self.step_sizes),
            "errata_applied": list(self.errata_applied),
            "warnings": list(self.warnings),
        }

    def __str__(self) -> str:
        name = self.theorem or "bound"
        head = f"{name} [{self.mode}]" if self.mode else name
        lines = [f"{head}: value = {_fmt(self.value)}   status = {self.status.value}"]
        if self.terms:
            lines.append("  terms:")
            w = max(len(k) for k in self.terms)
            lines += [f"    {k:<{w}}  {_fmt(v)}" for k, v in self.terms.items()]
        if self.remainder:
            lines.append(f"  remainder (NOT evaluated): {self.remainder}")
        if self.hypotheses:
            lines.append("  hypotheses:")
            mark = {True: "holds", False: "FAILS", None: "unknown"}
            w = max(len(h.name) for h in self.hypotheses)
            lines += [f"    {h.name:<{w}}  {mark[h.holds]:<7}  {h.detail}"
                      for h in self.hypotheses]
        if self.step_sizes:
            lines.append("  step sizes: "
                         + ", ".join(f"{k}={_fmt(v)}" for k, v in self.step_sizes.items()))
        if self.derived_constants:
            lines.append("  derived: " + ", ".join(
                f"{k}={_fmt(v)}" for k, v in self.derived_constants.items()))
        if self.errata_applied:
            lines.append("  errata applied: " + ", ".join(self.errata_applied))
        lines += [f"  warning: {w}" for w in self.warnings]
        return "\n".join(lines)
