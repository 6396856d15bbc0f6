"""``fedsim.worst_case`` and ``fedsim worstcase``: the lazy door, its object, exit codes."""

import math
import subprocess
import sys

import pytest

import fedsim
from fedsim.cli import main
from fedsim.errors import FedsimError


def test_import_fedsim_does_not_import_cvxpy():
    code = ("import sys, fedsim\nassert 'cvxpy' not in sys.modules\n"
            "f = fedsim.worst_case\nassert 'cvxpy' not in sys.modules\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


def test_the_issue_call():
    wc = fedsim.worst_case(method="delayed_gd", function_class="strongly_convex", L=1.0,
                           mu=0.1, step=0.25, delays=[1] * 10, measure="dist_sq")
    assert round(wc.value, 4) == 0.5954
    assert wc.status.startswith("optimal") and wc.solver == "CLARABEL" and wc.seconds > 0
    assert wc.witness.kind == "quadratic" and wc.witness.h == pytest.approx(0.1)
    nc = fedsim.worst_case(method="delayed_gd", function_class="nonconvex", L=1.0,
                           step=0.25, delays=[0, 1, 1, 1], measure="min_grad_sq")
    assert math.isfinite(nc.value) and nc.value > 0


def test_bad_inputs_are_config_errors():
    with pytest.raises(FedsimError):
        fedsim.worst_case(step=0.25, delays=[1, 1], measure="nope")
    with pytest.raises(FedsimError):
        fedsim.worst_case(function_class="nonconvex", step=0.25, delays=[1], measure="dist_sq")
    with pytest.raises(FedsimError):
        fedsim.worst_case(step=0.25)
    assert main(["worstcase", "--step", "0.25", "--K", "3"]) == 2


def test_cli_prints_solver_and_status(capsys):
    assert main(["worstcase", "--step", "0.25", "--mu", "0.1", "--cyclic", "0,1", "--K", "5",
                 "--clients", "2"]) == 0
    out = capsys.readouterr().out
    assert "CLARABEL" in out and "optimal" in out
