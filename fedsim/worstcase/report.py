"""The report's worst-case page of a theorem: bound, worst case and Monte-Carlo mean along
the horizon (log scale), one panel per (scenario, mode), the witness named.

The report (``fedsim.validation.report``) asks :func:`worst_case_theorems` which theorems
have a page and draws it with :func:`worst_case_page`; both read only ``verdicts.csv``'s
columns (:mod:`fedsim.worstcase.verdict`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["worst_case_theorems", "worst_case_page"]

#: panels on one page
PANELS = 4


def worst_case_theorems(verdicts: Any) -> list[str]:
    """The theorems with at least one finite ``worst_case`` row (first-seen order)."""
    if "worst_case" not in verdicts.columns:
        return []
    v = verdicts[np.isfinite(verdicts["worst_case"].astype(float))]
    return list(dict.fromkeys(v["theorem"]))


def worst_case_page(verdicts: Any, theorem: str) -> Any:
    """One page for ``theorem`` (module doc)."""
    import matplotlib.pyplot as plt

    v = verdicts[(verdicts["theorem"] == theorem)
                 & np.isfinite(verdicts["worst_case"].astype(float))]
    groups = list(dict.fromkeys(zip(v["scenario"], v["mode"], strict=True)))[:PANELS]
    fig = plt.figure(figsize=(8.27, 11.69))
    fig.suptitle(f"{theorem}: bound, worst case over the class (PEP), Monte-Carlo mean",
                 fontsize=11)
    ncol = 1 if len(groups) == 1 else 2
    nrow = max(1, math.ceil(len(groups) / ncol))
    for j, (sc, mode) in enumerate(groups):
        ax = fig.add_subplot(nrow + 1, ncol, j + 1)
        g = v[(v["scenario"] == sc) & (v["mode"] == mode)].sort_values("horizon")
        K = g["horizon"].to_numpy(float)
        ax.plot(K, g["bound"], "o-", label="bound")
        ax.plot(K, g["worst_case"], "s-", label="worst case (PEP, sigma = 0)")
        ax.plot(K, g["mean"], "^-", label="Monte-Carlo mean")
        ax.set_yscale("log")
        ax.set_xlabel("horizon K")
        ax.set_title(f"{sc} [{mode}]", fontsize=8)
        ax.legend(fontsize=7)
    lines = []
    for (sc, mode) in groups:
        g = v[(v["scenario"] == sc) & (v["mode"] == mode)]
        wit = g["worst_case_witness"].iloc[0] if "worst_case_witness" in g else ""
        st = ", ".join(dict.fromkeys(g["worst_case_status"].astype(str)))
        bw = g["bound_over_worst"].astype(float)
        lines.append(f"{sc} [{mode}]: solver status {st}; bound / worst case "
                     f"{bw.min():.3g} .. {bw.max():.3g};\n    witness: {wit}")
    fig.text(0.05, 0.22, "\n".join(lines), fontsize=7, va="top", wrap=True)
    fig.text(0.05, 0.08, "The worst case is the largest value of the measured quantity over "
             "every function of the class,\nalong the scenario's own schedule, with sigma = 0 "
             "(docs/theory/worst-case.md).\nbound / worst case > 1: the theorem holds on its "
             "deterministic core, with that looseness;\n< 1 with a witness: a certified "
             "violation.", fontsize=7, va="top")
    return fig
