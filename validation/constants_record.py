"""What a scenario fixes of a theorem's keyword arguments, and how it was derived: the record
:func:`fedsim.validation.scenario_constants.scenario_constants` fills (its fillers put a value
with its source, or say why a constant is lacking), and the distance to a minimiser that
several theorems' constants need."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["ScenarioConstants", "x_star_distance"]


@dataclass
class ScenarioConstants:
    """What a scenario fixes of a theorem's keyword arguments."""

    values: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)
    facts: dict[str, tuple[bool | None, str]] = field(default_factory=dict)

    def put(self, name: str, value: Any, source: str) -> None:
        self.values[name] = value
        self.sources[name] = source
        self.missing.pop(name, None)

    def lack(self, name: str, why: str) -> None:
        if name not in self.values:
            self.missing.setdefault(name, why)

    def resolve(self, result: Any) -> Any:
        """``result`` with the hypotheses the scenario settles resolved
        (:func:`fedsim.validation.cases.resolve_hypotheses`: a failing one makes it
        NOT_APPLICABLE)."""
        from fedsim.theory.result import Hypothesis, Status
        from fedsim.validation.cases import resolve_hypotheses

        open_ = {k for k in self.facts
                 if any(h.holds is None and h.name.startswith(k) for h in result.hypotheses)}
        result = resolve_hypotheses(result, self.facts)
        extra = [Hypothesis(f"{k} (scenario)", False, f"scenario: {why}")
                 for k, (holds, why) in self.facts.items() if k not in open_ and holds is False]
        if extra:
            result.hypotheses = [*result.hypotheses, *extra]
            result.status = Status.NOT_APPLICABLE
        return result

    def table(self, overridden: Any = ()) -> str:
        """The filled and unfilled constants as text lines (``overridden``: names given
        otherwise, marked so)."""
        rows = ["  constants from the scenario:"]
        for k, v in self.values.items():
            if k in overridden:
                rows.append(f"    {k}: given on the command line (the scenario's value is not "
                            "used)")
                continue
            shown = (np.array2string(np.asarray(v), precision=4, separator=", ")
                     if np.ndim(v) else f"{v:.6g}" if isinstance(v, float) else str(v))
            rows.append(f"    {k} = {shown}  ({self.sources[k]})")
        missing = {k: v for k, v in self.missing.items() if k not in overridden}
        if missing:
            rows.append("  not determined by the scenario:")
            rows += [f"    {k}: {why}" for k, why in missing.items()]
        return "\n".join(rows)


def x_star_distance(problem: Any, kind: str, w0: np.ndarray) -> tuple[float, str] | str:
    """``(||w0 - x*|| or an upper bound, how)``, or why it is not available."""
    if kind == "quadratic":
        return float(np.linalg.norm(w0 - problem.x_star)), "||w0 - x*||, x* exact (quadratic)"
    if kind in ("logistic", "digits") and hasattr(problem, "solve_global"):
        x, _, cert = problem.solve_global()
        if x is None or not cert.valid:
            return "the logistic objective has no certified minimiser (THEORY_SPEC 9.4)"
        return (float(np.linalg.norm(w0 - x)) + float(cert.dist_bound),
                "||w0 - x_hat|| + the certificate's distance bound (UPPER, THEORY_SPEC 9.4)")
    return f"no certified distance to a minimiser for problem kind {kind!r}"
