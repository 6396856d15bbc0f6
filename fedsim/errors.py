"""Exceptions raised by fedsim.

Every user-facing validation error is a :class:`ConfigError`, whose message
names the field, the offending value and the rule it broke, e.g.
``rate must be > 0, got rate=-1.0``.  Never use ``assert`` for user input.
"""

from __future__ import annotations

from typing import Any

__all__ = ["FedsimError", "ConfigError", "require", "check_finite"]


class FedsimError(Exception):
    """Base class of every error fedsim raises on purpose."""


class ConfigError(FedsimError, ValueError):
    """Bad user input: a field's value breaks a stated rule."""


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
