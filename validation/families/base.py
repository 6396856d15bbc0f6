"""The scenario-family records: parameters in, a fully resolved instance out (issue 11, item 1).

A *family* is a named, documented builder ``params -> Instance``.  The instance carries
everything a study of one theorem at one point of its parameter space needs:

* the engine scenario (a plain dict, :class:`fedsim.config.Scenario` shape) to simulate,
* the theorem call, already evaluated: a :class:`fedsim.theory.result.BoundResult` in which every
  hypothesis that the construction settles is resolved (no ``unknown`` that the family
  decides: the family knows its noise, its event law and its minimiser),
* the measured quantity (engine metric, horizon, a human label),
* the exact oracle, if there is one (else Monte Carlo, with its confidence interval).

:meth:`Instance.measure` returns a :class:`Measurement` whose ``method`` says how the number
was obtained (``"exact"`` or ``"mc"``); :meth:`Instance.case` turns the instance into a
:class:`fedsim.validation.scenarios.Case`, so :func:`fedsim.validation.suites.run_cases`
(the machinery of
``fedsim validate``) can simulate it and give the same verdicts validate gives.

Public helpers replace the private ones a user used to need: :func:`event_probabilities`
(p_i, p_s from probabilities or Poisson rates), :func:`resolve_hypotheses`,
:func:`engine_scenario`, :func:`build_problem_from` (:mod:`fedsim.validation.families.helpers`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from fedsim.theory.result import BoundResult
from fedsim.validation.cases import (
    CLAIM_STATUSES,
    Case,
    ExactSpec,
    Row,
    RunSpec,
    SimCheck,
    resolve_hypotheses,
)
from fedsim.validation.families.helpers import params_digest

from fedsim.errors import ConfigError, require

__all__ = ["Param", "Measurement", "Instance", "Family", "SimCheck", "resolve_hypotheses",
           "MAX_CLIENTS",
           "MAX_ITERATIONS", "MAX_WINDOW", "instances_case"]


#: size limits of the families' parameters, checked before a point is built (issue 21: a
#: size is checked against what it allocates): clients, iterations / horizon, and the
#: staleness window (the window model's exact oracle holds a (2 tau + 2)^2 matrix)
MAX_CLIENTS = 10_000
MAX_ITERATIONS = 10**7
MAX_WINDOW = 1_000


@dataclass(frozen=True)
class Param:
    """One parameter of a family: ``kind`` is ``int``, ``float``, ``choice`` or ``list``."""

    name: str
    kind: str
    default: Any
    doc: str
    low: float | None = None
    high: float | None = None
    choices: tuple[Any, ...] = ()
    #: the lower end is excluded (``value > low``): a parameter the theorem divides by
    open_low: bool = False

    def coerce(self, value: Any) -> Any:
        """``value`` checked and converted to this parameter's type (ConfigError if bad)."""
        if value is None:
            return None
        if self.kind == "list":
            vals = [self._number(v) for v in (value if isinstance(value, (list, tuple,
                                                                          np.ndarray))
                                              else str(value).split(","))]
            return vals
        if self.kind == "choice":
            require(value in self.choices, self.name, value, f"must be one of {self.choices}")
            return value
        if self.kind == "int":
            f = self._number(value)
            require(math.isfinite(f) and f == round(f), self.name, value, "must be an integer")
            value = int(round(f))
        else:
            value = self._number(value)
            require(math.isfinite(value), self.name, value, "must be finite")
        if self.low is not None and self.open_low:
            require(value > self.low, self.name, value, f"must be > {self.low:g}")
        elif self.low is not None:
            require(value >= self.low, self.name, value, f"must be >= {self.low:g}")
        if self.high is not None:
            require(value <= self.high, self.name, value, f"must be <= {self.high:g}")
        return value


    def _number(self, value: Any) -> float:
        """``float(value)``; a value that is not a number is a ConfigError naming ``self``."""
        try:
            return float(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{self.name} must be a number, got {self.name}={value!r}"
                              ) from None


@dataclass(frozen=True)
class Measurement:
    """The measured quantity of one instance.

    ``method``: ``"exact"`` (an exact oracle; ``error`` is its rigorous error bound, 0 when
    nothing was merged or pruned) or ``"mc"`` (Monte Carlo; ``error`` is the half-width of
    the 99% confidence interval, ``se`` its standard error, ``n`` the replicates).
    """

    value: float
    method: str
    error: float = 0.0
    se: float = 0.0
    n: int = 0
    detail: str = ""


@dataclass(kw_only=True)
class Instance:
    """One point of a family: scenario, resolved bound, measured quantity, oracle.

    ``scenario`` is None for a point no simulation can reach (e.g. K = 1e11): its rows are
    measured by the exact oracle only (:class:`fedsim.validation.cases.ExactSpec`).
    """

    family: str
    theorem: str
    mode: str
    params: dict[str, Any]
    bound: BoundResult
    scenario: dict | None
    metric: str
    horizon: int
    quantity: str
    description: str
    constants: list[dict]
    exact: Callable[[int], Measurement | None] | None = None
    mc: Callable[[int, int], Measurement] | None = None
    sim_checks: list = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: the horizons one run of :attr:`scenario` is read at (a curve: the family's schedule does
    #: not depend on the horizon, :attr:`Family.curve`); ``()``: :attr:`horizon` only.  The
    #: bound's value then has one entry per horizon.
    horizons: tuple[int, ...] = ()
    #: the exact oracle at every horizon of :attr:`curve_horizons` (None: no exact curve)
    exact_curve: Callable[[], Sequence[float]] | None = None
    #: what computes the exact values (function and arguments), shown in an exact row's notes
    exact_source: str = ""

    @property
    def curve_horizons(self) -> tuple[int, ...]:
        """The horizons the instance's rows are read at (:attr:`horizons`, else the horizon)."""
        return tuple(self.horizons) or (int(self.horizon),)

    @property
    def bound_values(self) -> list[float]:
        """The bound at each of :attr:`curve_horizons`."""
        v = np.asarray(self.bound.value, dtype=np.float64).reshape(-1)
        n = len(self.curve_horizons)
        return [float(x) for x in (v if v.size == n else np.full(n, v[-1]))]

    @property
    def bound_value(self) -> float:
        """The bound at the instance's horizon (a float)."""
        return float(np.asarray(self.bound.value, dtype=np.float64).reshape(-1)[-1])

    @property
    def status(self) -> str:
        """The bound's status (``Status.value``)."""
        return str(self.bound.status.value)

    @property
    def hypotheses_hold(self) -> bool | None:
        """False if a hypothesis fails, None if one is still unknown, else True."""
        hs = [h.holds for h in self.bound.hypotheses]
        if any(h is False for h in hs):
            return False
        return None if any(h is None for h in hs) else True

    @property
    def unknown(self) -> list[str]:
        """Names of the hypotheses still unknown (left to the simulation's own checks)."""
        return [h.name for h in self.bound.hypotheses if h.holds is None]

    @property
    def is_claim(self) -> bool:
        """The theory side of a claim: the status is tested as a bound and no hypothesis of
        the bound fails.  A row's ``claim`` (:func:`fedsim.validation.verdict.judge`) also needs
        :attr:`sim_checks` settled by a simulation."""
        return self.bound.status in CLAIM_STATUSES and self.hypotheses_hold is not False

    def measure(self, *, max_states: int = 200_000, replicates: int = 20_000,
                seed: int = 0) -> Measurement:
        """The measured quantity: the exact oracle when feasible, else Monte Carlo.

        ``max_states`` bounds an exact enumeration; ``replicates`` and ``seed`` are the
        Monte-Carlo fallback's (an exact oracle that gives up within its budget falls back).
        """
        if self.exact is not None:
            m = self.exact(max_states)
            if m is not None:
                return m
        require(self.mc is not None, "family", self.family, "has neither oracle nor MC")
        return self.mc(replicates, seed)

    def case(self, replicates: int, *, key: str | None = None, exact: float = math.nan,
             control: str = "", expected_verdict: str = ""):
        """This instance as a :class:`fedsim.validation.scenarios.Case` (one run set, one row), for
        :func:`fedsim.validation.suites.run_cases`: validate's verdict machinery.
        ``control``/``expected_verdict``: a control row's kind and required verdict."""
        return instances_case([self], name=key or f"{self.family}-{params_digest(self.params)}",
                              replicates=replicates, exacts=[exact], control=control,
                              expected_verdict=expected_verdict)


@dataclass(frozen=True, kw_only=True)
class Family:
    """A named scenario family: its theorem, its parameters and its builder (keyword
    arguments only)."""

    name: str
    theorem: str
    title: str
    doc: str
    params: tuple[Param, ...]
    builder: Callable[[dict[str, Any]], Instance]
    modes: tuple[str, ...] = ()
    #: the parameter that holds the horizon (``"T"``, ``"K"``): a suite row sets it
    horizon: str = ""
    #: ``curve(params, horizons) -> Instance``: one run read at every horizon, for families
    #: whose schedule does not depend on the horizon (None: one run per horizon)
    curve: Callable[[dict[str, Any], tuple[int, ...]], Instance] | None = None

    def defaults(self) -> dict[str, Any]:
        """Every parameter's default value."""
        return {p.name: p.default for p in self.params}

    def param(self, name: str) -> Param:
        """The :class:`Param` called ``name`` (ConfigError if unknown)."""
        for p in self.params:
            if p.name == name:
                return p
        raise ConfigError(f"family {self.name!r} has no parameter {name!r}, got {name}={name!r}"
                          f" (parameters: {', '.join(p.name for p in self.params)})")

    def complete(self, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Defaults updated by ``params``, every value checked (unknown names raise)."""
        out = self.defaults()
        for k, v in (params or {}).items():
            out[k] = self.param(k).coerce(v)
        return out

    def build(self, params: Mapping[str, Any] | None = None) -> Instance:
        """The instance at ``params`` (missing ones take their defaults)."""
        return self.builder(self.complete(params))

    def build_curve(self, params: Mapping[str, Any] | None, horizons: Sequence[int]
                    ) -> Instance:
        """The instance at ``params`` read at every one of ``horizons`` from one run
        (:attr:`curve`; the horizon parameter is set to the largest)."""
        require(self.curve is not None, "family", self.name,
                "has no curve builder (one run per horizon)")
        hs = tuple(int(h) for h in horizons)
        require(bool(hs) and list(hs) == sorted(set(hs)), "horizons", list(hs),
                "must be increasing, at least one")
        q = self.complete({**dict(params or {}), self.horizon: hs[-1]})
        return self.curve(q, hs)


def instances_case(instances: Sequence[Instance], *, name: str, replicates: int,
                   exacts: Sequence[float | Sequence[float]] | None = None, control: str = "",
                   expected_verdict: str | Mapping[str, str] = "", title: str = "",
                   x_label: str = "horizon", expected_slope: float = math.nan,
                   family: str = "") -> Case:
    """One :class:`Case` from built instances of one theorem: a run set per distinct engine
    scenario (key ``theorem/name/H<horizon>``, ``/<mode>`` appended when modes at one horizon
    simulate different scenarios) read at the instance's :attr:`Instance.curve_horizons`, or
    an :class:`ExactSpec` for an instance without a scenario; a row per instance and horizon.
    ``exacts[j]``: instance j's exact oracle value (a float, or one per curve horizon; NaN
    for none); ``expected_verdict``: one verdict, or one per mode.  The constants are the
    first instance's, the simulation checks and notes the union of the instances'."""
    require(bool(instances), "instances", list(instances), "must hold at least one instance")
    theorem = instances[0].theorem
    for inst in instances:
        require(inst.theorem == theorem, "instances", inst.theorem,
                f"must all be of theorem {theorem!r}")
    exacts = list(exacts) if exacts is not None else [math.nan] * len(instances)
    require(len(exacts) == len(instances), "exacts", len(exacts),
            f"must give one value per instance ({len(instances)})")
    per_h: dict[int, set[str]] = {}
    for inst in instances:
        per_h.setdefault(inst.horizon, set()).add(json.dumps(inst.scenario, sort_keys=True,
                                                             default=str))
    runs: dict[str, RunSpec | ExactSpec] = {}
    rows, checks, notes = [], [], []
    for inst, ex in zip(instances, exacts, strict=True):
        hs = inst.curve_horizons
        exv = [float(v) for v in np.broadcast_to(np.asarray(ex, dtype=np.float64), len(hs))]
        key = f"{theorem}/{name}/H{inst.horizon}"
        if len(per_h[inst.horizon]) > 1:
            key += f"/{inst.mode}"
        if inst.scenario is None and inst.exact_curve is not None and not all(
                math.isfinite(v) for v in exv):   # nothing to simulate: the oracle measures
            exv = [float(v) for v in inst.exact_curve()]
        if key not in runs and inst.scenario is None:
            require(all(math.isfinite(v) for v in exv), "exacts", exv,
                    f"must be finite for {inst.family} (no scenario: measured exactly)")
            runs[key] = ExactSpec(key, hs, tuple(exv), inst.exact_source or inst.family)
        elif key not in runs:
            runs[key] = RunSpec(key, inst.scenario, inst.metric, hs, int(replicates))
        exp = (expected_verdict if isinstance(expected_verdict, str)
               else expected_verdict.get(inst.mode, ""))
        rows += [Row(inst.mode, h, key, inst.bound, b, e, control, exp)
                 for h, b, e in zip(hs, inst.bound_values, exv, strict=True)]
        checks += [c for c in inst.sim_checks if c not in checks]
        notes += [n for n in inst.notes if n not in notes]
    first = instances[0]
    return Case(theorem, name, title or f"search: {family or first.family}", first.description,
                x_label, first.quantity, expected_slope,
                [r for r in runs.values() if isinstance(r, RunSpec)], rows, first.constants,
                checks, notes, control=control,
                expected_verdict=expected_verdict if isinstance(expected_verdict, str) else "",
                exacts=[r for r in runs.values() if isinstance(r, ExactSpec)],
                family=family or first.family)
