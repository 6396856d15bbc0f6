"""The public helpers of validation/families (base.py, __init__.py) that a new family uses.

``Param.coerce``, ``Family.defaults/param/complete``, ``params_digest``, ``poisson_delays``,
``engine_scenario``, ``resolve_hypotheses``, ``constants_of``, ``Instance.measure``'s fallback,
``register_family`` -- each on hand-made inputs, and a family registered from outside the
package run end to end by ``fedsim search``'s :func:`run_search`.
"""

from __future__ import annotations

import hashlib
import json
import math

import fedsim.validation.families as vf
import numpy as np
import pytest
from fedsim.theory import area as tarea
from fedsim.theory.result import Status
from fedsim.validation.cases import SEED
from fedsim.validation.families import (
    Family,
    Instance,
    Measurement,
    Param,
    build_problem_from,
    constants_of,
    engine_scenario,
    get_family,
    params_digest,
    poisson_delays,
    register_family,
    resolve_hypotheses,
)
from hypothesis import given, settings
from hypothesis import strategies as hs

from fedsim.errors import ConfigError


def test_param_coerce():
    n = Param("n", "int", 2, "clients", low=1)
    assert n.coerce("3") == 3 and n.coerce(4.0) == 4 and isinstance(n.coerce(4.0), int)
    assert n.coerce(None) is None
    for bad in (3.5, 0, "x", math.inf, [1]):
        with pytest.raises(ConfigError, match="n"):
            n.coerce(bad)
    ps = Param("p_s", "float", 0.4, "", low=0.0, high=1.0)
    assert ps.coerce("0.25") == 0.25 and ps.coerce(1) == 1.0
    for bad in (-0.1, 1.5, math.nan):
        with pytest.raises(ConfigError, match="p_s"):
            ps.coerce(bad)
    mode = Param("mode", "choice", "paper", "", choices=("paper", "corrected"))
    assert mode.coerce("corrected") == "corrected"
    with pytest.raises(ConfigError, match="must be one of"):
        mode.coerce("other")
    lst = Param("p", "list", None, "")
    assert lst.coerce("0.1, 0.2") == [0.1, 0.2] and lst.coerce((1, 2)) == [1.0, 2.0]
    assert lst.coerce(np.array([3])) == [3.0]
    with pytest.raises(ConfigError, match="p must be a number, got p='a'"):
        lst.coerce("0.1,a")


def test_cli_non_numeric_value_is_one_line(capsys, tmp_path):
    from fedsim.cli import main

    for argv in (["--space", "n=abc"], ["--space", "K=[3]", "--fixed", "p=0.5,x; n=2"]):
        rc = main(["search", "theorem8", "--family", "theorem8-norm", "--out",
                   str(tmp_path), "--no-progress", *argv])
        err = capsys.readouterr().err
        assert rc == 2 and err.startswith("fedsim: error:") and err.count("\n") == 1, err
        assert "must be a number" in err


def test_family_defaults_param_complete():
    f8 = get_family("theorem8-norm")
    d = f8.defaults()
    assert d["n"] == 2 and d["M"] == 50 and d["mode"] == "paper" and d["p"] is None
    assert f8.param("K").kind == "int"
    with pytest.raises(ConfigError, match="has no parameter 'zz'"):
        f8.param("zz")
    full = f8.complete({"K": "7", "p_s": "0.3"})
    assert full == {**d, "K": 7, "p_s": 0.3}
    assert f8.complete() == d


@settings(max_examples=60, deadline=None)
@given(hs.dictionaries(hs.text(min_size=1, max_size=6),
                       hs.one_of(hs.integers(), hs.floats(allow_nan=False), hs.text(),
                                 hs.none(), hs.lists(hs.floats(allow_nan=False))),
                       max_size=6))
def test_params_digest_is_order_free_and_the_sha256_of_sorted_json(d):
    dig = params_digest(d)
    assert len(dig) == 12 and all(ch in "0123456789abcdef" for ch in dig)
    rev = dict(reversed(list(d.items())))
    assert params_digest(rev) == dig
    blob = json.dumps({k: d[k] for k in sorted(d)}, sort_keys=True, default=str)
    assert dig == hashlib.sha256(blob.encode()).hexdigest()[:12]


def test_params_digest_separates_points():
    assert params_digest({"K": 5}) != params_digest({"K": 6})
    assert params_digest({"K": 5}) != params_digest({"K": 5, "M": 1})


def test_poisson_delays():
    assert poisson_delays([0.5, 0.5, 0.5]) == {"compute": {"kind": "exponential",
                                                           "rate": 0.5}}
    assert poisson_delays([1, 2, 1]) == {
        "compute": {"kind": "exponential", "rate": 1.0},
        "override": [{"clients": [1], "compute": {"kind": "exponential", "rate": 2.0}}]}


def test_engine_scenario():
    sc = engine_scenario("x", {"kind": "norm"}, {"name": "area"}, 12, ["dist_sq"], every=4)
    assert sc == {"name": "x", "seed": SEED, "problem": {"kind": "norm"},
                  "algorithm": {"name": "area"}, "horizon": {"steps": 12},
                  "record": {"every": 4, "metrics": ["dist_sq"]}}
    sc2 = engine_scenario("x", {}, {}, 3, ["m"], delays={"a": 1}, trigger={"kind": "poisson"},
                          seed=9)
    assert sc2["seed"] == 9 and sc2["delays"] == {"a": 1}
    assert sc2["trigger"] == {"kind": "poisson"}


def _t8():
    return tarea.theorem8(M=5, p=[0.3, 0.3], p_s=0.4, sigma2=0.0, B=1.0, R=1.0, K=4,
                          mode="corrected")


def test_resolve_hypotheses_fills_only_unknowns_by_prefix():
    res = _t8()
    before = {h.name: h.holds for h in res.hypotheses}
    unknown = [k for k, v in before.items() if v is None]
    assert unknown                                   # theory leaves some to the caller
    out = resolve_hypotheses(res, {unknown[0][:6]: (True, "by construction"),
                                   "convex": (False, "ignored: already decided")})
    after = {h.name: h for h in out.hypotheses}
    assert after[unknown[0]].holds is True
    assert after[unknown[0]].detail == "scenario: by construction"
    assert after["convex_lipschitz"].holds is before["convex_lipschitz"]   # not replaced
    assert out.status != Status.NOT_APPLICABLE
    bad = resolve_hypotheses(_t8(), {unknown[0]: (False, "fails")})
    assert bad.status == Status.NOT_APPLICABLE


def test_constants_of_records():
    prob = build_problem_from({"kind": "norm", "B": 3.0, "n": 2, "dim": 1,
                               "centers": [[-1.0], [1.0]]})
    recs = constants_of(prob)
    by = {r["name"]: r for r in recs}
    assert by["B"]["value"] == 3.0 and str(by["B"]["tag"]) == "EXACT"
    assert by["f_star_A"]["value"] == pytest.approx(3.0, rel=1e-12)   # B mean |x - c_i|


def _instance(exact, mc) -> Instance:
    inst = get_family("theorem8-norm").build({"K": 3, "M": 2})
    inst.exact, inst.mc = exact, mc
    return inst


def test_measure_falls_back_to_monte_carlo():
    calls = []
    mc = Measurement(1.0, "mc", 0.1, 0.05, 10)
    inst = _instance(lambda ms: calls.append(ms), lambda r, s: (calls.append((r, s)), mc)[1])
    assert inst.measure(max_states=7, replicates=11, seed=3) is mc
    assert calls == [7, (11, 3)]
    with pytest.raises(ConfigError, match="neither oracle nor MC"):
        _instance(lambda ms: None, None).measure()


def test_register_family_and_search_it(monkeypatch, tmp_path):
    """A family registered from outside: listed, looked up, refused twice, searched."""
    monkeypatch.setattr(vf, "_FAMILIES", dict(vf._FAMILIES))
    base = get_family("theorem8-norm")
    mine = Family(
        name="my-norm",
        theorem="theorem8",
        title="norm, corrected only",
        doc="test family",
        params=base.params,
        builder=lambda q: base.builder({**q, "mode": "corrected"}),
        modes=("corrected",),
    )
    assert register_family(mine) is mine
    assert vf.get_family("my-norm") is mine
    assert [f.name for f in vf.families("theorem8")] == ["theorem8-norm", "theorem8-logistic",
                                                         "my-norm"]
    with pytest.raises(ConfigError, match="already registered"):
        register_family(mine)
    assert register_family(mine, replace=True) is mine
    with pytest.raises(ConfigError, match="must be a Family"):
        register_family("my-norm")                   # type: ignore[arg-type]
    from fedsim.validation.search import SearchSettings, run_search

    st = SearchSettings(budget=60, grid=3, refine=0, confirm=0, workers=1, progress=False)
    df = run_search("my-norm", "K=[3,4,5], M=[10]", st, out=tmp_path, fixed={"n": 2})
    assert len(df) == 3 and (df["status"] == "CERTIFIED_CORRECTED").all()
    assert (df["ratio"] < 1).all() and set(df["K"]) == {3, 4, 5}


def test_engine_mc_is_seeded_and_reports_the_student_t_interval():
    """The Monte-Carlo fallback: a function of (scenario, seed), the scenario untouched, the
    99% Student-t half-width t_{0.995, n-1} * se of the replicates."""
    from fedsim.validation.families.mc import engine_mc
    from scipy import stats

    inst = get_family("theorem8-norm").build({"n": 3, "K": 6, "M": 3})
    before = json.dumps(inst.scenario, sort_keys=True)
    a = engine_mc(inst.scenario, inst.metric, inst.horizon, 6, seed=1)
    assert json.dumps(inst.scenario, sort_keys=True) == before
    assert engine_mc(inst.scenario, inst.metric, inst.horizon, 6, seed=1) == a
    b = engine_mc(inst.scenario, inst.metric, inst.horizon, 6, seed=2)
    assert b.value != a.value
    assert a.method == "mc" and a.n == 6 and a.se > 0
    assert a.error == pytest.approx(stats.t.ppf(0.995, 5) * a.se, rel=1e-9)


def test_norm_ergodic_mc_is_a_function_of_its_seed():
    from fedsim.validation.families import get_family
    from fedsim.validation.families.norm_mc import norm_ergodic_mc

    inst = get_family("theorem8-norm").build({"n": 3, "M": 5, "K": 8, "centre_spread": 1.0})
    m0, s0 = norm_ergodic_mc(inst.scenario, 300, seed=4)
    assert norm_ergodic_mc(inst.scenario, 300, seed=4) == (m0, s0)
    assert norm_ergodic_mc(inst.scenario, 300, seed=5)[0] != m0
    assert m0 > 0 and s0 > 0


@pytest.mark.parametrize("q", [{"n": 3, "M": 5, "K": 8, "centre_spread": 1.0},
                               {"n": 2, "M": 50, "K": 9, "p_s": 0.3}])
def test_norm_mc_agrees_with_the_exact_oracle(q):
    """The replayed Monte Carlo and the exact lumped oracle measure the same E f(xbar_K) - f*:
    |mc - exact| <= 4 se + the oracle's error bound (false-alarm rate ~6e-5 per point)."""
    from fedsim.validation.families import get_family

    inst = get_family("theorem8-norm").build(q)
    ex = inst.exact(200_000)
    mc = inst.mc(3000, 0)
    assert ex is not None and mc.method == "mc" and mc.n == 3000
    assert abs(mc.value - ex.value) <= 4.0 * mc.se + ex.error


def test_open_lower_end_refuses_the_end_and_lists_it():
    """A parameter the theorem divides by (L, B, p_s, eta_mult, feature_scale, nu) has an
    open lower end: 0 is refused at parse time with one line, and --list shows "(0, ..."."""
    from fedsim.validation.families import get_family
    from fedsim.validation.search_cli import list_families

    from fedsim.errors import ConfigError

    L = get_family("theorem1-window").param("L")
    assert L.open_low and L.coerce(1e-9) == 1e-9
    with pytest.raises(ConfigError, match="L must be > 0"):
        L.coerce(0.0)
    assert get_family("theorem1-window").param("heterogeneity").coerce(0.0) == 0.0
    listing = list_families()
    assert any(line.split()[0] == "L" and "(0, ]" in line for line in listing.splitlines())
