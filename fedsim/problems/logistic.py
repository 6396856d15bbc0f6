"""Binary logistic regression clients with tagged constants (THEORY_SPEC sections 9.2-9.4).

Client ``i`` holds rows ``x_j`` (j = 1..m_i) and labels ``y_j`` in {-1, +1}::

    f_i(w) = (1/m_i) sum_j log(1 + exp(-y_j x_j^T w)) + (nu_reg/2) ||w||^2,

evaluated stably as ``np.logaddexp(0, -z)`` with the margins ``z_j = y_j x_j^T w``.
With ``s`` the sigmoid (THEORY_SPEC 9.2)::

    grad f_i  = -(1/m_i) sum_j y_j s(-z_j) x_j + nu_reg w
    grad2 f_i =  (1/m_i) sum_j s(z_j) s(-z_j) x_j x_j^T + nu_reg I.

Every number the problem reports carries a tag (``fedsim.problems.constants``):
``L`` and ``mu`` are EXACT, ``rho``, ``G``, ``B``, ``sigma_g2``, ``sigma_h2``,
``gamma_g2`` and ``gamma_h2`` are UPPER bounds (the table of 9.2), and the
minimum values ``f_star_A``, ``f_star_P`` and ``zeta`` come from Newton's method
(9.4) with an a-posteriori certificate whose tolerance is stated in the reason.

Existence of minimisers (``nu_reg = 0``) is decided by the linear programmes of
9.4 (:meth:`LogisticProblem.separability_report`): a strictly separable data
set has ``inf f = 0`` (not attained).  A weakly separable one has no minimiser
either; THEORY_SPEC 9.4 allows the lower bound ``0`` there, but this module
computes the infimum itself (flagged as not attained): a third LP finds the
rows ``S`` that some recession direction ``w_S`` separates strictly, and
``inf f = min_w sum_{j not in S} c_j log(1 + exp(-y_j x_j^T w))``, a minimum that is
attained because the remaining rows admit no separating direction.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from scipy.optimize import linprog
from scipy.special import expit

from fedsim.errors import ConfigError, FedsimError, check_finite, require
from fedsim.problems.base import Problem
from fedsim.problems.constants import Constant, ConstantsTable, Tag

__all__ = [
    "S2_SUP",
    "Z_S2_ARGMAX",
    "Certificate",
    "LogisticProblem",
    "NewtonResult",
    "Separability",
    "SeparabilityReport",
    "Solution",
    "newton_minimize",
]

#: sup_z |s''(z)| = 1/(6 sqrt 3) for the sigmoid s (THEORY_SPEC 9.2, derivations)
S2_SUP: float = 1.0 / (6.0 * math.sqrt(3.0))
#: the maximisers of |s''| are z = +-ln(2 + sqrt 3) (THEORY_SPEC 9.2)
Z_S2_ARGMAX: float = math.log(2.0 + math.sqrt(3.0))

_EPS = float(np.finfo(np.float64).eps)


# ----------------------------------------------------------------------------------------
# Newton's method (THEORY_SPEC 9.4)
# ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class NewtonResult:
    """Outcome of :func:`newton_minimize`: the point, its value and gradient norm."""

    x: np.ndarray
    fun: float
    grad_norm: float
    iterations: int
    converged: bool
    message: str


def newton_minimize(
    fun: Callable[[np.ndarray], float],
    grad: Callable[[np.ndarray], np.ndarray],
    hess: Callable[[np.ndarray], np.ndarray],
    x0: np.ndarray,
    *,
    gtol_rel: float = 1e-13,
    max_iter: int = 200,
) -> NewtonResult:
    """Damped Newton with exact Hessian and Armijo backtracking (THEORY_SPEC 9.4).

    Stops when ``||grad|| <= gtol_rel * max(1, ||grad(x0)||)`` or when the squared
    Newton decrement over two is ``<= 1e-26``.  If the Hessian is not positive
    definite (a non-convex user loss) it is shifted by ``(-lam_min + delta) I``
    so the step is still a descent direction.  Near the optimum, where the
    function values no longer resolve the Armijo decrease, a step is accepted
    when the value does not increase beyond round-off and the gradient norm
    decreases.  Stops without convergence when no step is accepted.
    """
    x = np.array(x0, dtype=np.float64, copy=True)
    g = np.asarray(grad(x), dtype=np.float64)
    gn = float(np.linalg.norm(g))
    target = gtol_rel * max(1.0, gn)
    fx = float(fun(x))
    for it in range(max_iter + 1):
        if gn <= target:
            return NewtonResult(x, fx, gn, it, True, f"||grad|| = {gn:.3g} <= {target:.3g}")
        if it == max_iter:
            break
        H = np.asarray(hess(x), dtype=np.float64)
        H = 0.5 * (H + H.T)
        try:
            c = np.linalg.cholesky(H)
            p = -np.linalg.solve(c.T, np.linalg.solve(c, g))
        except np.linalg.LinAlgError:
            lam = np.linalg.eigvalsh(H)
            shift = -lam[0] + max(1e-10 * max(1.0, abs(lam[-1])), 1e-300)
            p = -np.linalg.solve(H + shift * np.eye(H.shape[0]), g)
        slope = float(g @ p)
        if not np.isfinite(slope) or slope >= 0.0:
            p, slope = -g, -gn * gn
        if -slope / 2.0 <= 1e-26:
            return NewtonResult(x, fx, gn, it, True, f"Newton decrement^2/2 = {-slope / 2:.3g}")
        t = 1.0
        accepted = False
        for _ in range(60):
            xn = x + t * p
            fn = float(fun(xn))
            if np.isfinite(fn) and fn <= fx + 1e-4 * t * slope:
                accepted = True
            elif np.isfinite(fn) and fn <= fx + 16.0 * _EPS * max(1.0, abs(fx)):
                gtry = np.asarray(grad(xn), dtype=np.float64)
                if float(np.linalg.norm(gtry)) < gn:
                    accepted = True
            if accepted:
                break
            t *= 0.5
        if not accepted:
            return NewtonResult(x, fx, gn, it, False,
                                f"line search stalled at ||grad|| = {gn:.3g} (target {target:.3g})")
        x, fx = xn, fn
        g = np.asarray(grad(x), dtype=np.float64)
        gn = float(np.linalg.norm(g))
    return NewtonResult(x, fx, gn, max_iter, False,
                        f"max_iter={max_iter} reached at ||grad|| = {gn:.3g}")


# ----------------------------------------------------------------------------------------
# weighted logistic data: the shared kernel of f_i and f
# ----------------------------------------------------------------------------------------
class _LogData:
    """``sum_j c_j log(1 + exp(-a_j^T w)) + nu/2 ||w||^2`` with rows ``a_j = y_j x_j``."""

    def __init__(self, rows: np.ndarray, wts: np.ndarray, nu: float) -> None:
        self.rows = rows
        self.wts = wts
        self.nu = nu
        self.dim = rows.shape[1]
        self.row_norms = np.linalg.norm(rows, axis=1)

    def value(self, w: np.ndarray) -> float:
        z = self.rows @ w
        return float(self.wts @ np.logaddexp(0.0, -z) + 0.5 * self.nu * (w @ w))

    def grad(self, w: np.ndarray) -> np.ndarray:
        z = self.rows @ w
        return -(self.rows.T @ (self.wts * expit(-z))) + self.nu * w

    def hess(self, w: np.ndarray) -> np.ndarray:
        z = self.rows @ w
        dw = self.wts * expit(z) * expit(-z)
        H = (self.rows.T * dw) @ self.rows
        H[np.diag_indices_from(H)] += self.nu
        return H

    def hvp(self, w: np.ndarray, v: np.ndarray) -> np.ndarray:
        z = self.rows @ w
        dw = self.wts * expit(z) * expit(-z)
        return self.rows.T @ (dw * (self.rows @ v)) + self.nu * v

    def grad_error_bound(self, w: np.ndarray) -> float:
        """Floating-point allowance for the computed gradient (standard summation bound).

        ``|fl(sum) - sum| <= gamma_k sum |terms|`` with ``gamma_k ~ k eps``; the margins,
        the sigmoid and the products add a few relative eps each, which the ``+ d + 10``
        covers.  Used so that certificates do not assume the computed gradient is exact.
        """
        k = self.rows.shape[0] + self.dim + 10
        scale = float(self.wts @ self.row_norms) + self.nu * float(np.linalg.norm(w))
        return 2.0 * k * _EPS * scale


# ----------------------------------------------------------------------------------------
# certificates and separability (THEORY_SPEC 9.4)
# ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Certificate:
    """A-posteriori certificate for a computed minimiser ``xhat`` (THEORY_SPEC 9.4).

    ``mu_loc(r) = lam_min( sum_j c_j exp(-(|z_j(xhat)| + r ||x_j||))/4 x_j x_j^T ) + nu_reg``
    lower-bounds the curvature on the ball ``B(xhat, r)`` (because ``s'(z) >= exp(-|z|)/4``).
    If ``g := ||grad f(xhat)|| (+ round-off allowance) <= mu_loc(r) r / 2`` the minimiser
    lies in the ball and ``||xhat - x*|| <= g/mu_loc(r)``,
    ``0 <= f(xhat) - f* <= g^2/(2 mu_loc(r))``.  ``valid`` is False when no radius
    passes the test (or when there is no minimiser); the bounds are then ``inf``.
    """

    valid: bool
    radius: float
    mu_loc: float
    grad_norm: float
    dist_bound: float
    f_gap_bound: float
    note: str = ""


def _certify(data: _LogData, xhat: np.ndarray, note: str = "") -> Certificate:
    g = float(np.linalg.norm(data.grad(xhat))) + data.grad_error_bound(xhat)
    absz = np.abs(data.rows @ xhat)
    d = data.dim

    def mu_loc(r: float) -> float:
        c = data.wts * np.exp(-(absz + r * data.row_norms)) / 4.0
        M = (data.rows.T * c) @ data.rows
        lam = float(np.linalg.eigvalsh(0.5 * (M + M.T))[0])
        # round-off allowances: backward-stable symmetric eigensolver, and a relative
        # 1e-9 for the margins |z_j| and exp() (relative error ~ eps |z| <= 1e-12)
        lam = lam * (1.0 - 1e-9) - 4.0 * d * _EPS * float(np.linalg.norm(M))
        return lam + data.nu

    m0 = mu_loc(0.0)
    if not m0 > 0.0:
        return Certificate(False, math.nan, m0, g, math.inf, math.inf,
                           (note + "; " if note else "") + "mu_loc(0) <= 0: no curvature")
    r = 2.0 * g / m0
    for _ in range(60):
        m = mu_loc(r)
        if m > 0.0 and g <= m * r / 2.0:
            return Certificate(True, r, m, g, g / m, g * g / (2.0 * m), note)
        r *= 1.5
    return Certificate(False, math.nan, m0, g, math.inf, math.inf,
                       (note + "; " if note else "") + "no radius r with ||grad|| <= mu_loc(r) r/2")


@dataclass(frozen=True)
class Separability:
    """LP diagnosis of one data set (THEORY_SPEC 9.4), independent of ``nu_reg``.

    ``lp_max`` is ``max sum_j y_j x_j^T w`` s.t. ``y_j x_j^T w >= 0``, ``-1 <= w_k <= 1``;
    ``kind`` is ``"coercive"`` (lp_max = 0 and rank d: unique minimiser when
    nu_reg = 0), ``"attained_not_unique"`` (lp_max = 0, rank < d),
    ``"strictly_separable"`` (some w has every margin >= 1, verified on the LP
    witness: inf f = 0, not attained) or ``"weakly_separable"`` (lp_max > 0 but
    not strictly separable: no minimiser).  ``separable_rows`` are the indices
    ``S`` of the rows that some ``w`` with all margins ``>= 0`` makes strictly
    positive (all rows when strictly separable, none when lp_max = 0).
    """

    rows: int
    rank: int
    lp_max: float
    strictly_separable: bool
    kind: str
    separable_rows: tuple[int, ...] = ()

    @property
    def coercive(self) -> bool:
        """True if the unregularised loss is coercive (a unique minimiser exists)."""
        return self.kind == "coercive"

    @property
    def minimiser_exists(self) -> bool:
        """True if the unregularised loss attains its infimum."""
        return self.kind in ("coercive", "attained_not_unique")


@dataclass(frozen=True)
class SeparabilityReport:
    """Per-client and global :class:`Separability` (``whole`` is the union of all rows)."""

    clients: tuple[Separability, ...]
    whole: Separability

    def to_frame(self):  # -> pandas.DataFrame
        """One row per client plus a row ``"global"``."""
        import pandas as pd

        recs = [(str(i), s.rows, s.rank, s.lp_max, s.strictly_separable, s.kind)
                for i, s in enumerate(self.clients)]
        s = self.whole
        recs.append(("global", s.rows, s.rank, s.lp_max, s.strictly_separable, s.kind))
        return pd.DataFrame(recs, columns=["set", "rows", "rank", "lp_max",
                                           "strictly_separable", "kind"])


def _separability(rows: np.ndarray) -> Separability:
    M, d = rows.shape
    rank = int(np.linalg.matrix_rank(rows))
    res = linprog(-rows.sum(axis=0), A_ub=-rows, b_ub=np.zeros(M), bounds=[(-1.0, 1.0)] * d,
                  method="highs")
    if res.status != 0:
        raise FedsimError(f"coercivity LP failed: {res.message}")
    lp_max = max(0.0, -float(res.fun))
    tol = 1e-9 * max(1.0, float(np.abs(rows).sum()))
    strict = False
    res2 = linprog(np.zeros(d), A_ub=-rows, b_ub=-np.ones(M), bounds=[(None, None)] * d,
                   method="highs")
    if res2.status == 0:
        # verify the witness: every margin strictly positive => strictly separable
        strict = bool(np.min(rows @ res2.x) > 0.0)
    sep_rows: tuple[int, ...] = ()
    if strict:
        kind = "strictly_separable"
        sep_rows = tuple(range(M))
    elif lp_max > tol and (sep_rows := _separable_rows(rows)):
        # decided on the scale-free LP (t_j in {0, 1}), not on lp_max against round-off
        kind = "weakly_separable"
    elif rank == d:
        kind = "coercive"
    else:
        kind = "attained_not_unique"
    return Separability(M, rank, lp_max, strict, kind, sep_rows)


def _separable_rows(rows: np.ndarray) -> tuple[int, ...]:
    """Rows j that some w in C = {w: y_k x_k^T w >= 0 for all k} makes strictly positive.

    LP over (w, t): max sum_j t_j s.t. t_j <= a_j^T w, a_j^T w >= 0, 0 <= t_j <= 1.  A sum of
    scaled witnesses lies in the cone C and has margin >= 1 on every such row, so at the
    optimum t_j = 1 exactly on them and t_j = 0 elsewhere (rows outside S have a_j^T w = 0
    on all of C).
    """
    M, d = rows.shape
    eye = np.eye(M)
    A_ub = np.block([[-rows, eye], [-rows, np.zeros((M, M))]])
    b_ub = np.zeros(2 * M)
    c = np.concatenate([np.zeros(d), -np.ones(M)])
    res = linprog(c, A_ub=A_ub, b_ub=b_ub, bounds=[(None, None)] * d + [(0.0, 1.0)] * M,
                  method="highs")
    if res.status != 0:
        raise FedsimError(f"separable-rows LP failed: {res.message}")
    return tuple(int(j) for j in np.flatnonzero(res.x[d:] > 0.5))


def _solve_row_space(data: _LogData, rank: int) -> Solution:
    """Minimise an unregularised, non-separable objective over the row space of its data.

    The minimiser set is ``x + null(X)``; the min-norm point ``x`` is returned, and the
    certificate is computed for the reduced (strictly convex) problem in the row space.
    """
    if rank == 0:  # every row is zero: f is constant
        return Solution(np.zeros(data.dim), data.value(np.zeros(data.dim)),
                        Certificate(True, 0.0, 0.0, 0.0, 0.0, 0.0, "constant objective"))
    _, _, vt = np.linalg.svd(data.rows, full_matrices=False)
    V = vt[:rank].T
    red = _LogData(data.rows @ V, data.wts, 0.0)
    res = newton_minimize(red.value, red.grad, red.hess, np.zeros(rank))
    cert = _certify(red, res.x, "" if res.converged else res.message)
    x = V @ res.x
    return Solution(x, data.value(x), cert)


class Solution(NamedTuple):
    """``(x, f, certificate)``; ``x`` is None when no minimiser exists."""

    x: np.ndarray | None
    f: float
    certificate: Certificate


def _solve(data: _LogData, sep: Separability) -> Solution:
    """Minimise one weighted logistic objective (THEORY_SPEC 9.4)."""
    if data.nu == 0.0 and sep.kind == "strictly_separable":
        return Solution(None, 0.0, Certificate(
            False, math.nan, 0.0, 0.0, math.inf, math.inf,
            "strictly separable: inf f = 0 exactly, NOT attained (no minimiser)"))
    if data.nu == 0.0 and sep.kind == "weakly_separable":
        keep = np.ones(data.rows.shape[0], dtype=bool)
        keep[list(sep.separable_rows)] = False
        rest = _LogData(data.rows[keep], data.wts[keep], 0.0)
        xr, fr, cert = _solve_row_space(rest, int(np.linalg.matrix_rank(rest.rows)))
        note = (f"weakly separable: NO minimiser; inf f = min over the {int(keep.sum())} "
                f"non-separable rows ({len(sep.separable_rows)} rows separable), NOT attained")
        return Solution(None, fr, Certificate(cert.valid, cert.radius, cert.mu_loc,
                                              cert.grad_norm, math.inf, cert.f_gap_bound,
                                              note + ("; " + cert.note if cert.note else "")))
    if data.nu == 0.0 and sep.kind == "attained_not_unique":
        x, fx, cert = _solve_row_space(data, sep.rank)
        note = "minimiser NOT unique (rank < d): min-norm point; certificate in the row space"
        return Solution(x, fx, Certificate(cert.valid, cert.radius, cert.mu_loc, cert.grad_norm,
                                           cert.dist_bound, cert.f_gap_bound,
                                           note + ("; " + cert.note if cert.note else "")))
    res = newton_minimize(data.value, data.grad, data.hess, np.zeros(data.dim))
    cert = _certify(data, res.x, "" if res.converged else res.message)
    return Solution(res.x, data.value(res.x), cert)


# ----------------------------------------------------------------------------------------
# the problem
# ----------------------------------------------------------------------------------------
def _as_client_arrays(X: Any, y: Any) -> tuple[list[np.ndarray], list[np.ndarray]]:
    for name, obj in (("X", X), ("y", y)):
        require(isinstance(obj, (list, tuple)), name, type(obj).__name__,
                "must be a list with one array per client")
    require(len(X) >= 1, "X", len(X), "must hold at least one client")
    require(len(y) == len(X), "len(y)", len(y), f"must equal len(X) = {len(X)}")
    Xs: list[np.ndarray] = []
    ys: list[np.ndarray] = []
    d = None
    for i, (Xi, yi) in enumerate(zip(X, y, strict=True)):
        try:
            Xi = np.array(Xi, dtype=np.float64)
            yi = np.array(yi, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"X[{i}] and y[{i}] must be numeric arrays ({exc})") from None
        require(Xi.ndim == 2, f"X[{i}].ndim", Xi.ndim, "must be 2 (rows m_i x features d)")
        require(Xi.shape[0] >= 1, f"X[{i}].shape", Xi.shape, "must have at least one row")
        require(Xi.shape[1] >= 1, f"X[{i}].shape", Xi.shape, "must have at least one column")
        if d is None:
            d = Xi.shape[1]
        require(Xi.shape[1] == d, f"X[{i}].shape", Xi.shape, f"must have d = {d} columns")
        require(yi.shape == (Xi.shape[0],), f"y[{i}].shape", yi.shape,
                f"must be ({Xi.shape[0]},) to match X[{i}]")
        check_finite(f"X[{i}]", Xi)
        check_finite(f"y[{i}]", yi)
        bad = yi[(yi != 1.0) & (yi != -1.0)]
        if bad.size:
            raise ConfigError(f"y[{i}] must contain only -1/+1 labels, got {float(bad[0])!r}")
        Xs.append(Xi)
        ys.append(yi)
    return Xs, ys


class LogisticProblem(Problem):
    """Binary logistic regression over ``n`` clients (THEORY_SPEC 9.2).

    ``X`` and ``y`` are lists with one ``(m_i, d)`` array and one ``(m_i,)`` label
    array in {-1, +1} per client; ``nu_reg >= 0`` is a ridge term common to all
    clients.  A minibatch is an index array drawn uniformly WITH replacement
    (the scheme that ``sigma_g2`` of 9.2 is stated for).  Minimisers are solved
    lazily, once, and cached.
    """

    def __init__(self, X: Sequence[np.ndarray], y: Sequence[np.ndarray],
                 nu_reg: float = 0.0) -> None:
        Xs, ys = _as_client_arrays(X, y)
        try:
            nu = float(nu_reg)
        except (TypeError, ValueError):
            raise ConfigError(f"nu_reg must be a number, got nu_reg={nu_reg!r}") from None
        require(math.isfinite(nu) and nu >= 0.0, "nu_reg", nu, "must be finite and >= 0")
        self.X: list[np.ndarray] = Xs
        self.y: list[np.ndarray] = ys
        self.nu_reg = nu
        self.n = len(Xs)
        self.dim = Xs[0].shape[1]
        self.m = np.array([Xi.shape[0] for Xi in Xs], dtype=np.int64)
        self._rows = [yi[:, None] * Xi for Xi, yi in zip(Xs, ys, strict=True)]
        self._client = [_LogData(r, np.full(r.shape[0], 1.0 / r.shape[0]), nu)
                        for r in self._rows]
        wts = np.concatenate([np.full(mi, 1.0 / (self.n * mi)) for mi in self.m])
        self._whole = _LogData(np.vstack(self._rows), wts, nu)
        self._sep: SeparabilityReport | None = None
        self._global_sol: Solution | None = None
        self._client_sol: dict[int, Solution] = {}
        self._table: ConstantsTable | None = None
        self._dc: dict[str, np.ndarray] | None = None

    # ---- builders (data.py is imported lazily) ----------------------------------------
    @classmethod
    def synthetic(cls, n_clients: int, dim: int, samples_per_client: int, *,
                  heterogeneity: float = 1.0, label_noise: float = 0.1, seed: int = 0,
                  nu_reg: float = 0.0, anchors: str | None = "all",
                  anchor_scale: float = 1.0, feature_scale: float = 1.0) -> LogisticProblem:
        """``data.synthetic_logistic(...)`` plus anchor rows (THEORY_SPEC 9.4).

        ``feature_scale`` multiplies every feature row (before the anchors are appended), so
        the data constants scale as L ~ s^2, G ~ s, rho ~ s^3: use it to build instances at
        L << 1 (THEORY_SPEC 1.3, E-P17: the theorems are not scale invariant).

        ``anchors`` is ``"all"`` (every client: all f_i have unique minimisers),
        ``"first"`` (one client: the global minimiser exists) or ``None``.
        """
        from fedsim.problems import data

        X, y = data.synthetic_logistic(n_clients, dim, samples_per_client,
                                       heterogeneity=heterogeneity, label_noise=label_noise,
                                       seed=seed)
        require(math.isfinite(feature_scale) and feature_scale > 0, "feature_scale",
                feature_scale, "must be finite and > 0")
        X = [feature_scale * x for x in X]
        return cls._with_anchors(X, y, nu_reg, anchors, anchor_scale)

    @classmethod
    def digits(cls, n_clients: int, *, nu_reg: float = 0.0, anchors: str | None = "all",
               anchor_scale: float = 1.0, **kwargs: Any) -> LogisticProblem:
        """``data.digits_binary(n_clients, **kwargs)`` plus anchor rows (THEORY_SPEC 9.4)."""
        from fedsim.problems import data

        X, y = data.digits_binary(n_clients, **kwargs)
        return cls._with_anchors(X, y, nu_reg, anchors, anchor_scale)

    @classmethod
    def _with_anchors(cls, X: list, y: list, nu_reg: float, anchors: str | None,
                      anchor_scale: float) -> LogisticProblem:
        require(anchors in ("all", "first", None), "anchors", anchors,
                "must be 'all', 'first' or None")
        if anchors is not None:
            from fedsim.problems import data

            X, y = data.add_anchor_rows(X, y, s=anchor_scale, clients=anchors)
        return cls(X, y, nu_reg=nu_reg)

    # ---- deterministic oracles ----------------------------------------------------------
    def loss(self, i: int, w: np.ndarray) -> float:
        """f_i(w) (9.2), via ``logaddexp``."""
        return self._client[i].value(np.asarray(w, dtype=np.float64))

    def grad(self, i: int, w: np.ndarray) -> np.ndarray:
        """grad f_i(w) = -(1/m_i) sum_j y_j s(-z_j) x_j + nu_reg w."""
        return self._client[i].grad(np.asarray(w, dtype=np.float64))

    def hess(self, i: int, w: np.ndarray) -> np.ndarray:
        """grad^2 f_i(w) = (1/m_i) sum_j s(z_j) s(-z_j) x_j x_j^T + nu_reg I."""
        return self._client[i].hess(np.asarray(w, dtype=np.float64))

    def hvp(self, i: int, w: np.ndarray, v: np.ndarray) -> np.ndarray:
        """grad^2 f_i(w) v, matrix-free: ``X^T (s' * (X v))/m_i + nu_reg v``."""
        return self._client[i].hvp(np.asarray(w, dtype=np.float64),
                                   np.asarray(v, dtype=np.float64))

    def f(self, w: np.ndarray) -> float:
        """f(w) = (1/n) sum_i f_i(w), one vectorised pass over all rows."""
        return self._whole.value(np.asarray(w, dtype=np.float64))

    def grad_f(self, w: np.ndarray) -> np.ndarray:
        """grad f(w), vectorised."""
        return self._whole.grad(np.asarray(w, dtype=np.float64))

    def hess_f(self, w: np.ndarray) -> np.ndarray:
        """grad^2 f(w), vectorised."""
        return self._whole.hess(np.asarray(w, dtype=np.float64))

    # ---- stochastic oracles -------------------------------------------------------------
    def sample_batch(self, i: int, size: int, rng: np.random.Generator) -> np.ndarray:
        """``size`` row indices of client ``i``, uniform WITH replacement (9.2 sigma_g2)."""
        require(isinstance(size, (int, np.integer)) and size >= 1, "size", size,
                "must be an integer >= 1")
        return rng.integers(0, int(self.m[i]), size=int(size))

    def batch_grad(self, i: int, w: np.ndarray, batch: np.ndarray) -> np.ndarray:
        """Mean per-sample gradient over the batch rows, plus ``nu_reg w``."""
        w = np.asarray(w, dtype=np.float64)
        rows = self._rows[i][batch]
        return -(rows.T @ expit(-(rows @ w))) / rows.shape[0] + self.nu_reg * w

    def batch_hvp(self, i: int, w: np.ndarray, v: np.ndarray, batch: np.ndarray) -> np.ndarray:
        """Mean per-sample Hessian over the batch rows times ``v``, plus ``nu_reg v``."""
        w = np.asarray(w, dtype=np.float64)
        v = np.asarray(v, dtype=np.float64)
        rows = self._rows[i][batch]
        z = rows @ w
        return rows.T @ (expit(z) * expit(-z) * (rows @ v)) / rows.shape[0] + self.nu_reg * v

    # ---- Moreau envelope (THEORY_SPEC 9.4, last item) -----------------------------------
    def theta_hat_with_bound(self, i: int, w: np.ndarray, lam: float) -> tuple[np.ndarray, float]:
        """``(theta_hat, err)``: Newton on ``f_i(theta) + lam/2||theta - w||^2`` to 1e-13.

        The inner problem is ``(lam + nu_reg)``-strongly convex, so the F^(c)
        gradient error ``lam ||theta_hat - theta*||`` is at most
        ``err = lam (||grad_inner|| + round-off allowance)/(lam + nu_reg)``.
        """
        require(math.isfinite(lam) and lam > 0, "lam", lam, "must be finite and > 0")
        w = np.asarray(w, dtype=np.float64)
        cd = self._client[i]

        def fun(t: np.ndarray) -> float:
            u = t - w
            return cd.value(t) + 0.5 * lam * float(u @ u)

        def grd(t: np.ndarray) -> np.ndarray:
            return cd.grad(t) + lam * (t - w)

        def hes(t: np.ndarray) -> np.ndarray:
            H = cd.hess(t)
            H[np.diag_indices_from(H)] += lam
            return H

        res = newton_minimize(fun, grd, hes, w)
        gi = res.grad_norm + cd.grad_error_bound(res.x) + 4.0 * _EPS * lam * float(
            np.linalg.norm(res.x) + np.linalg.norm(w))
        return res.x, lam * gi / (lam + self.nu_reg)

    def theta_hat(self, i: int, w: np.ndarray, lam: float) -> np.ndarray:
        """argmin_theta f_i(theta) + lam/2 ||theta - w||^2 (Newton, ||grad|| <= 1e-13)."""
        return self.theta_hat_with_bound(i, w, lam)[0]

    def grad_F_me_with_bound(self, w: np.ndarray, lam: float) -> tuple[np.ndarray, float]:
        """``(grad F^(c)(w), err)`` with ``||computed - exact|| <= err`` (mean of client bounds)."""
        w = np.asarray(w, dtype=np.float64)
        g = np.zeros(self.dim)
        err = 0.0
        for i in range(self.n):
            th, e = self.theta_hat_with_bound(i, w, lam)
            g += lam * (w - th)
            err += e
        return g / self.n, err / self.n

    # ---- minimisers (THEORY_SPEC 9.4) ---------------------------------------------------
    def separability_report(self) -> SeparabilityReport:
        """LP coercivity and strict-separability tests per client and for all rows (9.4)."""
        if self._sep is None:
            self._sep = SeparabilityReport(tuple(_separability(r) for r in self._rows),
                                           _separability(self._whole.rows))
        return self._sep

    def solve_global(self) -> Solution:
        """``(x_star, f_star, certificate)`` for f; ``x_star`` is None without a minimiser."""
        if self._global_sol is None:
            self._global_sol = _solve(self._whole, self.separability_report().whole)
        return self._global_sol

    def solve_client(self, i: int) -> Solution:
        """``(u_i*, f_i*, certificate)`` for f_i; ``u_i*`` is None without a minimiser."""
        require(isinstance(i, (int, np.integer)) and 0 <= i < self.n, "i", i,
                f"must be a client index in [0, {self.n})")
        i = int(i)
        if i not in self._client_sol:
            self._client_sol[i] = _solve(self._client[i], self.separability_report().clients[i])
        return self._client_sol[i]

    def certify(self, w: np.ndarray, client: int | None = None) -> Certificate:
        """The 9.4 certificate at an arbitrary point ``w`` for f (or for f_client).

        Valid only when the objective is strongly convex on a ball around ``w``
        that contains the minimiser; otherwise ``valid`` is False.
        """
        w = np.asarray(w, dtype=np.float64)
        require(w.shape == (self.dim,), "w.shape", w.shape, f"must be ({self.dim},)")
        if client is None:
            return _certify(self._whole, w)
        require(isinstance(client, (int, np.integer)) and 0 <= client < self.n, "client",
                client, f"must be a client index in [0, {self.n})")
        return _certify(self._client[int(client)], w)

    @property
    def x_star(self) -> np.ndarray:
        """Global minimiser (raises FedsimError when f has none)."""
        x, _, cert = self.solve_global()
        if x is None:
            raise FedsimError(f"f has no minimiser: {cert.note} (add anchor rows or nu_reg > 0)")
        return x

    @property
    def f_star(self) -> float:
        """inf f (= f_star_A)."""
        return self.solve_global().f

    @property
    def f_i_star(self) -> np.ndarray:
        """inf f_i per client (0 for a separable client with nu_reg = 0; see the reasons)."""
        return np.array([self.solve_client(i).f for i in range(self.n)])

    @property
    def u_star(self) -> list[np.ndarray | None]:
        """Per-client minimisers (None where f_i has none)."""
        return [self.solve_client(i).x for i in range(self.n)]

    @property
    def grad_at_xstar(self) -> np.ndarray:
        """(n, d) array of grad f_i(x*)."""
        xs = self.x_star
        return np.array([self.grad(i, xs) for i in range(self.n)])

    # ---- constants (THEORY_SPEC 9.2 table) ----------------------------------------------
    def _data_constants(self) -> dict[str, np.ndarray]:
        if self._dc is not None:
            return self._dc
        l_data, rho, G, sg, sh = [], [], [], [], []
        for Xi in self.X:
            m = Xi.shape[0]
            nrm = np.linalg.norm(Xi, axis=1)
            spec = float(np.linalg.norm(Xi, 2))
            l_data.append(spec * spec / (4.0 * m))
            Mw = (Xi.T * (nrm / m)) @ Xi
            r1 = float(np.linalg.eigvalsh(0.5 * (Mw + Mw.T))[-1])
            rho.append(S2_SUP * min(r1, float(np.mean(nrm ** 3)), float(np.max(nrm)) ** 3))
            G.append(min(float(np.mean(nrm)), spec / math.sqrt(m)))
            sg.append(float(np.mean(nrm ** 2)))
            sh.append(float(np.mean(nrm ** 4)) / 16.0)
        self._dc = {k: np.array(v) for k, v in
                    dict(l_data=l_data, rho=rho, G=G, sigma_g2=sg, sigma_h2=sh).items()}
        return self._dc

    @property
    def L_i(self) -> np.ndarray:
        """Per-client smoothness ``lam_max(X_i^T X_i)/(4 m_i) + nu_reg`` (EXACT, at w = 0)."""
        return self._data_constants()["l_data"] + self.nu_reg

    def _build_table(self) -> ConstantsTable:
        """The 9.2 table (``constants``, cached by the base class); solving for f_star_A,
        f_star_P and zeta happens on first access."""
        dc = self._data_constants()
        nu = self.nu_reg
        L = float(np.max(dc["l_data"])) + nu
        C = [
            Constant("L", L, Tag.EXACT,
                     "max_i lam_max(X_i^T X_i)/(4 m_i) + nu_reg, attained at w = 0 (s'(0) = 1/4)"),
            Constant("mu", nu, Tag.EXACT,
                     "inf_w lam_min(Hessian) = nu_reg, approached as ||w|| -> inf"
                     + (" (not strongly convex)" if nu == 0 else "")),
            Constant("rho", float(np.max(dc["rho"])), Tag.UPPER,
                     "max_i (1/(6 sqrt3)) min(lam_max(mean ||x|| x x^T), mean ||x||^3, "
                     "max ||x||^3)"),
        ]
        if nu == 0.0:
            G = float(np.max(dc["G"]))
            C += [Constant("G", G, Tag.UPPER,
                           "max_i min(mean_j ||x_j||, ||X_i||_2/sqrt(m_i))"),
                  Constant("B", G, Tag.UPPER, "= G: f_i is G-Lipschitz ([A] Asm 6)")]
        else:
            C += [Constant("G", math.inf, Tag.INFINITE,
                           "nu_reg > 0: ||grad f_i|| grows like nu_reg ||w|| ([P] Asm 6 fails)"),
                  Constant("B", math.inf, Tag.INFINITE,
                           "nu_reg > 0: f_i is not Lipschitz ([A] Asm 6 fails)")]
        C += [
            Constant("sigma_g2", float(np.max(dc["sigma_g2"])), Tag.UPPER,
                     "max_i mean_j ||x_j||^2 (one row drawn uniformly with replacement)"),
            Constant("sigma_h2", float(np.max(dc["sigma_h2"])), Tag.UPPER,
                     "max_i (1/16) mean_j ||x_j||^4 (Frobenius)"),
            Constant("gamma_g2", float(np.mean(dc["G"] ** 2)), Tag.UPPER,
                     "(1/n) sum_i G_i^2 (data part; a common nu_reg w cancels)"),
            Constant("gamma_h2", float(np.max(dc["l_data"])) ** 2, Tag.UPPER,
                     "(max_i lam_max(X_i^T X_i)/(4 m_i))^2: data Hessians PSD"),
        ]
        C += self._minimum_constants()
        return ConstantsTable(C)

    def _minimum_constants(self) -> list[Constant]:
        rep = self.separability_report()
        x, fA, cA = self.solve_global()
        if x is None and rep.whole.strictly_separable:
            cfA = Constant("f_star_A", 0.0, Tag.EXACT,
                           "FLAG: all rows strictly separable: inf f = 0, NOT attained")
        else:
            cfA = Constant("f_star_A", fA, Tag.NUMERIC, _value_reason("inf f", cA, x is None))
        sols = [self.solve_client(i) for i in range(self.n)]
        strict = [i for i, s in enumerate(rep.clients)
                  if s.strictly_separable and sols[i].x is None]
        if strict:
            cfP = Constant("f_star_P", 0.0, Tag.EXACT,
                           f"FLAG: client(s) {strict} strictly separable: inf f_i = 0, "
                           "NOT attained")
        else:
            k = int(np.argmin([s.f for s in sols]))
            worst = max(sols, key=lambda s: (not s.certificate.valid, s.certificate.f_gap_bound))
            why = f"min_i inf f_i (client {k}); " + _value_reason(
                "inf f_i", worst.certificate, sols[k].x is None)
            weak = [i for i, s in enumerate(sols) if s.x is None]
            if weak:
                why += f"; FLAG: client(s) {weak} weakly separable (inf not attained)"
            cfP = Constant("f_star_P", sols[k].f, Tag.NUMERIC, why)
        if x is None or any(s.x is None for s in sols):
            czeta = Constant("zeta", math.inf, Tag.INFINITE,
                             "x* or some u_i* does not exist (separable data, nu_reg = 0)")
        else:
            z = float(max(np.linalg.norm(x - s.x) for s in sols))
            if cA.valid and all(s.certificate.valid for s in sols):
                tol = cA.dist_bound + max(s.certificate.dist_bound for s in sols)
                why = f"max_i ||x* - u_i*|| by Newton; certified to +-{tol:.1e}"
            else:
                why = "max_i ||x* - u_i*|| by Newton to 1e-13 rel.; some certificate NOT valid"
            if self.nu_reg == 0.0 and not all(
                    s.coercive for s in (*rep.clients, rep.whole)):
                why += "; FLAG: a minimiser is not unique (min-norm point used)"
            czeta = Constant("zeta", z, Tag.NUMERIC, why)
        return [cfA, cfP, czeta]


def _value_reason(what: str, cert: Certificate, not_attained: bool) -> str:
    if cert.valid:
        why = f"Newton; certified 0 <= computed - {what} <= {cert.f_gap_bound:.1e}"
    else:
        why = f"Newton to ||grad|| <= 1e-13 rel.; certificate NOT valid ({cert.note})"
    if not_attained:
        why += f"; FLAG: weakly separable, {what} NOT attained (min over non-separable rows)"
    return why
