"""Batched Option A local SGD on a quadratic: R rounds at once as (R, d) arrays.

Mathematics ([P] Algorithm 2 lines 5-7, Option A; fedsim/local/sgd.py): with
``R_i = I - eta A_i`` and ``c_i = eta A_i b_i`` a local step is ``w <- R_i w + v_q``,
``v_q = c_i - eta e_q`` and the batch noise ``e_q ~ N(0, C_i / b)``.

Contract with the engine's rule (``SGDRule.round`` on the quadratic fast path):

* ``R_i = eye(d) - eta * A_i``, ``c_i = eta * (A_i @ b_i)``;
* isotropic noise (``C_i = s_i^2 I``, ``QuadKernel``'s test): a round draws ``Q d``
  standard normals from client i's ``noise`` stream in one block, multiplies it by the
  scalar ``-eta * sqrt(s_i^2 / b)`` and adds ``c_i`` (elementwise, hence bitwise the
  engine's ``v_q``);
* general noise: per step ``d`` normals ``z``, ``v = (F_i z) * (-eta) + c_i`` with
  ``F_i = V sqrt(max(ev, 0)) V^T / sqrt(b)`` from ``eigh(0.5 (C_i + C_i^T))``;
* zero noise: no draw, ``v_q = c_i``.

The products ``R_i w`` are a GEMM over the batch (shared Hessian) or a per-row contraction;
the engine does one GEMV per step, so iterates agree to rounding (~1e-16 relative), not
bit for bit.  A row's result never depends on the other rows nor on the batch size: a
single-row batch is padded to two rows (NumPy sends a one-row product to GEMV, whose
summation order differs from GEMM's).

``composed_noise`` draws a chunk's normals stream by stream and folds them with
:meth:`QuadBatchKernel.composed` (used by :mod:`fedsim.engine.replay.fedasync`).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["QuadBatchKernel", "rowwise_matmul", "composed_noise"]


def rowwise_matmul(X: np.ndarray, MT: np.ndarray) -> np.ndarray:
    """``X @ MT`` with a result per row independent of the number of rows."""
    if X.shape[0] == 1:
        return (np.concatenate((X, X)) @ MT)[:1]
    return X @ MT


class QuadBatchKernel:
    """The quadratic's per-client constants for the batched Option A round."""

    def __init__(self, problem, eta: float, Q: int, batch: int) -> None:
        self.n, self.d = problem.n, problem.dim
        self.eta, self.Q, self.batch = float(eta), int(Q), int(batch)
        A, b = np.asarray(problem.A_stack), np.asarray(problem.b_stack)
        eye = np.eye(self.d)
        self.shared = bool(problem.shared_hessian)
        self.R = np.stack([eye - self.eta * A[i] for i in range(self.n)])
        self.RT0 = np.ascontiguousarray(self.R[0].T)
        self.c = np.stack([self.eta * (A[i] @ b[i]) for i in range(self.n)])
        C = np.asarray(problem.C_stack)
        diag = np.einsum("nii->ni", C)
        off = C - np.einsum("ni,ij->nij", diag, eye)
        self.isotropic = bool(np.all(off == 0.0)) and bool(np.all(diag == diag[:, :1]))
        self.zero_noise = bool(np.all(C == 0.0))
        if self.isotropic:
            scale = [math.sqrt(float(diag[i, 0]) / self.batch) for i in range(self.n)]
            self.s0 = np.array([-self.eta * s for s in scale])
            self.F = None
        else:
            fac = []
            for i in range(self.n):
                ev, vec = np.linalg.eigh(0.5 * (C[i] + C[i].T))
                fac.append((vec * np.sqrt(np.clip(ev, 0.0, None))) @ vec.T
                           / math.sqrt(self.batch))
            self.F = np.stack(fac)

    @property
    def draws_per_round(self) -> int:
        """Standard normals a round takes from the client's ``noise`` stream."""
        return 0 if self.zero_noise else self.Q * self.d

    @property
    def composable(self) -> bool:
        """Whether a round's Q steps fold into one product (shared Hessian, isotropic or
        zero noise): see :meth:`composed`."""
        return self.shared and (self.isotropic or self.zero_noise)

    def composed(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(RQT, M, cbar)`` with ``w_Q = w_0 @ RQT + s0_i (z @ M) + cbar_i`` for a round of
        client ``i`` with normals ``z`` (``Q d``, step-major), rows as row vectors:
        ``w_Q = R^Q w_0 + sum_q R^(Q-1-q) v_q``, ``v_q = s0_i z_q + c_i``.  Equal to the Q
        sequential steps up to rounding (the powers of ``R`` are formed once)."""
        Q, d = self.Q, self.d
        R0 = self.R[0]
        P = [np.eye(d)]
        for _ in range(Q - 1):
            P.append(R0 @ P[-1])  # P[k] = R^k
        RQ = R0 @ P[-1]
        M = np.ascontiguousarray(np.concatenate([P[Q - 1 - q].T for q in range(Q)], axis=0))
        cbar = self.c @ P[Q - 1].T
        for q in range(1, Q):
            cbar = cbar + self.c @ P[Q - 1 - q].T
        return np.ascontiguousarray(RQ.T), M, cbar

    def step_rows(self, Z: np.ndarray, cl: np.ndarray) -> np.ndarray:
        """The rows ``v_q`` of many rounds: ``Z`` (..., Q d) normals, ``cl`` (...) clients;
        returns (..., Q, d) (``Z`` is overwritten when possible)."""
        Q, d = self.Q, self.d
        shape = cl.shape
        if self.zero_noise:
            return np.broadcast_to(self.c[cl][..., None, :], (*shape, Q, d))
        V = Z.reshape(*shape, Q, d)
        if self.isotropic:
            np.multiply(V, self.s0[cl][..., None, None], out=V)
        else:
            V = np.einsum("...ij,...qj->...qi", self.F[cl], V)
            np.multiply(V, -self.eta, out=V)
        np.add(V, self.c[cl][..., None, :], out=V)
        return V

    def round(self, X: np.ndarray, V: np.ndarray, cl: np.ndarray) -> np.ndarray:
        """``w_Q`` of R rounds from the read models ``X`` (R, d), rows ``V`` (R, Q, d)."""
        if self.shared:
            RT = self.RT0
            for q in range(self.Q):
                X = rowwise_matmul(X, RT)
                np.add(X, V[:, q], out=X)
            return X
        Rc = self.R[cl]
        for q in range(self.Q):
            X = np.einsum("rij,rj->ri", Rc, X)
            np.add(X, V[:, q], out=X)
        return X


def composed_noise(draw: list, cnt: np.ndarray, clsorted: np.ndarray, total: int,
                   rows: int, qd: int, Q: int, d: int, kern: QuadBatchKernel, M: np.ndarray,
                   cbar: np.ndarray, piece_mb: float = 24.0) -> np.ndarray:
    """The rounds' folded noise ``u = s0_i (z @ M) + cbar_i`` (:meth:`QuadBatchKernel.composed`)
    in the sorted order of ``cnt``'s keys (replicate, client), rows ``total..`` zero.  The
    normals are drawn key by key, each key's rounds with one call, into pieces of at most
    ``piece_mb`` megabytes that are folded at once (one GEMM per piece)."""
    U = np.zeros((rows, d))
    if not qd:
        U[:total] = cbar[clsorted[:total]]
        return U
    nz = np.flatnonzero(cnt)
    cs = cnt[nz]
    ends = np.cumsum(cs)
    P = max(1, int(piece_mb * 1e6 // (8 * qd)))
    zbuf = np.empty((min(P, total), qd))
    s0 = kern.s0
    i0, row0 = 0, 0
    while i0 < nz.size:
        i1 = max(int(np.searchsorted(ends, row0 + P, side="right")), i0 + 1)
        row1 = int(ends[i1 - 1])
        zb = zbuf[:row1 - row0] if row1 - row0 <= zbuf.shape[0] else np.empty((row1 - row0, qd))
        for kk, e, c in zip(nz[i0:i1].tolist(), (ends[i0:i1] - row0).tolist(),
                            cs[i0:i1].tolist(), strict=True):
            draw[kk](out=zb[e - c:e])
        cl = clsorted[row0:row1]
        y = zb if Q == 1 else zb @ M
        np.multiply(y, s0[cl][:, None], out=y)
        np.add(y, cbar[cl], out=U[row0:row1])
        i0, row0 = i1, row1
    return U
