"""What a paper experiment is: arms (one scenario each), claims, a two-stage design.

An :class:`Experiment` reproduces one claim of a seed paper on data that ships with
scikit-learn (``digits``) or on a quadratic whose minimiser is known.  It is a list of
*settings* (e.g. ``n = 4, IID``), each with *arms* (one algorithm at one grid value of its
step size: one :class:`fedsim.config.Scenario` as a dict), and a list of :class:`Claim`
objects, the paper's ordering written as comparisons between arms' replicate samples.

Two stages, fixed before any result is seen (:mod:`fedsim.validation.paper.stats`):

1. **Tuning.** Every arm of a family with several grid values runs ``tune_replicates``
   replicates whose seeds (replicate indices ``TUNE_BASE + r``) are disjoint from the
   measurement's.  Per setting and family the arm with the best mean ``select_metric`` at
   the horizon is kept (lowest, or highest with ``select_max``), among the arms where no
   tuning replicate diverged.  The default metric is the *training* gap ``f(w) - f*``;
   the test rows are never used to choose.  The rule and the grid are the same for every
   algorithm of an experiment.
2. **Measurement.** Only the kept arms run ``replicates`` fresh replicates (indices
   ``MEASURE_BASE + 0 .. R-1``), the same indices for every arm: common random numbers, so a claim
   ``a <rel> factor * b`` is judged by the paired 99% Student-t interval of the per-replicate
   differences (:mod:`fedsim.validation.paper.intervals`).  Because the choice was made on other
   replicates, the measured values carry no selection bias.

Verdicts: ``reproduced`` iff every claim holds with its interval on the claimed side,
``not reproduced`` iff some interval lies entirely on the wrong side, ``inconclusive``
otherwise.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from fedsim.validation.cases import problem_from_dict
from fedsim.validation.cases import scenario_dict as cases_scenario_dict

from fedsim.errors import check_choice, require

__all__ = ["Arm", "Claim", "Contrast", "Setting", "Experiment", "scenario_dict", "rate_overrides",
           "exp_delays", "L_of", "TUNE_BASE", "MEASURE_BASE", "MEASURE_R", "task_id",
           "tuned_families", "replicate_index"]

#: replicate index of the first tuning replicate (stage 1)
TUNE_BASE = 1_000_000

#: replicate index of the first measurement replicate (stage 2).  The design of issue 22
#: (fixed before its run) measures on seeds that share nothing with the previous design's
#: measurement replicates (indices 0 .. 15) nor with the tuning ones (``TUNE_BASE + r``).
MEASURE_BASE = 2_000_000

#: measurement replicates per experiment (issue 22's design): 40, and 64 for Per-FedAvg
#: Table 1 (the builders' defaults).
MEASURE_R = 40


def replicate_index(r: int, stage: str = "measure") -> int:
    """The :mod:`fedsim.rng` replicate index of the ``r``-th replicate of ``stage``."""
    check_choice("stage", stage, ("tune", "measure"))
    return (TUNE_BASE if stage == "tune" else MEASURE_BASE) + int(r)


@dataclass(frozen=True)
class Arm:
    """One algorithm at one grid value: ``family`` names the algorithm (the unit the grid
    rule picks over), ``grid`` the step-size multiple of 1/L (None: no grid); ``alias``
    maps an experiment metric to the recorded metric this arm reports it with (e.g.
    ``pers_acc -> pers_acc_me`` for a Moreau-envelope method)."""

    key: str
    family: str
    label: str
    scenario: dict
    grid: float | None = None
    alias: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Claim:
    """``a <rel> factor * b`` on the mean of ``metric`` (``stat``: ``"final"`` value at the
    horizon, ``"time_to"`` a target capped at the horizon, or ``"mean"`` busy fraction), or
    ``a <rel> threshold`` when ``b`` is None.  ``a`` and ``b`` are families (their selected
    arm) in setting ``setting``; ``factor`` writes claims such as "in less than half the
    time" (``a < 0.5 b``)."""

    setting: str
    metric: str
    a: str
    rel: str
    b: str | None = None
    threshold: float | None = None
    stat: str = "final"
    text: str = ""
    factor: float = 1.0

    def __post_init__(self) -> None:
        check_choice("rel", self.rel, ("<", ">"))
        require(math.isfinite(self.factor) and self.factor > 0, "claim.factor", self.factor,
                "must be finite and > 0")
        check_choice("stat", self.stat, ("final", "time_to", "mean"))
        require((self.b is None) != (self.threshold is None), "claim", self.text,
                "compares with exactly one of b and threshold")


@dataclass(frozen=True)
class Contrast:
    """``sum_j c_j mean(metric of family_j) <rel> 0`` over the selected arms of one setting
    (``terms`` = ``((c_1, family_1), ...)``), e.g. a difference of differences "method A
    loses less than method B": ``(A1 - A0) - (B1 - B0) > 0``.  Judged on the per-replicate
    values ``sum_j c_j x_{j,r}`` (i.i.d. over the common-random-number replicates r)."""

    setting: str
    metric: str
    terms: tuple[tuple[float, str], ...]
    rel: str
    text: str = ""
    stat: str = "final"

    def __post_init__(self) -> None:
        check_choice("rel", self.rel, ("<", ">"))
        check_choice("stat", self.stat, ("final",))
        require(len(self.terms) >= 2 and all(math.isfinite(float(c)) and float(c) != 0.0
                                             for c, _ in self.terms),
                "contrast.terms", self.terms, "must hold >= 2 (non-zero coefficient, family)")


@dataclass(frozen=True)
class Setting:
    """One configuration of an experiment (a row block of the paper's table)."""

    key: str
    label: str
    arms: tuple[Arm, ...]


@dataclass(frozen=True)
class Experiment:
    """One page of the paper report (module docstring)."""

    name: str
    title: str
    source: str
    claim: str
    analogue: str
    settings: tuple[Setting, ...]
    claims: tuple[Claim | Contrast, ...]
    horizon: float
    replicates: int
    curve_metric: str
    metrics: tuple[str, ...]
    targets: dict[str, float] = field(default_factory=dict)
    rule: str = ""
    curve_log: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    timeline: Callable[..., Any] | None = None
    tune_replicates: int = 3
    select_metric: str = "f_gap"
    select_max: bool = False

    def __post_init__(self) -> None:
        require(int(self.replicates) >= 2, "replicates", self.replicates, "must be >= 2")
        require(int(self.tune_replicates) >= 1, "tune_replicates", self.tune_replicates,
                "must be >= 1")
        tuned = any(len([a for a in s.arms if a.family == f]) > 1
                    for s in self.settings for f in {a.family for a in s.arms})
        require(not tuned or self.select_metric in self.metrics, "select_metric",
                self.select_metric, f"must be one of the recorded metrics {list(self.metrics)}")

    @property
    def grid(self) -> np.ndarray:
        """The simulated-time grid of the curves (41 points on [0, horizon])."""
        return np.linspace(0.0, self.horizon, 41)


def task_id(exp: Experiment, arm: Arm, replicate: int, stage: str = "measure") -> str:
    """The run-directory key of one replicate of one arm in one stage."""
    check_choice("stage", stage, ("tune", "measure"))
    mid = "tune/" if stage == "tune" else ""
    return f"paper/{exp.name}/{mid}{arm.key}/r{int(replicate)}"


def tuned_families(exp: Experiment) -> list[Arm]:
    """The arms that stage 1 runs: every arm of a family with more than one arm."""
    out = []
    for s in exp.settings:
        fams: dict[str, list[Arm]] = {}
        for a in s.arms:
            fams.setdefault(a.family, []).append(a)
        out += [a for arms in fams.values() if len(arms) > 1 for a in arms]
    return out


def L_of(problem: dict) -> float:
    """The tagged smoothness bound ``L`` (UPPER) of a ``[problem]`` table (computed once
    per distinct table: the experiments' settings share problems)."""
    return _L_of(json.dumps(problem, sort_keys=True))


@functools.lru_cache(maxsize=64)
def _L_of(problem_json: str) -> float:
    p = problem_from_dict(json.loads(problem_json))
    if hasattr(p, "L_i"):  # softmax: the table's L is max_i L_i; skip the table's Newton solves
        return float(np.max(p.L_i))
    return float(p.constants["L"].value)


def exp_delays(rates: Sequence[float], *, download: float | None = None,
               upload: float | None = None) -> dict:
    """``[delays]``: compute ``~ Exp(rate_i)`` per client (``t_i ~ Exp(lambda_i)``, [A]
    Example 3), optional exponential download/upload means, one override per client whose
    rate differs from the first."""
    r0 = float(rates[0])
    d: dict[str, Any] = {"compute": {"kind": "exponential", "rate": r0}}
    if download is not None:
        d["download"] = {"kind": "exponential", "rate": 1.0 / download}
    if upload is not None:
        d["upload"] = {"kind": "exponential", "rate": 1.0 / upload}
    ov = rate_overrides(rates)
    if ov:
        d["override"] = ov
    return d


def rate_overrides(rates: Sequence[float]) -> list[dict]:
    """``[[delays.override]]`` tables giving client ``i`` compute ``~ Exp(rates[i])``
    (clients with the same rate share a table; the first rate is the default)."""
    r0 = float(rates[0])
    groups: dict[float, list[int]] = {}
    for i, r in enumerate(rates):
        r = float(r)
        require(math.isfinite(r) and r > 0, f"rates[{i}]", r, "must be finite and > 0")
        if r != r0:
            groups.setdefault(r, []).append(i)
    return [{"clients": c, "compute": {"kind": "exponential", "rate": r}}
            for r, c in groups.items()]


def scenario_dict(name: str, problem: dict, algorithm: dict, delays: dict, *,
                  horizon: float, metrics: Sequence[str], every: int, seed: int = 1,
                  trigger: dict | None = None, record: dict | None = None,
                  max_steps: int = 1_000_000) -> dict:
    """A scenario table (``fedsim.config.Scenario.from_dict``) run to simulated ``horizon``:
    the suites' :func:`fedsim.validation.cases.scenario_dict` with a time horizon (and
    ``max_steps`` as its step cap) and the paper suite's root seed ``seed``."""
    d = cases_scenario_dict(name, problem, algorithm, int(max_steps), list(metrics), every,
                            delays=delays, trigger=trigger, record_extra=record, seed=seed)
    d["horizon"] = {"time": float(horizon), "steps": int(max_steps)}
    return d
