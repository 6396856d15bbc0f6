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
:func:`register_family`, or from an installed package through the ``fedsim.families``
entry-point group (:func:`load_family_plugins`, read on the first lookup).
"""

from __future__ import annotations

import dataclasses

from fedsim.validation.families.area import THEOREM7_QUAD, THEOREM8_NORM, norm_centres
from fedsim.validation.families.area_logistic import THEOREM8_LOGISTIC
from fedsim.validation.families.asypfl import ASYPFL1_PERIODS, ASYPFL1_QUAD, ASYPFL2_QUAD
from fedsim.validation.families.base import (
    Family,
    Instance,
    Measurement,
    Param,
    SimCheck,
    resolve_hypotheses,
)
from fedsim.validation.families.helpers import (
    build_problem_from,
    constants_of,
    engine_scenario,
    event_probabilities,
    params_digest,
    poisson_delays,
    required,
)
from fedsim.validation.families.mc import engine_mc
from fedsim.validation.families.perfedavg import PERFEDAVG_CX, PERFEDAVG_QUAD
from fedsim.validation.families.persafl import THEOREM1_WINDOW, THEOREM2_LOGISTIC, THEOREM3_WINDOW
from fedsim.validation.families.persafl_physical import THEOREM1_PHYSICAL
from fedsim.validation.families.schedules import THEOREM1_SCHEDULE

from fedsim.errors import ConfigError, require
from fedsim.plugins import checked_family_builder, load_group_once

__all__ = ["Family", "Instance", "Measurement", "Param", "SimCheck", "BUILTIN", "register_family",
           "unregister_family", "load_family_plugins", "ENTRY_POINT_GROUP",
           "get_family", "families", "event_probabilities", "resolve_hypotheses",
           "engine_scenario", "build_problem_from", "constants_of", "params_digest",
           "poisson_delays", "norm_centres", "engine_mc", "required"]

#: the built-in families, in listing order
BUILTIN = (THEOREM8_NORM, THEOREM7_QUAD, THEOREM1_WINDOW, THEOREM3_WINDOW, THEOREM2_LOGISTIC,
           THEOREM1_PHYSICAL,
           THEOREM8_LOGISTIC, PERFEDAVG_QUAD, PERFEDAVG_CX, ASYPFL1_QUAD, ASYPFL2_QUAD,
           ASYPFL1_PERIODS, THEOREM1_SCHEDULE)
_FAMILIES: dict[str, Family] = {f.name: f for f in BUILTIN}
#: the entry-point group through which installed packages add families
ENTRY_POINT_GROUP = "fedsim.families"


def _accept(name: str, obj: object) -> None:
    items = obj if isinstance(obj, (list, tuple)) else [obj]
    require(bool(items) and all(isinstance(f, Family) for f in items), f"entry point {name}",
            type(obj).__name__, "must name a Family or a list of them")
    for f in items:  # a plug-in's builders are checked on every call (fedsim.plugins)
        register_family(dataclasses.replace(
            f, builder=checked_family_builder(f.name, f.builder, Instance),
            curve=checked_family_builder(f.name, f.curve, Instance)), replace=True)


def load_family_plugins(*, force: bool = False) -> list[str]:
    """Load the ``fedsim.families`` entry points (once, or again with ``force``); a broken
    one is reported in one line and skipped (:func:`fedsim.plugins.load_group`)."""
    return load_group_once(ENTRY_POINT_GROUP, _accept, force=force)


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
    load_family_plugins()
    require(name in _FAMILIES, "family", name, f"must be one of {sorted(_FAMILIES)}")
    return _FAMILIES[name]


def families(theorem: str | None = None) -> list[Family]:
    """Every registered family (of ``theorem`` if given), in registration order."""
    load_family_plugins()
    return [f for f in _FAMILIES.values() if theorem is None or f.theorem == theorem]
