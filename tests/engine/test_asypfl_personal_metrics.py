"""AsyPFL on softmax digits records its clients' personal models beta_k: pers_*_beta and
val_pers_*_beta are the mean over clients of beta_k on client k's own rows, at the metric
steps; recording them changes nothing else; other algorithms refuse them."""

from __future__ import annotations

import numpy as np
import pytest

from fedsim import config
from fedsim.engine import run
from fedsim.errors import FedsimError
from fedsim.problems import evaluation as ev

PROBLEM = {"kind": "softmax", "n_clients": 5, "split": "classes", "classes_per_client": 3,
           "test_fraction": 0.2, "validation_fraction": 0.2, "reg": 1e-3, "seed": 0,
           "min_rows": 5}
DELAYS = {"compute": {"kind": "exponential", "rate": 10.0}, "compute_per": "step",
          "download": {"kind": "exponential", "rate": 2.0},
          "upload": {"kind": "exponential", "rate": 2.0}}


def _scenario(metrics, *, lam=2.0, name="asypfl", every=7):
    alg = ({"name": "asypfl", "client_rule": "asypfl", "E": 2, "eta": 0.1, "delta": 0.1,
            "lam": lam, "batch": 4} if name == "asypfl" else
           {"name": "fedavg", "client_rule": "sgd", "Q": 2, "eta": 0.1, "batch": 4})
    d = {"name": "t", "seed": 3, "problem": PROBLEM, "algorithm": alg, "delays": DELAYS,
         "horizon": {"steps": 60}, "record": {"every": every, "metrics": list(metrics)}}
    if name == "asypfl":
        d["trigger"] = {"kind": "every_upload"}
    return config.Scenario.from_dict(d)


@pytest.fixture(scope="module")
def traced():
    sc = _scenario(["pers_acc_beta", "pers_loss_beta", "val_pers_acc_beta",
                    "val_pers_loss_beta", "f_gap"])
    return sc, run(sc, 0)


def test_step0_and_last_values_are_the_personal_models(traced):
    sc, tr = traced
    from fedsim.engine.setup import problem_for

    p = problem_for(sc)
    beta0 = np.zeros((p.n, p.dim))  # beta_k^0 = omega^0 = 0
    m0 = ev.models_metrics(p, beta0)
    assert tr.metrics["pers_acc_beta"][0] == m0["acc"]
    assert tr.metrics["pers_loss_beta"][0] == pytest.approx(np.log(10))
    beta = tr.info["beta"]
    assert not np.allclose(beta, 0.0)
    last = ev.models_metrics(p, beta)
    assert tr.metrics["pers_acc_beta"][-1] == last["acc"]
    assert tr.metrics["pers_loss_beta"][-1] == last["loss"]
    Xv, yv = ev.validation_rows(p)
    lv = ev.models_metrics(p, beta, X_test=Xv, y_test=yv)
    assert tr.metrics["val_pers_acc_beta"][-1] == lv["acc"]
    assert tr.metrics["val_pers_loss_beta"][-1] == lv["loss"]
    # personal models learn: the test loss falls from log(10)
    assert tr.metrics["pers_loss_beta"][-1] < tr.metrics["pers_loss_beta"][0] - 0.1
    assert tr.metric_steps.size == len(tr.metrics["pers_acc_beta"])


def test_recording_them_changes_nothing_else(traced):
    _, tr = traced
    plain = run(_scenario(["f_gap"]), 0)
    np.testing.assert_array_equal(plain.final_w, tr.final_w)
    np.testing.assert_array_equal(plain.time, tr.time)
    np.testing.assert_array_equal(plain.metrics["f_gap"], tr.metrics["f_gap"])
    np.testing.assert_array_equal(plain.info["beta"], tr.info["beta"])


def test_lambda_zero_personal_models_ignore_the_server():
    """lam = 0: beta_k is plain local SGD on F_k, so it does not depend on eta (the step of
    the local copy omega_k, through which the server could act on beta)."""
    a = run(_scenario(["pers_acc_beta"], lam=0.0), 1)
    sc = _scenario(["pers_acc_beta"], lam=0.0).to_dict()
    sc["algorithm"]["eta"] = 0.3
    b = run(config.Scenario.from_dict(sc), 1)
    assert not np.array_equal(a.final_w, b.final_w)
    np.testing.assert_array_equal(a.info["beta"], b.info["beta"])


def test_other_algorithms_refuse_personal_metrics():
    with pytest.raises(FedsimError, match="personal models"):
        run(_scenario(["pers_acc_beta"], name="fedavg"), 0)
    sc = _scenario(["val_acc", "val_loss"], name="fedavg")
    tr = run(sc, 0)  # the global model's validation metrics work for any algorithm
    from fedsim.engine.setup import problem_for

    p = problem_for(sc)
    Xv, yv = ev.validation_rows(p)
    g = ev.global_metrics(p, tr.final_w, X_test=Xv, y_test=yv)
    assert tr.metrics["val_acc"][-1] == g["test_acc"]
    assert tr.metrics["val_loss"][-1] == g["test_loss"]


def test_validation_metrics_need_validation_rows():
    sc = _scenario(["val_acc"]).to_dict()
    sc["problem"] = {k: v for k, v in PROBLEM.items() if k != "validation_fraction"}
    with pytest.raises(FedsimError, match="validation rows"):
        run(config.Scenario.from_dict(sc), 0)
