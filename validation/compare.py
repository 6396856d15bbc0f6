"""Empirical vs theoretical: confidence intervals, verdicts, tightness, log-log slopes.

Issue 6 item 3.  Pure functions on numbers, numpy arrays and DataFrames.

* Confidence interval: **Student-t** interval for the mean of the R per-replicate
  values at level **0.99** (two-sided): ``mean +- t_{(1+level)/2, n-1} * sd / sqrt(n)``
  with the unbiased (ddof=1) standard deviation.  Non-finite values (NaN from a
  failed metric, +-inf from a diverged run) are excluded from the interval and
  counted separately; :func:`verdict_table` never says ``holds`` for a row with a
  non-finite replicate (it says ``inconclusive`` unless the finite ones already
  violate the bound).  THEORY_SPEC 10.3 suggests a 1.96-sd normal interval; we use
  the more conservative t interval at 99 %, because R is small (tens) and a
  suite makes many comparisons.
* Verdict: :func:`fedsim.validation.verdict.judge` decides every row (this module's
  :func:`verdict`, :func:`exact_verdict`, :func:`measured_verdict` and :func:`verdict_table`
  call it): ``not_applicable`` if the row is not a claim (a hypothesis fails, a simulation
  check is unknown, or the status -- ``NOT_APPLICABLE``, ``ASYMPTOTIC_LEADING_TERMS``,
  ``RATE_SHAPE_ONLY`` -- is not tested as a bound); ``holds`` if the CI upper end is <= the
  bound; ``violated`` if the CI lower end is > the bound; otherwise ``inconclusive``;
  ``error`` when every replicate of the row raised, so nothing was measured.
* Tightness = bound / mean (>= 1 when the bound holds; large = loose).
* Slope: least squares of log(mean) on log(horizon) over the T or K grid, to be
  compared with the theorem's order (e.g. -1/2 for O(1/sqrt T)).
* Oracle test: two-sided test of the MC mean against an exact expectation with
  false-alarm rate ``ORACLE_FAR = 1e-3``: the statistic ``(mean - exact) / sem`` against
  the Student-t critical value with ``n - 1`` degrees of freedom (exact for Gaussian
  replicates; 3.29, the normal value, only as ``n`` grows: at ``n = 6`` the normal value
  would give a false-alarm rate of 0.022, the t value 6.87 gives 1e-3).
* Exact rows (``measured_exactly`` in the bounds table): the measured quantity is an exact
  oracle value, not a Monte-Carlo mean (a counterexample no simulation reaches).  The row has
  ``mean = ci_low = ci_high = exact``, ``n_ok = 0``, ``sem = 0`` (the marker,
  :func:`is_exact_row`: a simulated row with no replicate has ``sem`` NaN), ``ci_level``
  empty (no CI), no oracle test; verdict :func:`exact_verdict`: ``holds`` iff ``exact <=
  bound - EXACT_BOUND_RTOL |bound|``, ``violated`` iff ``exact > bound + EXACT_BOUND_RTOL
  |bound|``, ``inconclusive`` within that rounding band (a bound that is exactly tight),
  ``not_applicable`` as for any row.  Tightness = bound / exact.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from fedsim.validation.interval import CI_LEVEL, CI_METHOD, mean_ci, summarize, tightness
from fedsim.validation.verdict import (
    EXACT_BOUND_RTOL,
    VERDICTS,
    Evidence,
    Target,
    judge,
)
from scipy import stats

from fedsim.errors import check_in_range, check_integer, require
from fedsim.safefile import atomic_writer

__all__ = [
    "CI_METHOD",
    "CI_LEVEL",
    "ORACLE_FAR",
    "EXACT_RTOL",
    "VERDICTS",
    "VERDICT_COLUMNS",
    "EXTRA_COLUMNS",
    "mean_ci",
    "summarize",
    "verdict",
    "exact_verdict",
    "is_exact_row",
    "EXACT_BOUND_RTOL",
    "tightness",
    "loglog_slope",
    "oracle_test",
    "verdict_table",
    "measured_verdict",
    "JUDGED_COLUMNS",
    "write_verdicts",
    "read_verdicts",
]

ORACLE_FAR = 1e-3
#: exactness tolerance of a zero-spread (deterministic) oracle comparison (relative)
EXACT_RTOL = 1e-9
VERDICT_COLUMNS = ["theorem", "scenario", "mode", "horizon", "mean", "ci_low", "ci_high",
                   "bound", "status", "verdict", "tightness", "slope", "exact"]
#: extra columns :func:`verdict_table` adds after VERDICT_COLUMNS
EXTRA_COLUMNS = ["expected_slope", "slope_stderr", "n_ok", "n_nonfinite", "sem", "oracle_z",
                 "oracle_pass", "ci_level"]
_KEYS = ["theorem", "scenario", "mode", "horizon"]


def _target(bound: float, certified: bool, hypotheses_hold: bool | None) -> Target:
    """A bare upper-bound target: claimed iff ``certified`` and no hypothesis fails."""
    return Target(bound=_float(bound), status="", claimed=bool(certified)
                  and hypotheses_hold is not False)


def verdict(ci_low: float, ci_high: float, bound: float, bound_is_certified: bool,
            hypotheses_hold: bool | None) -> str:
    """Verdict of the interval ``[ci_low, ci_high]`` against ``bound``
    (:func:`fedsim.validation.verdict.judge`).

    ``hypotheses_hold=None`` (some hypothesis cannot be checked) does not block a
    verdict: the caller decides whether an unknown hypothesis makes the bound
    uncertified.  A NaN bound or CI end gives ``inconclusive``.
    """
    ev = Evidence(kind="interval", value=math.nan, low=float(ci_low), high=float(ci_high))
    return judge(_target(bound, bound_is_certified, hypotheses_hold), ev).verdict


def exact_verdict(exact: float, bound: float, bound_is_certified: bool,
                  hypotheses_hold: bool | None) -> str:
    """Verdict of an exact row: the measured quantity is the exact value ``exact``
    (:func:`fedsim.validation.verdict.judge` on :meth:`Evidence.exact`).

    ``not_applicable`` as in :func:`verdict`; ``holds`` iff ``exact <= bound - EXACT_BOUND_RTOL
    |bound|``; ``violated`` iff ``exact > bound + EXACT_BOUND_RTOL |bound|``; otherwise
    (equal up to rounding, or a NaN) ``inconclusive``.  An infinite bound holds.
    """
    return judge(_target(bound, bound_is_certified, hypotheses_hold),
                 Evidence.exact(exact)).verdict


def is_exact_row(df: pd.DataFrame) -> pd.Series:
    """Boolean mask of the exact rows of a verdict table (``n_ok == 0`` and ``sem == 0``)."""
    if "n_ok" not in df.columns or "sem" not in df.columns:
        return pd.Series(False, index=df.index)
    n_ok = pd.to_numeric(df["n_ok"], errors="coerce")
    sem = pd.to_numeric(df["sem"], errors="coerce")
    return (n_ok == 0) & (sem == 0)


def loglog_slope(horizons: Sequence[float], means: Sequence[float]) -> tuple[float, float]:
    """Least-squares slope of log(mean) on log(horizon) and its standard error.

    Points with a non-positive or non-finite horizon or mean are ignored.  Fewer than
    2 usable points (or a single distinct horizon) give ``(nan, nan)``; exactly 2 give
    the exact slope and a NaN standard error (no residual degrees of freedom).
    """
    h = np.asarray(horizons, dtype=np.float64).ravel()
    m = np.asarray(means, dtype=np.float64).ravel()
    require(h.shape == m.shape, "means", m.shape, f"must have the shape of horizons {h.shape}")
    ok = np.isfinite(h) & np.isfinite(m) & (h > 0) & (m > 0)
    x, y = np.log(h[ok]), np.log(m[ok])
    n = x.size
    if n < 2:
        return math.nan, math.nan
    xc = x - x.mean()
    sxx = float(xc @ xc)
    if sxx == 0.0:
        return math.nan, math.nan
    slope = float(xc @ (y - y.mean())) / sxx
    if n == 2:
        return slope, math.nan
    resid = y - y.mean() - slope * xc
    return slope, math.sqrt(float(resid @ resid) / (n - 2) / sxx)


def oracle_test(mean: float, sem: float, exact: float, far: float = ORACLE_FAR,
                n: int | None = None) -> tuple[float, bool]:
    """Two-sided test of an MC mean of ``n`` replicates against an exact expectation.

    ``z = (mean - exact) / sem`` (``sem`` the sample standard error); passes when ``|z|``
    is at most the Student-t quantile ``t_{n-1}(1 - far/2)`` (6.87 at n = 6, 3.39 at
    n = 512 for the default 1e-3), or the normal quantile ``Phi^{-1}(1 - far/2)`` = 3.29
    when ``n`` is None.  The t value makes the false-alarm rate exactly ``far`` for
    Gaussian replicates; for skewed replicates at small ``n`` it stays above ``far``
    (the sample SEM is correlated with the mean), which is why the suites use hundreds of
    replicates on skewed quantities.  ``sem == 0`` (every replicate equal: a
    deterministic run) is an exactness comparison, not a z-test: z = 0 when ``|mean -
    exact| <= EXACT_RTOL |exact|`` (relative 1e-9, rounding of two float64 evaluations of
    the same quantity), else +-inf.  A NaN input gives ``(nan, False)``.
    """
    check_in_range("far", far, 0.0, 1.0, closed=(False, False))
    if any(math.isnan(float(v)) for v in (mean, sem, exact)):
        return math.nan, False
    diff = float(mean) - float(exact)
    if sem == 0:  # zero spread: a deterministic comparison, exact up to EXACT_RTOL
        z = 0.0 if abs(diff) <= EXACT_RTOL * abs(float(exact)) else math.copysign(math.inf, diff)
    else:
        z = diff / float(sem)
    if n is None:
        crit = float(stats.norm.ppf(1.0 - far / 2.0))
    else:
        n = check_integer("n", n, low=2)
        crit = float(stats.t.ppf(1.0 - far / 2.0, n - 1))
    return z, bool(abs(z) <= crit)


def measured_verdict(*, bound: float, certified: bool, hypotheses_hold: bool | None,
                     values: Iterable[float] | None = None, exact: float | None = None,
                     exact_error: float = 0.0, level: float = CI_LEVEL) -> dict[str, Any]:
    """The verdict of one measured quantity against its bound, as a dict
    (:func:`fedsim.validation.verdict.judge` on :meth:`Evidence.replicates` or
    :meth:`Evidence.exact`).

    Give either ``values`` (Monte-Carlo replicates: the Student-t ``level`` interval; a
    non-finite replicate turns ``holds`` into ``inconclusive``) or ``exact`` (an exact oracle
    value; ``exact_error > 0`` a rigorous error bound).  ``certified``: the bound is a claimed
    upper bound (else ``not_applicable``).  Returns ``mean``, ``ci_low``, ``ci_high``,
    ``sem``, ``n_ok``, ``n_nonfinite``, ``verdict``, ``tightness`` (bound / mean) and
    ``ratio`` (mean / bound, > 1 when the measured value exceeds the bound).
    """
    require((values is None) != (exact is None), "values", values,
            "give exactly one of values (replicates) and exact (an oracle value)")
    ev = (Evidence.replicates(values, level=level) if values is not None
          else Evidence.exact(exact, error=exact_error))
    r = judge(_target(bound, certified, hypotheses_hold), ev)
    return dict(mean=r.measured, ci_low=r.ci_low, ci_high=r.ci_high, sem=r.sem, n_ok=r.n,
                n_nonfinite=r.n_nonfinite, verdict=r.verdict, tightness=r.tightness,
                ratio=r.ratio)


def _float(x: Any) -> float:
    """float(x), with None (a missing value) as NaN."""
    return math.nan if x is None else float(x)


_NOT_CARRIED = ("bound_is_certified", "hypotheses_hold", "measured_exactly", "target",
                "outcomes")
#: the columns a row judged from its ``target`` gets from its :class:`VerdictRow`
JUDGED_COLUMNS = ("failing_hypotheses", "unknown_hypotheses", "claim", "note")


def _flag(x: Any) -> bool:
    """A True/False cell (None, NaN: False)."""
    return isinstance(x, (bool, np.bool_)) and bool(x)


def _hyp(x: Any) -> bool | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else bool(x)


def _judged(b: dict, ev: Evidence) -> tuple[Any, dict[str, Any]]:
    """The :class:`VerdictRow` of bounds row ``b`` on ``ev`` and the columns it sets."""
    t = b.get("target")
    if not isinstance(t, Target):
        t = _target(b["bound"], _flag(b["bound_is_certified"]), _hyp(b["hypotheses_hold"]))
        status = str(getattr(b["status"], "value", b["status"]))
        return judge(t, ev), {"status": status}
    outs = b.get("outcomes")
    r = judge(t, ev, list(outs) if isinstance(outs, (list, tuple)) else None)
    return r, {"status": r.status, "failing_hypotheses": "; ".join(r.failing_hypotheses),
               "unknown_hypotheses": "; ".join(r.unknown_hypotheses), "claim": r.claim,
               "note": r.note}


def _carry(row: dict[str, Any], b: dict, judged: dict[str, Any]) -> dict[str, Any]:
    for k, val in b.items():
        if k not in row and k not in _NOT_CARRIED:
            row[k] = judged.get(k, val)
    row.update({k: v for k, v in judged.items() if k not in row})
    return row


def verdict_table(samples: pd.DataFrame, bounds: pd.DataFrame,
                  level: float = CI_LEVEL, far: float = ORACLE_FAR) -> pd.DataFrame:
    """One verdict row per (theorem, scenario, mode, horizon), each decided by
    :func:`fedsim.validation.verdict.judge`.

    ``samples``: one row per replicate and horizon with columns theorem, scenario,
    mode, horizon, value (the measured quantity of that replicate; NaN/inf allowed).
    ``bounds``: one row per (theorem, scenario, mode, horizon) with columns ``bound`` and
    either ``target`` (a :class:`fedsim.validation.verdict.Target`, with ``outcomes``: the
    simulation checks' :class:`CheckOutcome` list, or None when nothing was simulated; the
    row's status, ``failing_hypotheses``, ``unknown_hypotheses``, ``claim`` and ``note`` then
    come from the verdict) or ``status``, ``bound_is_certified`` (bool) and
    ``hypotheses_hold`` (True/False/None); optionally ``exact`` (oracle value, NaN if none),
    ``expected_slope``, ``measured_exactly`` (True: an exact row, its measured value is
    ``exact``, no samples; module docstring) and ``n_failed`` (replicates that raised); any
    other column is carried through.  Horizons without samples get n_ok = 0: verdict
    ``error`` when replicates failed (``n_failed > 0``: nothing was measured), else
    ``inconclusive``.  The slope is fitted per (theorem, scenario, mode) over its horizons.
    Returns VERDICT_COLUMNS + EXTRA_COLUMNS + carried columns.
    """
    for col in _KEYS + ["value"]:
        require(col in samples.columns, "samples", list(samples.columns), f"must have {col!r}")
    need = ["bound"] + ([] if "target" in bounds.columns
                        else ["status", "bound_is_certified", "hypotheses_hold"])
    for col in _KEYS + need:
        require(col in bounds.columns, "bounds", list(bounds.columns), f"must have {col!r}")
    require(not bounds.duplicated(_KEYS).any(), "bounds", "duplicated keys",
            "must have one row per (theorem, scenario, mode, horizon)")
    groups = {k: g["value"].to_numpy(np.float64)
              for k, g in samples.groupby(_KEYS, sort=False)}
    rows: list[dict[str, Any]] = []
    for b in bounds.to_dict("records"):
        key = tuple(b[k] for k in _KEYS)
        bound = _float(b["bound"])
        exact = _float(b.get("exact"))
        row = dict(zip(_KEYS, key, strict=True))
        if _flag(b.get("measured_exactly")):
            require(key not in groups, "samples", key, "must be empty for an exact row")
            r, judged = _judged(b, Evidence.exact(exact))
            row.update(mean=r.measured, ci_low=r.ci_low, ci_high=r.ci_high, bound=bound,
                       status=judged["status"], verdict=r.verdict, tightness=r.tightness,
                       slope=math.nan, exact=exact,
                       expected_slope=_float(b.get("expected_slope")), slope_stderr=math.nan,
                       n_ok=0, n_nonfinite=0, sem=0.0, oracle_z=math.nan, oracle_pass=None,
                       ci_level=math.nan)
            rows.append(_carry(row, b, judged))
            continue
        n_failed = _float(b.get("n_failed"))
        ev = Evidence.replicates(groups.get(key, np.empty(0)), level=level,
                                 n_failed=int(n_failed) if n_failed > 0 else 0)
        r, judged = _judged(b, ev)
        z, passed = (math.nan, False)
        if math.isfinite(exact):
            z, passed = oracle_test(r.measured, r.sem, exact, far,
                                    n=r.n if r.n >= 2 else None)
        row.update(mean=r.measured, ci_low=r.ci_low, ci_high=r.ci_high, bound=bound,
                   status=judged["status"], verdict=r.verdict, tightness=r.tightness,
                   slope=math.nan, exact=exact, expected_slope=_float(b.get("expected_slope")),
                   slope_stderr=math.nan, n_ok=r.n, n_nonfinite=r.n_nonfinite, sem=r.sem,
                   oracle_z=z, oracle_pass=passed if math.isfinite(exact) else None,
                   ci_level=level)
        rows.append(_carry(row, b, judged))
    out = pd.DataFrame(rows)
    if out.empty:
        return pd.DataFrame(columns=VERDICT_COLUMNS + EXTRA_COLUMNS)
    for _, idx in out.groupby(["theorem", "scenario", "mode"], sort=False).groups.items():
        sl, se = loglog_slope(out.loc[idx, "horizon"], out.loc[idx, "mean"])
        out.loc[idx, "slope"], out.loc[idx, "slope_stderr"] = sl, se
    first = VERDICT_COLUMNS + EXTRA_COLUMNS
    return out[first + [c for c in out.columns if c not in first]]


def write_verdicts(df: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Write a verdict table to CSV atomically (VERDICT_COLUMNS first, extras after)."""
    missing = [c for c in VERDICT_COLUMNS if c not in df.columns]
    require(not missing, "verdicts", missing, "must contain every VERDICT_COLUMNS column")
    cols = VERDICT_COLUMNS + [c for c in df.columns if c not in VERDICT_COLUMNS]
    path = Path(path)
    with atomic_writer(path) as fh:  # fresh temporary file, fsync, rename (fedsim.safefile)
        df[cols].to_csv(fh, index=False, float_format="%.17g")
    return path


def read_verdicts(path: str | os.PathLike) -> pd.DataFrame:
    """Read verdicts.csv (inf/nan round-trip; theorem/scenario/mode as strings)."""
    df = pd.read_csv(path, dtype={"theorem": str, "scenario": str, "mode": str,
                                  "status": str, "verdict": str})
    missing = [c for c in VERDICT_COLUMNS if c not in df.columns]
    require(not missing, "verdicts.csv", str(path), f"must have columns {missing}")
    for c in ("mode",):
        df[c] = df[c].fillna("")
    return df
