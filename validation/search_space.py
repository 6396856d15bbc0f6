"""The search space of ``fedsim search``: parsing ``--space`` and the coarse grid (issue 11).

Syntax: comma-separated ``name=spec`` items, ``spec`` one of

* ``lo..hi``  -- a range: integers if the parameter is an ``int`` (``K=2..200``), else reals
  (``p_s=0.1..0.9``);
* ``[a,b,c]`` -- a list of values, searched as categories (``M=[1,10,50,1000]``,
  ``mode=[paper,corrected]``);
* ``v``       -- a fixed value (``mode=corrected``).

:func:`coarse_grid` spreads about ``size`` points over the ranges (each range gets the same
number of levels; an integer range with ``hi/lo >= 8`` is spaced geometrically, since the
theorems' quantities vary like powers of n, M, K) times every combination of the lists.
"""

from __future__ import annotations

import itertools
import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
from fedsim.validation.families import Family

from fedsim.errors import ConfigError, require

__all__ = ["Dim", "parse_space", "coarse_grid", "levels"]


@dataclass(frozen=True)
class Dim:
    """One searched parameter: ``kind`` ``range`` (``low``, ``high``, ``integer``) or ``list``."""

    name: str
    kind: str
    low: float = math.nan
    high: float = math.nan
    integer: bool = False
    values: tuple[Any, ...] = ()


def _split(text: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return [s.strip() for s in out if s.strip()]


def parse_space(text: str, family: Family) -> list[Dim]:
    """The dimensions of ``text`` (see the module docstring), checked against ``family``."""
    dims: list[Dim] = []
    for item in _split(text):
        require("=" in item, "space", item, "must be name=lo..hi, name=[a,b] or name=value")
        name, spec = (s.strip() for s in item.split("=", 1))
        p = family.param(name)
        if spec.startswith("["):
            require(spec.endswith("]"), "space", item, "a list must end with ']'")
            vals = tuple(p.coerce(v.strip()) for v in spec[1:-1].split(",") if v.strip())
            require(len(vals) >= 1, "space", item, "a list needs at least one value")
            dims.append(Dim(name, "list", values=vals))
        elif ".." in spec and p.kind in ("int", "float"):
            lo_s, hi_s = spec.split("..", 1)
            lo, hi = p.coerce(lo_s), p.coerce(hi_s)
            require(hi >= lo, "space", item, "needs lo <= hi")
            dims.append(Dim(name, "range", float(lo), float(hi), p.kind == "int"))
        else:
            dims.append(Dim(name, "list", values=(p.coerce(spec),)))
    names = [d.name for d in dims]
    require(len(set(names)) == len(names), "space", text, "names a parameter twice")
    if not dims:
        raise ConfigError(f"space must name at least one parameter, got space={text!r}")
    return dims


def levels(dim: Dim, k: int) -> list[Any]:
    """``k`` (or fewer, for short integer ranges) levels of a range dimension."""
    if dim.kind == "list":
        return list(dim.values)
    if dim.low == dim.high or k <= 1:
        return [int(dim.low) if dim.integer else dim.low]
    if dim.integer:
        if dim.low >= 1 and dim.high / dim.low >= 8:
            raw = np.geomspace(dim.low, dim.high, k)
        else:
            raw = np.linspace(dim.low, dim.high, k)
        return sorted({int(round(v)) for v in raw})
    return [float(v) for v in np.linspace(dim.low, dim.high, k)]


def coarse_grid(dims: list[Dim], size: int) -> list[dict[str, Any]]:
    """About ``size`` points: every list combination times equal levels per range."""
    n_list = math.prod(len(d.values) for d in dims if d.kind == "list")
    ranges = [d for d in dims if d.kind == "range"]
    k = 1
    if ranges:
        k = max(2, int(math.floor((max(size, 1) / n_list) ** (1.0 / len(ranges)) + 1e-9)))
    axes = [levels(d, k) for d in dims]
    return [dict(zip([d.name for d in dims], combo, strict=True))
            for combo in itertools.product(*axes)]


def parse_budget(text: str) -> float:
    """Seconds in ``'90s'``, ``'10m'``, ``'1.5h'`` or a bare number of seconds."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([smh]?)\s*", str(text))
    require(m is not None, "budget", text, "must look like 90s, 10m or 1h")
    return float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]


__all__ += ["parse_budget"]
