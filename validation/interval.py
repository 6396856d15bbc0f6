"""The Student-t interval of a sample's mean and the tightness ratio (the numbers a verdict
reads; :mod:`fedsim.validation.compare` re-exports them).

``mean +- t_{(1+level)/2, n-1} * sd / sqrt(n)`` with the unbiased (ddof=1) standard deviation,
at level :data:`CI_LEVEL` = 0.99 by default; non-finite values (NaN from a failed metric,
+-inf from a diverged run) are excluded and counted.  THEORY_SPEC 10.3 suggests a 1.96-sd
normal interval; the t interval at 99 % is more conservative, because R is small (tens) and
a suite makes many comparisons.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
from scipy import stats

from fedsim.errors import check_in_range

__all__ = ["CI_METHOD", "CI_LEVEL", "summarize", "mean_ci", "tightness"]

CI_METHOD = "Student-t"
CI_LEVEL = 0.99


def summarize(values: Iterable[float], level: float = CI_LEVEL) -> dict[str, float | int]:
    """Mean, Student-t CI, sd, sem and counts of one sample (non-finite values excluded).

    Returns ``{"mean", "ci_low", "ci_high", "sd", "sem", "n_ok", "n_nonfinite"}``.
    With ``n_ok < 2`` the interval is ``(-inf, +inf)`` (nothing can be concluded) and
    sd/sem are NaN; with ``n_ok == 0`` the mean is NaN.
    """
    check_in_range("level", level, 0.0, 1.0, closed=(False, False))
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


def tightness(bound: Any, mean: Any) -> Any:
    """``bound / mean``; NaN where mean <= 0 or either is NaN; +inf for an infinite bound.

    Scalars in, float out; arrays in, float64 array out.
    """
    b = np.asarray(bound, dtype=np.float64)
    m = np.asarray(mean, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out = np.where((m > 0) & np.isfinite(m) & ~np.isnan(b), b / m, np.nan)
    return float(out) if out.ndim == 0 else out
