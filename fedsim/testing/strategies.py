"""Hypothesis strategies of scenario-family points (:func:`points`).

A :class:`Point` is a family name and the parameters drawn for it (every other parameter
keeps its default); :func:`fedsim.testing.check_bound` builds and checks it.  Each parameter
of :func:`points` is given in the syntax of ``fedsim search --space``
(:func:`fedsim.validation.search_space.parse_space`):

* ``"lo..hi"`` -- integers (an ``int`` parameter) or floats in ``[lo, hi]``; they shrink
  towards ``lo``;
* ``"[a,b,c]"`` -- one of the values, shrinking towards the first;
* ``"v"`` -- a fixed value;

or as a hypothesis strategy (its values are passed as drawn: the family checks them when the
point is built), or as a plain Python value (fixed, checked at once).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Any

from hypothesis import strategies as st

from fedsim.errors import require
from fedsim.validation.families import Family, get_family
from fedsim.validation.search_space import Dim, parse_space

__all__ = ["Point", "points"]


@dataclass(frozen=True, kw_only=True)
class Point:
    """One point of a family: ``family`` (its name) and ``params`` (the drawn parameters;
    the others take the family's defaults)."""

    family: str
    params: dict[str, Any] = field(default_factory=dict)

    def full(self) -> dict[str, Any]:
        """Every parameter: the defaults updated by :attr:`params`, each value checked."""
        return get_family(self.family).complete(self.params)

    def build(self) -> Any:
        """The family's :class:`fedsim.validation.families.Instance` at this point."""
        return get_family(self.family).build(self.params)


def _dim_strategy(dim: Dim, family: Family) -> st.SearchStrategy:
    if dim.kind == "list":
        return st.sampled_from(dim.values)
    if dim.integer:
        return st.integers(int(dim.low), int(dim.high))
    p = family.param(dim.name)
    open_low = p.open_low and p.low is not None and dim.low <= p.low
    return st.floats(dim.low, dim.high, allow_nan=False, allow_infinity=False,
                     exclude_min=open_low)


def _strategy(name: str, spec: Any, family: Family) -> st.SearchStrategy:
    """The strategy of one parameter (module docstring)."""
    p = family.param(name)
    if isinstance(spec, st.SearchStrategy):
        return spec
    if isinstance(spec, str):
        (dim,) = parse_space(f"{name}={spec}", family)
        return _dim_strategy(dim, family)
    return st.just(p.coerce(spec))


def points(family: str | Family, **space: Any) -> st.SearchStrategy[Point]:
    """A strategy of :class:`Point` of ``family`` (a name or a Family); ``space`` maps
    parameter names to ``--space`` strings, strategies or values (module docstring).

    Unknown names raise :class:`fedsim.errors.ConfigError` at once (listing the family's
    parameters).  The points are not built: a point the family refuses (a ``ConfigError``
    from its builder, e.g. ``p_s = 1``) raises when checked.
    """
    fam = family if isinstance(family, Family) else get_family(family)
    require(isinstance(fam, Family), "family", family, "must be a family name or a Family")
    parts = {name: _strategy(name, spec, fam) for name, spec in space.items()}
    return st.fixed_dictionaries(parts).map(partial(_point, fam.name))


def _point(family: str, params: dict[str, Any]) -> Point:
    return Point(family=family, params=params)
