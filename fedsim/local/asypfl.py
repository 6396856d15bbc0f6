"""AsyPFL client (Ma, Lu, Li, Cui 2022, "Asynchronous Personalized Federated Learning with
Irregular Clients"; /work/shared/papers/asypfl.md), Algorithm 1 ``ClientUpdate(k, omega^tau,
E_k)`` and the local branch of eq. (3).

On a download of the global model ``omega^{r_k}`` (server step ``r_k``) client k sets
``omega_k <- omega^{r_k}`` (eq. (3), second branch) and runs ``E = E_k`` local steps; each
step, in the order of Algorithm 1::

    omega_k <- omega_k - eta   / (1 + gamma tau) * g_k(omega_k)                      (a)
    beta_k  <- beta_k  - delta / (1 + gamma tau) * ( g_k(beta_k)
                          + lam * diag(h(omega_k^new)) (beta_k - omega_k^new) )       (b)

Algorithm 1 writes (b) as ``beta_k^{tau+1} = beta_k^tau - delta/(1+gamma tau) (grad
F_k(beta_k^tau) + lambda (beta_k^tau - omega_k^{tau+1}) diag(h(omega_k^{tau+1})))``: the
stochastic gradient is taken at the *old* personal model, while the elastic term and its
Fisher weights use the *new* local model ``omega_k^{tau+1}`` of line (a).  A row vector times
a diagonal matrix is the elementwise product, computed as such.  The personal model
``beta_k`` is never reset: it persists on the client across rounds (``beta_k^0 = omega^0``,
Algorithm 1 "initialize ... omega^0, beta_k^0"; the paper does not give beta_k^0, this module
uses the initial global model).  With ``lam = 0`` line (b) is plain local SGD on ``F_k``
("When lambda = 0, the local objective aims at training purely local models", Section 3.1).

Choices where the paper is ambiguous (each stated with the words used):

* **Which tau the decay uses.**  Algorithm 1: "ClientUpdate(k, omega^tau, E_k): r_k^tau =
  tau, E = E_k. for e in {1, ..., E} do omega_k^{tau+1} = omega_k^tau - eta/(1+gamma tau)
  ...".  The loop variable ``e`` does not enter the step, and ``tau`` is the server loop's
  index ("for tau = 0, 1, ..., T do"), fixed at ``r_k^tau = tau`` when the model is sent.
  So every one of the ``E_k`` steps of a round uses ``tau = r_k``, the server step index of
  the downloaded model (in fedsim: the number of server steps applied before the read).
  (Eq. (3) and Theorem 2's ``eta_tau = 2/(mu(gamma + tau))`` index a per-step clock of the
  synchronous analysis; that reading is not the one implemented.)  ``gamma = 0`` removes
  the question.
* **One sample per step.**  Assumption 3: "xi_k^tau is a uniformly sampled data point from
  X_k at tau".  Both gradients of a step, ``g_k(omega_k)`` and ``g_k(beta_k)``, use the same
  batch ``xi_k^tau`` of size ``b`` (``problem.sample_batch`` once per step, then
  ``problem.batch_grad`` at the two points), drawn from the client's ``noise`` stream.
* **h = Fisher information = the Hessian of the loss.**  Section 3.1: "h(.) denotes the
  Fisher information matrix, which is the negative expected Hessian of the log-likelihood
  function".  fedsim's losses are negative log-likelihoods: logistic regression's
  per-sample Hessian ``s(z)s(-z) x x^T`` does not depend on the label (canonical link), so
  the observed and expected Hessians coincide and ``h_k(w) = grad^2 F_k(w) =
  problem.hess(k, w)`` (the ridge ``nu_reg I`` included, as the Gaussian prior's
  curvature); a quadratic is the Gaussian log-likelihood with precision ``A_k``, so
  ``h_k = A_k`` and ``diag(h_k) = diag(A_k)`` is constant (cached); softmax regression is
  the categorical log-likelihood (canonical link again), and its diagonal comes from
  ``problem.hess_diag`` in O(m d C) without the dense (dC x dC) Hessian.  The full client data
  (not the batch) is used, as the word "expected" says.

The rule is pure NumPy (no SimPy, no time); :meth:`AsyPFLRule.round` writes the uploaded
``omega_k`` into ``out`` and updates ``beta_k`` in place.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fedsim.errors import check_integer, check_number, require
from fedsim.local.registry import ConfigRule, check_step_keys
from fedsim.problems.base import Problem

__all__ = ["AsyPFLRule", "decay"]


def decay(gamma: float, tau: int) -> float:
    """``1 / (1 + gamma tau)``, Algorithm 1's step decay (``tau = r_k``, module docstring)."""
    return 1.0 / (1.0 + gamma * tau)


class AsyPFLRule(ConfigRule):
    """AsyPFL local steps on ``(omega_k, beta_k)`` (module docstring).

    ``eta`` / ``delta``: steps of the local (global-model) and personal models; ``gamma``:
    decay factor; ``lam``: elastic weight lambda; ``batch``: ``b``.
    """

    name = "asypfl"
    DEFAULTS = {"eta": 0.01, "batch": 1, "E": 1, "delta": 0.01, "gamma": 0.0}

    @classmethod
    def check_config(cls, name: str, cfg: Any) -> None:
        """eta, batch; ``lam`` (required, >= 0); ``E`` (integer >= 1); ``delta``, ``gamma``
        (>= 0)."""
        check_step_keys(cfg)
        f = "algorithm"
        require(cfg.lam is not None, f"{f}.lam", None,
                "(the elastic weight lambda) is required for asypfl (0 = purely local)")
        check_number(f"{f}.lam", cfg.lam, low=0.0)
        if cfg.E is not None:
            check_integer(f"{f}.E", cfg.E, low=1)
        if cfg.delta is not None:
            check_number(f"{f}.delta", cfg.delta, low=0.0)
        if cfg.gamma is not None:
            check_number(f"{f}.gamma", cfg.gamma, low=0.0)

    @classmethod
    def from_config(cls, name: str, cfg: Any, problem: Problem) -> AsyPFLRule:
        """The rule of ``client_rule = "asypfl"``."""
        g = cfg.get
        return cls(problem, g("eta"), g("delta"), g("gamma"), g("lam"), g("batch"))

    def __init__(self, problem: Problem, eta: float, delta: float, gamma: float, lam: float,
                 batch: int = 1) -> None:
        for fname, v in (("eta", eta), ("delta", delta), ("gamma", gamma), ("lam", lam)):
            require(isinstance(v, (int, float, np.integer, np.floating))
                    and not isinstance(v, bool) and math.isfinite(v) and v >= 0,
                    f"algorithm.{fname}", v, "must be finite and >= 0")
        require(isinstance(batch, (int, np.integer)) and not isinstance(batch, bool)
                and batch >= 1, "algorithm.batch", batch, "must be an integer >= 1")
        self.problem = problem
        self.eta, self.delta = float(eta), float(delta)
        self.gamma, self.lam = float(gamma), float(lam)
        self.batch = int(batch)
        self.d = problem.dim
        # quadratics: the Hessian A_k does not depend on w, so diag(h_k) is cached
        self._const_h = hasattr(problem, "A_stack")
        self._hdiag: dict[int, np.ndarray] = {}
        self._hess_diag = getattr(problem, "hess_diag", None)
        self._tmp = np.empty(self.d)

    def fisher_diag(self, i: int, w: np.ndarray) -> np.ndarray:
        """``diag(h_i(w))`` = the diagonal of ``problem.hess(i, w)`` (module docstring);
        ``problem.hess_diag(i, w)`` when the problem has it (softmax: O(m d C))."""
        if self._const_h:
            h = self._hdiag.get(i)
            if h is None:
                h = self._hdiag[i] = np.array(np.diagonal(self.problem.hess(i, w)),
                                              dtype=np.float64)
            return h
        if self._hess_diag is not None:  # softmax: O(m d C), no dense Hessian
            return self._hess_diag(i, w)
        return np.array(np.diagonal(self.problem.hess(i, w)), dtype=np.float64)

    def step(self, i: int, omega: np.ndarray, beta: np.ndarray, rng: np.random.Generator,
             tau: int) -> None:
        """One local step of Algorithm 1, in place on ``omega`` then ``beta``."""
        p = self.problem
        s = decay(self.gamma, tau)
        xi = p.sample_batch(i, self.batch, rng)
        g_w = p.batch_grad(i, omega, xi)
        g_b = p.batch_grad(i, beta, xi)  # at beta_k^tau (before (b) changes it)
        omega -= (self.eta * s) * g_w  # (a): omega_k^{tau+1}
        if self.lam != 0.0:
            h = self.fisher_diag(i, omega)  # h(omega_k^{tau+1})
            np.subtract(beta, omega, out=self._tmp)
            self._tmp *= h
            self._tmp *= self.lam
            g_b = g_b + self._tmp
        beta -= (self.delta * s) * g_b  # (b): beta_k^{tau+1}

    def round(self, i: int, omega0: np.ndarray, beta: np.ndarray, out: np.ndarray,
              rng: np.random.Generator, tau: int, E: int) -> np.ndarray:
        """``E`` local steps from ``omega_k = omega0`` (read only); ``omega_k`` ends in
        ``out`` (the upload), ``beta`` (client i's personal model) is updated in place."""
        require(isinstance(E, (int, np.integer)) and E >= 1, "E_k", E, "must be an integer >= 1")
        if out is not omega0:
            np.copyto(out, omega0)
        for _ in range(int(E)):
            self.step(i, out, beta, rng, tau)
        return out

    def init(self, w0: np.ndarray) -> np.ndarray:
        """Client state: the personal model ``beta_k^0 = omega^0`` (module docstring)."""
        return np.array(w0, dtype=np.float64)

    def update(self, i: int, w_read: np.ndarray, out: np.ndarray, rng: np.random.Generator,
               state: np.ndarray, tau: int = 0, E: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """One round (the optax-style ``update``); ``state`` is ``beta_k``, updated in place."""
        return self.round(i, w_read, state, out, rng, tau=tau, E=E), state
