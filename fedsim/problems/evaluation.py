"""Held-out evaluation: test accuracy and loss, personalised accuracy, time to accuracy.

Works for :class:`~fedsim.problems.softmax.SoftmaxProblem` (labels ``0..C-1``,
prediction ``argmax_c (W^T x)_c``) and :class:`~fedsim.problems.logistic.LogisticProblem`
(labels ``-1/+1``, prediction ``+1`` iff ``x^T w >= 0``).  The test rows are the
problem's own ``X_test``/``y_test`` (one array per client; SoftmaxProblem built with
``test_fraction > 0``) or are passed explicitly (``X_test=``, ``y_test=``), which is how
a LogisticProblem (it carries no test rows) is evaluated.

Quantities (all on the test rows; the loss is the data loss, WITHOUT the regulariser):

* global model ``w``: :func:`global_metrics` -> ``test_acc``, ``test_loss`` pooled over
  every client's test rows;
* personalised models (:func:`personal_models`):
  ``"maml"``: ``w_i = w - alpha grad f_i(w)``, one full gradient step on client i's own
  training objective (Per-FedAvg's evaluation after one step of adaptation);
  ``"me"``: ``w_i = theta_hat_i(w, lam) = argmin f_i(theta) + lam/2 ||theta - w||^2``
  (the Moreau-envelope personal model of pFedMe / PersA-FL-ME);
  :func:`personalised_metrics` evaluates client i's model on client i's test rows;
* models the clients hold themselves (AsyPFL's personal models ``beta_k``, Ma et al.
  2022 Algorithm 1): :func:`models_metrics` evaluates client i's given model on client
  i's rows; the paper's "mean testing accuracy ... the average testing accuracy of all
  clients" (Sec. 4.1) is ``weighting="clients"``;
* validation rows (``X_val``/``y_val``, carved from the training rows by
  :func:`fedsim.problems.splits.validation_split`): :func:`validation_rows` gives them
  in the form the functions here take as ``X_test``/``y_test``, for choosing
  hyper-parameters without the test rows;
* :func:`time_to_accuracy`: the first recorded time at which a (time, accuracy) curve
  reaches a target.

:func:`metric_functions` bundles these as ``name -> callable(w) -> float`` for a trace's
metric set (``test_acc``, ``test_loss``, ``pers_acc_maml``, ``pers_loss_maml``,
``pers_acc_me``, ``pers_loss_me``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from fedsim.errors import check_choice, check_number, check_positive, require
from fedsim.problems.base import Problem
from fedsim.problems.softmax_kernel import row_logsumexp

__all__ = [
    "PERSONAL_KINDS",
    "data_loss",
    "global_metrics",
    "metric_functions",
    "models_metrics",
    "models_metrics_batch",
    "personal_models",
    "personalised_metrics",
    "pooled_metrics_batch",
    "predict",
    "test_rows",
    "time_to_accuracy",
    "validation_rows",
]

PERSONAL_KINDS: tuple[str, ...] = ("maml", "me")


def _kind(problem: Problem) -> str:
    from fedsim.problems.logistic import LogisticProblem
    from fedsim.problems.softmax import SoftmaxProblem

    if isinstance(problem, SoftmaxProblem):
        return "softmax"
    if isinstance(problem, LogisticProblem):
        return "logistic"
    raise TypeError(f"evaluation supports SoftmaxProblem and LogisticProblem, "
                    f"got {type(problem).__name__}")


def _model(problem: Problem, w: Any) -> np.ndarray:
    w = np.asarray(w, dtype=np.float64)
    require(w.shape == (problem.dim,), "w.shape", w.shape, f"must be ({problem.dim},)")
    return w


def _scores(problem: Problem, w: np.ndarray, X: np.ndarray, kind: str) -> np.ndarray:
    if kind == "softmax":
        return X @ w.reshape(problem.d, problem.n_classes)  # type: ignore[attr-defined]
    return X @ w


def _labels(s: np.ndarray, kind: str) -> np.ndarray:
    """Predicted labels from the scores ``s`` of some rows (argmax; sign for binary)."""
    if kind == "softmax":
        return np.argmax(s, axis=1).astype(np.int64)
    return np.where(s >= 0.0, 1.0, -1.0)


def _losses(s: np.ndarray, y: np.ndarray, kind: str) -> np.ndarray:
    """Per-row data losses from the scores ``s`` of the rows labelled ``y``."""
    if kind == "softmax":
        return row_logsumexp(s) - s[np.arange(s.shape[0]), y]
    return np.logaddexp(0.0, -y * s)


def predict(problem: Problem, w: Any, X: Any) -> np.ndarray:
    """Predicted labels of the rows ``X`` under model ``w`` (argmax; sign for binary)."""
    kind = _kind(problem)
    w = _model(problem, w)
    X = np.asarray(X, dtype=np.float64)
    return _labels(_scores(problem, w, X, kind), kind)


def _row_losses(problem: Problem, w: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    kind = _kind(problem)
    return _losses(_scores(problem, w, X, kind), y, kind)


def data_loss(problem: Problem, w: Any, X: Any, y: Any) -> float:
    """Mean per-row data loss (cross-entropy / logistic; no regulariser); NaN if no rows."""
    w = _model(problem, w)
    X = np.asarray(X, dtype=np.float64)
    if X.shape[0] == 0:
        return math.nan
    return float(np.mean(_row_losses(problem, w, X, np.asarray(y))))


def test_rows(problem: Problem, X_test: Sequence[np.ndarray] | None = None,
              y_test: Sequence[np.ndarray] | None = None
              ) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Per-client test rows: the given ones (checked) or the problem's ``X_test``/``y_test``."""
    kind = _kind(problem)
    require((X_test is None) == (y_test is None), "X_test",
            "<given>" if X_test is not None else None, "and y_test must be given together")
    if X_test is None:
        X_test = getattr(problem, "X_test", None)
        y_test = getattr(problem, "y_test", None)
        require(X_test is not None, "X_test", None,
                f"must be given: this {type(problem).__name__} carries no test rows "
                "(build it with test_fraction > 0 or pass X_test and y_test)")
    require(isinstance(X_test, (list, tuple)) and len(X_test) == problem.n, "len(X_test)",
            len(X_test) if isinstance(X_test, (list, tuple)) else type(X_test).__name__,
            f"must be a list of n = {problem.n} arrays")
    require(isinstance(y_test, (list, tuple)) and len(y_test) == problem.n, "len(y_test)",
            len(y_test) if isinstance(y_test, (list, tuple)) else type(y_test).__name__,
            f"must be a list of n = {problem.n} arrays")
    d = problem.d if kind == "softmax" else problem.dim  # type: ignore[attr-defined]
    Xs, ys = [], []
    for i, (Xi, yi) in enumerate(zip(X_test, y_test, strict=True)):
        Xi = np.asarray(Xi, dtype=np.float64)
        yi = np.asarray(yi)
        require(Xi.ndim == 2 and Xi.shape[1] == d, f"X_test[{i}].shape", Xi.shape,
                f"must be (rows, {d})")
        require(yi.shape == (Xi.shape[0],), f"y_test[{i}].shape", yi.shape,
                f"must be ({Xi.shape[0]},)")
        if kind == "softmax":
            C = problem.n_classes  # type: ignore[attr-defined]
            require(yi.size == 0 or (np.all(yi == np.round(yi)) and yi.min() >= 0
                                     and yi.max() < C),
                    f"y_test[{i}]", yi[:5], f"must hold integer labels in 0..{C - 1}")
            yi = yi.astype(np.int64)
        else:
            require(bool(np.all((yi == 1) | (yi == -1))), f"y_test[{i}]", yi[:5],
                    "must hold only -1/+1 labels")
            yi = yi.astype(np.float64)
        Xs.append(Xi)
        ys.append(yi)
    return Xs, ys


def global_metrics(problem: Problem, w: Any, *, X_test: Sequence[np.ndarray] | None = None,
                   y_test: Sequence[np.ndarray] | None = None) -> dict[str, float]:
    """``{"test_acc", "test_loss"}`` of the global model over all clients' test rows pooled."""
    w = _model(problem, w)
    Xs, ys = test_rows(problem, X_test, y_test)
    return _pooled_metrics(problem, w, np.vstack(Xs), np.concatenate(ys))


def _pooled_metrics(problem: Problem, w: np.ndarray, X: np.ndarray,
                    y: np.ndarray) -> dict[str, float]:
    """:func:`global_metrics` on checked, pooled test rows."""
    acc, loss = pooled_metrics_batch(problem, w[None, :], X, y)
    return {"test_acc": float(acc[0]), "test_loss": float(loss[0])}


def _batch_scores(problem: Problem, W: np.ndarray, X: np.ndarray) -> np.ndarray:
    """The scores of the rows ``X`` under each model ``W[s]``: ``(S, rows)`` (logistic) or
    ``(S, rows, C)`` (softmax), one matrix product per model, as :func:`_scores` computes
    it for one."""
    if _kind(problem) == "softmax":
        C = problem.n_classes  # type: ignore[attr-defined]
        return np.stack([X @ W[s].reshape(-1, C) for s in range(W.shape[0])])
    return np.stack([X @ W[s] for s in range(W.shape[0])])


def _batch_hits_losses(problem: Problem, W: np.ndarray, X: np.ndarray,
                       y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(hits, losses)``, both ``(S, rows)``: whether model ``W[s]`` predicts row j's
    label (:func:`predict`) and its per-row data loss (:func:`data_loss`)."""
    kind = _kind(problem)
    s = _batch_scores(problem, W, X)
    if kind == "softmax":  # the models' rows stacked: (S rows) x C scores
        S, m, C = s.shape
        flat, yy = s.reshape(S * m, C), np.tile(y, S)
        return ((_labels(flat, kind) == yy).reshape(S, m),
                _losses(flat, yy, kind).reshape(S, m))
    return _labels(s, kind) == y[None, :], _losses(s, y[None, :], kind)


def pooled_metrics_batch(problem: Problem, W: Any, X: np.ndarray,
                         y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(test_acc, test_loss)`` of every model ``W[s]`` (``W``: ``(S, dim)``) on the
    checked, pooled rows ``X``/``y`` (:func:`test_rows`): one pass for all S models, each
    model's numbers those of :func:`global_metrics` (the accuracy a count over the rows, the
    loss the mean of the per-row losses)."""
    W = np.asarray(W, dtype=np.float64)
    require(X.shape[0] >= 1, "X_test", "<0 rows>", "must hold at least one test row")
    require(W.ndim == 2 and W.shape[1] == problem.dim, "W.shape", W.shape,
            f"must be (models, {problem.dim})")
    hits, losses = _batch_hits_losses(problem, W, X, y)
    return np.mean(hits, axis=1), np.mean(losses, axis=1)


def personal_models(problem: Problem, w: Any, kind: str, *, alpha: float | None = None,
                    lam: float | None = None) -> list[np.ndarray]:
    """Client i's personal model from the global ``w``.

    ``kind="maml"``: ``w - alpha grad f_i(w)`` (``alpha > 0``, full gradient of the
    client's training objective); ``kind="me"``: ``theta_hat_i(w, lam)`` (``lam > 0``).
    """
    w = _model(problem, w)
    kind = check_choice("kind", kind, PERSONAL_KINDS)
    if kind == "maml":
        a = check_positive("alpha", alpha)
        return [w - a * problem.grad(i, w) for i in range(problem.n)]
    lv = check_positive("lam", lam)
    return [problem.theta_hat(i, w, lv) for i in range(problem.n)]


def personalised_metrics(problem: Problem, w: Any, kind: str, *, alpha: float | None = None,
                         lam: float | None = None, weighting: str = "rows",
                         X_test: Sequence[np.ndarray] | None = None,
                         y_test: Sequence[np.ndarray] | None = None) -> dict[str, Any]:
    """Personalised test accuracy and loss: client i's model on client i's test rows.

    ``weighting="rows"`` pools every test row (clients weighted by their test rows);
    ``"clients"`` averages the per-client values over the clients that have test rows.
    Returns ``{"acc", "loss", "client_acc", "client_loss"}`` (per-client arrays; NaN
    for a client without test rows).
    """
    weighting = check_choice("weighting", weighting, ("rows", "clients"))
    Xs, ys = test_rows(problem, X_test, y_test)
    return _personalised(problem, w, kind, alpha, lam, Xs, ys, weighting)


def _personalised(problem: Problem, w: Any, kind: str, alpha: float | None,
                  lam: float | None, Xs: list[np.ndarray], ys: list[np.ndarray],
                  weighting: str) -> dict[str, Any]:
    """:func:`personalised_metrics` on rows :func:`test_rows` has checked."""
    models = personal_models(problem, w, kind, alpha=alpha, lam=lam)
    return _evaluate(problem, models, Xs, ys, weighting)


def models_metrics(problem: Problem, models: Any, *, weighting: str = "clients",
                   X_test: Sequence[np.ndarray] | None = None,
                   y_test: Sequence[np.ndarray] | None = None) -> dict[str, Any]:
    """Client i's own model ``models[i]`` on client i's rows (default: its test rows).

    ``models`` is a sequence (or an ``(n, dim)`` array) of one model per client.
    ``weighting`` as in :func:`personalised_metrics`; the default ``"clients"`` is the
    mean over clients (AsyPFL's "mean testing accuracy", Ma et al. 2022 Sec. 4.1).
    """
    weighting = check_choice("weighting", weighting, ("rows", "clients"))
    Xs, ys = test_rows(problem, X_test, y_test)
    require(len(models) == problem.n, "len(models)", len(models),
            f"must be one model per client (n = {problem.n})")
    return _evaluate(problem, [_model(problem, m) for m in models], Xs, ys, weighting)


def _evaluate(problem: Problem, models: Sequence[np.ndarray], Xs: list[np.ndarray],
              ys: list[np.ndarray], weighting: str) -> dict[str, Any]:
    """Client i's model on client i's (checked) rows; see :func:`personalised_metrics`."""
    M = np.stack([np.asarray(m, dtype=np.float64) for m in models])[None]
    a, l_, acc, loss = models_metrics_batch(problem, M, Xs, ys, weighting)
    return {"acc": float(a[0]), "loss": float(l_[0]), "client_acc": acc[0],
            "client_loss": loss[0]}


def models_metrics_batch(problem: Problem, models: Any, Xs: list[np.ndarray],
                         ys: list[np.ndarray], weighting: str
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Client i's model ``models[s, i]`` on client i's checked rows ``Xs[i]``/``ys[i]``
    (:func:`test_rows`) for every set ``s`` of models (``models``: ``(S, n, dim)``, e.g. the
    personal models at each recorded step): ``(acc, loss, client_acc, client_loss)`` of
    shapes ``(S,)``, ``(S,)``, ``(S, n)``, ``(S, n)``, each ``s`` the numbers of
    :func:`models_metrics` on ``models[s]`` (``weighting`` as there; NaN for a client
    without rows)."""
    M = np.asarray(models, dtype=np.float64)
    require(M.ndim == 3 and M.shape[1:] == (problem.n, problem.dim), "models.shape",
            M.shape, f"must be (sets, {problem.n}, {problem.dim})")
    weighting = check_choice("weighting", weighting, ("rows", "clients"))
    n_rows = np.array([X.shape[0] for X in Xs])
    require(int(n_rows.sum()) >= 1, "X_test", "<0 rows>", "must hold at least one test row")
    S = M.shape[0]
    acc = np.full((S, problem.n), math.nan)
    loss = np.full((S, problem.n), math.nan)
    for i, (Xi, yi) in enumerate(zip(Xs, ys, strict=True)):
        if Xi.shape[0]:
            hits, losses = _batch_hits_losses(problem, np.ascontiguousarray(M[:, i]), Xi, yi)
            acc[:, i] = np.mean(hits, axis=1)
            loss[:, i] = np.mean(losses, axis=1)
    has = n_rows > 0
    if weighting == "rows":
        wts = n_rows[has] / n_rows.sum()
        a = np.array([wts @ acc[s, has] for s in range(S)])
        l_ = np.array([wts @ loss[s, has] for s in range(S)])
    else:
        a = np.array([np.mean(acc[s, has]) for s in range(S)])
        l_ = np.array([np.mean(loss[s, has]) for s in range(S)])
    return a, l_, acc, loss


def metric_functions(problem: Problem, *, maml_alpha: float | None = None,
                     me_lam: float | None = None, weighting: str = "rows",
                     X_test: Sequence[np.ndarray] | None = None,
                     y_test: Sequence[np.ndarray] | None = None
                     ) -> dict[str, Callable[[np.ndarray], float]]:
    """``name -> f(w)`` for a trace's metric set.

    Always ``test_acc`` and ``test_loss``; with ``maml_alpha`` also ``pers_acc_maml`` and
    ``pers_loss_maml``; with ``me_lam`` also ``pers_acc_me`` and ``pers_loss_me``.  The
    test rows are checked once, here.
    """
    Xs, ys = test_rows(problem, X_test, y_test)
    X_pool, y_pool = np.vstack(Xs), np.concatenate(ys)
    weighting = check_choice("weighting", weighting, ("rows", "clients"))
    memo_g: list = [None, None]

    def gm(w: np.ndarray) -> dict[str, float]:
        # test_acc and test_loss of one w share one pass over the test rows (checked above)
        if memo_g[0] is None or not np.array_equal(memo_g[0], w):
            memo_g[1] = _pooled_metrics(problem, _model(problem, w), X_pool, y_pool)
            memo_g[0] = np.array(w, copy=True)
        return memo_g[1]

    out: dict[str, Callable[[np.ndarray], float]] = {
        "test_acc": lambda w: gm(w)["test_acc"],
        "test_loss": lambda w: gm(w)["test_loss"],
    }
    for kind, key, val in (("maml", "alpha", maml_alpha), ("me", "lam", me_lam)):
        if val is None:
            continue
        v = check_positive("maml_alpha" if kind == "maml" else "me_lam", val)

        def pm(w: np.ndarray, kind: str = kind, key: str = key, v: float = v,
               memo: list = [None, None]) -> dict:  # noqa: B006 - per-closure memo
            # the acc and loss of one w share their personal models (one solve per client)
            if memo[0] is None or not np.array_equal(memo[0], w):
                memo[1] = _personalised(problem, w, kind, v if kind == "maml" else None,
                                        v if kind == "me" else None, Xs, ys, weighting)
                memo[0] = np.array(w, copy=True)
            return memo[1]

        out[f"pers_acc_{kind}"] = lambda w, pm=pm: pm(w)["acc"]
        out[f"pers_loss_{kind}"] = lambda w, pm=pm: pm(w)["loss"]
    return out


def validation_rows(problem: Problem) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The problem's per-client validation rows ``(X_val, y_val)``, checked as test rows
    are; ConfigError if it has none (build it with ``validation_fraction > 0``)."""
    X_val = getattr(problem, "X_val", None)
    require(X_val is not None, "X_val", None,
            f"must exist: this {type(problem).__name__} carries no validation rows "
            "(build it with validation_fraction > 0)")
    return test_rows(problem, X_val, problem.y_val)  # type: ignore[attr-defined]


def time_to_accuracy(times: Any, accuracy: Any, target: float) -> float:
    """The first recorded time at which ``accuracy >= target``; ``inf`` if never reached.

    ``times`` must be finite and non-decreasing, ``accuracy`` the same length (NaN
    entries never count as reached), ``target`` in [0, 1].  No interpolation: the
    answer is one of the recorded times (the curve is only known there).
    """
    t = np.asarray(times, dtype=np.float64)
    acc = np.asarray(accuracy, dtype=np.float64)
    target = check_number("target", target, low=0.0, high=1.0)
    require(t.ndim == 1 and t.size >= 1, "times", f"<shape {t.shape}>",
            "must be a non-empty 1-D array")
    require(acc.shape == t.shape, "accuracy", f"<shape {acc.shape}>",
            f"must have the shape of times {t.shape}")
    require(bool(np.all(np.isfinite(t))), "times", "<non-finite entry>", "must be finite")
    require(bool(np.all(np.diff(t) >= 0.0)), "times", "<decreasing step>",
            "must be non-decreasing")
    hit = np.flatnonzero(np.nan_to_num(acc, nan=-np.inf) >= target)
    return float(t[hit[0]]) if hit.size else math.inf
