"""Check one family point against its bound: :func:`check_bound`, :func:`assert_bound_holds`.

The point is built by its family (the bound evaluated with every hypothesis the construction
settles resolved), its quantity measured, its simulation checks evaluated, and the verdict
decided by :func:`fedsim.validation.verdict.judge` -- the function behind every row of
``fedsim validate``'s ``verdicts.csv`` and every point of ``fedsim search``:

* ``method="exact"``: the family's exact oracle (within ``max_states``); the verdict is
  ``holds`` iff ``exact <= bound`` beyond float rounding, ``violated`` iff above it (an
  oracle with a rigorous error bound ``e > 0`` compares the interval ``exact +- e``);
* ``method="mc"``: ``replicates`` engine runs of the point's scenario
  (:func:`fedsim.validation.families.mc.engine_runs`, seeds derived from the scenario's
  seed and ``seed``) and the Student-t ``level`` interval of their mean: ``holds`` iff its
  upper end is at most the bound, ``violated`` iff its lower end is above it;
* ``method=None`` (default): ``exact`` where the family has an exact oracle that finishes
  within ``max_states``, else ``mc``.

Simulation checks (``Instance.sim_checks``, e.g. the measured staleness) are evaluated on the
Monte-Carlo runs, or, with an exact value, on ``check_replicates`` engine runs made for them
alone; with ``check_replicates=0`` (or a point without a scenario) nothing is simulated, the
hypotheses they settle stay unknown and the point is not a claim (``not_applicable``, the
reason in ``record.note``).  A bound that is not a claimed upper bound (a failing
hypothesis, an asymptotic or rate-only statement) gets ``not_applicable``, as in
``fedsim validate``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fedsim.errors import ConfigError, check_in_range, check_integer, require
from fedsim.validation.families import Instance
from fedsim.validation.families.mc import engine_runs
from fedsim.validation.interval import CI_LEVEL
from fedsim.validation.verdict import (
    CHECK_REPLICATES,
    Evidence,
    Target,
    evaluate_checks,
    judge,
)

__all__ = ["BoundCheck", "BoundViolated", "check_bound", "assert_bound_holds", "METHODS",
           "CHECK_REPLICATES"]

METHODS = ("exact", "mc")


@dataclass(frozen=True, kw_only=True)
class BoundCheck:
    """The verdict record of one point: measured value, interval, bound, status, verdict.

    ``measured`` is the exact value or the Monte-Carlo mean; ``ci_low``/``ci_high`` its
    interval (equal to ``measured`` for an exact value); ``ratio = measured / bound`` (> 1:
    the measured value is above the bound); ``tightness = bound / measured``; ``n`` the
    replicates (0 for an exact value); ``detail`` how the value was obtained;
    ``claim``, ``failing_hypotheses``, ``unknown_hypotheses`` and ``note`` are the verdict
    row's (:class:`fedsim.validation.verdict.VerdictRow`).
    """

    family: str
    params: dict[str, Any]
    theorem: str
    mode: str
    horizon: int
    quantity: str
    method: str
    measured: float
    ci_low: float
    ci_high: float
    level: float
    bound: float
    status: str
    verdict: str
    ratio: float
    tightness: float
    n: int
    detail: str
    failing_hypotheses: tuple[str, ...] = field(default=())
    unknown_hypotheses: tuple[str, ...] = field(default=())
    claim: bool = False
    note: str = ""

    def __str__(self) -> str:
        where = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        ci = ("" if self.method == "exact" and self.ci_low == self.ci_high
              else f" CI [{self.ci_low:.6g}, {self.ci_high:.6g}]")
        return (f"{self.theorem} ({self.mode}) on {self.family}({where}): {self.quantity} = "
                f"{self.measured:.6g} ({self.method}){ci} vs bound {self.bound:.6g} "
                f"[{self.status}] -> {self.verdict}, ratio {self.ratio:.4g}")


class BoundViolated(AssertionError):
    """A bound's verdict is ``violated``; :attr:`record` is the :class:`BoundCheck`."""

    def __init__(self, record: BoundCheck) -> None:
        super().__init__(str(record))
        self.record = record


def _instance(point: Any) -> tuple[Instance, dict[str, Any]]:
    if isinstance(point, Instance):
        return point, dict(point.params)
    build = getattr(point, "build", None)
    require(callable(build), "point", point,
            "must be a fedsim.testing.Point or a families.Instance")
    return build(), dict(getattr(point, "params", {}))


def check_bound(point: Any, method: str | None = None, level: float = CI_LEVEL, *,
                replicates: int = 200, max_states: int = 200_000, seed: int = 0,
                check_replicates: int = CHECK_REPLICATES) -> BoundCheck:
    """The :class:`BoundCheck` of ``point`` (a :class:`fedsim.testing.Point` or an
    ``Instance``) by ``method`` (module docstring).

    ``level`` is the Monte-Carlo interval's confidence level; ``replicates`` and ``seed``
    the Monte Carlo's; ``max_states`` the exact enumeration's state budget;
    ``check_replicates`` the engine runs that evaluate an exact point's simulation checks (0:
    none, the point is then not a claim).  A point its family refuses raises the family's
    :class:`fedsim.errors.ConfigError`; so does ``method="exact"`` where there is no exact
    oracle or it exceeds ``max_states``.
    """
    require(method is None or method in METHODS, "method", method, f"must be one of {METHODS}")
    check_in_range("level", level, 0.0, 1.0, closed=(False, False))
    check_integer("replicates", replicates, low=2)
    check_integer("max_states", max_states, low=1)
    check_integer("check_replicates", check_replicates, low=0)
    inst, params = _instance(point)
    exact = None
    if method in (None, "exact") and inst.exact is not None:
        exact = inst.exact(int(max_states))
    if method == "exact" and exact is None:
        raise ConfigError(f"method must be 'mc' for this point: family {inst.family!r} has no "
                          f"exact oracle within max_states={max_states}, got method='exact'")
    checks = list(inst.sim_checks)
    if exact is not None:
        ev = Evidence.exact(exact.value, error=exact.error, detail=exact.detail)
        runs = (engine_runs(inst.scenario, inst.metric, inst.horizon, check_replicates, seed)
                if checks and inst.scenario is not None and check_replicates > 0 else None)
        how, n, detail = "exact", 0, exact.detail
    else:
        require(inst.scenario is not None, "method", method or "mc",
                f"cannot be Monte Carlo: family {inst.family!r} simulates nothing at this "
                "point (exact rows only)")
        runs = engine_runs(inst.scenario, inst.metric, inst.horizon, replicates, seed)
        ev = Evidence.replicates([r["values"][0] for r in runs], level=level)
        how, n = "mc", ev.n
        detail = (f"engine, {replicates} replicates ({ev.n_nonfinite} non-finite), "
                  f"Student-t {level:.0%}")
    outcomes = None if runs is None and checks else evaluate_checks(checks, runs or [])
    v = judge(Target.of_instance(inst), ev, outcomes)
    if runs is not None and checks and exact is not None:
        detail += f"; simulation checks on {check_replicates} engine runs"
    return BoundCheck(
        family=inst.family, params=params, theorem=inst.theorem, mode=inst.mode,
        horizon=int(inst.horizon), quantity=inst.quantity, method=how,
        measured=v.measured, ci_low=v.ci_low, ci_high=v.ci_high, level=float(level),
        bound=v.bound, status=v.status, verdict=v.verdict, ratio=v.ratio,
        tightness=v.tightness, n=n, detail=detail, failing_hypotheses=v.failing_hypotheses,
        unknown_hypotheses=v.unknown_hypotheses, claim=v.claim, note=v.note)


def assert_bound_holds(point: Any, method: str | None = None, level: float = CI_LEVEL,
                       **kwargs: Any) -> BoundCheck:
    """:func:`check_bound`, raising :class:`BoundViolated` (carrying the record) when the
    verdict is ``violated``; returns the record otherwise (``holds``, ``inconclusive`` or
    ``not_applicable``: look at ``record.verdict`` to require more)."""
    rec = check_bound(point, method, level, **kwargs)
    if rec.verdict == "violated":
        raise BoundViolated(rec)
    return rec
