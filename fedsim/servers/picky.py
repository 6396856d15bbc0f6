"""Picky SGD's test on the server (Cohen, Daniely, Drori, Koren & Schain 2021), as
Koloskova, Stich & Jaggi 2022 §4.4 describe it: "Their algorithm discards gradients based
on the distance between the current point and the delayed one ``||x^(t) - x^(t - tau_t)||``".

The upload is applied as asynchronous SGD (``w <- w - beta (w_read - w_new)``, the client's
one SGD step) iff ``||w - w_read|| <= threshold``, and dropped otherwise.  ``threshold`` is
the method's "extra hyperparameter" (Koloskova §4.4), given by the user: Cohen et al.'s own
threshold and step size could not be read (``docs/theory/cohen-2021.md``) and are not
implemented.  ``fp = [beta, threshold]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from fedsim.errors import require
from fedsim.jit import jit
from fedsim.local.forms import ServerForm
from fedsim.servers.base import Upload
from fedsim.servers.fedasync import fedasync_apply

__all__ = ["picky_apply", "picky_step", "PickyRule"]


@jit(inline=True)
def picky_apply(w, read, new, fp):
    """Apply ``w -= beta (read - new)`` iff ``||w - read||^2 <= threshold^2``; returns 1
    when applied, 0 when dropped."""
    d2 = 0.0
    for k in range(w.shape[0]):
        e = w[k] - read[k]
        d2 += e * e
    if not d2 <= fp[1] * fp[1]:
        return 0
    fedasync_apply(w, read, new, fp[0])
    return 1


@jit(inline=True)
def picky_step(S, clients, reads, news, k, stale, kind, fp, cnt):
    """The rule in the replay's uniform server shape: :func:`picky_apply` on row 0 of
    ``S`` for each of the step's ``k`` uploads, in arrival order; fill ``k``."""
    for c in range(k):
        picky_apply(S[0], reads[c], news[c], fp)
    return k


class PickyRule:
    """Picky SGD's server (:func:`picky_apply` per upload); the state is the model."""

    def __init__(self, *, beta: float = 1.0, threshold: float) -> None:
        require(threshold >= 0, "algorithm.threshold", threshold,
                "must be >= 0 (inf: never drop)")
        self.fp = np.array([float(beta), float(threshold)])

    def init(self, w0: np.ndarray) -> np.ndarray:
        return np.array(w0, dtype=np.float64)

    def replay_form(self) -> Any:
        """:func:`picky_step`, one state row, ``fp = [beta, threshold]``."""
        return ServerForm(apply=picky_step, s_rows=1, fp=self.fp.copy())

    def apply(self, state: np.ndarray, uploads: Sequence[Upload]) -> tuple[np.ndarray,
                                                                            dict[str, Any]]:
        applied = sum(picky_apply(state, u.read, u.new, self.fp) for u in uploads)
        return state, {"fill": len(uploads), "dropped": len(uploads) - int(applied)}
