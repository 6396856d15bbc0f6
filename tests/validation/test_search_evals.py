"""``fedsim search --evals N``: a budget of point evaluations makes the search reproducible.

Two searches of the same space with the same settings, in two fresh directories, write
byte-identical ``search.csv`` files with exactly N points (grid, then differential-evolution
refinement: both phases run here), and a re-run in the first directory (resumed from its
point records) writes it again unchanged.  ``--budget`` and ``--evals`` together are refused.
"""

from __future__ import annotations

import subprocess
import sys

from fedsim.validation.search import SearchSettings, run_search

SPACE = "n=1..3, M=1..40, K=2..12, p_s=0.2..0.8"


def test_same_evals_same_search_csv(tmp_path):
    st = SearchSettings(evals=30, grid=8, refine=2, refine_iter=2, confirm=1,
                        confirm_replicates=8, workers=1, progress=False, max_states=5000)
    a = run_search("theorem8-norm", SPACE, st, out=tmp_path / "a", fixed={"mode": "paper"})
    run_search("theorem8-norm", SPACE, st, out=tmp_path / "b", fixed={"mode": "paper"})
    first = (tmp_path / "a" / "search.csv").read_bytes()
    assert first == (tmp_path / "b" / "search.csv").read_bytes()
    assert len(a) == 30 and set(a["phase"]) == {"grid", "refine"}
    assert "seconds" not in a.columns
    run_search("theorem8-norm", SPACE, st, out=tmp_path / "a", fixed={"mode": "paper"})
    assert (tmp_path / "a" / "search.csv").read_bytes() == first


def test_budget_and_evals_together_are_refused(tmp_path):
    r = subprocess.run([sys.executable, "-m", "fedsim.cli", "search", "theorem8", "--family",
                        "theorem8-norm", "--space", SPACE, "--budget", "10s", "--evals", "5",
                        "--out", str(tmp_path / "s")], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1].startswith("fedsim: error: give --budget or "
                                                        "--evals, not both")
