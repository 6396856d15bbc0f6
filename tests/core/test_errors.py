"""Error types and the message format of fedsim/errors.py."""

import doctest

import numpy as np
import pytest

import fedsim.errors
from fedsim.errors import ConfigError, FedsimError, check_finite, require


def test_hierarchy():
    assert issubclass(ConfigError, FedsimError)
    assert issubclass(ConfigError, ValueError)
    assert issubclass(FedsimError, Exception)
    assert not issubclass(FedsimError, ValueError)


def test_require_passes_silently():
    assert require(True, "rate", 1.0, "must be > 0") is None


@pytest.mark.parametrize("field,value,rule,expected", [
    ("rate", -1.0, "must be > 0", "rate must be > 0, got rate=-1.0"),
    ("algorithm.buffer", 0, "must be >= 1",
     "algorithm.buffer must be >= 1, got algorithm.buffer=0"),
    ("kind", "gamma", "must be one of ['a', 'b']",
     "kind must be one of ['a', 'b'], got kind='gamma'"),
    ("x", None, "is required", "x is required, got x=None"),
])
def test_require_message_format(field, value, rule, expected):
    with pytest.raises(ConfigError) as info:
        require(False, field, value, rule)
    assert str(info.value) == expected


def test_require_is_catchable_as_value_error():
    with pytest.raises(ValueError):
        require(1 < 0, "n", 0, "must be >= 1")


def test_check_finite_accepts_finite():
    check_finite("w", np.array([0.0, -1e308, 1e308]))
    check_finite("w", 3.0)
    check_finite("w", [[1, 2], [3, 4]])
    check_finite("w", np.empty(0))


@pytest.mark.parametrize("arr,bad", [
    (np.array([1.0, np.nan]), "NaN"),
    (np.array([1.0, np.inf]), "inf"),
    (np.array([-np.inf]), "inf"),
    ([[1.0, np.inf], [np.nan, 0.0]], "NaN"),  # a NaN is reported first
    (float("nan"), "NaN"),
])
def test_check_finite_message(arr, bad):
    with pytest.raises(ConfigError) as info:
        check_finite("problem.A", arr)
    assert str(info.value) == f"problem.A must be finite, got a {bad} entry in problem.A"


def test_module_doctests():
    result = doctest.testmod(fedsim.errors)
    assert result.attempted >= 2 and result.failed == 0
