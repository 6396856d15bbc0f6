"""``fedsim validate --theorem/--family``: part of a suite, at that part's cost.

Builders are replaced by stubs that record their calls, so a filtered suite is seen to build
nothing but the named theorems' cases; the family rows are the families' default points; an
unknown name is one line listing the known ones, before anything is written; one end-to-end
run of a family row on the command line.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from fedsim.validation import scenarios as S
from fedsim.validation import suite_grids, suites

from fedsim.errors import ConfigError


@pytest.fixture
def calls(monkeypatch):
    seen: list[str] = []

    def stub(n, s):
        def build(R, c):
            seen.append(n)
            return [(n, s, R, c)]
        return build

    monkeypatch.setattr(S, "GRIDS", tuple(
        S.CaseGrid(theorem=g.theorem, div1000=g.div1000,
                   builders={s: stub(g.theorem, s) for s in g.builders}) for g in S.GRIDS))
    monkeypatch.setattr(suite_grids, "suite_rows", lambda suite: [])  # no installed plug-in's rows
    return seen


def test_theorem_filter_builds_only_those_theorems(calls):
    got = suites.build_cases("quick", 8, theorem="theorem8,theorem1")
    assert got == [("theorem1", "quick", 8, 4), ("theorem8", "quick", 8, 4)]
    assert calls == ["theorem1", "theorem8"]
    assert suites.build_cases("smoke", theorem=["theorem7"]) == [("theorem7", "smoke", 6, 4)]


def test_family_rows_are_default_points(calls):
    (case,) = suites.build_cases("quick", 5, family="theorem8-norm")
    assert calls == []                                 # no theorem builder ran
    assert case.family == "theorem8-norm" and case.theorem == "theorem8"
    assert case.scenario == "theorem8-norm-default" and case.runs[0].replicates == 5
    both = suites.build_cases("quick", 5, theorem="theorem7", family="theorem8-norm")
    assert both[0] == ("theorem7", "quick", 5, 4) and both[1].family == "theorem8-norm"


@pytest.mark.parametrize("kw,field", [({"theorem": "nope"}, "theorem"),
                                      ({"theorem": "theorem8,"}, None),
                                      ({"family": "theorem8"}, "family"),
                                      ({"theorem": ""}, "theorem")])
def test_unknown_names_are_one_line_listing_the_known(kw, field, calls):
    if field is None:                                  # a trailing comma is harmless
        assert suites.build_cases("quick", 4, **kw) == [("theorem8", "quick", 4, 4)]
        return
    with pytest.raises(ConfigError) as err:
        suites.build_cases("quick", 4, **kw)
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith(field)
    if kw[field]:
        assert ("theorem8-norm" if field == "family" else "asypfl_theorem2") in msg


def test_cli_unknown_theorem_writes_nothing(tmp_path):
    out = tmp_path / "run"
    r = subprocess.run([sys.executable, "-m", "fedsim.cli", "validate", "--suite", "quick",
                        "--theorem", "theorem9", "--out", str(out), "--report",
                        str(tmp_path / "r.pdf")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1].startswith("fedsim: error: theorem must be one of")
    assert "theorem8" in r.stderr and not out.exists()


def test_cli_family_row_end_to_end(tmp_path):
    out = tmp_path / "run"
    r = subprocess.run([sys.executable, "-m", "fedsim.cli", "validate", "--suite", "quick",
                        "--family", "theorem8-norm", "--replicates", "40", "--workers", "1",
                        "--no-progress", "--out", str(out), "--report", str(tmp_path / "r.pdf")],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    import pandas as pd

    v = pd.read_csv(out / "verdicts.csv")
    assert list(v["scenario"]) == ["theorem8-norm-default"]
    assert v["n_ok"].iloc[0] == 40 and v["status"].iloc[0] == "PAPER_LITERAL_KNOWN_ERRATUM"


def test_family_rows_join_their_suites_and_filters(calls, monkeypatch):
    from fedsim.validation.rows import SuiteRow, register_rows, suite_rows, unregister_rows

    monkeypatch.undo()                                   # the real row registry, stub grids
    monkeypatch.setattr(S, "GRIDS", ())
    rows = [SuiteRow(name="t8-ce", family="theorem8-norm", point={"K": 9},
                     expected_verdict="violated", div1000=False),
            SuiteRow(name="t7-row", family="theorem7-quad", point={"K": 20}, suites=("full",),
                     div1000=True)]
    register_rows(*rows)
    try:
        assert [r.name for r in suite_rows("quick")][-1:] == ["t8-ce"]
        (c,) = [c for c in suites.build_cases("quick", 4) if c.scenario == "t8-ce"]
        assert c.rows[0].expected_verdict == "violated" and c.control == "counterexample"
        assert c.rows[0].exact == pytest.approx(0.8194104369388717, rel=1e-9)  # exact oracle
        got = suites.build_cases("full", 4, theorem="theorem7")
        assert [c.scenario for c in got] == ["t7-row"]
        assert ("theorem7", "t7-row") in suites.div1000_pairs("full")
        with pytest.raises(ConfigError, match="already registered"):
            register_rows(SuiteRow(name="t8-ce", family="theorem8-norm"))
    finally:
        unregister_rows("t8-ce", "t7-row")
    with pytest.raises(ConfigError, match="suites"):
        SuiteRow(name="x", family="theorem8-norm", suites=("nightly",))
    with pytest.raises(ConfigError, match="expected_verdict"):
        SuiteRow(name="x", family="theorem8-norm", expected_verdict="fails")
