"""The witness: the PEP value against the 1-D quadratic recursion on a curvature grid,
and the witness scenario simulated by fedsim along the same schedule."""

import json

import numpy as np
import pandas as pd
import pytest

from fedsim.cli import main
from fedsim.worstcase import FedAsync, FunctionClass, Schedule, delayed_gd, solve_pep
from fedsim.worstcase.witness import (
    MATCH_RTOL,
    constant_tau_of,
    curvature_grid,
    make_witness,
    quadratic_value,
)

SC = FunctionClass(kind="strongly_convex", L=1.0, mu=0.1)


def test_quadratic_value_by_hand():
    """tau = 1, h = 0.1, step 0.25: x1 = x0 - 0.025 x0 (reads x0), x2 = x1 - 0.025 x0."""
    x1 = 1 - 0.025
    x2 = x1 - 0.025
    assert quadratic_value(delayed_gd(0.25), Schedule.constant(1, 2), 0.1, "dist_sq") == \
        pytest.approx(x2 ** 2, rel=1e-15)


@pytest.mark.parametrize("schedule, method", [
    (Schedule.constant(1, 8), delayed_gd(0.25)),
    (Schedule.constant(3, 8), delayed_gd(0.125)),
    (Schedule.cyclic([0, 2, 1], 9, n=3), delayed_gd(1 / 6)),
    (Schedule.constant(1, 6), FedAsync(eta=0.2, Q=2, beta=0.5)),
])
def test_pep_is_at_least_every_quadratic_and_equals_the_best(schedule, method):
    """Issue 32's cross-check: the PEP value >= the recursion's maximum over a fine
    curvature grid in [mu, L], and equal to it where the worst case is a quadratic."""
    r = solve_pep(method, SC, schedule, "dist_sq", solver="SCS")
    hs, vals = curvature_grid(method, schedule, SC, "dist_sq", points=2001)
    assert r.value >= vals.max() * (1 - 1e-6)
    w = make_witness(method, SC, schedule, "dist_sq", r.value, points=2001)
    assert w.kind == "quadratic"
    assert abs(r.value - vals.max()) <= MATCH_RTOL * r.value


def test_a_non_quadratic_worst_case_claims_no_witness():
    """min ||grad||^2 over f(x0) - f*: the PEP is above every quadratic; no witness."""
    s = Schedule.constant(1, 6)
    r = solve_pep(delayed_gd(0.25), SC, s, "min_grad_sq", solver="SCS")
    w = make_witness(delayed_gd(0.25), SC, s, "min_grad_sq", r.value, points=501)
    assert w.kind == "none" and w.scenario is None and r.value > w.grid_max


def test_constant_tau_recognised():
    assert constant_tau_of(Schedule.constant(2, 7)) == 2
    assert constant_tau_of(Schedule.cyclic([0, 2], 6)) is None


def test_cli_witness_reproduces_the_pep_value(tmp_path):
    """End to end: the worst case, its witness TOML, fedsim simulating it along the same
    schedule, and `fedsim run` on the TOML giving the same value."""
    toml = tmp_path / "w.toml"
    out = tmp_path / "out.json"
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(["worstcase", "--step", "0.25", "--mu", "0.1", "--tau", "1", "--K", "10",
                     "--check", "SCS", "--witness-out", str(toml), "--simulate", "--json"])
    assert code == 0
    res = json.loads(buf.getvalue())
    out.write_text(buf.getvalue())
    assert round(res["value"], 4) == 0.5954 and res["check"]["agree"]
    assert res["simulated_schedule_same"]
    assert res["simulated"] == pytest.approx(res["value"], rel=1e-6)
    csv = tmp_path / "trace.csv"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["run", str(toml), "--out", str(csv), "--no-progress"]) == 0
    df = pd.read_csv(csv)
    assert df["dist_sq"].iloc[-1] / df["dist_sq"].iloc[0] == pytest.approx(res["value"],
                                                                           rel=1e-6)


SCENARIO = """
name = "exp-fedasync"
seed = 3
[problem]
kind = "quadratic"
n = 3
dim = 2
mu = 0.1
L = 1.0
seed = 0
[algorithm]
name = "fedasync"
model = "physical"
client_rule = "sgd"
Q = 2
eta = 0.1
batch = 1
beta = 0.5
[delays]
download = {kind = "exponential", rate = 10.0}
compute = {kind = "exponential", rate = 1.0}
upload = {kind = "exponential", rate = 10.0}
[trigger]
kind = "every_upload"
[horizon]
steps = 50
[record]
every = 1
metrics = ["dist_sq"]
"""


def test_schedule_from_a_scenario_table_and_its_witness(tmp_path):
    """A real timeline (exponential delays, 3 clients): the PEP along the first K steps of
    its event table, the witness is that scenario with the problem swapped, and fedsim
    reproduces the value along the same table."""
    import fedsim
    from fedsim.worstcase.witness import simulate_witness

    path = tmp_path / "s.toml"
    path.write_text(SCENARIO)
    wc = fedsim.worst_case(scenario=fedsim.load(path), K=8, L=1.0, mu=0.1, check="SCS")
    assert wc.schedule.pattern == "table" and wc.schedule.K == 8 and wc.agree
    assert wc.witness.kind == "quadratic" and wc.witness.scenario is not None
    value, sched = simulate_witness(wc.witness)
    assert sched.reads() == wc.schedule.reads()
    assert value == pytest.approx(wc.value, rel=1e-4)
    assert np.isfinite(wc.certificate.value)
