"""Quadratic clients with exactly known constants (THEORY_SPEC section 9.1).

Client ``i`` has ``f_i(w) = 0.5 (w - b_i)^T A_i (w - b_i) + c_i`` with ``A_i``
symmetric positive semidefinite ([P] Asm 2 "bounded below" needs PSD; an
indefinite ``A_i`` is rejected).  Every constant of the THEORY_SPEC 9.1 table is
computed in closed form and tagged (EXACT or INFINITE), and the personalised
objectives of [P] eq. (9)-(10) have closed forms too:

* MAML ([P] eq. (9)):   ``F_i^(b)(w) = c_i + 0.5 (w-b_i)^T Hb_i (w-b_i)``,
  ``Hb_i = A_i (I - alpha A_i)^2``  (:meth:`QuadraticProblem.maml`);
* Moreau envelope ([P] eq. (10)): ``F_i^(c)(w) = c_i + 0.5 (w-b_i)^T Hc_i (w-b_i)``,
  ``Hc_i = lam A_i (A_i + lam I)^{-1}``  (:meth:`QuadraticProblem.me`).

Noise models (THEORY_SPEC 9.1; ``S_i`` = ``noise_cov[i]``, the per-sample covariance):

* ``"additive"``: a batch D of size m is the mean noise ``e_D ~ N(0, S_i/m)``, drawn
  as ``chol(S_i) z / sqrt(m)``; ``batch_grad = A_i (w - b_i) + e_D`` and ``C_i = S_i``.
  For Option C the stochastic *function* is ``f_tilde_i(theta, D) = f_i(theta) +
  e_D^T theta`` (a fixed linear tilt; this is what ``batch_grad`` implies).
* ``"sampling"``: a batch is the sample mean ``xibar_D ~ N(b_i, S_i/m)`` of m data points
  ``xi ~ N(b_i, S_i)`` with per-sample loss ``ell_i(w, xi) = 0.5 (w-xi)^T A_i (w-xi) +
  c_i'``; ``batch_grad = A_i (w - xibar_D)`` and ``C_i = A_i S_i A_i``.  Then
  ``f_i = E ell_i`` has ``c_i = c_i' + 0.5 tr(A_i S_i)``; the ``c`` argument is always the
  ``c_i`` of ``f_i`` (so ``c_i' = c_i - 0.5 tr(A_i S_i)``).

In both models the per-sample Hessian is exactly ``A_i`` (``batch_hvp = A_i v``), so
``rho = sigma_h2 = 0`` exactly.  A batch is an opaque d-vector (docs/INTERNALS.md 1).

Singular ``Abar``: ``f`` is still bounded below and attains its minimum (the range of
every PSD ``A_i`` lies in the range of ``Abar``, so ``m = mean A_i b_i`` is in it); the
minimiser set is ``x* + null(Abar)`` and ``x_star`` is its minimum-norm element
``pinv(Abar) m``.  The same convention is used for ``w_star`` of F^(b), F^(c).

The class lives here; beside it (names re-exported): ``quadratic_linalg`` (PSD checks, the
trust-region maximum), ``quadratic_personalized`` (``MamlExact``, ``MoreauExact``),
``quadratic_constants`` (the 9.1 table), ``quadratic_random`` (random instances) and
``quadratic_stochastic`` (the batch oracles: ``sample_batch``, ``batch_grad``, ``batch_hvp``,
``batch_theta_hat``, ``compiled_view``; a base class of :class:`QuadraticProblem`).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from fedsim.errors import ConfigError, check_finite, check_number, require
from fedsim.jit import Bound
from fedsim.problems.base import Problem
from fedsim.problems.constants import ConstantsTable
from fedsim.problems.quadratic_constants import constants_table, local_G, local_gamma_g2
from fedsim.problems.quadratic_linalg import (
    StackRows,
    all_equal,
    distinct_matrices,
    materialize,
    max_quadratic_on_ball,
    mean_of_forms,
    mean_quadratic_value,
    psd_solve,
    readonly,
    sqrt_factor_stack,
    symmetric_psd_eigen_stack,
)
from fedsim.problems.quadratic_personalized import (
    MamlExact,
    MoreauExact,
    build_maml_exact,
    build_moreau_exact,
)
from fedsim.problems.quadratic_random import NOISE_KINDS, random_client_data
from fedsim.problems.quadratic_reduce import client_reductions
from fedsim.problems.quadratic_stochastic import QuadraticStochasticOracles
from fedsim.problems.quadratic_view import quadratic_metric_view, quadratic_metrics

__all__ = ["QuadraticProblem", "MamlExact", "MoreauExact", "max_quadratic_on_ball"]

#: one-metric code arrays for :func:`quadratic_metrics` (grad_sq, dist_sq, f_gap)
_CODE_ARRAYS = tuple(np.array([k], dtype=np.int64) for k in range(3))

#: at most this many exact personalised objectives are cached per problem (oldest evicted)
PERSONALIZED_CACHE_SIZE = 32


class QuadraticProblem(QuadraticStochasticOracles, Problem):
    """``f_i(w) = 0.5 (w - b_i)^T A_i (w - b_i) + c_i`` (THEORY_SPEC 9.1).

    Parameters
    ----------
    A : sequence of n symmetric PSD d x d matrices (or an (n, d, d) array).
    b : sequence of n d-vectors (client optima u_i* = b_i), or an (n, d) array.
    c : n values ``c_i = min f_i`` (default zeros).
    noise : ``"additive"`` or ``"sampling"`` (module docstring).
    noise_cov : per-sample covariance S_i: one d x d matrix shared by all clients, or
        a list of n of them (default: zeros, i.e. an exact oracle).
    """

    compiled_view_base = True  # the oracles its compiled view stands for (with the base's)

    def __init__(self, A: Sequence[Any] | np.ndarray, b: Sequence[Any] | np.ndarray,
                 c: Sequence[float] | np.ndarray | None = None, noise: str = "additive",
                 noise_cov: Any = None) -> None:
        require(noise in NOISE_KINDS, "noise", noise, f"must be one of {list(NOISE_KINDS)}")
        am = distinct_matrices("A", A)
        n, d = am.n, am.values.shape[1]
        try:
            b_arr = (np.array(b, dtype=np.float64) if isinstance(b, np.ndarray) else
                     np.array([np.asarray(v, dtype=np.float64) for v in b], dtype=np.float64))
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"b must be n = {n} vectors of length d = {d}, got "
                              f"{type(b).__name__} with inconsistent shapes") from exc
        require(b_arr.shape == (n, d), "b.shape", b_arr.shape,
                f"must be (n, d) = ({n}, {d}) to match A")
        check_finite("b", b_arr)
        if c is None:
            c_arr = np.zeros(n)
        else:
            try:
                c_arr = np.asarray(c, dtype=np.float64).reshape(-1)
            except (TypeError, ValueError) as exc:
                raise ConfigError(f"c must be {n} numbers, got {c!r}") from exc
            require(c_arr.shape == (n,), "c.shape", c_arr.shape, f"must be (n,) = ({n},)")
            check_finite("c", c_arr)
        if noise_cov is None:
            sm = distinct_matrices("noise_cov", np.zeros((d, d)), n=n)
        else:
            try:
                nd = np.ndim(noise_cov)
            except (TypeError, ValueError) as exc:
                raise ConfigError(f"noise_cov must be a d x d matrix or a list of {n}, got "
                                  f"{type(noise_cov).__name__}") from exc
            sm = (distinct_matrices("noise_cov", noise_cov, n=n, dim=d) if nd == 2
                  else distinct_matrices("noise_cov", noise_cov, dim=d))
            require(sm.n == n, "len(noise_cov)", sm.n,
                    f"must equal the number of clients n = {n}")

        self.n, self.dim, self.noise = n, d, noise
        # one decomposition per distinct matrix (a shared Hessian: one), stacked; the
        # per-client stacks are those values laid out client by client (the loop's bits)
        a_sym, a_ev, a_vec = symmetric_psd_eigen_stack("A", am)
        s_sym, s_ev, s_vec = symmetric_psd_eigen_stack("noise_cov", sm)
        self._a = am.map(lambda _: a_vec)
        self._s = sm.map(lambda _: s_sym)
        self._f = sm.map(lambda _: sqrt_factor_stack(s_sym, s_ev, s_vec))
        self._lazy: dict[str, np.ndarray] = {}
        # the reductions over clients give the bits of NumPy's expressions on the laid-out
        # per-client stack, a slab at a time (quadratic_reduce); the stack itself is laid
        # out only where an interpreted oracle reads it (A_stack: n d^2 floats), never for
        # the compiled view, which indexes the distinct values (hessians_distinct)
        self._hess = am.map(lambda _: readonly(a_sym))
        self.b_stack = readonly(b_arr.copy())
        self.c = readonly(c_arr.copy())
        self.eigvals = readonly(materialize(am.map(lambda _: a_ev)))
        self.b = StackRows(self.b_stack)
        self.shared_hessian = all_equal(a_sym)

        abar, m, x_star, g_star, q_star = client_reductions(
            self._hess, b_arr, lambda ab, mm: psd_solve(readonly(ab), readonly(mm)))
        self.Abar, self.m, self.x_star = readonly(abar), readonly(m), readonly(x_star)
        self.grad_at_xstar = readonly(g_star)
        self.f_star = mean_of_forms(self.c, q_star)
        self._metric_fns: dict[int, tuple] = {}
        self._maml_cache: dict[float, MamlExact] = {}
        self._moreau_cache: dict[float, MoreauExact] = {}
        self._table: ConstantsTable | None = None

    # --- per-client stacks, laid out on first use (n d^2 floats each) ----------------------
    def _stack(self, name: str) -> np.ndarray:
        out = self._lazy.get(name)
        if out is None:
            out = self._lazy[name] = readonly(self._build_stack(name))
        return out

    def _build_stack(self, name: str) -> np.ndarray:
        if name == "A_stack":
            return materialize(self._hess)
        if name == "eigvecs":
            return materialize(self._a)
        if name == "S_stack":
            return materialize(self._s)
        if name == "noise_factor":
            return materialize(self._f)
        if name == "C_stack":
            if self.noise == "additive":
                return self.S_stack
            c_stack = self.A_stack @ self.S_stack @ self.A_stack
            return 0.5 * (c_stack + np.swapaxes(c_stack, 1, 2))
        # diag(V_i^T C_i V_i): the noise in each client's eigenbasis (estimator MSE traces)
        return np.einsum("nji,njk,nki->ni", self.eigvecs, self.C_stack, self.eigvecs)

    @property
    def A_stack(self) -> np.ndarray:
        """``(n, d, d)`` the Hessians ``A_i``, symmetrised (read-only; laid out on first
        use, ``n d^2`` floats: the compiled view reads :meth:`hessians_distinct`)."""
        return self._stack("A_stack")

    @property
    def A(self) -> StackRows:
        """The ``A_i`` as a sequence of ``d x d`` matrices."""
        return StackRows(self.A_stack)

    @property
    def eigvecs(self) -> np.ndarray:
        """``(n, d, d)`` eigenvectors of the ``A_i`` (columns; read-only)."""
        return self._stack("eigvecs")

    @property
    def S_stack(self) -> np.ndarray:
        """``(n, d, d)`` per-sample covariances ``S_i`` (read-only)."""
        return self._stack("S_stack")

    @property
    def noise_cov(self) -> StackRows:
        """The ``S_i`` as a sequence of ``d x d`` matrices."""
        return StackRows(self.S_stack)

    @property
    def C_stack(self) -> np.ndarray:
        """``(n, d, d)`` per-sample gradient-noise covariances ``C_i`` (read-only)."""
        return self._stack("C_stack")

    @property
    def noise_in_eigenbasis(self) -> np.ndarray:
        """``(n, d)``: ``diag(V_i^T C_i V_i)`` (read-only)."""
        return self._stack("noise_in_eigenbasis")

    def client_hessian(self, i: int) -> np.ndarray:
        """``A_i`` (``d x d``, read-only), read from the distinct Hessians: a per-client
        oracle never lays out the ``n d^2`` stack (the same C-contiguous numbers as
        ``A_stack[i]``, so the same products, bit for bit)."""
        return self._hess.values[self._hess.index[i]]

    def hessians_distinct(self) -> tuple[np.ndarray, np.ndarray]:
        """``(values, index)``: the distinct ``A_i`` (``(k, d, d)``, symmetrised) and each
        client's (``A_i = values[index[i]]``)."""
        return self._hess.values, self._hess.index

    def noise_distinct(self) -> tuple[np.ndarray, np.ndarray]:
        """``(values, index)``: the distinct ``C_i`` (``(k, d, d)``) and each client's
        (``C_i = values[index[i]]``), without laying out the ``n`` stacks when the additive
        noise is shared."""
        if self.noise == "additive":
            return self._s.values, self._s.index
        return self.C_stack, np.arange(self.n, dtype=np.intp)

    # --- attributes of THEORY_SPEC 9.1 ------------------------------------------------------
    @property
    def f_i_star(self) -> np.ndarray:
        """min f_i = c_i (attained at b_i)."""
        return self.c

    @property
    def u_star(self) -> np.ndarray:
        """(n, d) client minimisers u_i* = b_i (unique iff A_i > 0)."""
        return self.b_stack

    @property
    def f_star_A(self) -> float:
        """min f (global; [A]'s f*)."""
        return self.f_star

    @property
    def f_star_P(self) -> float:
        """min_i inf f_i = min_i c_i ([P]'s f*)."""
        return float(np.min(self.c))

    @property
    def per_sample_c(self) -> np.ndarray:
        """Sampling model: ``c_i' = c_i - 0.5 tr(A_i S_i)`` of ``ell_i``; additive: ``c``."""
        if self.noise == "additive":
            return self.c
        return self.c - 0.5 * np.einsum("nij,nji->n", self.A_stack, self.S_stack)

    @property
    def noise_factor(self) -> np.ndarray:
        """``(n, d, d)``: the factors ``L_i`` (``L_i L_i^T = S_i``; Cholesky when it exists)
        that :meth:`sample_batch` applies to its standard normals (read-only)."""
        return self._stack("noise_factor")

    def grad_noise_cov(self, i: int) -> np.ndarray:
        """Per-sample gradient-noise covariance C_i (S_i additive, A_i S_i A_i sampling)."""
        return self.C_stack[i]

    def _direct_value(self, h_stack: np.ndarray, w: np.ndarray) -> float:
        return mean_quadratic_value(self.c, self.b_stack, h_stack, w)

    # --- deterministic oracles --------------------------------------------------------------
    def loss(self, i: int, w: np.ndarray) -> float:
        """f_i(w)."""
        r = w - self.b_stack[i]
        return float(0.5 * (r @ (self.client_hessian(i) @ r)) + self.c[i])

    def grad(self, i: int, w: np.ndarray) -> np.ndarray:
        """grad f_i(w) = A_i (w - b_i)."""
        return self.client_hessian(i) @ (w - self.b_stack[i])

    def hess(self, i: int, w: np.ndarray) -> np.ndarray:
        """A_i (a read-only view; independent of w)."""
        return self.client_hessian(i)

    def hvp(self, i: int, w: np.ndarray, v: np.ndarray) -> np.ndarray:
        """A_i v."""
        return self.client_hessian(i) @ v

    def f(self, w: np.ndarray) -> float:
        """f(w) = mean_i f_i(w) (O(n d^2), no cancellation)."""
        return self._direct_value(self.A_stack, np.asarray(w, dtype=np.float64))

    def grad_f(self, w: np.ndarray) -> np.ndarray:
        """grad f(w) = Abar w - m (O(d^2))."""
        return self.Abar @ w - self.m

    def _metric(self, code: int, w: np.ndarray) -> float:
        """Metric ``METRIC_CODES[code]`` by the compiled closed form the replay uses too
        (:func:`fedsim.problems.quadratic_view.quadratic_metrics`)."""
        # per thread: one metric view (it holds a scratch vector), one output cell and one
        # bound call per metric
        fns = self._metric_fns.get(threading.get_ident())
        if fns is None:
            mv, out = quadratic_metric_view(self), np.empty(1)
            fns = self._metric_fns[threading.get_ident()] = tuple(
                (Bound(quadratic_metrics, mv, codes), out) for codes in _CODE_ARRAYS)
        fn, out = fns[code]
        fn(np.ascontiguousarray(w, dtype=np.float64), out)
        return float(out[0])

    def grad_f_sq(self, w: np.ndarray) -> float:
        """||grad f(w)||^2 = ||Abar w - m||^2 (O(d^2))."""
        return self._metric(0, w)

    def f_gap(self, w: np.ndarray) -> float:
        """f(w) - f* = 0.5 (w - x*)^T Abar (w - x*) (O(d^2), >= 0, no cancellation)."""
        return self._metric(2, w)

    def dist_sq(self, w: np.ndarray) -> float:
        """||w - x*||^2."""
        return self._metric(1, w)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled without the per-thread compiled metric calls (rebuilt on use)."""
        state = self.__dict__.copy()
        state["_metric_fns"] = {}
        state["_lazy"] = {}
        state.pop("_views", None)
        return state

    # --- personalised objectives ([P] eq. (9)-(10)) -------------------------------------------
    def maml(self, alpha: float) -> MamlExact:
        """Exact MAML objective for inner step ``alpha >= 0`` (cached per alpha)."""
        hit = self._cached(self._maml_cache, alpha)
        if hit is not None:
            return hit
        check_number("alpha", alpha, allow_inf=True)
        require(math.isfinite(alpha) and alpha >= 0, "alpha", alpha,
                "must be a finite number >= 0")
        key = float(alpha)
        out = build_maml_exact(self, key)
        self._remember(self._maml_cache, key, out)
        return out

    def me(self, lam: float) -> MoreauExact:
        """Exact Moreau-envelope objective for ``lam > 0`` (cached per lam)."""
        hit = self._cached(self._moreau_cache, lam)
        if hit is not None:
            return hit
        check_number("lam", lam, allow_inf=True)
        require(math.isfinite(lam) and lam > 0, "lam", lam, "must be a finite number > 0")
        key = float(lam)
        out = build_moreau_exact(self, key)
        self._remember(self._moreau_cache, key, out)
        return out

    @staticmethod
    def _cached(cache: dict, key: Any) -> Any:
        """Hot-path lookup (only validated keys are ever stored; a bool is never a key)."""
        if key.__class__ is bool:
            return None
        try:
            return cache.get(key)
        except TypeError:  # unhashable: let the validation report it
            return None

    @staticmethod
    def _remember(cache: dict, key: float, value: Any) -> None:
        if len(cache) >= PERSONALIZED_CACHE_SIZE:
            cache.pop(next(iter(cache)))
        cache[key] = value

    def grad_F_maml(self, w: np.ndarray, alpha: float) -> np.ndarray:
        """grad F^(b)(w) = Hbbar w - mb (closed form, THEORY_SPEC 9.1)."""
        return self.maml(alpha).grad(w)

    def grad_F_maml_sq(self, w: np.ndarray, alpha: float) -> float:
        """||grad F^(b)(w)||^2 in O(d^2)."""
        return self.maml(alpha).grad_sq(w)

    def F_maml(self, w: np.ndarray, alpha: float) -> float:
        """F^(b)(w) = mean_i c_i + 0.5 (w - b_i)^T Hb_i (w - b_i)."""
        return self._direct_value(self.maml(alpha).H_stack, np.asarray(w, dtype=np.float64))

    def theta_hat(self, i: int, w: np.ndarray, lam: float) -> np.ndarray:
        """theta_hat_i(w) = (A_i + lam I)^{-1}(A_i b_i + lam w) (closed form)."""
        return self.me(lam).theta_hat(i, w)

    def grad_F_me(self, w: np.ndarray, lam: float) -> np.ndarray:
        """grad F^(c)(w) = Hcbar w - mc = mean_i lam (w - theta_hat_i(w))."""
        return self.me(lam).grad(w)

    def grad_F_me_sq(self, w: np.ndarray, lam: float) -> float:
        """||grad F^(c)(w)||^2 in O(d^2)."""
        return self.me(lam).grad_sq(w)

    def F_me(self, w: np.ndarray, lam: float) -> float:
        """F^(c)(w) = mean_i c_i + 0.5 (w - b_i)^T Hc_i (w - b_i)."""
        return self._direct_value(self.me(lam).H_stack, np.asarray(w, dtype=np.float64))

    # --- constants ----------------------------------------------------------------------------
    def _build_table(self) -> ConstantsTable:
        """THEORY_SPEC 9.1 table (``constants``, cached by the base class): every entry EXACT
        or INFINITE (:func:`~fedsim.problems.quadratic_constants.constants_table`)."""
        return constants_table(self)

    # --- local diagnostics (HEURISTIC: iterates are not confined to a ball) -----------------
    def local_gamma_g2(self, R: float) -> float:
        """HEURISTIC ``max_{||w - x*|| <= R} (1/n) sum_i ||grad f_i(w) - grad f(w)||^2``
        (:func:`~fedsim.problems.quadratic_constants.local_gamma_g2`)."""
        return local_gamma_g2(self, R)

    def local_G(self, R: float) -> float:
        """HEURISTIC ``max_i max_{||w - x*|| <= R} ||grad f_i(w)||``
        (:func:`~fedsim.problems.quadratic_constants.local_G`)."""
        return local_G(self, R)

    # --- generator ---------------------------------------------------------------------------
    @classmethod
    def random(cls, n: int, dim: int, mu: float, L: float, heterogeneity: float = 1.0,
               noise_sd: float = 0.1, noise: str = "additive", shared_hessian: bool = True,
               seed: int = 0) -> QuadraticProblem:
        """A random instance whose smallest / largest Hessian eigenvalues are mu and L.

        Spectra: ``mu`` and ``L`` plus ``dim - 2`` values uniform in ``[mu, L]``, rotated by a
        Haar-random orthogonal matrix (QR of a Gaussian with sign fix).  Shared: one A for
        all clients.  Not shared: each A_i has its own spectrum in [mu, L] and rotation;
        client 0 carries mu and client n-1 carries L (so both are attained overall).
        ``b_i ~ heterogeneity * N(0, I)``, ``c = 0``, ``noise_cov = noise_sd^2 I``.
        mu and L are reproduced to rounding (~1e-15 relative).  Deterministic in ``seed``.
        """
        mats, b, noise_cov = random_client_data(n, dim, mu, L, heterogeneity, noise_sd, noise,
                                                shared_hessian, seed)
        return cls(mats, b, None, noise=noise, noise_cov=noise_cov)

    def __repr__(self) -> str:
        return (f"QuadraticProblem(n={self.n}, dim={self.dim}, noise={self.noise!r}, "
                f"shared_hessian={self.shared_hessian})")
