"""Option C of [P] Algorithm 2 (PersA-FL-ME, lines 10-12; estimator [P] eq. (10)).

At each local step one fresh batch D is drawn, the stochastic function
``h_tilde(theta) = f_tilde_i(theta, D) + lam/2 ||theta - w||^2`` is held fixed, and an
approximate minimiser ``theta_tilde`` with ``||grad h_tilde(theta_tilde)|| <= nu`` is found;
then ``w <- w - eta lam (w - theta_tilde)``.

Inner solvers (stated, THEORY_SPEC 2.1):

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
  (``QuadraticProblem.batch_theta_hat``; ``nu = 0``), the model of THEORY_SPEC 10.2.

On softmax and binary logistic regression the GD solver's ``batch_grad`` is the problem's
compiled oracle (:mod:`fedsim.problems.softmax_view`, :mod:`fedsim.problems.logistic_view`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fedsim.errors import check_integer, check_number, require
from fedsim.local.base import StepRule
from fedsim.local.registry import ConfigRule
from fedsim.problems.base import Problem

__all__ = ["MoreauRule"]


class MoreauRule(ConfigRule, StepRule):
    """[P] Option C local steps; counters ``inner_iters``, ``inner_solves``, ``inner_failures``."""

    name = "moreau"
    DEFAULTS = {**ConfigRule.DEFAULTS, "inner_max_iter": 1000, "inner_solver": "gd"}

    @classmethod
    def check_config(cls, name: str, cfg: Any) -> None:
        """Q, eta, batch; ``lam`` (> 0, required); ``inner_solver`` ("gd" | "exact"); ``nu``
        (> 0 with "gd", 0 with "exact"); ``inner_max_iter`` (integer >= 1)."""
        super().check_config(name, cfg)
        f = "algorithm"
        require(cfg.lam is not None, f"{f}.lam", None, "is required for client_rule moreau")
        check_number(f"{f}.lam", cfg.lam, low=0.0, strict=True)
        solver = cfg.inner_solver or "gd"
        require(solver in ("gd", "exact"), f"{f}.inner_solver", solver,
                "must be 'gd' or 'exact'")
        if cfg.nu is not None:
            check_number(f"{f}.nu", cfg.nu, low=0.0)
        if solver == "gd":
            require(cfg.nu is None or cfg.nu > 0, f"{f}.nu", cfg.nu,
                    "must be > 0 with inner_solver='gd' (use inner_solver='exact' for nu=0)")
        else:
            require(cfg.nu is None or cfg.nu == 0, f"{f}.nu", cfg.nu,
                    "must be 0 (or omitted) with inner_solver='exact'")
        if cfg.inner_max_iter is not None:
            check_integer(f"{f}.inner_max_iter", cfg.inner_max_iter, low=1)

    @classmethod
    def default(cls, name: str, key: str, cfg: Any) -> Any:
        if key == "nu":
            return 1e-8 if (cfg.inner_solver or "gd") == "gd" else 0.0
        return cls.DEFAULTS.get(key)

    @classmethod
    def from_config(cls, name: str, cfg: Any, problem: Problem) -> MoreauRule:
        """The rule of ``client_rule = "moreau"`` (L from the problem for the gd solver)."""
        g = cfg.get
        L = None
        if g("inner_solver") == "gd":
            L = float(problem.constants["L"].value)
        return cls(problem, g("eta"), g("Q"), g("batch"), g("lam"), g("nu"),
                   g("inner_max_iter"), g("inner_solver"), L)

    def __init__(self, problem: Problem, eta: float, Q: int, batch: int, lam: float,
                 nu: float = 1e-8, inner_max_iter: int = 1000, solver: str = "gd",
                 L: float | None = None) -> None:
        require(solver in ("gd", "exact"), "algorithm.inner_solver", solver,
                "must be 'gd' or 'exact'")
        require(math.isfinite(lam) and lam > 0, "algorithm.lam", lam, "must be finite and > 0")
        if solver == "exact":
            require(hasattr(problem, "batch_theta_hat"), "algorithm.inner_solver", solver,
                    f"needs a closed-form inner solution, which {type(problem).__name__} "
                    "lacks (use 'gd')")
        else:
            require(nu > 0, "algorithm.nu", nu, "must be > 0 for inner_solver='gd'")
            require(L is not None and math.isfinite(L) and L >= 0, "problem.L", L,
                    "must be a finite smoothness constant for the 'gd' inner solver")
            require(lam > L, "algorithm.lam", lam,
                    f"must be > L = {L:g} (h_tilde strongly convex, [P] Section 3)")
        self.problem = problem
        self.eta, self.Q, self.batch = float(eta), int(Q), int(batch)
        self.lam, self.nu, self.max_iter, self.solver = float(lam), float(nu), int(
            inner_max_iter), solver
        self.step_in = 1.0 / (L + lam) if L is not None else None
        self.inner_iters = 0
        self.inner_solves = 0
        self.inner_failures = 0

    def theta_tilde(self, i: int, w: np.ndarray, batch) -> np.ndarray:
        """Approximate argmin of h_tilde(., w, D) (module docstring)."""
        p, lam = self.problem, self.lam
        self.inner_solves += 1
        if self.solver == "exact":
            return p.batch_theta_hat(i, w, lam, batch)
        th = w.copy()
        nu2 = self.nu * self.nu
        grad = p.batch_grad
        # checks the iterates theta_0 = w, ..., theta_{max_iter}: at most max_iter GD steps
        for it in range(self.max_iter + 1):
            g = grad(i, th, batch)
            g += lam * (th - w)
            if float(g @ g) <= nu2:
                return th
            if it == self.max_iter:
                break
            th -= self.step_in * g
            self.inner_iters += 1
        self.inner_failures += 1
        return th

    def step(self, i: int, w: np.ndarray, rng: np.random.Generator,
             eta: float | None = None) -> np.ndarray:
        """One local step in place: ``w <- w - eta lam (w - theta_tilde)``."""
        eta = self.eta if eta is None else float(eta)
        D = self.problem.sample_batch(i, self.batch, rng)
        th = self.theta_tilde(i, w, D)
        w -= (eta * self.lam) * (w - th)
        return w
