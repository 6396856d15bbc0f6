"""A theorem's verdict case from family points: the one place that builds the run sets and rows.

A suite describes a scenario of a theorem as a family, a list of points (typically one per
horizon and mode) and a control kind; :func:`family_case` builds every point and turns the
instances into one :class:`fedsim.validation.scenarios.Case`: one
:class:`fedsim.validation.cases.RunSpec` per distinct engine scenario, one
:class:`fedsim.validation.cases.Row` per point.  Instances that differ only in the
mode of the bound (e.g. [P] Theorem 3 ``corrected`` and ``paper_literal``) share one run set.
:meth:`fedsim.validation.families.Instance.case` (search confirmations, family rows of the
suites) is :func:`fedsim.validation.families.base.instances_case` of a single instance, the
one function that creates run sets and rows from instances.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from fedsim.validation.cases import Case, cached
from fedsim.validation.families.base import Family, Instance, instances_case

__all__ = ["family_case", "cached_exact"]


def cached_exact(family: Family, point: Mapping[str, Any], inst: Instance, *,
                 max_states: int = 200_000) -> float:
    """The instance's exact oracle value (NaN without an oracle, or when it gives up within
    ``max_states`` or reports a non-zero error bound), kept in the suites' oracle cache
    (:func:`fedsim.validation.cases.cached`) under the family name and point."""
    if inst.exact is None:
        return math.nan

    def compute() -> float:
        m = inst.exact(max_states)
        return m.value if m is not None and m.error == 0.0 else math.nan

    args = (family.name, sorted((k, repr(v)) for k, v in point.items()), max_states)
    return float(cached("family-exact", args, compute))


def family_case(family: Family, *, name: str, points: Sequence[Mapping[str, Any]],
                replicates: int, control: str = "", expected_verdict: str = "",
                title: str = "", x_label: str = "horizon", expected_slope: float = math.nan,
                exact: bool = True, notes: Sequence[str] = ()) -> Case:
    """The suite scenario ``name`` of ``family``'s theorem: the family built at each of
    ``points`` (typically one per horizon and mode), as one :class:`Case`
    (:func:`fedsim.validation.families.base.instances_case`).  ``exact``: give each row the
    family's exact oracle value (cached, :func:`cached_exact`);
    ``control``/``expected_verdict``: a control scenario's kind (e.g.
    ``"out_of_regime:step10x"``) and required verdict; ``notes`` are added to the instances'
    own."""
    insts = [family.build(dict(p)) for p in points]
    exacts = [cached_exact(family, family.complete(dict(p)), i) if exact else math.nan
              for p, i in zip(points, insts, strict=True)]
    case = instances_case(insts, name=name, replicates=replicates, exacts=exacts,
                          control=control, expected_verdict=expected_verdict, title=title,
                          x_label=x_label, expected_slope=expected_slope, family=family.name)
    case.notes += [n for n in notes if n not in case.notes]
    return case
