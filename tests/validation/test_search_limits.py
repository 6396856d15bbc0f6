"""``fedsim search``'s two limits (validation/search.py): the confirmation cap and the budget.

* ``confirm`` caps the confirmed points: of the points whose measured value exceeds the bound,
  exactly the ``confirm`` largest violation ratios get validate's verdict, the rest are
  counted as unconfirmed in ``summary.json`` (and the page says "not confirmed").
* Refinement runs only if the coarse grid finished within the budget: a family slowed down by
  a fixed sleep per build, with a budget of a few builds, stops the grid part-way (a prefix
  of the seeded random order), writes ``budget_exhausted`` and no refinement row.
"""

from __future__ import annotations

import json
import time

import fedsim.validation.families as vf
import numpy as np
import pytest
from fedsim.validation.families import Family, get_family
from fedsim.validation.search import SearchSettings, run_search
from fedsim.validation.search_space import coarse_grid, parse_space

SPACE = "K=5..14, M=[50]"


def test_confirmation_is_capped_at_the_largest_violations(tmp_path):
    st = SearchSettings(budget=120, grid=6, refine=0, confirm=2, confirm_replicates=30,
                        workers=1, progress=False)
    df = run_search("theorem8-norm", SPACE, st, out=tmp_path, fixed={"n": 2})
    viol = df[df["violation_ratio"] > 1].sort_values("violation_ratio", ascending=False)
    assert len(viol) >= 4                            # the paper statement fails along K
    done = df[df["verdict"].fillna("") != ""]
    assert sorted(done["point"]) == sorted(viol["point"].iloc[:2])
    assert set(done["verdict"]) <= {"violated", "inconclusive"}
    assert done["ci_low"].notna().all() and done["ci_high"].notna().all()
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["violations"] == len(viol)
    assert len(s["confirmed"]) == 2 and s["unconfirmed_violations"] == len(viol) - 2
    assert not s["budget_exhausted"]


@pytest.fixture
def slow_family(monkeypatch):
    """theorem8-norm with a 0.25 s sleep in every build, registered as ``slow-norm``."""
    monkeypatch.setattr(vf, "_FAMILIES", dict(vf._FAMILIES))
    base = get_family("theorem8-norm")

    def build(q):
        time.sleep(0.25)
        return base.builder(q)

    fam = Family(
        name="slow-norm",
        theorem="theorem8",
        title="slow",
        doc="slow",
        params=base.params,
        builder=build,
        modes=base.modes,
    )
    vf.register_family(fam)
    return fam


def test_budget_cuts_the_grid_and_skips_refinement(tmp_path, slow_family):
    st = SearchSettings(budget=1.0, grid=10, refine=2, confirm=0, workers=1, progress=False,
                        seed=5)
    df = run_search("slow-norm", SPACE, st, out=tmp_path, fixed={"n": 2})
    full = coarse_grid(parse_space(SPACE, slow_family), 10)
    assert 1 <= len(df) < len(full)                  # each build sleeps 0.25 s of 1 s
    assert (df["phase"] == "grid").all()             # no refinement after a cut grid
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["budget_exhausted"] and s["points"] == len(df)
    # the points done are a prefix of the seeded random order of the grid
    order = [full[i]["K"] for i in np.random.default_rng(5).permutation(len(full))]
    assert sorted(df["K"]) == sorted(order[: len(df)])


def test_refinement_runs_when_the_grid_finishes(tmp_path):
    st = SearchSettings(budget=60, grid=4, refine=1, refine_iter=1, confirm=0, workers=1,
                        progress=False)
    df = run_search("theorem8-norm", "K=5..14, p_s=0.3..0.5, M=[50]", st, out=tmp_path,
                    fixed={"n": 2})
    assert (df["phase"] == "grid").sum() == 4 and (df["phase"] == "refine").any()
    # refined points stay inside the cell of the best grid point's neighbouring levels
    ref = df[df["phase"] == "refine"]
    assert ref["K"].between(5, 14).all() and ref["p_s"].between(0.3, 0.5).all()
