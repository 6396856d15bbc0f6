"""Public scenario families: named builders ``params -> Instance`` (issue 11, item 1).

A family maps a dict of parameters to an engine scenario, the theorem call (evaluated, with
every hypothesis the construction settles resolved), the measured quantity and its exact
oracle where one exists (else Monte Carlo).  Nothing private is needed::

    from fedsim.validation.families import get_family
    fam = get_family("theorem8-norm")
    inst = fam.build({"n": 10, "p_s": 0.4, "M": 50, "K": 12, "mode": "paper"})
    m = inst.measure()                 # Measurement(value, method='exact'|'mc', error, ...)
    ratio = m.value / inst.bound_value
    case = inst.case(replicates=400)   # -> validation.suites.run_cases: validate's verdicts

Built-in families (:data:`BUILTIN`): ``theorem8-norm``, ``theorem7-quad`` ([A]),
``theorem1-window``, ``theorem3-window``, ``theorem2-logistic`` ([P]).  Add one with
:func:`register_family`.
"""

from __future__ import annotations

from fedsim.validation.families.area import THEOREM7_QUAD, THEOREM8_NORM, norm_centres
from fedsim.validation.families.base import (
    Family,
    Instance,
    Measurement,
    Param,
    build_problem_from,
    constants_of,
    engine_scenario,
    event_probabilities,
    params_digest,
    poisson_delays,
    resolve_hypotheses,
)
from fedsim.validation.families.persafl import THEOREM1_WINDOW, THEOREM2_LOGISTIC, THEOREM3_WINDOW

from fedsim.errors import ConfigError, require

__all__ = ["Family", "Instance", "Measurement", "Param", "BUILTIN", "register_family",
           "unregister_family",
           "get_family", "families", "event_probabilities", "resolve_hypotheses",
           "engine_scenario", "build_problem_from", "constants_of", "params_digest",
           "poisson_delays", "norm_centres"]

#: the built-in families, in listing order
BUILTIN = (THEOREM8_NORM, THEOREM7_QUAD, THEOREM1_WINDOW, THEOREM3_WINDOW, THEOREM2_LOGISTIC)
_FAMILIES: dict[str, Family] = {f.name: f for f in BUILTIN}


def register_family(family: Family, *, replace: bool = False) -> Family:
    """Add ``family`` (a name already taken raises unless ``replace``)."""
    require(isinstance(family, Family), "family", family, "must be a Family")
    if family.name in _FAMILIES and not replace:
        raise ConfigError(f"family {family.name!r} is already registered, got "
                          f"name={family.name!r}")
    _FAMILIES[family.name] = family
    return family


def unregister_family(name: str) -> None:
    """Remove a family (tests and plug-in development)."""
    _FAMILIES.pop(name, None)


def get_family(name: str) -> Family:
    """The family called ``name`` (ConfigError listing the known ones otherwise)."""
    require(name in _FAMILIES, "family", name, f"must be one of {sorted(_FAMILIES)}")
    return _FAMILIES[name]


def families(theorem: str | None = None) -> list[Family]:
    """Every registered family (of ``theorem`` if given), in registration order."""
    return [f for f in _FAMILIES.values() if theorem is None or f.theorem == theorem]
