"""Input checks shared by the [A] evaluators, on top of :mod:`fedsim.errors`' validators.

The event law of H7.3 (``p_i > 0``, ``p_s > 0``, ``sum(p) + p_s = 1``, THEORY_SPEC 6.a) and
the horizon arrays ``K`` (vectorised evaluation) are checked here once for Theorems 7 and 8.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fedsim.errors import ConfigError, check_integer, check_positive, require

__all__ = ["count_at_least", "probabilities", "horizons", "as_output"]


def count_at_least(name: str, x: Any, lo: int) -> int:
    """An integer (2.0 is not one) ``>= lo``: ``"<name> must be >= <lo>, got ..."``."""
    v = check_integer(name, x)
    require(v >= lo, name, x, f"must be >= {lo}")
    return v


def probabilities(p: Any, p_s: Any) -> tuple[np.ndarray, float]:
    """Validate the event probabilities of H7.3: all > 0 and ``sum(p) + p_s == 1`` (tol 1e-12)."""
    try:
        arr = np.asarray(p, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"p must be an array of probabilities, got p={p!r}") from exc
    require(arr.ndim == 1 and arr.size >= 1, "p", p, "must be a non-empty 1-d array")
    require(bool(np.all(np.isfinite(arr)) and np.all(arr > 0)), "p", p, "must have entries > 0")
    ps = check_positive("p_s", p_s)
    total = float(np.sum(arr)) + ps
    require(
        abs(total - 1.0) <= 1e-12,
        "p",
        p,
        f"together with p_s must sum to 1 (tol 1e-12; sum(p)+p_s={total!r})",
    )
    return arr, ps


def horizons(K: Any, lo: int) -> tuple[np.ndarray, bool]:
    """K as an int64 array (and whether it was a scalar); entries integer and >= ``lo``."""
    scalar = np.ndim(K) == 0
    try:
        arr = np.atleast_1d(np.asarray(K))
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"K must be an integer or an array of integers, got K={K!r}") from exc
    require(arr.size >= 1, "K", K, "must not be empty")
    if arr.dtype.kind == "f":
        require(
            bool(np.all(np.isfinite(arr)) and np.all(arr == np.floor(arr))),
            "K",
            K,
            "must hold integers",
        )
    else:
        require(arr.dtype.kind in "iu", "K", K, "must hold integers")
    out = arr.astype(np.int64)
    require(bool(np.all(out >= lo)), "K", K, f"must be >= {lo}")
    return out, scalar


def as_output(x: np.ndarray, scalar: bool) -> float | np.ndarray:
    """A float for a scalar horizon, a float64 array for an array of horizons."""
    return float(x[0]) if scalar else np.asarray(x, dtype=np.float64)
