"""The inner problem of [P] Option C (Algorithm 2 line 11, estimator eq. (10)) and its
two solvers, written once in the subset numba compiles (:mod:`fedsim.jit`).

For a local model ``w`` and a batch ``D`` (held fixed), ``h_tilde(theta) = f_tilde_i(theta,
D) + lam/2 ||theta - w||^2``; :func:`moreau_solve` finds ``theta_tilde`` with ``||grad
h_tilde(theta_tilde)|| <= nu`` ([P] line 11), generic in the problem's batch oracle
``grad(vdata, i, w, z, g)`` (``g = grad f_tilde_i(w, D)`` for the batch ``D`` that ``z``
encodes, :mod:`fedsim.problems.compiled`) and the exact oracle ``theta(vdata, i, w, z, pd,
g, th)``.  Solvers (stated, THEORY_SPEC 2.1):

* ``"gd"`` -- gradient descent on ``h_tilde`` from ``theta = w`` with step
  ``1/(L + lam)`` (``L`` = the problem's smoothness constant; ``h_tilde`` is
  ``(lam + L)``-smooth and, for ``lam > L``, ``(lam - L)``-strongly convex, so the
  error contracts by ``1 - (lam - L)/(lam + L)`` per iteration, [P] Section 3); stops at
  the first iterate with ``||grad h_tilde|| <= nu`` or after ``inner_max_iter``
  iterations (counted in ``inner_failures``).  The inner iterations are counted.
  Caveat: ``L`` bounds the smoothness of the expected ``f_i``; the *batch* loss
  ``f_tilde_i(., D)`` can be rougher (logistic, batch 1: per-sample ``||x||^2/4``), and GD
  with step ``1/(L + lam)`` is then guaranteed to converge only if ``L_D + lam < 2 (L + lam)``;
  slow or failed inner solves show up in ``inner_failures`` (E-P11 of THEORY_SPEC 8).
* ``"exact"`` -- the closed-form minimiser of a quadratic's ``h_tilde``
  (``QuadraticProblem.batch_theta_hat``; ``nu = 0``), the model of THEORY_SPEC 10.2;
  compiled, :func:`fedsim.problems.quadratic_view.quadratic_batch_theta_hat` (one Newton
  step, ``theta = w - (A_i + lam I)^{-1} grad f_tilde_i(w, D)``), looked up by the view's
  ``grad`` in :data:`EXACT_ORACLES`.

Without a compiled view the same :func:`moreau_solve` runs interpreted (``py_func``) with
:func:`problem_batch_grad` / :func:`problem_theta_hat` (``batch_grad`` /
``batch_theta_hat``) on the batches of a :class:`BatchSteps`.

``fp``, the rule's parameters (:meth:`fedsim.local.moreau.MoreauRule.params`), float64:
``fp[0] = eta``, ``fp[1] = lam``, ``fp[2] = nu``, ``fp[3] = inner_max_iter``, ``fp[4] =
1/(L + lam)`` (0 for "exact"), ``fp[5] = d``; then ``2 d`` work floats (``theta`` and the
gradient; written by every call, so one ``fp`` serves one thread, as a view's data does);
then the exact oracle's data ``pd`` (``quadratic_prox_data``: ``n d d`` floats; none for
"gd").  ``cnt`` (int64, 3): inner iterations, inner solves, inner failures, accumulated.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fedsim.jit import jit
from fedsim.problems.base import Problem
from fedsim.problems.quadratic_view import (
    quadratic_batch_theta_hat,
    quadratic_prox_data,
    quadratic_sample_grad,
)

__all__ = ["moreau_solve", "no_theta", "problem_batch_grad", "problem_theta_hat", "BatchSteps",
           "EXACT_ORACLES", "SCALARS", "COUNTERS"]

#: ``fp[:SCALARS]`` are the scalars (module docstring)
SCALARS = 6
#: the names of ``cnt``'s entries, in order
COUNTERS = ("inner_iters", "inner_solves", "inner_failures")


@jit(inline=True)
def no_theta(vdata, i, w, z, pd, g, th):
    """The exact-oracle slot of the "gd" solver
    (:func:`fedsim.local.moreau.moreau_update_for`); never called (``exact = 0``)."""
    return 0


#: the compiled exact oracle and its data builder ``(problem, lam) -> pd`` of a view, by
#: the view's ``grad``
EXACT_ORACLES = {quadratic_sample_grad: (quadratic_batch_theta_hat, quadratic_prox_data)}


@jit(cache=False, inline=True)
def moreau_solve(grad, theta, exact, vdata, i, w, z, fp, pd, th, g, cnt):
    """``th`` = the inner solution ``theta_tilde`` of ``h_tilde(., w, D)`` for the batch
    ``z`` encodes (module docstring); counts into ``cnt``.

    "gd" (``exact == 0``): the iterates ``theta_0 = w, ..., theta_{max_iter}``, each
    checked for ``sum_k (grad h_tilde)_k^2 <= nu^2`` (summed in index order), so at most
    ``inner_max_iter`` steps ``theta - (grad h_tilde)/(L + lam)``; a solve that ends
    without meeting ``nu`` counts a failure.  "exact": ``theta(vdata, i, w, z, pd, g, th)``.
    ``g`` is a work vector.
    """
    cnt[1] += 1
    if exact != 0:
        return theta(vdata, i, w, z, pd, g, th)
    d = w.shape[0]
    lam = fp[1]
    nu2 = fp[2] * fp[2]
    max_iter = int(fp[3])
    step = fp[4]
    for k in range(d):
        th[k] = w[k]
    it = 0
    while True:
        grad(vdata, i, th, z, g)
        s = 0.0
        for k in range(d):
            g[k] = g[k] + lam * (th[k] - w[k])
            s += g[k] * g[k]
        if s <= nu2:
            return 0
        if it == max_iter:
            break
        for k in range(d):
            th[k] = th[k] - step * g[k]
        it += 1
        cnt[0] += 1
    cnt[2] += 1
    return 0


def problem_batch_grad(view: tuple, i: int, w: np.ndarray, D: Any, g: np.ndarray) -> int:
    """The interpreted batch oracle: ``view = (problem, lam)``; ``g = batch_grad(i, w, D)``."""
    g[:] = view[0].batch_grad(i, w, D)
    return 0


def problem_theta_hat(view: tuple, i: int, w: np.ndarray, D: Any, pd: Any, g: np.ndarray,
                      th: np.ndarray) -> int:
    """The interpreted exact oracle: ``th = batch_theta_hat(i, w, lam, D)``,
    ``view = (problem, lam)``."""
    th[:] = view[0].batch_theta_hat(i, w, view[1], D)
    return 0


class BatchSteps:
    """``Z`` of the interpreted path: ``Z[q]`` draws step ``q``'s batch
    (``sample_batch(i, batch, rng)``), once per step."""

    __slots__ = ("problem", "i", "batch", "rng")

    def __init__(self, problem: Problem, i: int, batch: int, rng: np.random.Generator) -> None:
        self.problem, self.i, self.batch, self.rng = problem, i, batch, rng

    def __getitem__(self, q: int) -> Any:
        return self.problem.sample_batch(self.i, self.batch, self.rng)
