"""A theorem's verdict case from a family: the one place that builds a suite's run sets and rows.

A suite row is a family, a point, its horizons, the modes of the bound it tests and a control
kind; :func:`family_case` builds the family at the point for every horizon and mode and turns
the instances into one :class:`fedsim.validation.cases.Case`
(:func:`fedsim.validation.families.base.instances_case`): one
:class:`fedsim.validation.cases.RunSpec` per distinct engine scenario, one
:class:`fedsim.validation.cases.Row` per (mode, horizon).  A family with a curve builder
(:attr:`fedsim.validation.families.base.Family.curve`: its schedule does not depend on the
horizon) gives one run read at every horizon; instances that differ only in the mode of the
bound (e.g. [P] Theorem 3 ``corrected`` and ``paper_literal``) share one run set.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from fedsim.validation.cases import Case, cached
from fedsim.validation.families.base import Family, Instance, instances_case

from fedsim.errors import require

__all__ = ["family_case", "cached_exact", "family_instances"]


def cached_exact(family: Family, point: Mapping[str, Any], inst: Instance, *,
                 max_states: int = 200_000) -> list[float]:
    """The instance's exact oracle values, one per :attr:`Instance.curve_horizons` (NaN
    without an oracle, or when it gives up within ``max_states`` or reports a non-zero error
    bound), kept in the suites' oracle cache (:func:`fedsim.validation.cases.cached`) under
    the family name, point and horizons."""
    hs = inst.curve_horizons
    if inst.exact_curve is None and inst.exact is None:
        return [math.nan] * len(hs)

    def compute() -> list[float]:
        if inst.exact_curve is not None:
            return [float(v) for v in inst.exact_curve()]
        m = inst.exact(max_states)
        return [m.value if m is not None and m.error == 0.0 else math.nan]

    args = (family.name, sorted((k, repr(v)) for k, v in point.items()), list(hs), max_states)
    return [float(v) for v in cached("family-exact", args, compute)]


def family_instances(family: Family, point: Mapping[str, Any], horizons: Sequence[int],
                     modes: Sequence[str] = ()) -> list[Instance]:
    """``family`` at ``point`` for every horizon (its :attr:`Family.horizon` parameter) and
    mode (its ``mode`` parameter; ``()``: the point's): one curve instance per mode when the
    family has a curve builder, else one instance per (horizon, mode), horizon first."""
    require(bool(family.horizon), "family", family.name, "names no horizon parameter")
    hs = [int(h) for h in horizons]
    require(bool(hs), "horizons", hs, "must hold at least one horizon")
    ms: list[dict[str, Any]] = [{"mode": m} for m in modes] or [{}]
    if family.curve is not None:
        return [family.build_curve({**point, **m}, hs) for m in ms]
    return [family.build({**point, family.horizon: h, **m}) for h in hs for m in ms]


def family_case(family: Family, *, name: str, point: Mapping[str, Any],
                horizons: Sequence[int], modes: Sequence[str] = (), replicates: int,
                control: str = "", expected_verdict: str | Mapping[str, str] = "",
                title: str = "", x_label: str = "horizon", expected_slope: float = math.nan,
                exact: bool = True, notes: Sequence[str] = (), max_states: int = 200_000
                ) -> Case:
    """The suite scenario ``name``: ``family`` at ``point`` for ``horizons`` and ``modes``
    (:func:`family_instances`) as one :class:`Case`.  ``exact``: give each row the family's
    exact oracle value (cached, :func:`cached_exact`, within ``max_states``);
    ``control``/``expected_verdict``: a control scenario's kind (e.g.
    ``"out_of_regime:step10x"``) and required verdict (one, or one per mode); ``notes`` are
    added to the instances' own."""
    insts = family_instances(family, point, horizons, modes)
    exacts = [cached_exact(family, i.params, i, max_states=max_states) if exact else math.nan
              for i in insts]
    case = instances_case(insts, name=name, replicates=replicates, exacts=exacts,
                          control=control, expected_verdict=expected_verdict, title=title,
                          x_label=x_label, expected_slope=expected_slope, family=family.name)
    case.notes += [n for n in notes if n not in case.notes]
    return case
