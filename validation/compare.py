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
* Verdict (issue 6): ``not_applicable`` if a hypothesis fails or the bound is not a
  certified upper bound (the status comes from theory: ``NOT_APPLICABLE``,
  ``ASYMPTOTIC_LEADING_TERMS``, ``RATE_SHAPE_ONLY``,
  ``PAPER_LITERAL_KNOWN_ERRATUM`` are never ``holds``); ``holds`` if the CI upper
  end is <= the bound; ``violated`` if the CI lower end is > the bound; otherwise
  ``inconclusive``; ``error`` (:func:`verdict_table`) when every replicate of the row
  raised, so nothing was measured.
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
    "write_verdicts",
    "read_verdicts",
]

CI_METHOD = "Student-t"
CI_LEVEL = 0.99
ORACLE_FAR = 1e-3
#: exactness tolerance of a zero-spread (deterministic) oracle comparison (relative)
EXACT_RTOL = 1e-9
#: rounding band of an exact row's exact-vs-bound comparison (relative to |bound|): the two
#: float64 evaluations (oracle and bound) agree to far better than this when they are equal
EXACT_BOUND_RTOL = 1e-9
VERDICTS = ("holds", "violated", "inconclusive", "not_applicable", "error")
VERDICT_COLUMNS = ["theorem", "scenario", "mode", "horizon", "mean", "ci_low", "ci_high",
                   "bound", "status", "verdict", "tightness", "slope", "exact"]
#: extra columns :func:`verdict_table` adds after VERDICT_COLUMNS
EXTRA_COLUMNS = ["expected_slope", "slope_stderr", "n_ok", "n_nonfinite", "sem", "oracle_z",
                 "oracle_pass", "ci_level"]
_KEYS = ["theorem", "scenario", "mode", "horizon"]


def _check_level(level: float) -> None:
    check_in_range("level", level, 0.0, 1.0, closed=(False, False))


def summarize(values: Iterable[float], level: float = CI_LEVEL) -> dict[str, float | int]:
    """Mean, Student-t CI, sd, sem and counts of one sample (non-finite values excluded).

    Returns ``{"mean", "ci_low", "ci_high", "sd", "sem", "n_ok", "n_nonfinite"}``.
    With ``n_ok < 2`` the interval is ``(-inf, +inf)`` (nothing can be concluded) and
    sd/sem are NaN; with ``n_ok == 0`` the mean is NaN.
    """
    _check_level(level)
    x = np.asarray(list(values) if not isinstance(values, np.ndarray) else values,
                   dtype=np.float64).ravel()
    ok = np.isfinite(x)
    x, n_bad = x[ok], int((~ok).sum())
    n = int(x.size)
    if n == 0:
        return dict(mean=math.nan, ci_low=-math.inf, ci_high=math.inf, sd=math.nan,
                    sem=math.nan, n_ok=0, n_nonfinite=n_bad)
    mean = float(np.mean(x))
    if n < 2:
        return dict(mean=mean, ci_low=-math.inf, ci_high=math.inf, sd=math.nan,
                    sem=math.nan, n_ok=n, n_nonfinite=n_bad)
    sd = float(np.std(x, ddof=1))
    sem = sd / math.sqrt(n)
    half = float(stats.t.ppf(0.5 + level / 2.0, n - 1)) * sem
    return dict(mean=mean, ci_low=mean - half, ci_high=mean + half, sd=sd, sem=sem,
                n_ok=n, n_nonfinite=n_bad)


def mean_ci(values: Iterable[float], level: float = CI_LEVEL) -> tuple[float, float, float, int]:
    """``(mean, lo, hi, n)``: Student-t ``level`` interval of the mean of the finite values.

    ``n`` counts the finite values used; NaN/inf are excluded (see :func:`summarize`
    for their count).  ``n < 2`` gives ``lo=-inf, hi=+inf``.
    """
    s = summarize(values, level)
    return s["mean"], s["ci_low"], s["ci_high"], int(s["n_ok"])


def verdict(ci_low: float, ci_high: float, bound: float, bound_is_certified: bool,
            hypotheses_hold: bool | None) -> str:
    """Verdict of one (scenario, horizon) comparison (issue 6; see module docstring).

    ``hypotheses_hold=None`` (some hypothesis cannot be checked) does not block a
    verdict: the caller decides whether an unknown hypothesis makes the bound
    uncertified.  A NaN bound or CI end gives ``inconclusive``.
    """
    if hypotheses_hold is False or not bound_is_certified:
        return "not_applicable"
    if any(math.isnan(float(v)) for v in (ci_low, ci_high, bound)):
        return "inconclusive"
    if ci_high <= bound:
        return "holds"
    if ci_low > bound:
        return "violated"
    return "inconclusive"


def exact_verdict(exact: float, bound: float, bound_is_certified: bool,
                  hypotheses_hold: bool | None) -> str:
    """Verdict of an exact row: the measured quantity is the exact value ``exact``.

    ``not_applicable`` as in :func:`verdict`; ``holds`` iff ``exact <= bound - EXACT_BOUND_RTOL
    |bound|``; ``violated`` iff ``exact > bound + EXACT_BOUND_RTOL |bound|``; otherwise
    (equal up to rounding, or a NaN) ``inconclusive``.  An infinite bound holds.
    """
    if hypotheses_hold is False or not bound_is_certified:
        return "not_applicable"
    x, b = float(exact), float(bound)
    if math.isnan(x) or math.isnan(b) or math.isinf(x):
        return "inconclusive"
    if b == math.inf:
        return "holds"
    if b == -math.inf:
        return "violated"
    band = EXACT_BOUND_RTOL * abs(b)
    if x <= b - band:
        return "holds"
    if x > b + band:
        return "violated"
    return "inconclusive"


def is_exact_row(df: pd.DataFrame) -> pd.Series:
    """Boolean mask of the exact rows of a verdict table (``n_ok == 0`` and ``sem == 0``)."""
    if "n_ok" not in df.columns or "sem" not in df.columns:
        return pd.Series(False, index=df.index)
    n_ok = pd.to_numeric(df["n_ok"], errors="coerce")
    sem = pd.to_numeric(df["sem"], errors="coerce")
    return (n_ok == 0) & (sem == 0)


def tightness(bound: Any, mean: Any) -> Any:
    """``bound / mean``; NaN where mean <= 0 or either is NaN; +inf for an infinite bound.

    Scalars in, float out; arrays in, float64 array out.
    """
    b = np.asarray(bound, dtype=np.float64)
    m = np.asarray(mean, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where((m > 0) & np.isfinite(m) & ~np.isnan(b), b / m, np.nan)
    return float(out) if out.ndim == 0 else out


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
    """The verdict of one measured quantity against its bound: the one comparison that
    :func:`verdict_table` (hence ``fedsim validate`` and the search's confirmation) and
    :mod:`fedsim.testing` make.

    Give either ``values`` (Monte-Carlo replicates: :func:`summarize`'s Student-t ``level``
    interval, then :func:`verdict`; a non-finite replicate turns ``holds`` into
    ``inconclusive``) or ``exact`` (an exact oracle value: :func:`exact_verdict` when
    ``exact_error`` is 0; an oracle with a rigorous error bound ``exact_error > 0`` gives the
    interval ``exact +- exact_error`` and :func:`verdict`).  ``certified``: the bound is a
    claimed upper bound (else ``not_applicable``).  Returns ``mean``, ``ci_low``,
    ``ci_high``, ``sem``, ``n_ok``, ``n_nonfinite``, ``verdict``, ``tightness`` (bound /
    mean) and ``ratio`` (mean / bound, > 1 when the measured value exceeds the bound).
    """
    require((values is None) != (exact is None), "values", values,
            "give exactly one of values (replicates) and exact (an oracle value)")
    b = _float(bound)
    if values is not None:
        s = summarize(values, level)
        v = verdict(s["ci_low"], s["ci_high"], b, certified, hypotheses_hold)
        if v == "holds" and s["n_nonfinite"] > 0:
            v = "inconclusive"
        out: dict[str, Any] = {k: s[k] for k in ("mean", "ci_low", "ci_high", "sem", "n_ok",
                                                 "n_nonfinite")}
    else:
        x, err = float(exact), float(exact_error)
        require(err >= 0.0, "exact_error", exact_error, "must be >= 0")
        if err == 0.0:
            v = exact_verdict(x, b, certified, hypotheses_hold)
        else:
            v = verdict(x - err, x + err, b, certified, hypotheses_hold)
        out = dict(mean=x, ci_low=x - err, ci_high=x + err, sem=0.0, n_ok=0, n_nonfinite=0)
    mean = float(out["mean"])
    ratio = mean / b if math.isfinite(mean) and math.isfinite(b) and b > 0 else math.nan
    out.update(verdict=v, tightness=tightness(b, mean), ratio=ratio)
    return out


def _float(x: Any) -> float:
    """float(x), with None (a missing value) as NaN."""
    return math.nan if x is None else float(x)


_NOT_CARRIED = ("bound_is_certified", "hypotheses_hold", "measured_exactly")


def _flag(x: Any) -> bool:
    """A True/False cell (None, NaN: False)."""
    return isinstance(x, (bool, np.bool_)) and bool(x)


def _exact_row(b: dict, key: tuple, exact: float, bound: float, hyp: bool | None
               ) -> dict[str, Any]:
    """One exact row of :func:`verdict_table` (module docstring: the measured value is the
    exact oracle value; no replicates, no CI, no oracle test)."""
    m = measured_verdict(bound=bound, certified=bool(b["bound_is_certified"]),
                         hypotheses_hold=hyp, exact=exact)
    row = dict(zip(_KEYS, key, strict=True))
    row.update(mean=m["mean"], ci_low=m["ci_low"], ci_high=m["ci_high"], bound=bound,
               status=str(getattr(b["status"], "value", b["status"])),
               verdict=m["verdict"], tightness=m["tightness"], slope=math.nan, exact=exact,
               expected_slope=_float(b.get("expected_slope")), slope_stderr=math.nan,
               n_ok=0, n_nonfinite=0, sem=0.0, oracle_z=math.nan, oracle_pass=None,
               ci_level=math.nan)
    for k, val in b.items():
        if k not in row and k not in _NOT_CARRIED:
            row[k] = val
    return row


def verdict_table(samples: pd.DataFrame, bounds: pd.DataFrame,
                  level: float = CI_LEVEL, far: float = ORACLE_FAR) -> pd.DataFrame:
    """One verdict row per (theorem, scenario, mode, horizon).

    ``samples``: one row per replicate and horizon with columns theorem, scenario,
    mode, horizon, value (the measured quantity of that replicate; NaN/inf allowed).
    ``bounds``: one row per (theorem, scenario, mode, horizon) with columns ``bound``,
    ``status``, ``bound_is_certified`` (bool), ``hypotheses_hold`` (True/False/None) and
    optionally ``exact`` (oracle value, NaN if none), ``expected_slope`` and
    ``measured_exactly`` (True: an exact row, its measured value is ``exact``, no samples;
    module docstring) and ``n_failed`` (replicates that raised); any other column is carried
    through.  Horizons without samples get n_ok = 0: verdict ``error`` when replicates
    failed (``n_failed > 0``: nothing was measured), else ``inconclusive``.
    The slope is fitted per (theorem, scenario, mode) over its horizons.
    Returns VERDICT_COLUMNS + EXTRA_COLUMNS + carried columns.
    """
    for col in _KEYS + ["value"]:
        require(col in samples.columns, "samples", list(samples.columns), f"must have {col!r}")
    for col in _KEYS + ["bound", "status", "bound_is_certified", "hypotheses_hold"]:
        require(col in bounds.columns, "bounds", list(bounds.columns), f"must have {col!r}")
    require(not bounds.duplicated(_KEYS).any(), "bounds", "duplicated keys",
            "must have one row per (theorem, scenario, mode, horizon)")
    groups = {k: g["value"].to_numpy(np.float64)
              for k, g in samples.groupby(_KEYS, sort=False)}
    rows: list[dict[str, Any]] = []
    for b in bounds.to_dict("records"):
        key = tuple(b[k] for k in _KEYS)
        bound = _float(b["bound"])
        hyp = b["hypotheses_hold"]
        hyp = None if hyp is None or (isinstance(hyp, float) and math.isnan(hyp)) else bool(hyp)
        exact = _float(b.get("exact"))
        if _flag(b.get("measured_exactly")):
            require(key not in groups, "samples", key, "must be empty for an exact row")
            rows.append(_exact_row(b, key, exact, bound, hyp))
            continue
        s = measured_verdict(bound=bound, certified=bool(b["bound_is_certified"]),
                             hypotheses_hold=hyp, values=groups.get(key, np.empty(0)),
                             level=level)
        v = s["verdict"]
        if s["n_ok"] == 0 and s["n_nonfinite"] == 0 and _float(b.get("n_failed")) > 0:
            v = "error"   # every replicate raised: nothing was measured (never a silent NaN)
        z, passed = (math.nan, False)
        if math.isfinite(exact):
            z, passed = oracle_test(s["mean"], s["sem"], exact, far,
                                    n=s["n_ok"] if s["n_ok"] >= 2 else None)
        row = {k: b[k] for k in _KEYS}
        row.update(mean=s["mean"], ci_low=s["ci_low"], ci_high=s["ci_high"], bound=bound,
                   status=str(getattr(b["status"], "value", b["status"])), verdict=v,
                   tightness=s["tightness"], slope=math.nan, exact=exact,
                   expected_slope=_float(b.get("expected_slope")),
                   slope_stderr=math.nan, n_ok=s["n_ok"], n_nonfinite=s["n_nonfinite"],
                   sem=s["sem"], oracle_z=z,
                   oracle_pass=passed if math.isfinite(exact) else None, ci_level=level)
        for k, val in b.items():
            if k not in row and k not in _NOT_CARRIED:
                row[k] = val
        rows.append(row)
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
