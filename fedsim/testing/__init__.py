"""``fedsim.testing``: property-based tests of convergence bounds, on hypothesis.

A property test of a bound is a scenario family plus a strategy of its points::

    from hypothesis import given
    from fedsim.testing import assert_bound_holds, fedsim_profile, points

    @fedsim_profile
    @given(points("theorem8-norm", n="1..3", M="1..60", K="1..30", mode="corrected"))
    def test_corrected_theorem8(point):
        assert_bound_holds(point)

* :func:`points` -- a strategy of :class:`Point` (a family name and the drawn parameters);
  each parameter takes ``fedsim search --space`` syntax (``"1..30"``, ``"[1,10,50]"``,
  ``"paper"``), a hypothesis strategy, or a plain value.
* :func:`check_bound` -- build the point, measure its quantity (the family's exact oracle,
  or engine Monte Carlo) and return the :class:`BoundCheck` verdict record, computed by
  :func:`fedsim.validation.compare.measured_verdict`: the comparison ``fedsim validate`` makes.
* :func:`assert_bound_holds` -- :func:`check_bound`, raising :class:`BoundViolated` (which
  carries the record) when the verdict is ``violated``.
* :data:`fedsim_profile` -- the hypothesis settings of the ``fedsim`` profile (derandomized,
  no example database, no deadline, one bug reported): with exact oracles the shrunk
  counterexample is the same on every run.  The pytest plugin
  (:mod:`fedsim.testing.pytest_plugin`, entry point ``pytest11``) registers it as
  ``--hypothesis-profile=fedsim`` and adds the ``fedsim`` marker.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names below load on first use (the pytest plugin imports this package)
    from fedsim.testing.check import (
        BoundCheck,
        BoundViolated,
        assert_bound_holds,
        check_bound,
    )
    from fedsim.testing.profile import PROFILE, fedsim_profile
    from fedsim.testing.strategies import Point, points

__all__ = ["points", "Point", "check_bound", "assert_bound_holds", "BoundCheck",
           "BoundViolated", "fedsim_profile", "PROFILE"]

_LAZY = {"points": "strategies", "Point": "strategies", "check_bound": "check",
         "assert_bound_holds": "check", "BoundCheck": "check", "BoundViolated": "check",
         "PROFILE": "profile", "fedsim_profile": "profile"}


def __getattr__(name: str) -> Any:
    """Load :data:`_LAZY`'s names on first use: importing the package (as pytest does for
    the plugin) costs nothing, and works without hypothesis installed."""
    if name in _LAZY:
        return getattr(importlib.import_module(f"fedsim.testing.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'fedsim.testing' has no attribute {name!r}")
