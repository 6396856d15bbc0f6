"""``row_softmax`` is ``scipy.special.softmax(Z, axis=1)`` bit for bit, and the evaluation's
one-product accuracy/loss equals :func:`predict` and :func:`data_loss` (hypothesis)."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.special import softmax

from fedsim.problems import evaluation
from fedsim.problems.softmax import SoftmaxProblem
from fedsim.problems.softmax_kernel import row_logsumexp, row_softmax

finite = st.floats(-700.0, 700.0, allow_nan=False, allow_infinity=False)


@given(arrays(np.float64, st.tuples(st.integers(1, 40), st.integers(1, 12)), elements=finite))
def test_row_softmax_is_scipy_softmax_bitwise(Z):
    assert np.array_equal(row_softmax(Z), softmax(Z, axis=1))


def _lse_reference(Z):
    """The former ``row_logsumexp``: the row maxima by ``Z.max(axis=1)``."""
    m = Z.max(axis=1)
    m = np.where(np.isfinite(m), m, 0.0)
    with np.errstate(divide="ignore"):
        return np.log(np.exp(Z - m[:, None]).sum(axis=1)) + m


@given(arrays(np.float64, st.tuples(st.integers(1, 40), st.integers(1, 12)),
              elements=st.floats(-800.0, 800.0, allow_nan=False) | st.sampled_from(
                  [0.0, -0.0, np.inf, -np.inf])))
def test_row_logsumexp_column_maxima_bitwise(Z):
    """The column-by-column maxima give the numbers of ``Z.max(axis=1)`` bit for bit
    (signed zeros and infinite logits included)."""
    with np.errstate(invalid="ignore", over="ignore"):
        got, want = row_logsumexp(Z), _lse_reference(Z)
    assert np.array_equal(got, want, equal_nan=True)
    assert np.array_equal(np.signbit(got), np.signbit(want))


def test_row_logsumexp_hand_case():
    # log(e^0 + e^0) = log 2; log(e^1 + e^{-inf}) = 1
    got = row_logsumexp(np.array([[0.0, 0.0], [1.0, -np.inf]]))
    assert got[0] == np.log(2.0) and got[1] == 1.0


def test_row_softmax_hand_case():
    # exp(0), exp(-log 3) = 1/3 over 4/3: [3/4, 1/4]; a constant row is uniform
    Z = np.array([[np.log(3.0), 0.0], [5.0, 5.0]])
    assert np.allclose(row_softmax(Z), [[0.75, 0.25], [0.5, 0.5]], rtol=0, atol=1e-15)


def _problem():
    rng = np.random.default_rng(3)
    X = [rng.standard_normal((12, 4)) for _ in range(3)]
    y = [rng.integers(0, 3, 12) for _ in range(3)]
    Xt = [rng.standard_normal((5, 4)) for _ in range(3)]
    yt = [rng.integers(0, 3, 5) for _ in range(3)]
    return SoftmaxProblem(X, y, n_classes=3, reg=0.1), Xt, yt


@given(arrays(np.float64, 12, elements=st.floats(-5.0, 5.0)), st.sampled_from(["rows",
                                                                                  "clients"]))
def test_models_metrics_equal_predict_and_data_loss(flat, weighting):
    prob, Xt, yt = _problem()
    models = [flat * (k + 1) for k in range(3)]
    got = evaluation.models_metrics(prob, models, weighting=weighting, X_test=Xt, y_test=yt)
    acc = [float(np.mean(evaluation.predict(prob, m, X) == y)) for m, X, y in
           zip(models, Xt, yt, strict=True)]
    loss = [evaluation.data_loss(prob, m, X, y) for m, X, y in zip(models, Xt, yt, strict=True)]
    assert got["client_acc"].tolist() == acc
    assert got["client_loss"].tolist() == loss
