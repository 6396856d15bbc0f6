"""The intervals behind a paper claim: paired (common random numbers), Welch, one-sample.

The paper suite runs every arm of an experiment with the same replicate seeds: replicate
``r`` of two arms draws its delays and its mini-batches from the same per-client streams
(:mod:`fedsim.rng`, keyed by ``(scenario seed, replicate)``), so the pairs
``(a_r, b_r)`` are independent across ``r`` and the differences ``d_r = a_r - f b_r`` are
an i.i.d. sample whatever the correlation inside a pair.  The 99% interval of the mean
difference is then the one-sample Student-t interval on ``d`` (:func:`paired_ci`): valid
without assuming equal variances or independent arms, and narrower than Welch's
(:func:`diff_ci`, kept for unpaired samples) as soon as the arms are positively
correlated.

Times to a target are capped at the horizon (right-censored).  A capped value
under-states the true time, so the measured difference ``a - f b`` under-states the true
one when an ``a`` is censored and over-states it when a ``b`` is censored (``f > 0``).
:func:`claim_status` therefore accepts an interval below 0 only when no ``a`` in the
sample was censored and an interval above 0 only when no ``b`` was (the other conclusion
stays valid: it is conservative).
"""

from __future__ import annotations

import math

import numpy as np
from fedsim.validation.interval import CI_LEVEL
from fedsim.validation.verdict import Evidence, Target, judge
from scipy import stats as st

__all__ = ["diff_ci", "paired_ci", "one_sample_ci", "claim_status", "CLAIM_STATUS"]


def one_sample_ci(x: np.ndarray, level: float = CI_LEVEL) -> tuple[float, float, float]:
    """``(mean, lo, hi)``: the Student-t ``level`` interval of the mean of the finite
    values of ``x`` (fewer than two: an infinite interval; zero spread: a point)."""
    x = np.asarray(x, dtype=np.float64)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return math.nan, -math.inf, math.inf
    m = float(x.mean())
    if x.size < 2:
        return m, -math.inf, math.inf
    se = float(x.std(ddof=1)) / math.sqrt(x.size)
    if se == 0.0:
        return m, m, m
    half = float(st.t.ppf(0.5 + level / 2.0, x.size - 1)) * se
    return m, m - half, m + half


def paired_ci(a: np.ndarray, b: np.ndarray, factor: float = 1.0,
              level: float = CI_LEVEL) -> tuple[float, float, float, int]:
    """``(mean d, lo, hi, pairs)`` for ``d_r = a_r - factor b_r`` over the replicates where
    both values are finite (module docstring); ``a`` and ``b`` are indexed by replicate."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"paired samples need one value per replicate on both sides, got "
                         f"shapes {a.shape} and {b.shape}")
    ok = np.isfinite(a) & np.isfinite(b)
    d, lo, hi = one_sample_ci(a[ok] - float(factor) * b[ok], level)
    return d, lo, hi, int(ok.sum())


def diff_ci(a: np.ndarray, b: np.ndarray, level: float = CI_LEVEL) -> tuple[float, float, float]:
    """``(mean(a) - mean(b), lo, hi)``: Welch's ``level`` interval for two independent
    samples (non-finite values dropped; fewer than two values on a side gives an infinite
    interval)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    a = a[np.isfinite(a)]
    b = b[np.isfinite(b)]
    if a.size < 2 or b.size < 2:
        d = float(np.mean(a) - np.mean(b)) if a.size and b.size else math.nan
        return d, -math.inf, math.inf
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    d = float(a.mean() - b.mean())
    se = math.sqrt(va + vb)
    if se == 0.0:
        return d, d, d
    dof = (va + vb) ** 2 / (va ** 2 / (a.size - 1) + vb ** 2 / (b.size - 1))
    half = float(st.t.ppf(0.5 + level / 2.0, dof)) * se
    return d, d - half, d + half


#: a paper claim's status for each verdict of :func:`fedsim.validation.verdict.judge`
CLAIM_STATUS = {"holds": "holds", "violated": "reversed", "inconclusive": "unresolved"}


def claim_status(rel: str, lo: float, hi: float, *, a_censored: bool = False,
                 b_censored: bool = False) -> str:
    """``holds`` / ``reversed`` / ``unresolved`` for the claim ``difference <rel> 0`` given
    its interval ``[lo, hi]`` (module docstring for the censoring rule): the verdict of
    :func:`fedsim.validation.verdict.judge`, a censored ``a`` leaving the interval open
    above, a censored ``b`` open below."""
    if rel not in ("<", ">"):
        raise ValueError(f"rel must be '<' or '>', got {rel!r}")
    target = Target(bound=0.0, status="paper claim", claimed=True, relation=rel)
    ev = Evidence(kind="paired", value=math.nan, low=float(lo), high=float(hi),
                  open_above="an a-value is censored at the horizon" if a_censored else "",
                  open_below="a b-value is censored at the horizon" if b_censored else "")
    return CLAIM_STATUS[judge(target, ev).verdict]
