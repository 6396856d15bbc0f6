"""AsyPFL's ``E_k = pi_k E`` at extreme time ratios (fedsim.servers.asypfl module
docstring): ``pi_k`` is an exact integer, ``E_k`` above the table's int32 local-step column
is a one-line FedsimError (never an integer overflow), and a round whose local steps would
not fit the memory budget is refused before its delays are drawn."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fedsim import config
from fedsim.config.budget import set_memory_budget
from fedsim.engine import run
from fedsim.engine.models.asypfl import round_step_bytes
from fedsim.errors import FedsimError
from fedsim.servers.asypfl import MAX_LOCAL_STEPS, AsyPFLServer, staleness_indicator


def _server(comm0: float, E: int) -> AsyPFLServer:
    """Two clients, equal weights, one local step of time 1 each; client 1 communicates in
    time 1, client 0 in ``comm0``: pi_0 = floor(comm0 (1 + 1e-12))."""
    s = AsyPFLServer(np.array([0.5, 0.5]), E)
    s.report(1, 1.0, 1, 1.0)
    s.report(0, 1.0, 1, comm0)
    return s


def test_pi_k_is_the_exact_integer_far_beyond_int64():
    pi = staleness_indicator(np.array([1.0, 1e-30]), np.ones(2), np.array([0.5, 0.5]), 0)
    ratio = 1.0 / (1.0 * 0.5 * (1e-30 / (1.0 * 0.5)))  # DeltaT^c_0 / (DeltaT^g_0 p^0 pi_min)
    assert isinstance(pi, int)
    assert pi == math.floor(ratio * (1.0 + 1e-12)) > np.iinfo(np.int64).max


def test_E_k_at_the_limit_runs_and_one_more_is_a_clear_error():
    assert MAX_LOCAL_STEPS == 2**31 - 1
    s = _server(float(MAX_LOCAL_STEPS), 1)  # ratio exactly 2^31 - 1
    assert s.epochs(0) == MAX_LOCAL_STEPS and s.pi[0] == MAX_LOCAL_STEPS
    s = _server(float(MAX_LOCAL_STEPS), 2)
    with pytest.raises(FedsimError, match=r"client 0's E_k = pi_k E = 2147483647 \* 2 "
                                          r"local steps is over 2147483647"):
        s.epochs(0)
    assert s.pi[0] == 1  # unchanged: the error comes before anything is stored


def test_pi_k_beyond_int64_is_a_fedsim_error_not_an_overflow():
    s = _server(1e30, 1)
    with pytest.raises(FedsimError, match="E_k = pi_k E"):
        s.epochs(0)


def _scenario(tiny: float) -> config.Scenario:
    """Client 1 communicates in ``tiny`` time, client 0 in 2: pi_0 = floor(1 / tiny)."""
    return config.Scenario.from_dict({
        "name": "extreme", "seed": 0,
        "problem": {"kind": "quadratic", "n": 2, "dim": 2, "mu": 0.1, "L": 1.0,
                    "heterogeneity": 1.0, "noise": "additive", "noise_sd": 0.1, "seed": 0},
        "algorithm": {"name": "asypfl", "client_rule": "asypfl", "E": 2, "eta": 0.1,
                      "delta": 0.1, "gamma": 0.0, "batch": 4, "lam": 1.0},
        "delays": {"compute": {"kind": "constant", "value": 1.0}, "compute_per": "step",
                   "download": {"kind": "constant", "value": 1.0},
                   "upload": {"kind": "constant", "value": 1.0},
                   "override": [{"clients": [1],
                                 "download": {"kind": "constant", "value": tiny},
                                 "upload": {"kind": "constant", "value": tiny}}]},
        "trigger": {"kind": "every_upload"}, "horizon": {"steps": 6},
        "record": {"every": 1, "metrics": ["grad_sq"]}})


def test_run_with_an_astronomical_ratio_is_a_fedsim_error():
    with pytest.raises(FedsimError, match="E_k = pi_k E"):
        run(_scenario(1e-30), 0)


def test_a_round_over_the_memory_budget_is_refused_before_it_is_drawn():
    sc = _scenario(1e-4)  # pi_0 = 10^4: E_0 = 20000 local steps after client 0's first round
    tr = run(sc, 0)
    assert tr.info["pi"].tolist() == [10000, 1] and tr.info["E_k"].tolist() == [20000, 2]
    need = 20000 * round_step_bytes(2, 4)
    set_memory_budget(need - 1)
    try:
        with pytest.raises(FedsimError, match="E_k = pi_k E = 20000 local steps needs about"):
            run(sc, 0)
        set_memory_budget(need)
        assert run(sc, 0).equals(tr)
    finally:
        set_memory_budget(None)


def test_cli_reports_the_astronomical_ratio_in_one_line(tmp_path, capsys):
    """End to end: ``fedsim run`` on such a scenario exits 2 with one line on stderr."""
    from fedsim.cli import main

    path = tmp_path / "extreme.toml"
    path.write_text("\n".join([
        'name = "extreme"', "seed = 0", "[problem]", 'kind = "quadratic"', "n = 2",
        "dim = 2", "mu = 0.1", "L = 1.0", "[algorithm]", 'name = "asypfl"',
        'client_rule = "asypfl"', "E = 2", "eta = 0.1", "delta = 0.1", "lam = 1.0",
        "batch = 4", "[delays]", 'compute = {kind = "constant", value = 1.0}',
        'compute_per = "step"', 'download = {kind = "constant", value = 1.0}',
        'upload = {kind = "constant", value = 1.0}', "[[delays.override]]",
        "clients = [1]", 'download = {kind = "constant", value = 1e-30}',
        'upload = {kind = "constant", value = 1e-30}', "[trigger]",
        'kind = "every_upload"', "[horizon]", "steps = 6", ""]))
    assert main(["run", str(path), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "client 0's E_k = pi_k E" in err and "Traceback" not in err
