"""The one verdict function: a claim, the evidence measured for it and the outcomes of its
simulation checks in; the verdict row out.  ``fedsim validate`` (every row of
``verdicts.csv``), ``fedsim search`` (every point), :mod:`fedsim.testing` and the paper
suite's claims call :func:`judge`; no other module decides a verdict.

``judge(target, evidence, outcomes=None) -> VerdictRow``

* ``target`` (:class:`Target`): what is claimed -- ``measured <relation> bound`` (relation
  ``"<="`` for an upper bound), the bound's ``status`` and whether that status is tested as a
  claim (``claimed``: :data:`fedsim.validation.cases.CLAIM_STATUSES`), the theory's
  hypotheses (``holds`` True / False / None) and the simulation checks declared for it
  (:class:`fedsim.validation.cases.SimCheck`).  :meth:`Target.of_instance` builds it from a
  family instance, :meth:`Target.of_bound` from a :class:`fedsim.theory.result.BoundResult`.
* ``evidence`` (:class:`Evidence`): the measured value and the interval ``[low, high]`` the
  true value lies in (a Monte-Carlo confidence interval, an exact value, a worst case...).
  A measurement kind is data, not code: ``kind`` is a label; what the verdict reads is the
  interval, ``rounding`` (the relative band around the bound within which an exact value
  equal to it up to float rounding is ``inconclusive``), ``open_above`` / ``open_below``
  (a reason the true value may lie above ``high`` / below ``low``: non-finite replicates, a
  censored sample, an inaccurate solver), and the counts ``n``, ``n_nonfinite``,
  ``n_failed``.  A performance-estimation worst case with solver status "optimal" is
  ``Evidence.exact(value, kind="worst_case")``; an inaccurate one sets ``open_above`` and
  ``open_below`` to the solver's status, so it is never ``holds`` nor ``violated``.
* ``outcomes``: the :class:`CheckOutcome` of every declared simulation check
  (:func:`evaluate_checks` on the replicates' records), or ``None`` when the door simulated
  nothing (an exact oracle alone).

Rules, in order (THEORY_SPEC 10.3; issue 6 and 30):

1. *Hypotheses.*  With ``outcomes``, each check's outcome replaces the theory hypotheses still
   unknown whose names start with one of its ``replaces`` prefixes, and is added.  Without,
   each declared check is added as unknown ("nothing was simulated") and replaces nothing.
2. *Status*: the target's, ``NOT_APPLICABLE`` when a hypothesis fails.
3. *Claim*: the status is claimed, no hypothesis fails and no declared simulation check is
   unknown (a hypothesis only a simulation can settle, with nothing simulated, or no
   replicate finished).  Other unknown theory hypotheses do not block a claim: the bound is
   tested beyond what the construction proves, and the row lists them.
4. *Verdict*: ``error`` when every replicate raised (``n = n_nonfinite = 0 < n_failed``);
   ``not_applicable`` when the row is not a claim; ``inconclusive`` when the bound or an
   interval end is NaN; for ``"<="``: ``holds`` iff ``high <= bound - band`` (and not
   ``open_above``), ``violated`` iff ``low > bound + band`` (and not ``open_below``), with
   ``band = rounding * |bound|`` (0 for an infinite bound); ``"<"`` needs ``high < bound -
   band`` to hold; ``">="`` / ``">"`` mirror them; otherwise ``inconclusive``.

The :class:`VerdictRow` carries ``verdict``, ``status``, ``claim``, ``failing_hypotheses``,
``unknown_hypotheses`` (names), ``hypotheses`` (the merged list), ``note`` (why the row is
not a claim, or why it cannot hold), and the numbers ``kind``, ``bound``, ``measured``,
``ci_low``, ``ci_high``, ``sem``, ``n``, ``n_nonfinite``, ``tightness`` (bound / measured)
and ``ratio`` (measured / bound).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from fedsim.theory.result import BoundResult, Hypothesis, Status
from fedsim.validation.cases import CLAIM_STATUSES, SimCheck
from fedsim.validation.interval import CI_LEVEL, summarize, tightness

from fedsim.errors import ConfigError, require

__all__ = ["VERDICTS", "RELATIONS", "EXACT_BOUND_RTOL", "CHECK_REPLICATES", "CHECK_KINDS",
           "CheckKind", "Target", "Evidence", "CheckOutcome", "VerdictRow", "judge",
           "evaluate_checks", "merged_hypotheses"]

VERDICTS = ("holds", "violated", "inconclusive", "not_applicable", "error")
RELATIONS = ("<=", "<", ">=", ">")
#: engine runs that evaluate the simulation checks of a point measured exactly (the doors
#: that measure one point: :func:`fedsim.testing.check_bound`, ``fedsim search``)
CHECK_REPLICATES = 16
#: rounding band of an exact value against its bound (relative to |bound|): two float64
#: evaluations (oracle and bound) of equal quantities agree to far better than this
EXACT_BOUND_RTOL = 1e-9


@dataclass(frozen=True)
class CheckKind:
    """What a :class:`SimCheck` kind reads from a replicate's record (``field``), how the
    replicates combine (``combine``: ``max`` or ``sum``) and what the number is called."""

    field: str
    combine: Callable[[Iterable[float]], float]
    what: str


#: the simulation-check kinds: a new kind is a new entry
CHECK_KINDS: dict[str, CheckKind] = {
    "max_staleness": CheckKind("max_staleness", max, "max staleness"),
    "inner_failures": CheckKind("inner_failures", sum, "inner-solve failures"),
}


@dataclass(frozen=True, kw_only=True)
class CheckOutcome:
    """A simulation check evaluated on records: ``holds`` None when no replicate finished."""

    name: str
    holds: bool | None
    detail: str
    replaces: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Target:
    """What is claimed: ``measured <relation> bound`` (module docstring)."""

    bound: float
    status: str
    claimed: bool
    hypotheses: tuple[Hypothesis, ...] = ()
    sim_checks: tuple[SimCheck, ...] = ()
    relation: str = "<="

    def __post_init__(self) -> None:
        require(self.relation in RELATIONS, "relation", self.relation,
                f"must be one of {RELATIONS}")

    @classmethod
    def of_bound(cls, result: BoundResult, bound: float,
                 sim_checks: Sequence[SimCheck] = ()) -> Target:
        """The upper bound ``bound`` (one value of ``result``) with its status and
        hypotheses, claimed when its status is in ``CLAIM_STATUSES``."""
        return cls(bound=float(bound), status=str(Status(result.status).value),
                   claimed=result.status in CLAIM_STATUSES,
                   hypotheses=tuple(result.hypotheses), sim_checks=tuple(sim_checks))

    @classmethod
    def of_instance(cls, inst: Any) -> Target:
        """A family :class:`fedsim.validation.families.Instance`'s bound at its horizon."""
        return cls.of_bound(inst.bound, inst.bound_value, inst.sim_checks)


@dataclass(frozen=True, kw_only=True)
class Evidence:
    """A measurement of the claimed quantity (module docstring): ``value``, the interval
    ``[low, high]`` that holds it, and what may leave it open."""

    kind: str
    value: float
    low: float
    high: float
    sem: float = math.nan
    n: int = 0
    n_nonfinite: int = 0
    n_failed: int = 0
    rounding: float = 0.0
    open_above: str = ""
    open_below: str = ""
    detail: str = ""

    @classmethod
    def replicates(cls, values: Iterable[float], *, level: float = CI_LEVEL,
                   n_failed: int = 0, kind: str = "mc", detail: str = "") -> Evidence:
        """Monte-Carlo replicates: the Student-t ``level`` interval of their mean
        (:func:`fedsim.validation.interval.summarize`); a non-finite replicate (a diverged or
        failed run) leaves the interval open above; ``n_failed`` replicates raised."""
        s = summarize(values, level)
        k = int(s["n_nonfinite"])
        return cls(kind=kind, value=float(s["mean"]), low=float(s["ci_low"]),
                   high=float(s["ci_high"]), sem=float(s["sem"]), n=int(s["n_ok"]),
                   n_nonfinite=k, n_failed=int(n_failed),
                   open_above=f"{k} non-finite replicate(s)" if k else "",
                   detail=detail or f"{int(s['n_ok'])} replicates, Student-t {level:.0%}")

    @classmethod
    def exact(cls, value: float, *, error: float = 0.0, kind: str = "exact",
              detail: str = "") -> Evidence:
        """An exact value; ``error > 0`` a rigorous error bound (the interval ``value +-
        error``, no rounding band); a non-finite value concludes nothing."""
        x, e = float(value), float(error)
        require(e >= 0.0, "error", error, "must be >= 0")
        lo, hi = (x - e, x + e) if math.isfinite(x) else (math.nan, math.nan)
        return cls(kind=kind, value=x, low=lo, high=hi, sem=0.0,
                   rounding=EXACT_BOUND_RTOL if e == 0.0 else 0.0, detail=detail)

    @classmethod
    def of_measurement(cls, m: Any) -> Evidence:
        """A family's :class:`fedsim.validation.families.Measurement`: ``method="exact"``
        (:meth:`exact` with its error bound) or ``"mc"`` (the interval ``value +- error``,
        ``error`` the 99% half-width, ``se`` and ``n`` its standard error and replicates)."""
        if m.method == "exact":
            return cls.exact(m.value, error=m.error, detail=m.detail)
        x, e = float(m.value), float(m.error)
        return cls(kind=str(m.method), value=x, low=x - e, high=x + e, sem=float(m.se),
                   n=int(m.n), detail=m.detail)


@dataclass(frozen=True, kw_only=True)
class VerdictRow:
    """The verdict of one claim (module docstring lists the fields)."""

    verdict: str
    status: str
    claim: bool
    failing_hypotheses: tuple[str, ...]
    unknown_hypotheses: tuple[str, ...]
    hypotheses: tuple[Hypothesis, ...]
    note: str
    kind: str
    bound: float
    measured: float
    ci_low: float
    ci_high: float
    sem: float
    n: int
    n_nonfinite: int
    tightness: float
    ratio: float


def evaluate_checks(checks: Sequence[SimCheck], records: Sequence[Mapping[str, Any]]
                    ) -> list[CheckOutcome]:
    """Every check of ``checks`` on ``records`` (the value dicts of the finished replicates,
    :func:`fedsim.validation.worker.run_replicate`'s output): the kind's field combined over
    the replicates (:data:`CHECK_KINDS`) against the check's ``limit``."""
    out = []
    for chk in checks:
        if chk.kind not in CHECK_KINDS:
            raise ConfigError(f"SimCheck kind must be one of {sorted(CHECK_KINDS)}, got "
                              f"kind={chk.kind!r}")
        ck = CHECK_KINDS[chk.kind]
        vals = [rec.get(ck.field, 0) for rec in records]
        if not vals:
            out.append(CheckOutcome(name=chk.name, holds=None,
                                    detail=chk.detail + "; no replicate finished",
                                    replaces=chk.replaces))
            continue
        m = ck.combine(vals)
        out.append(CheckOutcome(name=chk.name, holds=bool(m <= chk.limit),
                                detail=f"{chk.detail}; measured {ck.what} {m:g} over "
                                       f"{len(vals)} replicates", replaces=chk.replaces))
    return out


def merged_hypotheses(target: Target, outcomes: Sequence[CheckOutcome] | None
                      ) -> tuple[Hypothesis, ...]:
    """Rule 1 of the module docstring: the theory's hypotheses with the checks settled."""
    hyps = list(target.hypotheses)
    if outcomes is None:
        return tuple(hyps + [Hypothesis(c.name, None, c.detail + "; not measured: nothing "
                                        "was simulated (only a simulation settles it)")
                             for c in target.sim_checks])
    drop = tuple(p for c in outcomes for p in c.replaces)
    if outcomes:
        hyps = [h for h in hyps if not (h.holds is None and drop and h.name.startswith(drop))]
    return tuple(hyps + [Hypothesis(c.name, c.holds, c.detail) for c in outcomes])


def _decide(low: float, high: float, bound: float, strict: bool, band: float,
            ev: Evidence) -> str:
    """Rule 4 for ``measured < bound`` (strict) or ``<= bound``."""
    if any(math.isnan(v) for v in (low, high, bound)):
        return "inconclusive"
    below = high < bound - band if strict else high <= bound - band
    if below and not ev.open_above:
        return "holds"
    if low > bound + band and not ev.open_below:
        return "violated"
    return "inconclusive"


def judge(target: Target, evidence: Evidence,
          outcomes: Sequence[CheckOutcome] | None = None) -> VerdictRow:
    """The verdict row of ``target`` on ``evidence`` with the simulation checks' ``outcomes``
    (None: nothing was simulated); the rules are the module docstring's."""
    hyps = merged_hypotheses(target, outcomes)
    failing = tuple(h.name for h in hyps if h.holds is False)
    unknown = tuple(h.name for h in hyps if h.holds is None)
    checks = {c.name for c in target.sim_checks} | {c.name for c in outcomes or ()}
    sim_unknown = tuple(h.name for h in hyps if h.holds is None and h.name in checks)
    status = Status.NOT_APPLICABLE.value if failing else target.status
    claim = bool(target.claimed) and not failing and not sim_unknown
    b = float(target.bound)
    ev = evidence
    notes = []
    if failing:
        notes.append("not a claim: a hypothesis fails (" + "; ".join(failing) + ")")
    elif not target.claimed:
        notes.append(f"not a claim: status {target.status} is not tested as a bound")
    elif sim_unknown:
        why = ("nothing was simulated" if outcomes is None else "no replicate finished")
        notes.append("not a claim: " + "; ".join(sim_unknown) + " can only be settled by a "
                     f"simulation, and {why} ({ev.kind} measurement)")
    if ev.n == 0 and ev.n_nonfinite == 0 and ev.n_failed > 0:
        v = "error"
        notes.append("every replicate raised: nothing was measured")
    elif not claim:
        v = "not_applicable"
    else:
        lo, hi, bb, mirror = float(ev.low), float(ev.high), b, target.relation in (">", ">=")
        if mirror:
            lo, hi, bb = -hi, -lo, -b
            ev = replace(ev, value=-ev.value, low=lo, high=hi,
                         open_above=evidence.open_below, open_below=evidence.open_above)
        band = ev.rounding * abs(bb) if math.isfinite(bb) else 0.0
        v = _decide(lo, hi, bb, target.relation in ("<", ">"), band, ev)
        for side, why in (("above", evidence.open_above), ("below", evidence.open_below)):
            if why:
                notes.append(f"open {side}: {why}")
    x = float(evidence.value)
    ratio = x / b if math.isfinite(x) and math.isfinite(b) and b > 0 else math.nan
    return VerdictRow(verdict=v, status=status, claim=claim, failing_hypotheses=failing,
                      unknown_hypotheses=unknown, hypotheses=hyps, note="; ".join(notes),
                      kind=evidence.kind, bound=b, measured=x, ci_low=float(evidence.low),
                      ci_high=float(evidence.high), sem=float(evidence.sem), n=int(evidence.n),
                      n_nonfinite=int(evidence.n_nonfinite),
                      tightness=float(np.asarray(tightness(b, x))), ratio=ratio)
