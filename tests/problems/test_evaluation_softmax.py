"""evaluation: accuracy, loss, personalised models, time to accuracy (digits, breast cancer)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.datasets import load_breast_cancer

from fedsim.errors import ConfigError
from fedsim.problems import evaluation as ev
from fedsim.problems import splits
from fedsim.problems.logistic import LogisticProblem
from fedsim.problems.softmax import SoftmaxProblem


@pytest.fixture(scope="module")
def digits():
    return SoftmaxProblem.digits(5, split="classes", classes_per_client=2, seed=0, reg=1e-2,
                                 test_fraction=0.2)


def test_global_metrics_digits(digits):
    w0 = np.zeros(digits.dim)
    m0 = ev.global_metrics(digits, w0)
    assert m0["test_loss"] == pytest.approx(math.log(10))
    m = ev.global_metrics(digits, digits.x_star)
    assert m["test_acc"] > 0.9 and m["test_loss"] < m0["test_loss"]
    # pooled accuracy by hand
    X, y = np.vstack(digits.X_test), np.concatenate(digits.y_test)
    W = digits.x_star.reshape(digits.d, 10)
    assert m["test_acc"] == pytest.approx(np.mean(np.argmax(X @ W, 1) == y))


def test_personalised_beats_global_on_class_skew(digits):
    """Two classes per client: one local step (or the Moreau model) helps from w = 0."""
    w = np.zeros(digits.dim)
    g = ev.global_metrics(digits, w)["test_acc"]
    maml = ev.personalised_metrics(digits, w, "maml", alpha=1.0)
    me = ev.personalised_metrics(digits, w, "me", lam=0.1)
    assert maml["acc"] > g and me["acc"] > g
    assert maml["client_acc"].shape == (5,)
    models = ev.personal_models(digits, w, "maml", alpha=1.0)
    np.testing.assert_allclose(models[2], w - digits.grad(2, w))
    th = ev.personal_models(digits, w, "me", lam=0.1)
    np.testing.assert_allclose(th[1], digits.theta_hat(1, w, 0.1))
    byc = ev.personalised_metrics(digits, w, "maml", alpha=1.0, weighting="clients")
    assert byc["acc"] == pytest.approx(np.nanmean(maml["client_acc"]))


def test_metric_functions(digits):
    fns = ev.metric_functions(digits, maml_alpha=0.5, me_lam=1.0)
    assert set(fns) == {"test_acc", "test_loss", "pers_acc_maml", "pers_loss_maml",
                        "pers_acc_me", "pers_loss_me"}
    w = digits.x_star
    assert fns["test_acc"](w) == ev.global_metrics(digits, w)["test_acc"]
    assert fns["pers_acc_me"](w) == ev.personalised_metrics(digits, w, "me", lam=1.0)["acc"]


def test_binary_logistic_with_explicit_test_rows():
    X, t = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(0)) / X.std(0)
    y = np.where(t == 1, 1.0, -1.0)
    cs = splits.split_dataset(t, 4, split="iid", seed=0, test_fraction=0.25)
    prob = LogisticProblem([X[p] for p in cs.train], [y[p] for p in cs.train], nu_reg=1e-2)
    Xt, yt = [X[p] for p in cs.test], [y[p] for p in cs.test]
    m = ev.global_metrics(prob, prob.x_star, X_test=Xt, y_test=yt)
    assert m["test_acc"] > 0.93
    pm = ev.personalised_metrics(prob, prob.x_star, "me", lam=1.0, X_test=Xt, y_test=yt)
    assert pm["acc"] > 0.9
    with pytest.raises(ConfigError, match="X_test"):
        ev.global_metrics(prob, prob.x_star)


def test_time_to_accuracy():
    t = [0.0, 1.0, 2.5, 4.0]
    assert ev.time_to_accuracy(t, [0.1, 0.5, 0.8, 0.9], 0.8) == 2.5
    assert ev.time_to_accuracy(t, [0.1, np.nan, 0.7, 0.79], 0.8) == math.inf
    assert ev.time_to_accuracy(t, [0.9, 0.5, 0.8, 0.9], 0.8) == 0.0
    for bad, field in [((t, [0.1] * 3, 0.5), "accuracy"), (([1.0, 0.0], [0, 0], 0.5), "times"),
                       ((t, [0.1] * 4, 1.5), "target"), (([0.0, np.inf], [0, 0], 0.5), "times")]:
        with pytest.raises(ConfigError, match=rf"^{field}"):
            ev.time_to_accuracy(*bad)


def test_bad_inputs(digits):
    w = np.zeros(digits.dim)
    with pytest.raises(ConfigError, match="^kind"):
        ev.personalised_metrics(digits, w, "fomaml", alpha=0.1)
    with pytest.raises(ConfigError, match="^alpha"):
        ev.personalised_metrics(digits, w, "maml")
    with pytest.raises(ConfigError, match="^lam"):
        ev.personalised_metrics(digits, w, "me", lam=-1.0)
    with pytest.raises(ConfigError, match="^weighting"):
        ev.personalised_metrics(digits, w, "me", lam=1.0, weighting="mean")
    with pytest.raises(ConfigError, match=r"^w\.shape"):
        ev.global_metrics(digits, np.zeros(3))
    with pytest.raises(ConfigError, match=r"^y_test\[0\]"):
        ev.global_metrics(digits, w, X_test=digits.X_test,
                          y_test=[y + 10 for y in digits.y_test])
    nt = SoftmaxProblem.digits(2, split="iid", reg=1e-2)
    with pytest.raises(ConfigError, match="carries no test rows"):
        ev.global_metrics(nt, np.zeros(nt.dim))
