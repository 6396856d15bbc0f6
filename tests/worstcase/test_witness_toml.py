"""The Gram-interpolant witness as a TOML anyone can ``fedsim run`` (problem kind
``gram_interpolant``, :mod:`fedsim.worstcase.interpolant_problem`): written by ``fedsim
worstcase --witness-out``, run by ``fedsim run`` and ``run_batch``, it gives the PEP value
back to solver tolerance; a garbled table is refused in one line; another timeline does not
reproduce (negative control)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import fedsim
from fedsim.cli import main
from fedsim.errors import ConfigError
from fedsim.worstcase.gram_witness import GRAM_MATCH_RTOL

#: delayed GD on a delay list of a one-job-per-worker timeline, where no quadratic attains
#: the nonconvex worst case (the recorded model: no compiled table writer to wait for)
ARGS = ["worstcase", "--class", "nonconvex", "--delays", "0,1,2,2,1,3", "--step", "0.25",
        "--measure", "avg_grad_sq", "--json"]
K = 6


def measured(csv) -> float:
    """The PEP's measure read from ``fedsim run``'s CSV: the mean of ``||grad f||^2`` over
    steps ``0..K-1`` over ``f(x_0) - f(x_K)`` (the nonconvex PEP's ``"f_K"`` normalisation)."""
    d = pd.read_csv(csv)
    return float(d["avg_grad_sq"][K] / (d["f_gap"][0] - d["f_gap"][K]))


@pytest.fixture(scope="module")
def witness(tmp_path_factory):
    import contextlib
    import io

    tmp = tmp_path_factory.mktemp("gram-toml")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main([*ARGS, "--witness-out", str(tmp / "w.toml")]) == 0
    return tmp, json.loads(buf.getvalue())


def test_fedsim_run_on_the_witness_toml_gives_the_pep_value(witness):
    tmp, out = witness
    assert out["witness_kind"] == "Gram interpolant" and out["gram_witness"]["reproduces"]
    assert (tmp / "w.staleness").is_file()
    assert main(["run", str(tmp / "w.toml"), "--out", str(tmp / "t.csv"),
                 "--no-progress"]) == 0
    got = measured(tmp / "t.csv")
    assert abs(got - out["value"]) <= GRAM_MATCH_RTOL * out["value"]
    # the one path: the door's own simulation is this run, to rounding
    assert got == pytest.approx(out["gram_witness"]["replayed"], rel=1e-12)
    # run_batch builds the problem from the scenario too; sigma = 0, so every replicate is one
    from fedsim.engine import run_batch

    sc = fedsim.load(tmp / "w.toml")
    traces = run_batch(sc, [0, 1])
    assert traces[0].equals(fedsim.run(sc))
    np.testing.assert_array_equal(traces[1].metrics["grad_sq"], traces[0].metrics["grad_sq"])
    # its constants are its class's (fedsim bounds --scenario reads them); not convex: no mu
    from fedsim.engine import problem_for

    c = problem_for(sc).constants.values()
    assert (c["L"], c["sigma_g2"], c["zeta"]) == (1.0, 0.0, 0.0) and "mu" not in c
    assert c["f_star_A"] == problem_for(sc).f_star


def test_another_timeline_does_not_reproduce(witness):
    """Negative control: the same interpolant along another schedule (the staleness file
    edited to constant tau = 1, still a valid timeline) misses the PEP value."""
    tmp, out = witness
    (tmp / "w.staleness").write_text("0\n1\n1\n1\n1\n1\n")
    try:
        assert main(["run", str(tmp / "w.toml"), "--out", str(tmp / "other.csv"),
                     "--no-progress"]) == 0
        assert abs(measured(tmp / "other.csv") - out["value"]) > GRAM_MATCH_RTOL * out["value"]
    finally:
        (tmp / "w.staleness").write_text("0\n1\n2\n2\n1\n3\n")


@pytest.mark.parametrize("edit, message", [
    (lambda p: p.pop("points"), r"problem\.points is required"),
    (lambda p: p.update(points=p["points"][:-1]), r"problem\.gradients.*must have shape"),
    (lambda p: p.update(values=p["values"] + [0.0]), r"problem\.values.*must have shape"),
    (lambda p: p["points"][1].append(0.0), r"problem\.points.*rows of one length"),
    (lambda p: p["gradients"][0].__setitem__(0, "x"), r"problem\.gradients.*list of rows"),
    (lambda p: p["values"].__setitem__(0, float("nan")), r"problem\.values.*finite"),
    (lambda p: p.update(function_class="convex_lipschitz"), r"problem\.function_class"),
    (lambda p: p.update(mu=0.5), r"problem\.mu.*nonconvex"),
    (lambda p: p.update(L=0.0), r"problem\.L.*> 0"),
])
def test_a_garbled_witness_table_is_refused_in_one_line(witness, edit, message):
    tmp, _ = witness
    d = fedsim.load(tmp / "w.toml").to_dict()
    edit(d["problem"])
    with pytest.raises(ConfigError, match=message) as err:
        fedsim.run(d)
    assert "\n" not in str(err.value)


def test_a_garbled_witness_file_exits_2_in_one_line(witness, tmp_path, capsys):
    tmp, _ = witness
    text = (tmp / "w.toml").read_text()
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace("values = [", "values = [\"oops\", ", 1))
    assert main(["run", str(bad), "--out", str(tmp_path / "t.csv"), "--no-progress"]) == 2
    err = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert len(err) == 1 and "problem.values" in err[0], err


def _floats():
    from hypothesis import strategies as st

    return st.floats(allow_nan=False, allow_infinity=False, width=64, min_value=-1e300,
                     max_value=1e300)


def test_the_toml_holds_the_pep_data_to_the_last_bit():
    """Property: any finite float64 data survive ``[problem]`` -> TOML -> ``[problem]``
    bit for bit, and the builder's interpolant is the package's own (same ``S``, ``c``)."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from fedsim.config.io import dumps, loads
    from fedsim.testing import fedsim_profile
    from fedsim.worstcase import FunctionClass
    from fedsim.worstcase.interpolant import class_interpolant
    from fedsim.worstcase.interpolant_problem import interpolant_table

    fc = FunctionClass(kind="nonconvex", L=1.0)
    base = {"name": "rt", "seed": 0, "algorithm": {"name": "fedavg"}, "horizon": {"steps": 1}}

    @settings(fedsim_profile, max_examples=25)
    @given(st.integers(1, 4), st.integers(1, 3), st.data())
    def check(P, r, data):
        X, Gr = (np.array(data.draw(st.lists(st.lists(_floats(), min_size=r, max_size=r),
                                             min_size=P, max_size=P))) for _ in range(2))
        Fv = np.array(data.draw(st.lists(_floats(), min_size=P, max_size=P)))
        d = {**base, "problem": interpolant_table(X, Gr, Fv, fc, 2)}
        back = loads(dumps(fedsim.Scenario.from_dict(d))).problem.params
        for key, a in (("points", X), ("gradients", Gr), ("values", Fv)):
            assert np.array_equal(np.array(back[key], dtype=np.float64).view(np.int64),
                                  a.view(np.int64))
        with np.errstate(all="ignore"):
            ref = class_interpolant(X, Gr, Fv, fc).phi
            got = class_interpolant(np.array(back["points"]), np.array(back["gradients"]),
                                    np.array(back["values"]), fc).phi
        assert np.array_equal(ref.S, got.S, equal_nan=True)
        assert np.array_equal(ref.c, got.c, equal_nan=True)

    check()


@pytest.mark.slow
def test_a_delay_list_attained_by_a_quadratic_is_a_recorded_toml_too(tmp_path, capsys):
    """Where the 1-D quadratic ``h x^2/2`` (h = mu) attains the PEP value on a delay list,
    ``--witness-out`` writes it on the list's recorded-model timeline; ``fedsim run`` gives
    the PEP value back (slow: the quadratic's compiled replay kernel costs about 15 CPU s
    cold, as test_schedule_witness's)."""
    toml = tmp_path / "q.toml"
    assert main(["worstcase", "--step", "0.25", "--mu", "0.1", "--delays", "0,1,2,2,1,3",
                 "--witness-out", str(toml), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["witness_kind"] == "quadratic" and (tmp_path / "q.staleness").is_file()
    assert main(["run", str(toml), "--out", str(tmp_path / "q.csv"), "--no-progress"]) == 0
    d = pd.read_csv(tmp_path / "q.csv")
    assert d["dist_sq"][K] / d["dist_sq"][0] == pytest.approx(out["value"], rel=1e-6)


def test_a_witness_too_large_for_a_scenario_file_is_refused(tmp_path, monkeypatch):
    """Over the scenario-file limit (here lowered to 1 kB) the TOML is not written."""
    import fedsim.config.io as io
    from fedsim.worstcase import FunctionClass, Schedule, delayed_gd, solve_pep
    from fedsim.worstcase.engine_witness import write_interpolant_witness

    fc, sched, m = FunctionClass(kind="nonconvex", L=1.0), Schedule.from_delays(
        [0, 1, 2, 2, 1, 3]), delayed_gd(0.25)
    pep = solve_pep(m, fc, sched, "avg_grad_sq")
    monkeypatch.setattr(io, "MAX_SCENARIO_BYTES", 1000)
    with pytest.raises(ConfigError, match=r"over the 1000 a scenario file may hold \(K = 6\)"):
        write_interpolant_witness(m, fc, sched, pep, tmp_path / "big.toml")
    assert not any(tmp_path.iterdir())  # neither the TOML nor its staleness file


def test_witness_out_makes_its_directory(tmp_path, capsys):
    """``--witness-out runs/w.toml`` in a fresh clone (no ``runs/``) writes the file, as every
    other ``--out`` does (the README's command)."""
    toml = tmp_path / "runs" / "deeper" / "w.toml"
    assert main(["worstcase", "--step", "0.25", "--mu", "0.1", "--tau", "1", "--K", "10",
                 "--witness-out", str(toml)]) == 0
    assert "written to" in capsys.readouterr().out
    assert toml.is_file() and "[problem]" in toml.read_text()


def test_a_refused_witness_leaves_no_directory_behind(tmp_path, monkeypatch, capsys):
    """When no witness is written (here: over a 1 kB scenario-file limit), the directories
    ``--witness-out`` made for it are taken back, and the existing ones are left alone."""
    import fedsim.config.io as io

    monkeypatch.setattr(io, "MAX_SCENARIO_BYTES", 1000)
    toml = tmp_path / "runs" / "deeper" / "w.toml"
    main(["worstcase", "--class", "nonconvex", "--delays", "0,1,2,2,1,3", "--step", "0.25",
          "--measure", "avg_grad_sq", "--witness-out", str(toml)])
    assert "written to" not in capsys.readouterr().out
    assert not (tmp_path / "runs").exists() and tmp_path.is_dir()
