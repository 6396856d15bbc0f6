"""``fedsim search`` (issue 11 item 3): space parsing, grid, the 7.d rediscovery, resume, CLI."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
from fedsim.validation.families import get_family
from fedsim.validation.search import SearchSettings, run_search
from fedsim.validation.search_space import coarse_grid, levels, parse_budget, parse_space
from rawstore import points

from fedsim.cli import main
from fedsim.errors import ConfigError

F8 = get_family("theorem8-norm")


def test_parse_space_kinds():
    dims = parse_space("n=1..30, p_s=0.1..0.9, M=[1,10,50,1000], K=2..200, mode=corrected",
                       F8)
    by = {d.name: d for d in dims}
    assert by["n"].kind == "range" and by["n"].integer and (by["n"].low, by["n"].high) == (1, 30)
    assert by["p_s"].kind == "range" and not by["p_s"].integer
    assert by["M"].values == (1, 10, 50, 1000)
    assert by["mode"].values == ("corrected",)


@pytest.mark.parametrize("bad", ["n=5..1", "zz=1..2", "M=[1,2", "n", "n=1..2, n=3"])
def test_parse_space_rejects(bad):
    with pytest.raises(ConfigError):
        parse_space(bad, F8)


def test_grid_and_levels():
    dims = parse_space("p_s=0.1..0.9, M=[1,10], K=2..200", F8)
    g = coarse_grid(dims, 50)
    assert len(g) == 2 * 5 * 5            # 2 list values x 5 levels x 5 levels
    assert levels(dims[2], 5) == [2, 6, 20, 63, 200]      # geometric for K
    assert {q["M"] for q in g} == {1, 10}
    assert parse_budget("10m") == 600 and parse_budget("90s") == 90 and parse_budget("2") == 2
    with pytest.raises(ConfigError):
        parse_budget("ten minutes")


def test_rediscovers_7d_counterexample(tmp_path):
    """Over the n=2 family the search finds M=50, K=9 (ratio 1.137) or worse, exactly, and
    validate's machinery confirms it as violated."""
    st = SearchSettings(budget=25, grid=12, refine=1, refine_iter=3, confirm=1,
                        confirm_replicates=150, workers=1, progress=False)
    df = run_search("theorem8-norm", "p_s=0.25..0.55, K=4..14, M=[50]", st, out=tmp_path,
                    fixed={"n": 2}, theorem="theorem8")
    seven_d = F8.build({"n": 2, "p_s": 0.4, "M": 50, "K": 9})
    target = seven_d.measure().value / seven_d.bound_value
    best = df.iloc[0]
    assert best["method"] == "exact"
    assert best["ratio"] >= target - 1e-12, best.to_dict()
    assert best["verdict"] == "violated"
    assert best["ci_low"] > best["bound"]
    csv = pd.read_csv(tmp_path / "search.csv")
    for col in ("n", "p_s", "M", "K", "bound", "status", "measured", "method", "ratio",
                "verdict"):
        assert col in csv.columns
    assert set(csv["method"]) <= {"exact", "mc"}


def test_corrected_bound_holds_and_nothing_to_confirm(tmp_path):
    st = SearchSettings(budget=15, grid=9, refine=0, confirm=3, workers=1, progress=False)
    df = run_search("theorem8-norm", "p_s=0.25..0.55, K=4..14, M=[50]", st, out=tmp_path,
                    fixed={"n": 2, "mode": "corrected"})
    assert (df["ratio"] < 1).all()
    assert (df["verdict"].fillna("") == "").all()
    assert (df["status"] == "CERTIFIED_CORRECTED").all()


def test_resume_reads_the_records(tmp_path):
    st = SearchSettings(budget=30, grid=4, refine=0, confirm=0, workers=1, progress=False)
    a = run_search("theorem8-norm", "K=3..8, M=[10]", st, out=tmp_path, fixed={"n": 2})
    pts = points(tmp_path)
    stamp = (tmp_path / "store.sqlite").stat().st_mtime_ns
    b = run_search("theorem8-norm", "K=3..8, M=[10]", st, out=tmp_path, fixed={"n": 2})
    assert points(tmp_path) == pts and len(pts) == len(a)
    assert (tmp_path / "store.sqlite").stat().st_mtime_ns == stamp  # nothing recomputed
    pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True))


def test_looseness_objective_is_reciprocal(tmp_path):
    st = SearchSettings(objective="looseness", budget=30, grid=2, refine=0, confirm=0,
                        workers=1, progress=False)
    df = run_search("theorem8-norm", "K=[3,5], M=[10]", st, out=tmp_path, fixed={"n": 2})
    assert all(math.isclose(r * v, 1.0, rel_tol=1e-12)
               for r, v in zip(df["ratio"], df["violation_ratio"], strict=True))


def test_theorem_must_match_family(tmp_path):
    with pytest.raises(ConfigError, match="does not match"):
        run_search("theorem8-norm", "K=[3]", SearchSettings(progress=False), out=tmp_path,
                   theorem="theorem7")


def test_cli_list(capsys):
    assert main(["search", "--list"]) == 0
    out = capsys.readouterr().out
    for name in ("theorem8-norm", "theorem7-quad", "theorem1-window", "theorem3-window",
                 "theorem2-logistic"):
        assert name in out
    assert "centre_spread" in out and "lam_over_L" in out


def test_cli_end_to_end(tmp_path, capsys):
    rc = main(["search", "theorem8", "--family", "theorem8-norm", "--space",
               "K=4..10, p_s=0.3..0.5, M=[50]", "--fixed", "n=2", "--budget", "20s",
               "--grid", "9", "--refine", "0", "--confirm", "1", "--confirm-replicates", "60",
               "--workers", "1", "--out", str(tmp_path), "--no-progress", "--heat", "K,p_s"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "violated" in out
    assert (tmp_path / "search.pdf").stat().st_size > 1000
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["violations"] >= 1 and list(s["confirmed"].values()) == ["violated"]


def test_cli_errors_are_one_line(capsys):
    assert main(["search", "theorem8", "--family", "theorem8-norm", "--space", "n=3..1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fedsim: error:") and err.count("\n") == 1
    assert main(["search", "theorem8"]) == 2


def test_refinement_keeps_fixed_parameters(tmp_path):
    st = SearchSettings(budget=20, grid=4, refine=1, refine_iter=1, confirm=0, workers=1,
                        progress=False)
    df = run_search("theorem8-norm", "K=3..8, p_s=0.3..0.5, M=[10]", st, out=tmp_path,
                    fixed={"n": 3, "mode": "corrected"})
    assert (df["phase"] == "refine").any()
    assert (df["n"] == 3).all() and (df["mode"] == "corrected").all()


def test_a_refused_point_is_a_row_and_the_search_goes_on(tmp_path):
    """centre_spread >= 2 is outside Theorem 8's family (ConfigError at build): those grid
    points become REFUSED rows with the reason, the others are measured as usual, and a
    refused point is never a candidate.  Before, the first refusal ended the search."""
    st = SearchSettings(budget=60, grid=4, refine=0, confirm=3, workers=1, progress=False)
    df = run_search("theorem8-norm", "centre_spread=[0.5, 1.5, 2.5, 3.0], K=[4], M=[10]", st,
                    out=tmp_path, fixed={"n": 2})
    refused = df[df["status"] == "REFUSED"]
    assert sorted(refused["centre_spread"]) == [2.5, 3.0]
    assert refused["oracle"].str.contains("centre_spread must be < 2").all()
    assert refused["ratio"].isna().all() and (refused["verdict"].fillna("") == "").all()
    assert sorted(df.loc[df["status"] != "REFUSED", "centre_spread"]) == [0.5, 1.5]
    assert df.loc[df["status"] != "REFUSED", "measured"].notna().all()
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["points"] == 4 and summary["refused"] == 2
    # resumed: the refused records are read back, not rebuilt
    again = run_search("theorem8-norm", "centre_spread=[0.5, 1.5, 2.5, 3.0], K=[4], M=[10]",
                       st, out=tmp_path, fixed={"n": 2})
    assert sorted(again.loc[again["status"] == "REFUSED", "centre_spread"]) == [2.5, 3.0]
