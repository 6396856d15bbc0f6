"""The held-out and personal metrics of many recorded models at once.

:func:`held_out_values` computes the metrics of :data:`fedsim.trace.HELD_OUT` and their
validation twins (:data:`fedsim.trace.VALIDATION`) for every recorded step of a run from
its snapshots: ``W`` (``(S, dim)``, the global model at each step) and, for the
``pers_*_beta`` metrics, ``P`` (``(S, n, dim)``, the clients' own models).  Each value is
the one the Recorder's per-step function (:func:`fedsim.trace.metric_functions`) gives:

* ``test_acc``/``test_loss`` (``val_acc``/``val_loss``): :func:`~fedsim.problems.
  evaluation.pooled_metrics_batch` of ``W`` on the pooled test (validation) rows;
* ``pers_{acc,loss}_maml`` / ``_me``: the personal models of each ``W[s]``
  (:func:`~fedsim.problems.evaluation.personal_models`: ``w - alpha grad f_i(w)`` /
  ``theta_hat_i(w, lam)``) on their clients' rows, pooled over the rows;
* ``pers_{acc,loss}_beta``: ``P[s, i]`` on client i's rows, the mean over the clients
  (Ma et al. 2022 Sec. 4.1).

The predictions and per-row losses of all S models come from one
:func:`~fedsim.problems.evaluation.models_metrics_batch` /
:func:`~fedsim.problems.evaluation.pooled_metrics_batch` call per group of rows, which are
also what the per-model functions call, so the numbers are the same bit for bit.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fedsim.errors import require
from fedsim.problems import evaluation

__all__ = ["held_out_values", "base_name"]


def base_name(name: str) -> tuple[str, bool]:
    """``(test-row name, on validation rows)`` of a held-out metric name:
    ``val_acc -> ("test_acc", True)``, ``val_pers_acc_maml -> ("pers_acc_maml", True)``."""
    if not name.startswith("val_"):
        return name, False
    return ("test_" + name[4:] if name in ("val_acc", "val_loss") else name[4:]), True


def held_out_values(problem: Any, names: Any, W: np.ndarray, P: np.ndarray | None,
                    maml_alpha: float | None, me_lam: float | None
                    ) -> dict[str, np.ndarray]:
    """``{name: values (S,)}`` of the held-out metrics ``names`` (module docstring) at the
    models ``W`` (``(S, dim)``) and personal models ``P`` (``(S, n, dim)``; needed only for
    ``pers_*_beta``); ``maml_alpha``/``me_lam`` as the Recorder's."""
    W = np.asarray(W, dtype=np.float64)
    groups: dict[tuple[str, bool], tuple[np.ndarray, np.ndarray]] = {}
    rows: dict[bool, tuple[list, list]] = {}
    out: dict[str, np.ndarray] = {}
    for name in names:
        base, val = base_name(name)
        kind = base.rsplit("_", 1)[1] if base.startswith("pers_") else "global"
        if val not in rows:
            rows[val] = (evaluation.validation_rows(problem) if val
                         else evaluation.test_rows(problem))
        Xs, ys = rows[val]
        if (kind, val) not in groups:
            groups[(kind, val)] = _group(problem, kind, W, P, Xs, ys, maml_alpha, me_lam)
        acc, loss = groups[(kind, val)]
        out[name] = acc if "_acc" in base else loss
    return out


def _group(problem: Any, kind: str, W: np.ndarray, P: np.ndarray | None, Xs: list,
           ys: list, maml_alpha: float | None, me_lam: float | None
           ) -> tuple[np.ndarray, np.ndarray]:
    """``(acc, loss)`` over the S models of one metric kind on one set of rows."""
    if kind == "global":
        return evaluation.pooled_metrics_batch(problem, W, np.vstack(Xs), np.concatenate(ys))
    if kind == "beta":
        require(P is not None, "record.metrics", "pers_*_beta",
                "needs per-client personal models, which only an algorithm whose clients "
                "keep them records (algorithm.name = 'asypfl')")
        acc, loss, _, _ = evaluation.models_metrics_batch(problem, P, Xs, ys, "clients")
        return acc, loss
    args = {"alpha": maml_alpha} if kind == "maml" else {"lam": me_lam}
    M = np.stack([np.stack(evaluation.personal_models(problem, W[s], kind, **args))
                  for s in range(W.shape[0])]) if W.shape[0] else \
        np.empty((0, problem.n, problem.dim))
    acc, loss, _, _ = evaluation.models_metrics_batch(problem, M, Xs, ys, "rows")
    return acc, loss
