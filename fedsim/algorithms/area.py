"""AREA ([A] Algorithms 1-2): server aggregator ``u_s`` with global counter k
(:class:`fedsim.servers.area.AreaRule`); section keys ``M`` (local steps), ``alpha`` (the
step schedule table: constant, ``c_over_k_plus_d`` or ``theorem7``, :class:`StepSchedule`).
Execution models ``algorithm`` and ``iterate_model`` (THEORY_SPEC 2.2).  Cross-field rules:
``read_at = "request"`` (the reply carries x_s); ``iterate_model`` needs an exponential
cycle and a Poisson trigger ([A] Example 3); ``theorem7`` needs ``iterate_model``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fedsim.algorithms import checks
from fedsim.algorithms.base import Algorithm, Section
from fedsim.errors import check_integer, check_number, require
from fedsim.servers.area import AreaRule

__all__ = ["AREA", "AreaSection", "StepSchedule"]


@dataclass(frozen=True)
class StepSchedule:
    """AREA's client step alpha_k: constant, ``c/(k+d)``, or [A] Thm 7's (H7.4)."""

    kind: str = "constant"
    value: float | None = None
    c: float | None = None
    d: float | None = None

    def __post_init__(self) -> None:
        f = "algorithm.alpha"
        require(self.kind in ("constant", "c_over_k_plus_d", "theorem7"), f"{f}.kind",
                self.kind, "must be one of ['constant', 'c_over_k_plus_d', 'theorem7']")
        if self.kind == "constant":
            check_number(f"{f}.value", self.value, low=0.0, strict=True)
            require(self.c is None and self.d is None, f"{f}.c", self.c,
                    "is not used by a constant schedule")
        elif self.kind == "c_over_k_plus_d":
            check_number(f"{f}.c", self.c, low=0.0, strict=True)
            check_number(f"{f}.d", self.d, low=0.0, strict=True)
            require(self.value is None, f"{f}.value", self.value,
                    "is not used by a c_over_k_plus_d schedule")
        else:
            require(self.value is None and self.c is None and self.d is None, f"{f}",
                    self.to_dict(), "takes no parameters when kind = 'theorem7'")

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> StepSchedule:
        allowed = ("kind", "value", "c", "d")
        for k in d:
            require(k in allowed, f"algorithm.alpha.{k}", d[k],
                    f"is not a known key (allowed: {', '.join(sorted(allowed))})")
        require("kind" in d, "algorithm.alpha.kind", None, "is required")
        return cls(**dict(d))

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in (("kind", self.kind), ("value", self.value), ("c", self.c),
                                  ("d", self.d)) if v is not None}


@dataclass(frozen=True)
class AreaSection(Section):
    """``M`` local steps (integer >= 1, default 1) and the step schedule ``alpha``
    (required)."""

    M: int = 1
    alpha: StepSchedule | None = None

    def validate(self) -> None:
        check_integer("algorithm.M", self.M, low=1)
        require(isinstance(self.alpha, StepSchedule), "algorithm.alpha", self.alpha,
                "is required for area: a table such as {kind='constant', value=0.1}")

    @classmethod
    def parse(cls, key: str, value: Any) -> Any:
        if key == "alpha" and isinstance(value, Mapping):
            return StepSchedule.from_dict(value)
        return value


def _check(scenario: Any) -> None:
    dl, a = scenario.delays, scenario.algorithm
    require(dl.read_at == "request", "delays.read_at", dl.read_at,
            "must be 'request' for area (the server's reply carries x_s)")
    if a.model == "iterate_model":
        checks.exp_cycle(scenario)
        require(scenario.trigger.kind == "poisson", "trigger.kind", scenario.trigger.kind,
                "must be 'poisson' for area model='iterate_model' (i.i.d. events, "
                "[A] Example 3)")
    if a.alpha.kind == "theorem7":
        require(a.model == "iterate_model", "algorithm.alpha.kind", "theorem7",
                "needs model='iterate_model' (p_min comes from the Poisson rates)")


AREA = Algorithm(
    name="area", client_rules=("area",),
    runners={"algorithm": "area", "iterate_model": "area"},
    server=lambda cfg, problem: AreaRule(problem.n),
    section=AreaSection, check=_check, doc=__doc__)
