"""The table path's progress bar (one tqdm bar over the replay's steps, updated between
chunks of the compiled loop) and its personal-metric check (only a client form that
declares a personal row feeds ``pers_*_beta``; anything else is a ConfigError raised
before the table is written)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fedsim import config
from fedsim.algorithms import get_algorithm
from fedsim.engine import dispatch, run
from fedsim.engine.replay import driver
from fedsim.engine.setup import initial_model
from fedsim.errors import ConfigError
from fedsim.local import make_client_rule
from fedsim.local.forms import ClientForm

ROOT = Path(__file__).resolve().parents[2]
PROBLEM = {"kind": "softmax", "n_clients": 4, "split": "classes", "classes_per_client": 3,
           "test_fraction": 0.2, "validation_fraction": 0.2, "reg": 1e-3, "seed": 0,
           "min_rows": 5}
DELAYS = {"compute": {"kind": "exponential", "rate": 10.0}, "compute_per": "step",
          "download": {"kind": "exponential", "rate": 2.0},
          "upload": {"kind": "exponential", "rate": 2.0}}
ALGS = {
    "fedasync": {"name": "fedasync", "Q": 2, "eta": 0.1, "batch": 4},
    "fedbuff": {"name": "fedbuff", "Q": 2, "eta": 0.1, "buffer": 2, "batch": 4},
    "fedavg": {"name": "fedavg", "client_rule": "sgd", "Q": 2, "eta": 0.1, "batch": 4},
    "asypfl": {"name": "asypfl", "client_rule": "asypfl", "E": 2, "eta": 0.1, "delta": 0.1,
               "lam": 1.0, "batch": 4},
}


def _scenario(alg: str, metrics: list[str], steps: int = 40) -> config.Scenario:
    d = {"name": "t", "seed": 5, "problem": PROBLEM, "algorithm": ALGS[alg],
         "delays": DELAYS, "horizon": {"steps": steps},
         "record": {"every": 5, "metrics": metrics}}
    if alg == "asypfl":
        d["trigger"] = {"kind": "every_upload"}
    return config.Scenario.from_dict(d)


@pytest.mark.parametrize("alg", ["fedasync", "fedbuff", "fedavg"])
@pytest.mark.parametrize("metric", ["pers_acc_beta", "val_pers_loss_beta"])
def test_rules_without_personal_rows_refuse_personal_metrics_before_any_work(
        alg, metric, monkeypatch):
    """SGD's state rows are scratch: the metric is refused, naming it, and no table is
    written (the writers are replaced by one that fails)."""
    def no_table(*a, **k):
        raise AssertionError("the table was written before the check")

    monkeypatch.setattr(dispatch, "write_tables", no_table)
    with pytest.raises(ConfigError, match=f"record.metrics.*{metric}|{metric}.*personal"):
        run(_scenario(alg, ["f_gap", metric]), 0)


def test_replay_table_refuses_keep_personal_without_a_personal_row():
    sc = _scenario("fedavg", ["f_gap"])
    p = dispatch.problem_for(sc)
    tb = list(dispatch.write_tables(sc, p, [0]).tables)
    with pytest.raises(ConfigError, match="keep_personal"):
        driver.replay_table(sc, tb, replicates=[0], problem=p, keep_personal=True)


def test_only_a_declared_personal_row_feeds_personal_metrics():
    """AsyPFL's form declares row 0 (beta_k); the same form with the declaration removed
    is refused."""
    sc = _scenario("asypfl", ["f_gap", "pers_acc_beta"])
    p = dispatch.problem_for(sc)
    cf = driver.client_form(make_client_rule(sc.algorithm, p))
    assert isinstance(cf, ClientForm) and cf.personal_row == 0 and cf.c_rows >= 1
    plan = driver.metric_plan(sc, p)
    driver.check_personal(plan, cf)  # no error
    with pytest.raises(ConfigError, match="pers_acc_beta"):
        driver.check_personal(plan, dataclasses.replace(cf, personal_row=-1))
    tr = run(sc, 0)
    assert np.isfinite(tr.metrics["pers_acc_beta"]).all()


@pytest.mark.parametrize("alg", ["fedbuff", "fedavg", "asypfl"])
def test_progress_bar_draws_on_stderr_and_changes_nothing(alg, capfd):
    """The bar is drawn between chunks of the loop; the chunked replay is the same Trace."""
    sc = _scenario(alg, ["f_gap", "grad_sq"], steps=120)
    plain = run(sc, 1)
    assert "replay" not in capfd.readouterr().err
    shown = run(sc, 1, progress=True)
    err = capfd.readouterr().err
    assert "replay" in err and "/120" in err and "step" in err
    assert plain.equals(shown)


def test_chunked_replay_one_is_bitwise_the_whole_loop():
    """replay_one with a progress callback (about PROGRESS_CHUNKS kernel calls) gives the
    whole loop's numbers; the callback sees increasing step counts ending at the total."""
    sc = _scenario("fedbuff", ["f_gap"], steps=90)
    p = dispatch.problem_for(sc)
    tb, = dispatch.write_tables(sc, p, [2]).tables
    cf = driver.client_form(make_client_rule(sc.algorithm, p))
    sf = get_algorithm(sc.algorithm.name).server(sc.algorithm, p).replay_form()
    plan = driver.metric_plan(sc, p)
    w0 = initial_model(p, sc)
    seen: list[int] = []
    a = driver.replay_one(tb, cf, sf, plan, driver.noise_streams(sc.seed, [2], p.n,
                                                                 cf.compiled)[0], w0)
    b = driver.replay_one(tb, cf, sf, plan, driver.noise_streams(sc.seed, [2], p.n,
                                                                 cf.compiled)[0], w0,
                          progress=seen.append)
    assert len(seen) > 1 and seen == sorted(seen) and seen[-1] == tb.steps_done
    np.testing.assert_array_equal(a.final_w, b.final_w)
    for k in a.metrics:
        np.testing.assert_array_equal(a.metrics[k], b.metrics[k])


@pytest.mark.parametrize("flag", [[], ["--no-progress"]])
def test_cli_progress_bar_on_stderr_by_default_only(tmp_path, flag):
    out = tmp_path / "r.csv"
    res = subprocess.run([sys.executable, "-m", "fedsim.cli", "run",
                          str(ROOT / "examples" / "fedbuff_quadratic.toml"), "--out", str(out),
                          "--steps", "300", *flag], capture_output=True, text=True,
                         timeout=300, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    assert res.stdout.count("\n") == 1
    if flag:
        assert "replay" not in res.stderr and "%|" not in res.stderr
    else:
        assert "replay:" in res.stderr and "/300" in res.stderr and "%|" in res.stderr


def test_asypfl_run_batch_replays_every_replicate_in_one_call(monkeypatch):
    """AsyPFL is a registered execution model: run_batch writes all its tables and makes one
    replay_table call for them; each Trace equals run's, extras included."""
    from fedsim.engine import batch
    from fedsim.engine.replay import driver as drv

    sc = _scenario("asypfl", ["f_gap", "pers_acc_beta"], steps=50)
    calls: list[int] = []
    real = drv.replay_table

    def counted(scenario, tables, *a, **k):
        calls.append(len(tables))
        return real(scenario, tables, *a, **k)

    monkeypatch.setattr(dispatch, "replay_table", counted)
    reps = [4, 0, 2]
    got = batch.run_batch(sc, reps)
    assert calls == [3]
    for tr, r in zip(got, reps, strict=True):
        one = run(sc, r)
        assert tr.equals(one)
        for key in ("beta", "pi", "E_k", "local_steps"):
            np.testing.assert_array_equal(tr.info[key], one.info[key])
