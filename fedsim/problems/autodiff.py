"""AutogradProblem: any smooth per-sample loss written in ``autograd.numpy``.

The user supplies the loss and the per-client data; fedsim differentiates it
with autograd (gradients by reverse mode, Hessians by ``autograd.hessian``,
Hessian-vector products by reverse-over-reverse ``autograd.hessian_vector_product``,
i.e. the gradient of ``<grad f(w), v>``)::

    f_i(w) = (1/m_i) sum_j loss(w, x_j, y_j) + (ridge/2) ||w||^2.

Preferred API -- a *batched* loss that returns the MEAN over the rows it is given,
so that autograd differentiates one vectorised expression::

    import autograd.numpy as anp
    def batch_loss(w, X, y):                      # X: (m, p), y: (m,)
        return anp.mean(anp.logaddexp(0.0, -y * anp.dot(X, w)))
    prob = AutogradProblem(X_list, y_list, batch_loss=batch_loss)

A per-sample ``loss(w, x, y)`` is also accepted (``loss=...``); it is summed in
a Python loop, which is correct but slow for large clients.

Constants (THEORY_SPEC section 9) cannot be derived from an arbitrary loss.
They are either supplied by the user, ``constants={"L": (1.0, "UPPER", "my
bound"), ...}``, or *estimated* by :meth:`AutogradProblem.estimate_constants`
(sampled points, power iteration on HVPs), which are tagged NUMERIC with a
reason saying they are sampled estimates and NOT bounds.  Nothing here is ever
EXACT: a user constant tagged EXACT is rejected with a ConfigError.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import autograd
import autograd.numpy as anp
import numpy as np

from fedsim.errors import ConfigError, check_finite, check_integer, check_number, require
from fedsim.problems.base import Problem
from fedsim.problems.constants import Constant, ConstantsTable, Tag
from fedsim.problems.newton import newton_minimize

__all__ = ["AutogradProblem", "KNOWN_CONSTANTS", "logistic_batch_loss"]

#: the constant names of docs/INTERNALS.md section 1 (a user table may only use these)
KNOWN_CONSTANTS: tuple[str, ...] = (
    "L", "mu", "rho", "sigma_g2", "sigma_h2", "gamma_g2", "gamma_h2", "G", "B",
    "f_star_A", "f_star_P", "zeta",
)


def logistic_batch_loss(w: Any, X: Any, y: Any) -> Any:
    """Mean logistic loss ``mean_j log(1 + exp(-y_j x_j^T w))`` in the batched form (9.2)."""
    return anp.mean(anp.logaddexp(0.0, -y * anp.dot(X, w)))


def _parse_constants(constants: Mapping[str, Any] | None) -> list[Constant]:
    out: list[Constant] = []
    if constants is None:
        return out
    require(isinstance(constants, Mapping), "constants", type(constants).__name__,
            "must be a mapping name -> (value, tag, reason)")
    for name, spec in constants.items():
        require(name in KNOWN_CONSTANTS, "constants name", name,
                f"must be one of {list(KNOWN_CONSTANTS)}")
        if isinstance(spec, Constant):
            require(spec.name == name, f"constants[{name!r}].name", spec.name,
                    f"must equal the key {name!r}")
            value, tag, reason = spec.value, spec.tag, spec.reason
        else:
            require(isinstance(spec, (tuple, list)) and len(spec) == 3, f"constants[{name!r}]",
                    spec, "must be a (value, tag, reason) triple")
            value, tag, reason = spec
        try:
            tag = Tag(tag)
        except ValueError:
            raise ConfigError(f"constants[{name!r}].tag must be one of UPPER, NUMERIC, "
                              f"INFINITE, got constants[{name!r}].tag={tag!r}") from None
        require(tag is not Tag.EXACT, f"constants[{name!r}].tag", tag.value,
                "must be UPPER, NUMERIC or INFINITE (a user-written loss has no EXACT constants)")
        value = check_number(f"constants[{name!r}].value", value, allow_inf=True)
        require(isinstance(reason, str) and reason.strip() != "", f"constants[{name!r}].reason",
                reason, "must be a non-empty string")
        out.append(Constant(name, value, tag, reason))
    return out


class AutogradProblem(Problem):
    """Federated objective from a user loss in ``autograd.numpy`` (see module docstring).

    ``X`` and ``y`` are lists (one entry per client) of arrays whose first axis
    indexes samples; ``dim`` is the parameter dimension (default: the number of
    feature columns of a 2-D ``X[0]``).  Exactly one of ``batch_loss(w, X, y)``
    (mean over rows; preferred) or ``loss(w, x, y)`` (one sample) is given.
    A minibatch is an index array drawn uniformly with replacement.
    """

    def __init__(self, X: Sequence[np.ndarray], y: Sequence[np.ndarray], *,
                 batch_loss: Callable[..., Any] | None = None,
                 loss: Callable[..., Any] | None = None,
                 dim: int | None = None, ridge: float = 0.0,
                 constants: Mapping[str, Any] | None = None) -> None:
        require((batch_loss is None) != (loss is None), "batch_loss/loss",
                "both" if batch_loss is not None else "neither", "exactly one must be given")
        fn = batch_loss if batch_loss is not None else loss
        require(callable(fn), "batch_loss" if batch_loss is not None else "loss",
                type(fn).__name__, "must be callable")
        for name, obj in (("X", X), ("y", y)):
            require(isinstance(obj, (list, tuple)), name, type(obj).__name__,
                    "must be a list with one array per client")
        require(len(X) >= 1, "X", len(X), "must hold at least one client")
        require(len(y) == len(X), "len(y)", len(y), f"must equal len(X) = {len(X)}")
        Xs, ys = [], []
        for i, (Xi, yi) in enumerate(zip(X, y, strict=True)):
            try:
                Xi = np.array(Xi, dtype=np.float64)
                yi = np.array(yi, dtype=np.float64)
            except (TypeError, ValueError) as exc:
                raise ConfigError(f"X[{i}] and y[{i}] must be numeric arrays ({exc})") from None
            require(Xi.ndim >= 1 and Xi.shape[0] >= 1, f"X[{i}].shape", Xi.shape,
                    "must have at least one sample (first axis)")
            require(yi.ndim >= 1 and yi.shape[0] == Xi.shape[0], f"y[{i}].shape", yi.shape,
                    f"must have {Xi.shape[0]} samples to match X[{i}]")
            if Xs:
                require(Xi.shape[1:] == Xs[0].shape[1:], f"X[{i}].shape", Xi.shape,
                        f"must have per-sample shape {Xs[0].shape[1:]} like X[0]")
            check_finite(f"X[{i}]", Xi)
            check_finite(f"y[{i}]", yi)
            Xs.append(Xi)
            ys.append(yi)
        if dim is None:
            require(Xs[0].ndim == 2, "dim", None, "must be given when X[0] is not 2-D")
            dim = Xs[0].shape[1]
        check_integer("dim", dim, low=1)
        r = check_number("ridge", ridge, allow_inf=True)
        require(math.isfinite(r) and r >= 0.0, "ridge", r, "must be finite and >= 0")
        self.X, self.y = Xs, ys
        self.n, self.dim, self.ridge = len(Xs), int(dim), r
        self.m = np.array([Xi.shape[0] for Xi in Xs], dtype=np.int64)
        self.user_loss = fn
        self.batched = batch_loss is not None

        self._derivatives()
        try:
            v0 = self._obj(np.zeros(self.dim), Xs[0][:1], ys[0][:1])
            g0 = np.asarray(self._grad(np.zeros(self.dim), Xs[0][:1], ys[0][:1]))
        except Exception as exc:  # the user's function failed on a valid input
            raise ConfigError(f"the loss failed at w = 0 on X[0][:1], y[0][:1]: "
                              f"{type(exc).__name__}: {exc}") from None
        require(np.ndim(v0) == 0, "loss output shape", np.shape(v0),
                "must be a scalar (batch_loss returns the MEAN over rows)")
        require(g0.shape == (self.dim,), "gradient shape", g0.shape,
                f"must be (dim,) = ({self.dim},): check dim")
        self._user_constants = _parse_constants(constants)
        self._table = ConstantsTable(self._user_constants)

    # ---- objective and its autograd derivatives ------------------------------------------
    def _obj(self, w: Any, Xb: np.ndarray, yb: np.ndarray) -> Any:
        """Mean user loss over the rows of ``Xb`` plus ``ridge/2 ||w||^2`` (autograd-traceable)."""
        if self.batched:
            data = self.user_loss(w, Xb, yb)
        else:
            data = 0.0
            for j in range(Xb.shape[0]):
                data = data + self.user_loss(w, Xb[j], yb[j])
            data = data / Xb.shape[0]
        return data + 0.5 * self.ridge * anp.dot(w, w)

    def _derivatives(self) -> None:
        self._grad = autograd.grad(self._obj)
        self._hess = autograd.hessian(self._obj)
        self._hvp = autograd.hessian_vector_product(self._obj)

    def __getstate__(self) -> dict[str, Any]:
        # autograd's wrapped functions are closures: drop them, rebuild on unpickling
        # (the user loss itself must be picklable, e.g. a module-level function)
        return {k: v for k, v in self.__dict__.items() if k not in ("_grad", "_hess", "_hvp")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._derivatives()

    # ---- deterministic oracles ----------------------------------------------------------
    def _w(self, w: np.ndarray) -> np.ndarray:
        return np.asarray(w, dtype=np.float64)

    def loss(self, i: int, w: np.ndarray) -> float:
        """f_i(w) = mean loss over client i's samples + ridge/2 ||w||^2."""
        return float(self._obj(self._w(w), self.X[i], self.y[i]))

    def grad(self, i: int, w: np.ndarray) -> np.ndarray:
        """grad f_i(w) by reverse-mode autograd."""
        return np.asarray(self._grad(self._w(w), self.X[i], self.y[i]), dtype=np.float64)

    def hess(self, i: int, w: np.ndarray) -> np.ndarray:
        """grad^2 f_i(w) by ``autograd.hessian``."""
        H = np.asarray(self._hess(self._w(w), self.X[i], self.y[i]), dtype=np.float64)
        return H.reshape(self.dim, self.dim)

    def hvp(self, i: int, w: np.ndarray, v: np.ndarray) -> np.ndarray:
        """grad^2 f_i(w) v without forming the Hessian (gradient of <grad f_i, v>)."""
        return np.asarray(self._hvp(self._w(w), self.X[i], self.y[i], self._w(v)),
                          dtype=np.float64)

    # ---- stochastic oracles -------------------------------------------------------------
    def sample_batch(self, i: int, size: int, rng: np.random.Generator) -> np.ndarray:
        """``size`` sample indices of client ``i``, uniform with replacement."""
        if type(size) is not int or size < 1:  # fast path; the validator decides
            check_integer("size", size, low=1)
        return rng.integers(0, int(self.m[i]), size=int(size))

    def batch_grad(self, i: int, w: np.ndarray, batch: np.ndarray) -> np.ndarray:
        """Gradient of the batch mean loss (+ ridge term)."""
        return np.asarray(self._grad(self._w(w), self.X[i][batch], self.y[i][batch]),
                          dtype=np.float64)

    def batch_hvp(self, i: int, w: np.ndarray, v: np.ndarray, batch: np.ndarray) -> np.ndarray:
        """Hessian of the batch mean loss (+ ridge) times ``v``."""
        return np.asarray(self._hvp(self._w(w), self.X[i][batch], self.y[i][batch],
                                    self._w(v)), dtype=np.float64)

    # ---- Moreau envelope ----------------------------------------------------------------
    def theta_hat_with_bound(self, i: int, w: np.ndarray, lam: float
                             ) -> tuple[np.ndarray, float]:
        """``(theta_hat, ||grad of the inner objective at theta_hat||)``.

        Newton (Hessian shifted to be positive definite where the user loss is
        not convex) on ``f_i(theta) + lam/2 ||theta - w||^2``, to
        ``||grad|| <= 1e-13 max(1, ||grad f_i(w)||)``.  Only when the inner problem
        is ``(lam + mu_i)``-strongly convex does ``lam ||grad||/(lam + mu_i)`` bound
        the F^(c) gradient error; the caller knows mu_i, this class does not.
        """
        check_number("lam", lam, allow_inf=True)
        require(math.isfinite(lam) and lam > 0, "lam", lam, "must be finite and > 0")
        w = self._w(w)
        Xi, yi = self.X[i], self.y[i]

        def fun(t):
            u = t - w
            return float(self._obj(t, Xi, yi)) + 0.5 * lam * float(u @ u)

        def grd(t):
            return np.asarray(self._grad(t, Xi, yi), dtype=np.float64) + lam * (t - w)

        def hes(t):
            H = np.asarray(self._hess(t, Xi, yi), dtype=np.float64).reshape(self.dim, self.dim)
            return H + lam * np.eye(self.dim)

        res = newton_minimize(fun, grd, hes, w)
        return res.x, res.grad_norm

    def theta_hat(self, i: int, w: np.ndarray, lam: float) -> np.ndarray:
        """argmin_theta f_i(theta) + lam/2 ||theta - w||^2 (Newton to 1e-13)."""
        return self.theta_hat_with_bound(i, w, lam)[0]

    # ---- constants ------------------------------------------------------------------------
    @property
    def constants(self) -> ConstantsTable:
        """User-supplied constants, plus sampled estimates after :meth:`estimate_constants`."""
        return self._table

    def estimate_constants(self, rng: np.random.Generator, n_points: int = 8, *,
                           scale: float = 1.0, center: np.ndarray | None = None,
                           power_iters: int = 100) -> ConstantsTable:
        """Sampled estimates of L, G, sigma_g2 and gamma_g2, tagged NUMERIC (NOT bounds).

        Points: ``center`` (default 0) and ``n_points - 1`` draws from
        ``N(center, scale^2 I)``.  ``L`` is the largest ``||grad^2 f_i(w)||_2`` found by
        power iteration on HVPs (``power_iters`` steps, stopped at a relative change
        of 1e-10); ``G`` the largest ``||grad f_i(w)||``; ``sigma_g2`` the largest
        per-sample gradient variance ``mean_j ||grad l_j(w) - grad f_i(w)||^2``;
        ``gamma_g2`` the largest ``(1/n) sum_i ||grad f_i(w) - grad f(w)||^2``.  A
        supremum over all w can exceed every sampled value, so these certify
        nothing.  User-supplied constants are kept and take precedence; the merged
        table becomes :attr:`constants` and is returned.
        """
        require(isinstance(rng, np.random.Generator), "rng", type(rng).__name__,
                "must be a numpy.random.Generator")
        check_integer("n_points", n_points, low=1)
        check_number("scale", scale, allow_inf=True)
        require(math.isfinite(scale) and scale >= 0, "scale", scale, "must be finite and >= 0")
        check_integer("power_iters", power_iters, low=1)
        c = np.zeros(self.dim) if center is None else self._w(center)
        require(c.shape == (self.dim,), "center", c.shape, f"must have shape ({self.dim},)")
        pts = [c] + [c + scale * rng.standard_normal(self.dim) for _ in range(n_points - 1)]
        L = G = sg = gg = 0.0
        for w in pts:
            grads = np.array([self.grad(i, w) for i in range(self.n)])
            G = max(G, float(np.max(np.linalg.norm(grads, axis=1))))
            gg = max(gg, float(np.mean(np.sum((grads - grads.mean(axis=0)) ** 2, axis=1))))
            for i in range(self.n):
                L = max(L, self._power_norm(i, w, rng, power_iters))
                per = np.array([self.batch_grad(i, w, np.array([j]))
                                for j in range(int(self.m[i]))])
                sg = max(sg, float(np.mean(np.sum((per - grads[i]) ** 2, axis=1))))
        where = (f"sampled estimate over {n_points} point(s) ~ N(center, {scale:g}^2 I)"
                 " -- NOT a bound")
        est = [
            Constant("L", L, Tag.NUMERIC, f"max ||Hessian||_2 by power iteration on HVPs; {where}"),
            Constant("G", G, Tag.NUMERIC, f"max ||grad f_i||; {where}"),
            Constant("sigma_g2", sg, Tag.NUMERIC, f"max per-sample gradient variance; {where}"),
            Constant("gamma_g2", gg, Tag.NUMERIC, f"max gradient diversity; {where}"),
        ]
        user = {k.name for k in self._user_constants}
        self._table = ConstantsTable(self._user_constants + [e for e in est if e.name not in user])
        return self._table

    def _power_norm(self, i: int, w: np.ndarray, rng: np.random.Generator, iters: int) -> float:
        v = rng.standard_normal(self.dim)
        v /= np.linalg.norm(v)
        est = 0.0
        for _ in range(iters):
            u = self.hvp(i, w, v)
            nu = float(np.linalg.norm(u))
            if nu == 0.0:
                return est
            done = abs(nu - est) <= 1e-10 * nu
            est, v = nu, u / nu
            if done:
                break
        return est
