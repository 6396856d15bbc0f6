"""Option A of [P] Algorithm 2 (lines 5-7): Q steps of local SGD from the downloaded model.

``w_{i,q+1} = w_{i,q} - eta * grad f_tilde_i(w_{i,q}, D_{i,q})`` with a fresh batch
``D_{i,q}`` of size ``b`` at every step (THEORY_SPEC 2.1, Option A).  The same kernel
runs AREA's client steps ([A] Algorithm 2, ``x^m = x^{m-1} - alpha g_i(x^{m-1})``) and the
local steps of FedBuff, synchronous FedAvg and AS-FedAvg.

Two code paths, the same mathematics:

* **quadratic fast path** (:class:`fedsim.problems.quadratic.QuadraticProblem`): with
  ``R_i = I - eta A_i`` and ``c_i = eta A_i b_i`` the step
  ``w - eta (A_i (w - b_i) + e)`` is evaluated as ``R_i w + (c_i - eta e)``, two in-place
  NumPy calls per step.  The batch noise ``e ~ N(0, C_i / b)`` (the distribution
  ``QuadraticProblem.sample_batch`` produces, ``C_i = grad_noise_cov(i)``) is built from
  ``d`` standard normals per step taken from the client's ``noise`` stream; a round
  draws its ``Q d`` normals in one block (``Generator.standard_normal(out=...)``), which
  yields exactly the numbers ``Q`` per-step draws of ``d`` would.  Isotropic noise
  (``C_i = s^2 I``) is scaled elementwise for the whole block; otherwise each step
  multiplies by a square-root factor ``F_i`` of ``C_i / b``.
* **generic path** (any other :class:`~fedsim.problems.base.Problem`): ``sample_batch``
  then ``batch_grad`` at each step, from the same ``noise`` stream.  A problem with a
  ``fused_sgd(batch)`` method (softmax and binary logistic regression) supplies a kernel
  (:mod:`fedsim.problems.fused_sgd`) that runs the steps with preallocated buffers and
  gives bit-identical iterates and the same draws; ``_FUSED = False`` (module switch,
  read when a rule is built; for tests and benchmarks only) forces the per-step calls.

:meth:`SGDRule.round` (all Q steps at once, used by the engine) and :meth:`SGDRule.step`
(one step, used by the per-step reference engine) give bit-identical results for the
same stream; ``tests/test_local_rules.py`` checks it.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fedsim.errors import require
from fedsim.local.base import StepRule
from fedsim.local.registry import ConfigRule
from fedsim.problems.base import Problem

__all__ = ["SGDRule", "QuadKernel", "fused_kernel"]

#: Use a problem's fused local-SGD kernel when it has one (``fused_sgd``); ``False``
#: forces the generic per-step ``sample_batch``/``batch_grad`` path (same numbers).
_FUSED: bool = True


def fused_kernel(problem: Problem, batch: int) -> Any:
    """``problem.fused_sgd(batch)`` (:mod:`fedsim.problems.fused_sgd`), or ``None`` when
    ``_FUSED`` is off or the problem's CLASS has no such method -- looked up on the class,
    so a wrapper that forwards attributes (and may count or change the batches) gets the
    per-call path it wraps."""
    make = getattr(type(problem), "fused_sgd", None) if _FUSED else None
    return None if make is None else make(problem, batch)


class QuadKernel:
    """Cached ``R_i = I - eta A_i``, ``c_i = eta A_i b_i`` and noise factors of a quadratic.

    Per client, keyed by the client's current ``eta`` (AREA's alpha_k schedule changes it);
    one shared ``R`` when ``problem.shared_hessian``.
    """

    def __init__(self, problem, batch: int) -> None:
        self.problem = problem
        self.n, self.d = problem.n, problem.dim
        self.batch = int(batch)
        C = np.asarray(problem.C_stack)
        diag = np.einsum("nii->ni", C)
        off = C - np.einsum("ni,ij->nij", diag, np.eye(self.d))
        iso = bool(np.all(off == 0.0)) and bool(np.all(diag == diag[:, :1]))
        self.isotropic = iso
        self.zero_noise = bool(np.all(C == 0.0))
        if iso:
            # e = sqrt(s2 / b) * z, s2 the common diagonal of C_i
            self.scale = [math.sqrt(float(diag[i, 0]) / self.batch) for i in range(self.n)]
            self.factor = None
        else:
            self.scale = None
            fac = []
            for i in range(self.n):
                ev, vec = np.linalg.eigh(0.5 * (C[i] + C[i].T))
                fac.append((vec * np.sqrt(np.clip(ev, 0.0, None))) @ vec.T
                           / math.sqrt(self.batch))
            self.factor = fac
        self.shared = bool(problem.shared_hessian)
        self._eye = np.eye(self.d)
        self._eta_i: list[float | None] = [None] * self.n
        self._R_i: list[np.ndarray | None] = [None] * self.n
        self._c_i: list[np.ndarray | None] = [None] * self.n
        self._R0: np.ndarray | None = None
        self._R0_eta: float | None = None

    def get(self, i: int, eta: float) -> tuple[np.ndarray, np.ndarray]:
        """``(R_i, c_i)`` for step ``eta`` (rebuilt only when client i's eta changes)."""
        if self._eta_i[i] != eta:
            A, b = self.problem.A_stack, self.problem.b_stack
            if self.shared:
                if self._R0_eta != eta:
                    self._R0 = self._eye - eta * A[0]
                    self._R0_eta = eta
                self._R_i[i] = self._R0
            else:
                self._R_i[i] = self._eye - eta * A[i]
            self._c_i[i] = eta * (A[i] @ b[i])
            self._eta_i[i] = eta
        return self._R_i[i], self._c_i[i]


class SGDRule(ConfigRule, StepRule):
    """Option A local SGD ([P] Alg. 2 line 7; [A] Alg. 2 inner loop).

    ``round(i, w0, out, rng, eta=None)`` writes ``w_{i,Q}`` into ``out``;
    ``step(i, w, rng, eta=None)`` applies one step in place.  ``eta`` defaults to the
    rule's own step; AREA passes the alpha it last received.
    """

    name = "sgd"

    @classmethod
    def from_config(cls, name: str, cfg: Any, problem: Problem) -> SGDRule:
        """The rule of ``client_rule = "sgd"`` / ``"upload"`` (keys Q, eta, batch)."""
        g = cfg.get
        return cls(problem, g("eta"), g("Q"), g("batch"))

    def __init__(self, problem: Problem, eta: float, Q: int, batch: int = 1) -> None:
        require(eta >= 0 and math.isfinite(eta), "algorithm.eta", eta, "must be finite and >= 0")
        require(int(Q) == Q and Q >= 1, "algorithm.Q", Q, "must be an integer >= 1")
        require(int(batch) == batch and batch >= 1, "algorithm.batch", batch,
                "must be an integer >= 1")
        self.problem = problem
        self.eta = float(eta)
        self.Q = int(Q)
        self.batch = int(batch)
        self.d = problem.dim
        self.n = problem.n
        self.fast = hasattr(problem, "A_stack") and hasattr(problem, "C_stack")
        self.kernel = QuadKernel(problem, self.batch) if self.fast else None
        self.fused = None if self.fast else fused_kernel(problem, self.batch)
        self._tmp = np.empty(self.d)
        self._blk = np.empty(self.Q * self.d)
        self._v = np.empty(self.d)
        self._rows_q = -1
        self._V = self._blk.reshape(self.Q, self.d)
        self._scalars: dict[float, np.ndarray] = {}
        self._row_views: list[np.ndarray] = []
        # the engine's hot path: isotropic noise, the rule's own eta and Q (see round)
        self._hot = bool(self.fast and self.kernel.isotropic and not self.kernel.zero_noise)
        if self._hot:
            self._hot_blk = np.empty(self.Q * self.d)
            self._hot_V = (self._hot_blk if self.Q == 1
                           else self._hot_blk.reshape(self.Q, self.d))
            self._hot_rows = ([self._hot_blk] if self.Q == 1
                              else [self._hot_V[q] for q in range(self.Q)])
            self._hot_s: list[np.ndarray | None] = [None] * self.n

    # -- quadratic fast path ----------------------------------------------------------
    def _noise_rows(self, i: int, rng: np.random.Generator, eta: float, Q: int,
                    c: np.ndarray) -> list[np.ndarray]:
        """The Q rows ``c_i - eta e_q`` of one round (isotropic noise or none).

        Noise: ``Q d`` standard normals in one ``standard_normal(out=...)`` call (the numbers
        Q per-step draws of ``d`` give), scaled and shifted in place for the whole block.
        Without noise every row is ``c_i`` itself (no copy).
        """
        k = self.kernel
        if k.zero_noise:
            return [c] * Q
        if self._rows_q != Q:
            if Q * self.d > self._blk.size:
                self._blk = np.empty(Q * self.d)
            flat = self._blk[: Q * self.d]
            # Q == 1: a 1-d block, so adding c_i needs no broadcasting (same numbers)
            self._V = flat if Q == 1 else flat.reshape(Q, self.d)
            self._row_views = [flat] if Q == 1 else [self._V[q] for q in range(Q)]
            self._rows_q = Q
        V = self._V
        rng.standard_normal(out=V)
        np.multiply(V, self._scalar(-eta * k.scale[i]), V)
        np.add(V, c, V)
        return self._row_views

    def _scalar(self, s: float) -> np.ndarray:
        """``s`` as a shared 0-d array: it multiplies faster than a Python float (same
        product, both are float64)."""
        cache = self._scalars
        s0 = cache.get(s)
        if s0 is None:
            if len(cache) > 256:
                cache.clear()
            s0 = cache[s] = np.array(s)
        return s0

    def round(self, i: int, w0: np.ndarray, out: np.ndarray, rng: np.random.Generator,
              eta: float | None = None, Q: int | None = None) -> np.ndarray:
        """Run the Q local steps from ``w0``; the result ``w_{i,Q}`` is written into ``out``.

        ``w0`` is only read (the first step reads it directly, no copy), so the engine can
        pass the live server model.  Quadratic steps are ``tmp = R_i w; w = tmp + v_q`` as
        two calls, ``R_i.dot(w, tmp)`` and ``np.add(tmp, v_q, w)`` -- the very operations of
        :meth:`step` (``ndarray.dot`` is ``np.dot`` without the ``__array_function__``
        dispatch).
        """
        if self._hot and eta is None and Q is None:  # _noise_rows and the loop below, inlined
            eta = self.eta
            R, c = self.kernel.get(i, eta)
            V = self._hot_V
            rng.standard_normal(out=V)
            s0 = self._hot_s[i]
            if s0 is None:
                s0 = self._hot_s[i] = self._scalar(-eta * self.kernel.scale[i])
            add = np.add
            np.multiply(V, s0, V)
            add(V, c, V)
            Rdot, tmp, x = R.dot, self._tmp, w0
            for v in self._hot_rows:
                Rdot(x, tmp)
                add(tmp, v, out)
                x = out
            return out
        eta = self.eta if eta is None else float(eta)
        Q = self.Q if Q is None else Q
        if not self.fast:
            if out is not w0:
                np.copyto(out, w0)
            if self.fused is not None:
                self.fused.run(i, out, rng, eta, Q)
                return out
            for _ in range(Q):
                self._generic_step(i, out, rng, eta)
            return out
        k = self.kernel
        R, c = k.get(i, eta)
        tmp = self._tmp
        Rdot, add = R.dot, np.add
        if k.zero_noise or k.isotropic:
            x = w0
            for v in self._noise_rows(i, rng, eta, Q, c):
                Rdot(x, tmp)
                add(tmp, v, out)
                x = out
        else:
            if out is not w0:
                np.copyto(out, w0)
            for _ in range(Q):
                self._general_noise(i, rng, eta, c)
                Rdot(out, tmp)
                add(tmp, self._v, out)
        return out

    def _general_noise(self, i: int, rng: np.random.Generator, eta: float,
                       c: np.ndarray) -> None:
        z = rng.standard_normal(self.d)
        np.dot(self.kernel.factor[i], z, out=self._v)
        np.multiply(self._v, -eta, out=self._v)
        np.add(self._v, c, out=self._v)

    def step(self, i: int, w: np.ndarray, rng: np.random.Generator,
             eta: float | None = None) -> np.ndarray:
        """One local step in place (draws one step's noise from ``rng``)."""
        eta = self.eta if eta is None else float(eta)
        if not self.fast:
            if self.fused is not None:
                self.fused.run(i, w, rng, eta, 1)
            else:
                self._generic_step(i, w, rng, eta)
            return w
        k = self.kernel
        R, c = k.get(i, eta)
        if k.zero_noise:
            v = c
        elif k.isotropic:
            v = rng.standard_normal(self.d)
            np.multiply(v, -eta * k.scale[i], out=v)
            np.add(v, c, out=v)
        else:
            self._general_noise(i, rng, eta, c)
            v = self._v
        R.dot(w, self._tmp)
        np.add(self._tmp, v, w)
        return w

    # -- generic path -------------------------------------------------------------------
    def _generic_step(self, i: int, w: np.ndarray, rng: np.random.Generator, eta: float) -> None:
        p = self.problem
        batch = p.sample_batch(i, self.batch, rng)
        g = p.batch_grad(i, w, batch)
        w -= eta * g
