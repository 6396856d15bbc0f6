"""What a run directory holds (:class:`Run`) and the deterministic page plan of the report.

:func:`fedsim.validation.report.expected_pages` counts the pages
:func:`fedsim.validation.report.build_report` will write without drawing anything (see the
package docstring for the plan).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from fedsim.validation.compare import read_verdicts
from fedsim.validation.report.layout import SMALL
from matplotlib.figure import Figure

from fedsim.errors import FedsimError
from fedsim.worstcase.report import worst_case_theorems

__all__ = ["Run", "load_run", "page_plan", "draw_footer", "SUMMARY_ROWS",
           "PANELS_PER_PAGE", "REPR_PER_PAGE", "unique"]


SUMMARY_ROWS = 10
PANELS_PER_PAGE = 6
REPR_PER_PAGE = 3


@dataclass
class Run:
    """What a run directory holds, in report order."""

    run_dir: Path
    verdicts: pd.DataFrame
    meta: dict[tuple[str, str], dict]
    theorems: list[str] = field(default_factory=list)
    scenarios: dict[str, list[str]] = field(default_factory=dict)
    groups: dict[str, list[tuple[str, str]]] = field(default_factory=dict)


def unique(seq: Sequence[Any]) -> list[Any]:
    """The distinct items of ``seq`` in first-seen order."""
    return list(dict.fromkeys(seq))


def load_run(run_dir: str | os.PathLike) -> Run:
    """Read verdicts.csv and meta/*.json and fix the order of theorems and scenarios."""
    run_dir = Path(run_dir)
    vpath = run_dir / "verdicts.csv"
    if not vpath.is_file():
        raise FedsimError(f"no verdicts.csv in run directory {run_dir}")
    v = read_verdicts(vpath)
    meta: dict[tuple[str, str], dict] = {}
    for p in sorted((run_dir / "meta").glob("*.json")):
        try:
            m = json.loads(p.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise FedsimError(f"meta file {p} is not valid JSON: {exc}") from exc
        if not isinstance(m, dict) or "theorem" not in m or "scenario" not in m:
            raise FedsimError(f"meta file {p} must be an object with theorem and scenario")
        meta[(str(m["theorem"]), str(m["scenario"]))] = m
    run = Run(run_dir, v, meta)
    run.theorems = unique(list(v["theorem"]) + [k[0] for k in meta])
    for th in run.theorems:
        sub = v[v["theorem"] == th]
        run.scenarios[th] = unique(list(sub["scenario"]) + [k[1] for k in meta if k[0] == th])
        run.groups[th] = unique(zip(sub["scenario"], sub["mode"], strict=True))
    return run


def page_plan(run: Run, details_parts: Callable[[Run, str, str], int]
              ) -> list[tuple[str, Any]]:
    """The page list: (kind, argument) in output order; ``details_parts(run, theorem,
    scenario)`` is how many pages a scenario's details take (the details module's count)."""
    n_groups = sum(len(g) for g in run.groups.values())
    pages: list[tuple[str, Any]] = []
    for i in range(max(1, math.ceil(n_groups / SUMMARY_ROWS))):
        pages.append(("summary", i))
    for th in run.theorems:
        g = run.groups[th]
        for i in range(math.ceil(len(g) / PANELS_PER_PAGE)):
            pages.append(("plots", (th, g[i * PANELS_PER_PAGE:(i + 1) * PANELS_PER_PAGE])))
        for sc in run.scenarios[th]:
            pages += [("details", (th, sc, k)) for k in range(details_parts(run, th, sc))]
        scs = run.scenarios[th]
        for i in range(max(1, math.ceil(len(scs) / REPR_PER_PAGE))):
            pages.append(("repr", (th, scs[i * REPR_PER_PAGE:(i + 1) * REPR_PER_PAGE])))
    pages += [("worstcase", th) for th in worst_case_theorems(run.verdicts)]  # issue 32
    return pages


def draw_footer(fig: Figure, i: int, n: int, run: Run) -> None:
    """The run directory and ``page i / n`` at the foot of a page."""
    fig.text(0.03, 0.015, f"fedsim validation report  -  run directory: {run.run_dir.name}",
             fontsize=SMALL, color="#555555")
    fig.text(0.97, 0.015, f"page {i} / {n}", fontsize=SMALL, color="#555555", ha="right")
