"""The previous design's paper verdicts, beside a new run's (issue 22's reporting rule).

``previous_verdicts.csv`` (package data) holds the claims of the design that issue 22
replaced: R = 10 measurement replicates (16 for Per-FedAvg Table 1) on replicate indices
``0 .. R-1``, Per-FedAvg's grid {1, 4}/L, Table 3's {2, 8, 32}/L and Fig. 2(b)'s t_h = 60.
It is that design rerun on main at bd440e6, before any change of issue 22; its tallies per
experiment equal the ones the previous round published (Table 3: 16 hold / 19 reversed /
29 unresolved, Table 4: 5 / 16 / 11, Per-FedAvg 0 / 0 / 9, Fig. 2(b) 0 / 0 / 9, ...).

Every new verdict is reported beside the old one, and a run is never repeated to change
one; :func:`beside_previous` pairs the claims by (experiment, setting, claim text) and
names the change: ``same``, ``flipped`` (holds <-> reversed), ``resolved`` (unresolved ->
holds or reversed), ``unresolved now`` (holds or reversed -> unresolved), ``new`` (a claim
the previous design did not have) or ``dropped``.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

__all__ = ["PREVIOUS_CSV", "previous_rows", "beside_previous", "change_of"]

PREVIOUS_CSV = Path(__file__).with_name("previous_verdicts.csv")

_DECIDED = ("holds", "reversed")


def previous_rows(path: str | Path = PREVIOUS_CSV) -> list[dict[str, str]]:
    """The previous design's claim rows (the columns of ``paper_verdicts.csv``)."""
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def change_of(old: str | None, new: str | None) -> str:
    """How a claim's status moved from ``old`` to ``new`` (module docstring)."""
    if old is None:
        return "new"
    if new is None:
        return "dropped"
    if old == new:
        return "same"
    if old in _DECIDED and new in _DECIDED:
        return "flipped"
    return "resolved" if new in _DECIDED else "unresolved now"


def _key(r: dict[str, Any]) -> tuple[str, str, str]:
    return (str(r["experiment"]), str(r["setting"]), str(r["claim"]))


def beside_previous(new_rows: list[dict[str, Any]],
                    old_rows: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """One row per claim of either design, in the new run's order then the dropped ones:
    experiment, setting, claim, both designs' verdict, difference, 99% interval and status,
    and the change."""
    old_rows = previous_rows() if old_rows is None else old_rows
    old = {_key(r): r for r in old_rows}
    new = {_key(r): r for r in new_rows}
    seen, out = set(), []

    def f(x: Any) -> float:
        return float(x) if x not in (None, "") else float("nan")

    for r in new_rows + [o for o in old_rows if _key(o) not in new]:
        k = _key(r)
        if k in seen:
            continue
        seen.add(k)
        n, o = new.get(k), old.get(k)
        out.append({
            "experiment": k[0], "setting": k[1], "claim": k[2],
            "old_verdict": o["verdict"] if o else "", "new_verdict": n["verdict"] if n else "",
            "old_diff": f(o["diff"]) if o else float("nan"),
            "old_ci_low": f(o["ci_low"]) if o else float("nan"),
            "old_ci_high": f(o["ci_high"]) if o else float("nan"),
            "old_status": o["status"] if o else "",
            "new_diff": f(n["diff"]) if n else float("nan"),
            "new_ci_low": f(n["ci_low"]) if n else float("nan"),
            "new_ci_high": f(n["ci_high"]) if n else float("nan"),
            "new_status": n["status"] if n else "",
            "change": change_of(o["status"] if o else None, n["status"] if n else None)})
    return out
