"""Fused local SGD for the row-sampled problems: softmax and binary logistic regression.

Option A of [P] Algorithm 2 (lines 5-7) and AREA's client loop ([A] Algorithm 2,
``x^m = x^{m-1} - alpha g_i(x^{m-1})``) run ``Q`` steps
``w <- w - eta * grad f_tilde_i(w, D_q)`` with a fresh minibatch ``D_q`` of ``b`` rows
drawn uniformly WITH replacement.  The generic path of :class:`fedsim.local.sgd.SGDRule`
calls ``problem.sample_batch`` and ``problem.batch_grad`` once per step; on small models
(softmax on the digits, d*C = 650) their Python and NumPy dispatch overhead -- argument
checks, fresh temporaries, ``scipy.special.softmax``'s array-API wrapper -- is most of the
time of a step.  The kernels here compute **the same numbers, bit for bit**:

* **the same draws.**  ``Generator.integers(0, m_i, size=k)`` (int64, ``m_i <= 2**32``)
  fills its output with one bounded 32-bit Lemire draw after the other from the bit
  generator's ``next_uint32`` (numpy ``random_bounded_uint64_fill``; PCG64 keeps the unused
  half of a 64-bit output in its own state, between calls), so ONE call of size ``s * b``
  returns exactly the indices of ``s`` successive calls of size ``b`` and leaves the
  generator in the same state.  A round draws its indices in chunks of up to
  ``CHUNK_ROWS`` rows and gathers the rows of a chunk with one ``np.take``
  (``tests/problems/test_fused_sgd.py`` checks the draw equivalence itself).
* **the same floating-point operations in the same order**, into preallocated buffers
  (``out=``) instead of fresh arrays: for softmax, ``Z = X_D W`` (the same ``matmul``),
  scipy's ``softmax(Z, axis=1)`` as it is written -- ``exp(Z - max(Z)) / sum(exp(...))``
  with the same ``maximum``/``add`` reductions over the last axis --, the one-hot
  subtraction ``R[j, y_j] -= 1`` (as ``R - Y`` with a one-hot ``Y``: ``x - 0 = x`` exactly),
  ``X_D^T R`` (the same ``matmul``), ``/ b``, ``+ reg w``; for logistic
  ``-(X_D^T expit(-(X_D w))) / b + nu_reg w``; then ``w -= eta * g`` as
  ``eta * g`` and an in-place subtraction.

No argument is validated inside the loop: the problem checks its arrays once, the rule
its ``Q``, ``eta`` and ``b``.  ``SoftmaxProblem.fused_sgd(b)`` and
``LogisticProblem.fused_sgd(b)`` build the kernels (``None`` when a subclass overrides
``sample_batch`` or ``batch_grad``, whose numbers the kernels could then not match).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.special import expit

__all__ = ["CHUNK_ROWS", "LogisticSGD", "RowSGD", "SoftmaxSGD", "overrides_batch_oracles"]

#: Rows drawn and gathered at once (a round of Q steps of b rows runs in chunks of
#: ``max(1, CHUNK_ROWS // b)`` steps; the buffers hold one chunk).
CHUNK_ROWS: int = 2048


def overrides_batch_oracles(problem: object, base: type) -> bool:
    """True if ``problem``'s class or the instance itself replaces ``base``'s
    ``sample_batch`` or ``batch_grad``: the fused kernel would then bypass the replacement,
    so the caller must keep the per-call path."""
    cls, own = type(problem), vars(problem)
    return (cls.sample_batch is not base.sample_batch
            or cls.batch_grad is not base.batch_grad
            or "sample_batch" in own or "batch_grad" in own)


class RowSGD:
    """Shared part of the kernels: index draws, row gathers, chunking.

    ``rows[i]`` is client i's ``(m_i, d)`` row array, ``reg`` the ridge term of
    ``batch_grad`` (``+ reg w``), ``dim`` the parameter length, ``batch`` the batch size.
    Subclasses implement :meth:`_steps` (``s`` SGD steps on the rows of the gathered
    chunk), :meth:`_workspace` and :meth:`_grad_rows` (one batch gradient of any size,
    for :meth:`grad`) and may extend :meth:`_gather` with per-row labels.
    """

    def __init__(self, rows: Sequence[np.ndarray], m: np.ndarray, reg: float, dim: int,
                 batch: int) -> None:
        self.rows = list(rows)
        self.m = [int(mi) for mi in m]
        self.dim = int(dim)
        self.b = int(batch)
        self.d = self.rows[0].shape[1]
        # 0-d float64 arrays: the same values as the Python numbers batch_grad uses
        # (b -> float(b) exactly), and they enter a ufunc faster
        self._b0 = np.array(float(self.b))
        self._reg0 = np.array(reg, dtype=np.float64)
        self.steps = max(1, CHUNK_ROWS // self.b)  # steps per chunk
        self._X = np.empty((self.steps, self.b, self.d))
        self._Xq = [self._X[q] for q in range(self.steps)]
        self._XTq = [x.T for x in self._Xq]
        self._g = np.empty(self.dim)
        self._t = np.empty(self.dim)
        self._ws: dict[int, tuple] = {}

    def _gather(self, i: int, rng: np.random.Generator, s: int) -> np.ndarray:
        """Draw ``s`` steps' indices in one call and gather their rows into ``_X[:s]``."""
        idx = rng.integers(0, self.m[i], size=s * self.b)
        # ndarray.take (no dispatch); indices < m_i by construction ("raise" would buffer)
        self.rows[i].take(idx, 0, self._X[:s].reshape(s * self.b, self.d), "clip")
        return idx

    def _steps(self, i: int, w: np.ndarray, s: int, eta0: np.ndarray) -> None:
        raise NotImplementedError  # pragma: no cover

    def run(self, i: int, w: np.ndarray, rng: np.random.Generator, eta: float, Q: int) -> None:
        """``Q`` SGD steps with step ``eta`` on ``w`` in place (float64; a strided ``w`` is
        reshaped per step, as ``batch_grad`` does), batches from ``rng``: ``Q`` times
        ``w -= eta * batch_grad(i, w, sample_batch(i, b, rng))``."""
        eta0 = np.array(eta, dtype=np.float64)
        left = Q
        while left > 0:
            s = min(left, self.steps)
            self._gather(i, rng, s)
            self._steps(i, w, s, eta0)
            left -= s

    def grad(self, i: int, w: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """``problem.batch_grad(i, w, idx)`` bit for bit, as a new array; ``idx`` are row
        indices of client i (drawn by ``sample_batch`` or an equivalent draw: they are not
        checked).  Any batch size (MAML's |D|, |D'|, |D''|); buffers are kept per size."""
        k = idx.shape[0]
        ws = self._ws.get(k)
        if ws is None:
            ws = self._ws[k] = self._workspace(k)
        Xb = ws[0]
        self.rows[i].take(idx, 0, Xb, "clip")
        g = self._grad_rows(i, w, idx, ws)
        np.divide(g, ws[1], g)                           # ... / b
        return np.add(g, np.multiply(w, self._reg0))     # ... + reg * w

    def hvp(self, i: int, w: np.ndarray, v: np.ndarray, idx: np.ndarray) -> np.ndarray:
        """``problem.batch_hvp(i, w, v, idx)`` bit for bit, as a new array (MAML's exact
        Hessian-vector product; ``idx`` as in :meth:`grad`)."""
        k = idx.shape[0]
        ws = self._ws.get(k)
        if ws is None:
            ws = self._ws[k] = self._workspace(k)
        self.rows[i].take(idx, 0, ws[0], "clip")
        return self._hvp_rows(w, v, ws) / k + self._reg0 * v

    def _hvp_rows(self, w: np.ndarray, v: np.ndarray, ws: tuple) -> np.ndarray:
        """The data part of :meth:`hvp` (before ``/ b``) on the gathered rows ``ws[0]``."""
        raise NotImplementedError  # pragma: no cover

    def _workspace(self, k: int) -> tuple:
        """Buffers of :meth:`grad` for batches of ``k`` rows: ``(X_D, float(k), ...)``."""
        raise NotImplementedError  # pragma: no cover

    def _grad_rows(self, i: int, w: np.ndarray, idx: np.ndarray, ws: tuple) -> np.ndarray:
        """The data part of :meth:`grad` (before ``/ b``) on the gathered rows ``ws[0]``."""
        raise NotImplementedError  # pragma: no cover


class SoftmaxSGD(RowSGD):
    """Fused steps of :class:`fedsim.problems.softmax.SoftmaxProblem` (``w = W.ravel()``)."""

    def __init__(self, X: Sequence[np.ndarray], y: Sequence[np.ndarray], m: np.ndarray,
                 n_classes: int, reg: float, batch: int) -> None:
        C = int(n_classes)
        super().__init__(X, m, reg, X[0].shape[1] * C, batch)
        self.C = C
        self.labels = [np.asarray(yi, dtype=np.int64) for yi in y]
        b, s = self.b, self.steps
        self._Y = np.zeros((s, b, C))                       # one-hot labels of a chunk
        self._Yq = [self._Y[q] for q in range(s)]
        self._base = np.arange(s * b, dtype=np.int64) * C   # flat offsets of each row
        self._sel = np.empty(s * b, dtype=np.int64)
        self._sel_used = 0
        self._Z = np.empty((b, C))
        self._mx = np.empty((b, 1))
        self._sum = np.empty((b, 1))
        self._G = self._g.reshape(self.d, C)

    def _gather(self, i: int, rng: np.random.Generator, s: int) -> np.ndarray:
        idx = super()._gather(i, rng, s)
        Yf = self._Y.reshape(-1)
        Yf[self._sel[: self._sel_used]] = 0.0               # clear the previous chunk's ones
        sel = self._sel[: s * self.b]
        np.add(self._base[: s * self.b], self.labels[i][idx], out=sel)
        Yf[sel] = 1.0
        self._sel_used = s * self.b
        return idx

    def _workspace(self, k: int) -> tuple:
        C = self.C
        return (np.empty((k, self.d)), np.array(float(k)), np.empty((k, C)),
                np.empty((k, 1)), np.empty((k, 1)), np.empty(self.dim),
                np.arange(k, dtype=np.int64) * C, np.empty(k, dtype=np.int64))

    def _grad_rows(self, i: int, w: np.ndarray, idx: np.ndarray, ws: tuple) -> np.ndarray:
        """``(X_D^T (softmax(X_D W) - Y_D)).ravel()`` (batch_grad before ``/ b``)."""
        Xb, _, Z, mx, sm, g, off, sel = ws
        Xb.dot(w.reshape(self.d, self.C), Z)                # Z = Xb @ W
        np.maximum.reduce(Z, 1, None, mx, True)             # scipy softmax: x_max
        np.subtract(Z, mx, Z)                               #   x - x_max
        np.exp(Z, Z)                                        #   exp(...)
        np.add.reduce(Z, 1, None, sm, True)                 #   sum(exp(...), axis=1)
        np.divide(Z, sm, Z)                                 #   exp(...) / sum
        np.add(off, self.labels[i][idx], sel)
        Z.reshape(-1)[sel] -= 1.0                           # R[arange(b), y_D] -= 1
        Xb.T.dot(Z, g.reshape(self.d, self.C))              # Xb.T @ R
        return g

    def _hvp_rows(self, w: np.ndarray, v: np.ndarray, ws: tuple) -> np.ndarray:
        """``(X_D^T (P U - P sum_c(P U))).ravel()``, ``P = softmax(X_D W)``, ``U = X_D V``."""
        Xb, _, Z, mx, sm = ws[:5]
        shape = (self.d, self.C)
        Xb.dot(w.reshape(shape), Z)                         # Xb @ W
        np.maximum.reduce(Z, 1, None, mx, True)             # P = softmax(..., axis=1)
        np.subtract(Z, mx, Z)
        np.exp(Z, Z)
        np.add.reduce(Z, 1, None, sm, True)
        np.divide(Z, sm, Z)
        PU = Z * Xb.dot(v.reshape(shape))                   # P * U, U = Xb @ V
        AU = PU - Z * np.add.reduce(PU, 1, None, None, True)  # - P * sum(P * U, axis=1)
        return Xb.T.dot(AU).ravel()                         # (Xb.T @ AU).ravel()

    def _steps(self, i: int, w: np.ndarray, s: int, eta0: np.ndarray) -> None:
        """:meth:`_grad_rows` on chunk row ``q``, then the update, inlined (the hot loop)."""
        Z, mx, sm, G, g, t = self._Z, self._mx, self._sum, self._G, self._g, self._t
        b0, reg0 = self._b0, self._reg0
        maxr, addr = np.maximum.reduce, np.add.reduce
        sub, exp, div, mul, add = np.subtract, np.exp, np.divide, np.multiply, np.add
        shape = (self.d, self.C)
        W = w.reshape(shape) if w.flags.c_contiguous else None
        Xq, XTq, Yq = self._Xq, self._XTq, self._Yq
        for q in range(s):
            Xq[q].dot(W if W is not None else w.reshape(shape), Z)
            maxr(Z, 1, None, mx, True)
            sub(Z, mx, Z)
            exp(Z, Z)
            addr(Z, 1, None, sm, True)
            div(Z, sm, Z)
            sub(Z, Yq[q], Z)
            XTq[q].dot(Z, G)
            div(g, b0, g)        # (Xb.T @ R).ravel() / b
            mul(w, reg0, t)      # reg * w
            add(g, t, g)         # ... + reg * w
            mul(g, eta0, g)      # eta * g
            sub(w, g, w)         # w -= eta * g


class LogisticSGD(RowSGD):
    """Fused steps of :class:`fedsim.problems.logistic.LogisticProblem` (rows ``y_j x_j``)."""

    def __init__(self, rows: Sequence[np.ndarray], m: np.ndarray, nu_reg: float,
                 batch: int) -> None:
        super().__init__(rows, m, nu_reg, rows[0].shape[1], batch)
        self._z = np.empty(self.b)

    def _workspace(self, k: int) -> tuple:
        return (np.empty((k, self.d)), np.array(float(k)), np.empty(k), np.empty(self.dim))

    def _grad_rows(self, i: int, w: np.ndarray, idx: np.ndarray, ws: tuple) -> np.ndarray:
        """``-(rows_D^T expit(-(rows_D w)))`` (batch_grad before ``/ b``)."""
        Xb, _, z, g = ws
        Xb.dot(w, z)                             # rows @ w
        np.negative(z, z)                        # -(...)
        expit(z, z)                              # expit(...)
        Xb.T.dot(z, g)                           # rows.T @ ...
        np.negative(g, g)                        # -(...)
        return g

    def _hvp_rows(self, w: np.ndarray, v: np.ndarray, ws: tuple) -> np.ndarray:
        """``rows_D^T (expit(z) expit(-z) (rows_D v))``, ``z = rows_D w``."""
        Xb = ws[0]
        z = Xb.dot(w)
        return Xb.T.dot(expit(z) * expit(-z) * Xb.dot(v))

    def _steps(self, i: int, w: np.ndarray, s: int, eta0: np.ndarray) -> None:
        """:meth:`_grad_rows` on chunk row ``q``, then the update, inlined (the hot loop)."""
        z, g, t, b0, reg0 = self._z, self._g, self._t, self._b0, self._reg0
        neg, sub, div, mul, add = np.negative, np.subtract, np.divide, np.multiply, np.add
        Xq, XTq = self._Xq, self._XTq
        for q in range(s):
            Xq[q].dot(w, z)
            neg(z, z)
            expit(z, z)
            XTq[q].dot(z, g)
            neg(g, g)
            div(g, b0, g)        # ... / b
            mul(w, reg0, t)      # nu_reg * w
            add(g, t, g)         # ... + nu_reg * w
            mul(g, eta0, g)      # eta * g
            sub(w, g, w)         # w -= eta * g
