"""Multinomial (softmax) logistic regression with l2 regularisation, tagged constants.

Client ``i`` holds rows ``x_j`` in R^d (j = 1..m_i) with labels ``y_j`` in
``{0, ..., C-1}``.  The model is a weight matrix ``W`` in R^{d x C}; the parameter
vector the engine sees is ``w = W.ravel()`` (row-major, so ``w[k*C + c] = W[k, c]``,
``dim = d*C``).  With the logits ``z_j = W^T x_j`` in R^C::

    f_i(w) = (1/m_i) sum_j [ lse(z_j) - z_{j, y_j} ] + (reg/2) ||W||_F^2,
    lse(z) = log sum_c exp(z_c),

evaluated stably (``scipy.special.logsumexp`` and ``softmax`` shift by the largest
logit, so no logit overflows, however large).  With ``p_j = softmax(z_j)`` and
``A_j = diag(p_j) - p_j p_j^T`` (the covariance of a categorical law, PSD)::

    grad f_i  = (1/m_i) sum_j x_j (p_j - e_{y_j})^T + reg W          (a d x C matrix)
    grad2 f_i = (1/m_i) sum_j (x_j x_j^T) kron A_j + reg I            (row-major kron)
    grad2 f_i [V] = (1/m_i) sum_j x_j (A_j V^T x_j)^T + reg V.

A minibatch is an index array of client rows drawn uniformly WITH replacement (as in
:class:`~fedsim.problems.logistic.LogisticProblem`); ``batch_grad``/``batch_hvp`` are
vectorised over it.  ``reg > 0`` is required: it makes every f_i ``reg``-strongly
convex (so x*, u_i* and theta_hat exist and are unique); without it the loss is
invariant under ``W -> W + v 1^T`` and has no unique minimiser.

Constants (THEORY_SPEC section 9 names; derivations)
----------------------------------------------------
*Categorical covariance.*  For any ``u`` in R^C, ``u^T A u = Var_p(u)`` (the variance of
the random variable equal to ``u_c`` with probability ``p_c``).  Popoviciu's inequality
gives ``Var_p(u) <= (max u - min u)^2/4 <= 2 ||u||^2/4 = ||u||^2/2``, so
``0 <= A <= (1/2) I``; the value 1/2 is the supremum (two classes with p = 1/2 each,
u = (e_1 - e_2)/sqrt 2).  Also ``tr A = 1 - ||p||^2 <= 1 - 1/C``, so
``||A||_F^2 <= lam_max(A) tr(A) <= (1 - 1/C)/2``.

* ``L`` (UPPER): ``(x x^T) kron A <= (x x^T) kron (I/2)`` (Kronecker products of PSD
  matrices are PSD), so ``grad2 f_i <= (X_i^T X_i/(2 m_i)) kron I + reg I`` and
  ``L = max_i lam_max(X_i^T X_i)/(2 m_i) + reg``.  It is EXACT for C = 2 only in the
  limit; in general the true value lies between this and the value at w = 0,
  ``lam_max(X_i^T X_i)/(C m_i) + reg`` (where p = 1/C and A = (I - 11^T/C)/C).
* ``mu`` (EXACT): every data Hessian annihilates ``V = v 1^T`` (``A 1 = 0``), so
  ``lam_min(grad2 f_i(w)) = reg`` at EVERY w; it is never smaller because the data
  part is PSD.
* ``rho`` (UPPER): the directional derivative of ``u^T A(z) u`` along ``delta`` is the
  third cumulant ``E_p[(u - ubar)^2 (delta - deltabar)] = Cov_p((u - ubar)^2, delta)``;
  with ``0 <= (u - ubar)^2 <= (max u - min u)^2 <= 2||u||^2`` and
  ``|delta_c - mid-range| <= (max delta - min delta)/2 <= ||delta||/sqrt 2`` it is at most
  ``(2||u||^2/2) ||delta||/sqrt 2``, so ``||A(z) - A(z')||_2 <= KAPPA ||z - z'||`` with
  ``KAPPA = 1/sqrt 2`` (C = 2 attains 2 sqrt2/(6 sqrt3) = 0.27, so the factor is at most
  ~2.6x loose).  Since ``||z_j(w) - z_j(u)|| <= ||x_j|| ||W - U||_2 <= ||x_j|| ||w - u||``,
  ``-KAPPA r ||x_j|| I <= A_j(w) - A_j(u) <= KAPPA r ||x_j|| I`` (r = ||w - u||), and the
  PSD sandwich (as in 9.2) gives
  ``rho_i = KAPPA min(lam_max((1/m) sum ||x_j|| x_j x_j^T), mean ||x_j||^3, max ||x_j||^3)``.
* ``G``, ``B`` (INFINITE): ``reg > 0`` makes ``||grad f_i||`` grow like ``reg ||w||``.
* ``sigma_g2`` (UPPER): one row drawn uniformly; the per-sample data gradient is
  ``x_j kron r_j`` with ``r_j = p_j - e_{y_j}``, ``||r_j||^2 = (1 - p_y)^2 + sum_{c != y}
  p_c^2 <= 2 (1 - p_y)^2 <= 2``; the variance is at most the second moment, so
  ``sigma_g2 = max_i 2 mean_j ||x_j||^2`` (the regulariser is deterministic).
* ``sigma_h2`` (UPPER, Frobenius): ``||(x x^T) kron A||_F^2 = ||x||^4 ||A||_F^2``, so
  ``sigma_h2 = max_i ((1 - 1/C)/2) mean_j ||x_j||^4`` (tight for C = 2).
* ``gamma_g2`` (UPPER): the regulariser is common, so it cancels; the data gradient
  ``(1/m) X^T R`` (R with rows r_j) has norm ``<= G_i = sqrt2 min(mean ||x_j||,
  ||X_i||_2/sqrt(m_i))`` and ``(1/n) sum ||a_i - abar||^2 <= (1/n) sum ||a_i||^2``:
  ``gamma_g2 = (1/n) sum_i G_i^2``.
* ``gamma_h2`` (UPPER): the data Hessians are PSD with norm ``<= l_i =
  lam_max(X_i^T X_i)/(2 m_i)``, so ``||H_i - Hbar||_2 <= max_i l_i``.
* ``f_star_A``, ``f_star_P``, ``zeta`` (NUMERIC): damped Newton (THEORY_SPEC 9.4)
  with the stable oracles; certified by strong convexity: ``0 <= f(xhat) - f* <=
  g^2/(2 reg)`` and ``||xhat - x*|| <= g/reg`` with g the gradient norm plus a
  round-off allowance.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from fedsim.errors import check_integer, check_positive, require
from fedsim.problems.base import Problem
from fedsim.problems.constants import Constant, ConstantsTable, Tag
from fedsim.problems.row_view import RowOracles, as_model, rows_per_client
from fedsim.problems.softmax_kernel import (
    EPS,
    SoftmaxData,
    SoftmaxSolution,
    newton_cg,
    row_softmax,
    softmax_client_arrays,
    solve_softmax,
)
from fedsim.problems.softmax_view import softmax_compiled_view, softmax_metric_view, softmax_view

__all__ = ["KAPPA", "SoftmaxProblem", "SoftmaxSolution"]

#: Lipschitz constant of z -> diag(p) - p p^T (spectral norm), p = softmax(z); see module doc.
KAPPA: float = 1.0 / math.sqrt(2.0)


# ----------------------------------------------------------------------------------------
# the problem
# ----------------------------------------------------------------------------------------
class SoftmaxProblem(RowOracles, Problem):
    """Multinomial logistic regression over ``n`` clients (see the module docstring).

    Parameters are ``w = W.ravel()`` with ``W`` of shape ``(d, n_classes)``
    (row-major; ``dim = d * n_classes``).  ``X_test``/``y_test`` (optional, one
    array per client, possibly empty) are held-out rows used only by
    :mod:`fedsim.problems.evaluation`; they never enter an oracle or a constant.
    ``X_val``/``y_val`` (optional, likewise) are validation rows carved from the
    training rows, for choosing hyper-parameters without the test rows.
    """

    compiled_view_base = True  # the oracles its compiled view stands for (RowOracles)

    def __init__(self, X: Sequence[np.ndarray], y: Sequence[np.ndarray], n_classes: int,
                 reg: float, *, X_test: Sequence[np.ndarray] | None = None,
                 y_test: Sequence[np.ndarray] | None = None,
                 X_val: Sequence[np.ndarray] | None = None,
                 y_val: Sequence[np.ndarray] | None = None) -> None:
        C = check_integer("n_classes", n_classes, low=2)
        self.reg = check_positive("reg", reg)
        Xs, ys = softmax_client_arrays(X, y, C, "X", "y", None, allow_empty=False)
        self.n_classes = C
        self.X: list[np.ndarray] = Xs
        self.y: list[np.ndarray] = ys
        self.n = len(Xs)
        self.d = Xs[0].shape[1]
        self.dim = self.d * C
        self.m = np.array([Xi.shape[0] for Xi in Xs], dtype=np.int64)
        self.X_test, self.y_test = self._held_rows(X_test, y_test, "X_test", "y_test")
        self.X_val, self.y_val = self._held_rows(X_val, y_val, "X_val", "y_val")
        self._client = [SoftmaxData(Xi, yi, np.full(Xi.shape[0], 1.0 / Xi.shape[0]), self.reg,
                                    C) for Xi, yi in zip(Xs, ys, strict=True)]
        wts = np.concatenate([np.full(mi, 1.0 / (self.n * mi)) for mi in self.m])
        data = softmax_view(Xs, ys, C, self.reg)
        self._ranges = rows_per_client(data[0])
        self._cv = softmax_compiled_view(data, softmax_metric_view(data, self.m), 1)
        self._whole = SoftmaxData(np.vstack(Xs), np.concatenate(ys), wts, self.reg, C)
        self._global_sol: SoftmaxSolution | None = None
        self._client_sol: dict[int, SoftmaxSolution] = {}
        self._table: ConstantsTable | None = None
        self._dc: dict[str, np.ndarray] | None = None
        self._sq: dict[int, np.ndarray] = {}  # x_rj^2 per client, for hess_diag

    def _held_rows(self, X: Sequence[np.ndarray] | None, y: Sequence[np.ndarray] | None,
                   xn: str, yn: str) -> tuple[list[np.ndarray] | None, list[np.ndarray] | None]:
        """Checked per-client held-out rows (one possibly empty array per client) or None."""
        require((X is None) == (y is None), xn, "<given>" if X is not None else None,
                f"and {yn} must be given together")
        if X is None:
            return None, None
        Xh, yh = softmax_client_arrays(X, y, self.n_classes, xn, yn, self.d, allow_empty=True)
        require(len(Xh) == self.n, f"len({xn})", len(Xh), f"must equal n = {self.n}")
        return Xh, yh

    # ---- builders -----------------------------------------------------------------------
    @classmethod
    def from_arrays(cls, X_list: Sequence[np.ndarray], y_list: Sequence[np.ndarray],
                    n_classes: int, reg: float, *, X_test: Sequence[np.ndarray] | None = None,
                    y_test: Sequence[np.ndarray] | None = None) -> SoftmaxProblem:
        """Build from per-client arrays (rows ``(m_i, d)``, labels in ``0..n_classes-1``)."""
        return cls(X_list, y_list, n_classes, reg, X_test=X_test, y_test=y_test)

    @classmethod
    def digits(cls, n_clients: int, *, split: str = "dirichlet", a: float = 0.5,
               classes_per_client: int = 2, seed: int = 0, reg: float = 1e-3,
               test_fraction: float = 0.0, max_features: int | None = None,
               intercept: bool = True, min_rows: int = 10,
               validation_fraction: float = 0.0) -> SoftmaxProblem:
        """scikit-learn's bundled 8x8 digits (1797 rows, 10 classes) split over clients.

        Features are pixels / 16 in [0, 1] (or, with ``max_features=k``, the scores on
        the top-k principal axes, as in ``data.digits_binary``), plus a constant 1
        column when ``intercept`` (regularised like the other weights, so mu = reg
        stays exact).  Rows are dealt to clients by :func:`fedsim.problems.splits.partition`
        (``split`` = ``"iid"``, ``"dirichlet"`` with concentration ``a``, ``"classes"``
        with ``classes_per_client`` or ``"perfedavg"``, Per-FedAvg's Sec. 5 half/half
        construction), then each client's rows are split into train and
        test by :func:`fedsim.problems.splits.train_test_split` with ``test_fraction``;
        both draw from their own streams of ``seed``, so the test split never changes
        which rows a client holds.  ``validation_fraction > 0`` then moves that share of
        each client's training rows into ``X_val``/``y_val``
        (:func:`fedsim.problems.splits.validation_split`, its own stream; ``0`` leaves
        every row where it was).  ``min_rows`` is the minimum of training rows per
        client.  Needs scikit-learn (``pip install fedsim[data]``).
        """
        from fedsim.problems import data, splits

        if max_features is not None:
            check_integer("max_features", max_features, low=1, high=63)
        require(isinstance(intercept, (bool, np.bool_)), "intercept", intercept,
                "must be True or False")
        pixels, digits = data.load_digits_arrays()
        X = pixels / 16.0
        if max_features is not None:
            X = data.pca(X, int(max_features))
        if intercept:
            X = np.hstack([X, np.ones((X.shape[0], 1))])
        cs = splits.split_dataset(digits, n_clients, split=split, a=a,
                                  classes_per_client=classes_per_client, seed=seed,
                                  test_fraction=test_fraction, min_train=min_rows,
                                  validation_fraction=validation_fraction)
        return cls(
            [X[p] for p in cs.train], [digits[p] for p in cs.train], 10, reg,
            X_test=[X[p] for p in cs.test] if test_fraction > 0 else None,
            y_test=[digits[p] for p in cs.test] if test_fraction > 0 else None,
            X_val=[X[p] for p in cs.val] if validation_fraction > 0 else None,
            y_val=[digits[p] for p in cs.val] if validation_fraction > 0 else None)

    # ---- deterministic oracles ----------------------------------------------------------
    def _w(self, w: np.ndarray) -> np.ndarray:
        return as_model(w, self.dim)

    def loss(self, i: int, w: np.ndarray) -> float:
        """f_i(w), via ``logsumexp``."""
        return self._client[i].value(self._w(w))

    def grad(self, i: int, w: np.ndarray) -> np.ndarray:
        """grad f_i(w) = vec((1/m_i) X_i^T (P - Y) + reg W)."""
        return self._client[i].grad(self._w(w))

    def hess(self, i: int, w: np.ndarray) -> np.ndarray:
        """grad^2 f_i(w) as a dense (dC x dC) matrix."""
        return self._client[i].hess(self._w(w))

    def hvp(self, i: int, w: np.ndarray, v: np.ndarray) -> np.ndarray:
        """grad^2 f_i(w) v, matrix-free."""
        return self._client[i].hvp(self._w(w), self._w(v))

    def hess_diag(self, i: int, w: np.ndarray) -> np.ndarray:
        """diag grad^2 f_i(w) in O(m_i d C), never forming the Hessian.

        The diagonal of ``(x x^T) kron A`` at index ``(j, c)`` is ``x_j^2 A_cc`` with
        ``A_cc = p_c (1 - p_c)``, so ``diag_{(j,c)} = (1/m_i) sum_r x_rj^2 p_rc (1 - p_rc)
        + reg`` (row-major ``(j, c) -> j*C + c``).  AsyPFL's elastic weights diag(h) (Ma et
        al. 2022, eq. (1); h = the Fisher information = this Hessian for the canonical link).
        """
        w = self._w(w)
        Xi = self.X[i]
        sq = self._sq.get(i)
        if sq is None:
            sq = self._sq[i] = Xi * Xi
        P = row_softmax(Xi @ w.reshape(self.d, self.n_classes))
        return (sq.T @ (P * (1.0 - P))).ravel() / Xi.shape[0] + self.reg

    def f(self, w: np.ndarray) -> float:
        """f(w) = (1/n) sum_i f_i(w), one vectorised pass over all rows."""
        return self._whole.value(self._w(w))

    def grad_f(self, w: np.ndarray) -> np.ndarray:
        """grad f(w), vectorised."""
        return self._whole.grad(self._w(w))

    def hess_f(self, w: np.ndarray) -> np.ndarray:
        """grad^2 f(w), dense."""
        return self._whole.hess(self._w(w))

    # ---- stochastic oracles -------------------------------------------------------------
    def sample_batch(self, i: int, size: int, rng: np.random.Generator) -> np.ndarray:
        """``size`` row indices of client ``i``, uniform WITH replacement."""
        size = check_integer("size", size, low=1)
        return rng.integers(0, int(self.m[i]), size=size)

    # ---- Moreau envelope ----------------------------------------------------------------
    def theta_hat_with_bound(self, i: int, w: np.ndarray, lam: float) -> tuple[np.ndarray, float]:
        """``(theta_hat, err)``: Newton-CG on ``f_i(theta) + lam/2||theta - w||^2``.

        Solved to ``||grad|| <= 1e-13 max(1, ||grad(w)||)``; the inner problem is
        ``(lam + reg)``-strongly convex, so ``err = lam (||grad_inner|| + round-off)/(lam +
        reg)`` bounds the error of ``lam (w - theta_hat)``.
        """
        lam = check_positive("lam", lam)
        w = self._w(w)
        cd = self._client[i]
        th, gn = newton_cg(cd, w, lam, w)
        gi = gn + cd.grad_error_bound(th) + 4.0 * EPS * lam * float(
            np.linalg.norm(th) + np.linalg.norm(w))
        return th, lam * gi / (lam + self.reg)

    def theta_hat(self, i: int, w: np.ndarray, lam: float) -> np.ndarray:
        """argmin_theta f_i(theta) + lam/2 ||theta - w||^2 (Newton-CG to 1e-13 rel.)."""
        return self.theta_hat_with_bound(i, w, lam)[0]

    # ---- minimisers ---------------------------------------------------------------------
    def solve_global(self) -> SoftmaxSolution:
        """x*, f* and the strong-convexity certificate (Newton, cached)."""
        if self._global_sol is None:
            self._global_sol = solve_softmax(self._whole)
        return self._global_sol

    def solve_client(self, i: int) -> SoftmaxSolution:
        """u_i*, f_i* and the certificate (Newton, cached)."""
        i = check_integer("i", i, low=0, high=self.n - 1)
        if i not in self._client_sol:
            self._client_sol[i] = solve_softmax(self._client[i])
        return self._client_sol[i]

    @property
    def x_star(self) -> np.ndarray:
        """The unique global minimiser (Newton)."""
        return self.solve_global().x

    @property
    def f_star(self) -> float:
        """min f (= f_star_A)."""
        return self.solve_global().f

    @property
    def u_star(self) -> list[np.ndarray]:
        """Per-client minimisers."""
        return [self.solve_client(i).x for i in range(self.n)]

    # ---- constants ----------------------------------------------------------------------
    def _data_constants(self) -> dict[str, np.ndarray]:
        if self._dc is not None:
            return self._dc
        C = self.n_classes
        l_data, rho, G, sg, sh = [], [], [], [], []
        for Xi in self.X:
            m = Xi.shape[0]
            nrm = np.linalg.norm(Xi, axis=1)
            spec = float(np.linalg.norm(Xi, 2))
            l_data.append(spec * spec / (2.0 * m))
            Mw = (Xi.T * (nrm / m)) @ Xi
            r1 = float(np.linalg.eigvalsh(0.5 * (Mw + Mw.T))[-1])
            rho.append(KAPPA * min(r1, float(np.mean(nrm ** 3)), float(np.max(nrm)) ** 3))
            G.append(math.sqrt(2.0) * min(float(np.mean(nrm)), spec / math.sqrt(m)))
            sg.append(2.0 * float(np.mean(nrm ** 2)))
            sh.append(0.5 * (1.0 - 1.0 / C) * float(np.mean(nrm ** 4)))
        # allowance for the computed extreme eigenvalues (backward-stable solvers)
        slack = 1.0 + 1e-12
        self._dc = {k: slack * np.array(v) for k, v in
                    dict(l_data=l_data, rho=rho, G=G, sigma_g2=sg, sigma_h2=sh).items()}
        return self._dc

    @property
    def L_i(self) -> np.ndarray:
        """Per-client smoothness bound ``lam_max(X_i^T X_i)/(2 m_i) + reg`` (UPPER)."""
        return self._data_constants()["l_data"] + self.reg

    def _build_table(self) -> ConstantsTable:
        dc = self._data_constants()
        reg = self.reg
        C = [
            Constant("L", float(np.max(dc["l_data"])) + reg, Tag.UPPER,
                     "max_i lam_max(X_i^T X_i)/(2 m_i) + reg: diag(p) - pp^T <= I/2 (Popoviciu)"),
            Constant("mu", reg, Tag.EXACT,
                     "reg: lam_min(Hessian) = reg at every w (W = v 1^T in the data null space)"),
            Constant("rho", float(np.max(dc["rho"])), Tag.UPPER,
                     "max_i (1/sqrt2) min(lam_max(mean ||x|| x x^T), mean ||x||^3, max ||x||^3)"),
            Constant("G", math.inf, Tag.INFINITE,
                     "reg > 0: ||grad f_i|| grows like reg ||w|| ([P] Asm 6 fails)"),
            Constant("B", math.inf, Tag.INFINITE,
                     "reg > 0: f_i is not Lipschitz ([A] Asm 6 fails)"),
            Constant("sigma_g2", float(np.max(dc["sigma_g2"])), Tag.UPPER,
                     "max_i 2 mean_j ||x_j||^2 (||p - e_y||^2 <= 2; one row, with replacement)"),
            Constant("sigma_h2", float(np.max(dc["sigma_h2"])), Tag.UPPER,
                     "max_i ((1 - 1/C)/2) mean_j ||x_j||^4 (Frobenius)"),
            Constant("gamma_g2", float(np.mean(dc["G"] ** 2)), Tag.UPPER,
                     "(1/n) sum_i 2 min(mean ||x_j||, ||X_i||_2/sqrt(m_i))^2 (reg w cancels)"),
            Constant("gamma_h2", float(np.max(dc["l_data"])) ** 2, Tag.UPPER,
                     "(max_i lam_max(X_i^T X_i)/(2 m_i))^2: data Hessians PSD"),
        ]
        sol = self.solve_global()
        C.append(Constant("f_star_A", sol.f, Tag.NUMERIC,
                          f"Newton; certified 0 <= computed - min f <= {sol.f_gap_bound:.1e} "
                          "(reg-strong convexity)"))
        sols = [self.solve_client(i) for i in range(self.n)]
        k = int(np.argmin([s.f for s in sols]))
        worst = max(s.f_gap_bound for s in sols)
        C.append(Constant("f_star_P", sols[k].f, Tag.NUMERIC,
                          f"min_i min f_i (client {k}); Newton; certified to {worst:.1e}"))
        z = float(max(np.linalg.norm(sol.x - s.x) for s in sols))
        tol = sol.dist_bound + max(s.dist_bound for s in sols)
        C.append(Constant("zeta", z, Tag.NUMERIC,
                          f"max_i ||x* - u_i*|| by Newton; certified to +-{tol:.1e}"))
        return ConstantsTable(C)
