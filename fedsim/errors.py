"""Exceptions raised by fedsim.

Every user-facing validation error is a :class:`ConfigError`, whose message
names the field, the offending value and the rule it broke, e.g.
``rate must be > 0, got rate=-1.0``.  Never use ``assert`` for user input.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

__all__ = [
    "FedsimError", "ConfigError", "require", "check_finite", "check_integer", "check_number",
    "check_positive", "check_probability", "check_in_range", "check_choice",
    "NonFiniteTimeError", "check_sim_time",
]


class FedsimError(Exception):
    """Base class of every error fedsim raises on purpose."""


class ConfigError(FedsimError, ValueError):
    """Bad user input: a field's value breaks a stated rule."""


class NonFiniteTimeError(ConfigError):
    """A run's simulated time overflowed float64: its delays cannot be added up."""


def check_sim_time(sim_time: float, steps_done: int) -> None:
    """Raise :class:`NonFiniteTimeError` unless the simulated time of a finished run is
    finite (a delay with a rate near 1e-308 makes it ``inf``; every time-based quantity
    of the run is then meaningless).  ``fedsim run`` (exit 2), validate's and the paper
    suite's records (an ``error`` record with this reason) and search's points (a
    ``REFUSED`` row with this reason) all go through it."""
    if not math.isfinite(float(sim_time)):
        raise NonFiniteTimeError(
            f"simulated time overflowed float64 (sim_time = {float(sim_time)}) after "
            f"{int(steps_done)} steps: the delays are too long to add up (e.g. a rate near "
            "1e-308); rescale the delays")


def require(cond: bool, field: str, value: Any, rule: str) -> None:
    """Raise ``ConfigError("<field> <rule>, got <field>=<value>")`` unless ``cond``.

    >>> require(1.0 > 0, "rate", 1.0, "must be > 0")
    >>> require(-1.0 > 0, "rate", -1.0, "must be > 0")
    Traceback (most recent call last):
    ...
    fedsim.errors.ConfigError: rate must be > 0, got rate=-1.0
    """
    if not cond:
        raise ConfigError(f"{field} {rule}, got {field}={value!r}")


def check_finite(field: str, arr: Any) -> None:
    """Raise ConfigError if ``arr`` holds a NaN or an infinity."""
    import numpy as np

    a = np.asarray(arr, dtype=np.float64)
    if not np.all(np.isfinite(a)):
        bad = "NaN" if np.isnan(a).any() else "inf"
        raise ConfigError(f"{field} must be finite, got a {bad} entry in {field}")


# ------------------------------------------------------------------------------------------
# The one set of validators.  Every module checks user-facing numbers with these, so a rule
# means the same everywhere: types are checked before any conversion (a bool, a string or a
# list is never a number; 2.0 is not an integer), NaN is never accepted, and every failure is a
# ConfigError naming the field, the value and the rule.
# ------------------------------------------------------------------------------------------
def _is_integer(value: Any) -> bool:
    import numpy as np

    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _is_real(value: Any) -> bool:
    import numpy as np

    return (isinstance(value, (int, float, np.integer, np.floating))
            and not isinstance(value, (bool, np.bool_)))


def check_integer(field: str, value: Any, *, low: int | None = None,
                  high: int | None = None) -> int:
    """``value`` as an ``int``: an integer type (not bool, not 2.0), ``low <= value <= high``.

    >>> check_integer("n", 3, low=1)
    3
    >>> check_integer("n", 2.0, low=1)
    Traceback (most recent call last):
    ...
    fedsim.errors.ConfigError: n must be an integer >= 1, got n=2.0
    """
    if low is not None and high is not None:
        rule = f"must be an integer in [{low}, {high}]"
    elif low is not None:
        rule = f"must be an integer >= {low}"
    elif high is not None:
        rule = f"must be an integer <= {high}"
    else:
        rule = "must be an integer"
    ok = _is_integer(value)
    ok = ok and (low is None or value >= low) and (high is None or value <= high)
    require(ok, field, value, rule)
    return int(value)


def check_number(field: str, value: Any, *, low: float | None = None,
                 high: float | None = None, strict: bool = False,
                 allow_inf: bool = False) -> float:
    """``value`` as a ``float``: a real number (not bool/str), not NaN, finite unless ``allow_inf``.

    ``low``/``high`` are inclusive bounds, exclusive when ``strict``.

    >>> check_number("eta", 0.5, low=0, strict=True)
    0.5
    >>> check_number("eta", "0.5")
    Traceback (most recent call last):
    ...
    fedsim.errors.ConfigError: eta must be a number, got eta='0.5'
    """
    require(_is_real(value), field, value, "must be a number")
    v = float(value)
    require(not math.isnan(v), field, value, "must not be NaN")
    require(allow_inf or math.isfinite(v), field, value, "must be finite")
    op_lo, op_hi = (">", "<") if strict else (">=", "<=")
    if low is not None:
        require(v > low if strict else v >= low, field, value, f"must be {op_lo} {low:g}")
    if high is not None:
        require(v < high if strict else v <= high, field, value, f"must be {op_hi} {high:g}")
    return v


def check_positive(field: str, value: Any, *, allow_inf: bool = False) -> float:
    """A real number ``> 0`` (finite unless ``allow_inf``).

    >>> check_positive("rate", -1.0)
    Traceback (most recent call last):
    ...
    fedsim.errors.ConfigError: rate must be > 0, got rate=-1.0
    """
    return check_number(field, value, low=0.0, strict=True, allow_inf=allow_inf)


def check_probability(field: str, value: Any, *, allow_zero: bool = True,
                      allow_one: bool = True) -> float:
    """A probability: a real number in [0, 1] (ends excluded on request).

    >>> check_probability("p_s", 1.5)
    Traceback (most recent call last):
    ...
    fedsim.errors.ConfigError: p_s must be a probability in [0, 1], got p_s=1.5
    """
    lo, hi = ("[" if allow_zero else "("), ("]" if allow_one else ")")
    rule = f"must be a probability in {lo}0, 1{hi}"
    require(_is_real(value), field, value, rule)
    v = float(value)
    ok = (v >= 0.0 if allow_zero else v > 0.0) and (v <= 1.0 if allow_one else v < 1.0)
    require(ok, field, value, rule)
    return v


def check_in_range(field: str, value: Any, low: float, high: float, *,
                   closed: tuple[bool, bool] = (True, True)) -> float:
    """A real number in the interval from ``low`` to ``high`` (``closed`` says which ends count).

    >>> check_in_range("beta", 2.0, 0.0, 1.0, closed=(False, True))
    Traceback (most recent call last):
    ...
    fedsim.errors.ConfigError: beta must be in (0, 1], got beta=2.0
    """
    lo, hi = ("[" if closed[0] else "("), ("]" if closed[1] else ")")
    rule = f"must be in {lo}{low:g}, {high:g}{hi}"
    require(_is_real(value), field, value, rule)
    v = float(value)
    ok = (v >= low if closed[0] else v > low) and (v <= high if closed[1] else v < high)
    require(ok, field, value, rule)
    return v


def check_choice(field: str, value: Any, choices: Iterable[str]) -> str:
    """One of a fixed set of strings.

    >>> check_choice("kind", "cubic", ("quadratic", "logistic"))
    Traceback (most recent call last):
    ...
    fedsim.errors.ConfigError: kind must be one of logistic, quadratic, got kind='cubic'
    """
    allowed = tuple(choices)
    require(isinstance(value, str) and value in allowed, field, value,
            f"must be one of {', '.join(sorted(allowed))}")
    return value
