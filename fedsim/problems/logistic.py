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

This module holds the problem class; its parts live beside it: the weighted kernel and
the checks of the client arrays (:mod:`~fedsim.problems.weighted_logistic`), Newton's
method (:mod:`~fedsim.problems.newton`), the LPs (:mod:`~fedsim.problems.separability`),
the solutions and certificates (:mod:`~fedsim.problems.logistic_certificate`) and the
constants table (:mod:`~fedsim.problems.logistic_constants`).  Their public names are
re-exported here.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from fedsim.errors import FedsimError, check_integer, check_number, require
from fedsim.problems.base import Problem
from fedsim.problems.constants import ConstantsTable
from fedsim.problems.logistic_certificate import (
    Certificate,
    Solution,
    certify,
    solve_weighted_logistic,
)
from fedsim.problems.logistic_constants import constants_table, data_constants
from fedsim.problems.logistic_view import (
    logistic_compiled_view,
    logistic_metric_view,
    logistic_view,
)
from fedsim.problems.newton import NewtonResult, newton_minimize
from fedsim.problems.row_view import RowOracles, as_model, rows_per_client
from fedsim.problems.separability import (
    Separability,
    SeparabilityReport,
    diagnose_separability,
)
from fedsim.problems.weighted_logistic import (
    S2_SUP,
    Z_S2_ARGMAX,
    WeightedLogistic,
    as_client_arrays,
)

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

_EPS = float(np.finfo(np.float64).eps)


# ----------------------------------------------------------------------------------------
# the problem
# ----------------------------------------------------------------------------------------
class LogisticProblem(RowOracles, Problem):
    """Binary logistic regression over ``n`` clients (THEORY_SPEC 9.2).

    ``X`` and ``y`` are lists with one ``(m_i, d)`` array and one ``(m_i,)`` label
    array in {-1, +1} per client; ``nu_reg >= 0`` is a ridge term common to all
    clients.  A minibatch is an index array drawn uniformly WITH replacement
    (the scheme that ``sigma_g2`` of 9.2 is stated for).  Minimisers are solved
    lazily, once, and cached.

    ``anchor_rows`` (an int, or one int per client, default 0) says how many of each
    client's rows are THEORY_SPEC 9.4's synthetic anchor rows rather than data (the
    builders :meth:`synthetic` and :meth:`digits` set it).  The anchors stay part of
    ``f_i`` -- its ``m_i`` above counts them, minibatches sample them, and every constant
    of 9.2-9.4 is computed for that ``f_i`` -- but they are not samples of the client:
    ``m_data[i] = m_i - anchor_rows[i]`` is the client's real sample count, the ``m_k``
    of AsyPFL's weights ``p^k = m_k/m`` (Ma et al. 2022, Section 3.1 and eq. (4);
    :func:`fedsim.problems.asypfl_constants.asypfl_weights`).  Every client must keep
    at least one real row.
    """

    compiled_view_base = True  # the oracles its compiled view stands for (RowOracles)

    def __init__(self, X: Sequence[np.ndarray], y: Sequence[np.ndarray],
                 nu_reg: float = 0.0, *, anchor_rows: int | Sequence[int] = 0) -> None:
        Xs, ys = as_client_arrays(X, y)
        nu = check_number("nu_reg", nu_reg, allow_inf=True)
        require(math.isfinite(nu) and nu >= 0.0, "nu_reg", nu, "must be finite and >= 0")
        m_rows = [Xi.shape[0] for Xi in Xs]
        if isinstance(anchor_rows, (list, tuple, np.ndarray)):
            require(len(anchor_rows) == len(Xs), "anchor_rows", list(anchor_rows),
                    f"must hold one count per client ({len(Xs)})")
            anchors = [check_integer(f"anchor_rows[{i}]", a, low=0)
                       for i, a in enumerate(anchor_rows)]
        else:
            anchors = [check_integer("anchor_rows", anchor_rows, low=0)] * len(Xs)
        for i, (mi, ai) in enumerate(zip(m_rows, anchors, strict=True)):
            require(ai < mi, f"anchor_rows[{i}]", ai,
                    f"must be < the client's {mi} rows (at least one real data row)")
        self.X: list[np.ndarray] = Xs
        self.y: list[np.ndarray] = ys
        self.nu_reg = nu
        self.n = len(Xs)
        self.dim = Xs[0].shape[1]
        self.m = np.array(m_rows, dtype=np.int64)
        #: real data rows per client (``m`` without the 9.4 anchor rows): AsyPFL's ``m_k``
        self.m_data = self.m - np.array(anchors, dtype=np.int64)
        self._rows = [yi[:, None] * Xi for Xi, yi in zip(Xs, ys, strict=True)]
        data = logistic_view(self._rows, nu)
        self._ranges = rows_per_client(data[0])
        self._cv = logistic_compiled_view(data, logistic_metric_view(data, self.m), 1,
                                          optimum=self._optimum)
        #: the compiled view's metric data per (thread, metric, MAML step), _metric's
        self._mdata: dict[tuple[int, str, float | None], tuple] = {}
        self._per_client = [WeightedLogistic(r, np.full(r.shape[0], 1.0 / r.shape[0]), nu)
                        for r in self._rows]
        weights = np.concatenate([np.full(mi, 1.0 / (self.n * mi)) for mi in self.m])
        self._all_rows = WeightedLogistic(np.vstack(self._rows), weights, nu)
        self._separability: SeparabilityReport | None = None
        self._global_sol: Solution | None = None
        self._client_sol: dict[int, Solution] = {}
        self._table: ConstantsTable | None = None
        self._data_constants_cache: dict[str, np.ndarray] | None = None

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
        ``"first"`` (one client: the global minimiser exists) or ``None``.  The 2d anchor
        rows a client gets are part of its ``f_i`` but not of its sample count ``m_data``
        (class docstring).
        """
        from fedsim.problems import data

        X, y = data.synthetic_logistic(n_clients, dim, samples_per_client,
                                       heterogeneity=heterogeneity, label_noise=label_noise,
                                       seed=seed)
        check_number("feature_scale", feature_scale, allow_inf=True)
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
            n_anchor = 2 * X[0].shape[1]  # (s e_k, +1) and (s e_k, -1), k = 1..d
            counts = [n_anchor if (anchors == "all" or i == 0) else 0 for i in range(len(X))]
            return cls(X, y, nu_reg=nu_reg, anchor_rows=counts)
        return cls(X, y, nu_reg=nu_reg)

    # ---- deterministic oracles ----------------------------------------------------------
    def loss(self, i: int, w: np.ndarray) -> float:
        """f_i(w) (9.2), via ``logaddexp``."""
        return self._per_client[i].value(np.asarray(w, dtype=np.float64))

    def grad(self, i: int, w: np.ndarray) -> np.ndarray:
        """grad f_i(w) = -(1/m_i) sum_j y_j s(-z_j) x_j + nu_reg w."""
        return self._per_client[i].grad(np.asarray(w, dtype=np.float64))

    def hess(self, i: int, w: np.ndarray) -> np.ndarray:
        """grad^2 f_i(w) = (1/m_i) sum_j s(z_j) s(-z_j) x_j x_j^T + nu_reg I."""
        return self._per_client[i].hess(np.asarray(w, dtype=np.float64))

    def hvp(self, i: int, w: np.ndarray, v: np.ndarray) -> np.ndarray:
        """grad^2 f_i(w) v, matrix-free: ``X^T (s' * (X v))/m_i + nu_reg v``."""
        return self._per_client[i].hvp(np.asarray(w, dtype=np.float64),
                                   np.asarray(v, dtype=np.float64))

    def f(self, w: np.ndarray) -> float:
        """f(w) = (1/n) sum_i f_i(w), one vectorised pass over all rows."""
        return self._all_rows.value(np.asarray(w, dtype=np.float64))

    def grad_f(self, w: np.ndarray) -> np.ndarray:
        """grad f(w), vectorised."""
        return self._all_rows.grad(np.asarray(w, dtype=np.float64))

    def hess_f(self, w: np.ndarray) -> np.ndarray:
        """grad^2 f(w), vectorised."""
        return self._all_rows.hess(np.asarray(w, dtype=np.float64))

    # ---- MAML objective ([P] eq. (4)-(5)) -----------------------------------------------
    def grad_F_maml_sq(self, w: np.ndarray, alpha: float) -> float:
        """``||grad F^(b)(w)||^2`` ([P] eq. (5)), the recorded ``grad_maml_sq``: the compiled
        view's metric (:func:`~fedsim.problems.logistic_view.logistic_grad_maml`, which the
        replay records too) when ``grad``/``hvp`` are the class's own, else
        ``||grad_F_maml(w, alpha)||^2`` through the replaced oracles."""
        a = check_number("alpha", alpha)
        w = as_model(w, self.dim)
        cls = type(self)
        own = vars(self)
        if (cls.grad is not LogisticProblem.grad or cls.hvp is not LogisticProblem.hvp
                or "grad" in own or "hvp" in own):
            return float(np.sum(self.grad_F_maml(w, a) ** 2))
        return self._metric("grad_maml_sq", w, maml_alpha=a)

    # ---- the recorded f_gap and dist_sq (compiled, as the replay records them) ----------
    def _optimum(self, name: str) -> Any:
        """``f_star`` or ``x_star`` (the compiled view's ``f_gap``/``dist_sq`` data)."""
        return getattr(self, name)

    def _metric(self, name: str, w: np.ndarray, maml_alpha: float | None = None) -> float:
        """The compiled view's metric ``name`` at ``w`` (what the replay records)."""
        key = (threading.get_ident(), name, maml_alpha)  # work rows per thread
        mdata = self._mdata.get(key)
        if mdata is None:
            mdata = self._mdata[key] = self._cv.metric_data(maml_alpha=maml_alpha,
                                                            names=(name,))
        out = np.empty(1)
        self._cv.metrics(mdata, self._cv.codes([name]), as_model(w, self.dim), out)
        return float(out[0])

    def f_gap(self, w: np.ndarray) -> float:
        """``f(w) - f*``, the recorded ``f_gap``: the compiled view's metric
        (:func:`~fedsim.problems.logistic_view.logistic_f`, which the replay records too;
        equal to ``f(w) - f_star`` up to rounding, ``f`` summing with BLAS)."""
        return self._metric("f_gap", w)

    def dist_sq(self, w: np.ndarray) -> float:
        """``||w - x*||^2``, the recorded ``dist_sq`` (the compiled view's metric; a
        ``FedsimError`` when ``f`` has no minimiser)."""
        return self._metric("dist_sq", w)

    # ---- stochastic oracles -------------------------------------------------------------
    def sample_batch(self, i: int, size: int, rng: np.random.Generator) -> np.ndarray:
        """``size`` row indices of client ``i``, uniform WITH replacement (9.2 sigma_g2)."""
        if type(size) is not int or size < 1:  # fast path; the validator decides
            check_integer("size", size, low=1)
        return rng.integers(0, int(self.m[i]), size=int(size))

    # ---- Moreau envelope (THEORY_SPEC 9.4, last item) -----------------------------------
    def theta_hat_with_bound(self, i: int, w: np.ndarray, lam: float) -> tuple[np.ndarray, float]:
        """``(theta_hat, err)``: Newton on ``f_i(theta) + lam/2||theta - w||^2`` to 1e-13.

        The inner problem is ``(lam + nu_reg)``-strongly convex, so the F^(c)
        gradient error ``lam ||theta_hat - theta*||`` is at most
        ``err = lam (||grad_inner|| + round-off allowance)/(lam + nu_reg)``.
        """
        check_number("lam", lam, allow_inf=True)
        require(math.isfinite(lam) and lam > 0, "lam", lam, "must be finite and > 0")
        w = np.asarray(w, dtype=np.float64)
        client_objective = self._per_client[i]

        def inner_value(t: np.ndarray) -> float:
            u = t - w
            return client_objective.value(t) + 0.5 * lam * float(u @ u)

        def inner_grad(t: np.ndarray) -> np.ndarray:
            return client_objective.grad(t) + lam * (t - w)

        def inner_hess(t: np.ndarray) -> np.ndarray:
            H = client_objective.hess(t)
            H[np.diag_indices_from(H)] += lam
            return H

        res = newton_minimize(inner_value, inner_grad, inner_hess, w)
        inner_grad_bound = (res.grad_norm + client_objective.grad_error_bound(res.x)
                            + 4.0 * _EPS * lam * float(np.linalg.norm(res.x) + np.linalg.norm(w)))
        return res.x, lam * inner_grad_bound / (lam + self.nu_reg)

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
        if self._separability is None:
            self._separability = SeparabilityReport(
                tuple(diagnose_separability(r) for r in self._rows),
                diagnose_separability(self._all_rows.rows))
        return self._separability

    def solve_global(self) -> Solution:
        """``(x_star, f_star, certificate)`` for f; ``x_star`` is None without a minimiser."""
        if self._global_sol is None:
            self._global_sol = solve_weighted_logistic(self._all_rows,
                                                       self.separability_report().whole)
        return self._global_sol

    def solve_client(self, i: int) -> Solution:
        """``(u_i*, f_i*, certificate)`` for f_i; ``u_i*`` is None without a minimiser."""
        check_integer("i", i)
        require(0 <= i < self.n, "i", i,
                f"must be a client index in [0, {self.n})")
        i = int(i)
        if i not in self._client_sol:
            self._client_sol[i] = solve_weighted_logistic(
                self._per_client[i], self.separability_report().clients[i])
        return self._client_sol[i]

    def certify(self, w: np.ndarray, client: int | None = None) -> Certificate:
        """The 9.4 certificate at an arbitrary point ``w`` for f (or for f_client).

        Valid only when the objective is strongly convex on a ball around ``w``
        that contains the minimiser; otherwise ``valid`` is False.
        """
        w = np.asarray(w, dtype=np.float64)
        require(w.shape == (self.dim,), "w.shape", w.shape, f"must be ({self.dim},)")
        if client is None:
            return certify(self._all_rows, w)
        check_integer("client", client)
        require(0 <= client < self.n, "client",
                client, f"must be a client index in [0, {self.n})")
        return certify(self._per_client[int(client)], w)

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

    def _data_constants(self) -> dict[str, np.ndarray]:
        if self._data_constants_cache is None:
            self._data_constants_cache = data_constants(self.X)
        return self._data_constants_cache


    @property
    def L_i(self) -> np.ndarray:
        """Per-client smoothness ``lam_max(X_i^T X_i)/(4 m_i) + nu_reg`` (EXACT, at w = 0)."""
        return self._data_constants()["l_data"] + self.nu_reg


    def _build_table(self) -> ConstantsTable:
        """The 9.2 table (``constants``, cached by the base class); solving for f_star_A,
        f_star_P and zeta happens on first access."""
        return constants_table(self, self._data_constants())
