"""The Gram interpolant of a solved PEP as a fedsim problem kind, ``gram_interpolant``.

:class:`InterpolantProblem` puts one :class:`~fedsim.worstcase.interpolant.ClassInterpolant`
on every client (sigma = 0, first-order oracles only).  :data:`GRAM_INTERPOLANT` registers it
through fedsim's problem plug-in door (:mod:`fedsim.problems.registry`; fedsim's own
``setup.cfg`` names it under the ``fedsim.problems`` entry-point group), so a scenario's
``[problem]`` table can say::

    kind = "gram_interpolant"
    n = 2                          # clients, each holding the same function
    function_class = "nonconvex"   # or "strongly_convex" (with mu)
    L = 1.0
    mu = 0.0
    points = [[...], ...]          # P rows of r numbers: the PEP's points x_i in R^r
    gradients = [[...], ...]       # the gradients g_i at them (P rows of r numbers)
    values = [...]                 # the values f_i (P numbers)

The data are those of the solved PEP at ``L = 1`` (its Gram matrix factored, ``G = V^T V``,
:func:`~fedsim.worstcase.interpolant.interpolation_data`), stored in the TOML itself as
float64 numbers written to the last bit (TOML floats are Python's shortest round-trip
``repr``): no sidecar file can go missing, be moved or be swapped.  The builder turns them
into the interpolant with the same arithmetic as the worst-case package
(:func:`~fedsim.worstcase.interpolant.class_interpolant`), so ``fedsim run`` on the TOML and
:func:`fedsim.worstcase.engine_witness.simulate_interpolant` run the same function, bit for
bit.  Bad data (ragged or non-numeric rows, shapes that do not match, a non-finite number, a
class or constants outside the PEP's) are refused in one line naming the key.

The problem has no compiled view, so the engine runs it on its interpreted path: every
gradient is a small QP over the simplex (:class:`~fedsim.worstcase.interpolant.
ConvexInterpolant`), which is why this witness is for the short horizons PEP reaches.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fedsim.errors import check_integer, check_number, require
from fedsim.problems.constants import Constant, ConstantsTable, Tag
from fedsim.problems.deterministic import DeterministicProblem
from fedsim.problems.registry import ProblemKind
from fedsim.worstcase.classes import FunctionClass
from fedsim.worstcase.interpolant import ClassInterpolant, class_interpolant

__all__ = ["InterpolantProblem", "gram_interpolant", "interpolant_table", "GRAM_INTERPOLANT",
           "KIND", "NO_HESSIAN"]

#: the ``[problem] kind`` of the Gram interpolant
KIND = "gram_interpolant"

NO_HESSIAN = ("the Gram interpolant is C^{1,1}: it has no Hessian oracle (first-order client "
              "rules only)")


class InterpolantProblem(DeterministicProblem):
    """``f_i = f`` for every client ``i < n``: one :class:`ClassInterpolant` in ``R^dim``,
    deterministic (sigma = 0: a batch is ``None`` and its gradient the gradient), with its
    exact minimum ``f_star`` at ``x_star``.  First-order only: the interpolant is
    ``C^{1,1}``, not twice differentiable, so the Hessian oracles and the Moreau step raise."""

    def __init__(self, *, function: ClassInterpolant, n: int, dim: int) -> None:
        self.function = function
        self.n = int(n)
        self.dim = int(dim)
        f_star, x_star = function.minimum()
        self.f_star = float(f_star)
        self.x_star = np.asarray(x_star, dtype=np.float64)

    def loss(self, i: int, w: np.ndarray) -> float:
        return self.function.value(w)

    def grad(self, i: int, w: np.ndarray) -> np.ndarray:
        return np.array(self.function.grad(w), dtype=np.float64)

    def f(self, w: np.ndarray) -> float:
        return self.function.value(w)

    def grad_f(self, w: np.ndarray) -> np.ndarray:
        return self.grad(0, w)

    def hess(self, i: int, w: np.ndarray) -> np.ndarray:
        raise NotImplementedError(NO_HESSIAN)

    def batch_hvp(self, i: int, w: np.ndarray, v: np.ndarray, batch: Any) -> np.ndarray:
        raise NotImplementedError(NO_HESSIAN)

    def theta_hat(self, i: int, w: np.ndarray, lam: float) -> np.ndarray:
        raise NotImplementedError("the Gram interpolant's proximal step is not built "
                                  "(first-order client rules only)")

    def _build_table(self) -> ConstantsTable:
        """The constants of the class the interpolant is a member of by construction (the
        conjugate of a ``1/M``-strongly convex function, Taylor, Hendrickx & Glineur 2017,
        Theorem 1, shifted as in :mod:`fedsim.worstcase.interpolant`), every client holding
        the same function; no ``mu`` for the nonconvex class (it is not convex)."""
        fn = self.function
        L = float(fn.scale) * (fn.phi.M + fn.shift)
        sc = fn.kind == "strongly_convex"
        why_f = ("min over the simplex of a convex QP (Clarabel, then a KKT polish)" if sc
                 else "min_j (-L ||s_j||^2 - c_j), closed form")
        tag_f = Tag.NUMERIC if sc else Tag.EXACT
        rows = [Constant("L", L, Tag.EXACT, f"the interpolant is in the {fn.kind} class of L")]
        if sc:
            rows.append(Constant("mu", float(fn.scale) * fn.shift, Tag.EXACT,
                                 "f - mu ||x||^2/2 is convex by construction"))
        return ConstantsTable(rows + [
            Constant("rho", math.inf, Tag.INFINITE, "C^{1,1}, not twice differentiable"),
            Constant("sigma_g2", 0.0, Tag.EXACT, "deterministic oracle"),
            Constant("gamma_g2", 0.0, Tag.EXACT, "every client holds the same function"),
            Constant("G", math.inf, Tag.INFINITE, "the gradient grows linearly in ||x||"),
            Constant("B", math.inf, Tag.INFINITE, "not Lipschitz: the gradient is unbounded"),
            Constant("f_star_A", self.f_star, tag_f, why_f),
            Constant("f_star_P", self.f_star, tag_f, "every f_i = f: " + why_f),
            Constant("zeta", 0.0, Tag.EXACT, "every client's minimiser is x*"),
        ])


def _numbers(key: str, value: Any, shape: tuple[int | None, ...]) -> np.ndarray:
    """``value`` as a float64 array of ``shape`` (one or two axes; ``None``: any length >= 1)
    of finite numbers, else a one-line ConfigError naming ``problem.<key>``."""
    what = "a list of numbers" if len(shape) == 1 else "a list of rows of numbers"
    ok = isinstance(value, (list, tuple)) and len(value) > 0 and (
        len(shape) == 1 or all(isinstance(r, (list, tuple)) and len(r) > 0 for r in value))
    flat = (value if len(shape) == 1 else [x for r in value for x in r]) if ok else []
    ok = ok and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in flat)
    require(ok, f"problem.{key}", type(value).__name__, f"must be {what} (the PEP's data)")
    if len(shape) == 2:
        lengths = sorted({len(r) for r in value})
        require(len(lengths) == 1, f"problem.{key}", f"row lengths {lengths}",
                "must have rows of one length (the PEP's data)")
    a = np.array(value, dtype=np.float64)
    want = tuple("any" if w is None else w for w in shape)
    require(all(w is None or w == g for w, g in zip(shape, a.shape, strict=True)),
            f"problem.{key}", f"shape {a.shape}",
            f"must have shape {want} (one row per point of problem.points)")
    require(bool(np.isfinite(a).all()), f"problem.{key}", "a non-finite entry",
            "must hold finite numbers only")
    return a


def gram_interpolant(*, n: int, function_class: str, L: float, points: list,
                     gradients: list, values: list, mu: float = 0.0) -> InterpolantProblem:
    """The ``gram_interpolant`` problem (module doc): ``n`` clients, each holding the
    interpolant of ``function_class`` (``"strongly_convex"`` or ``"nonconvex"``) with
    constants ``L`` and ``mu`` through ``points`` / ``gradients`` / ``values`` (the PEP's data
    at ``L = 1``)."""
    check_integer("problem.n", n, low=1)
    require(function_class in ("strongly_convex", "nonconvex"), "problem.function_class",
            function_class, "must be strongly_convex or nonconvex (the smooth classes the "
            "interpolant is built for)")
    check_number("problem.L", L)
    check_number("problem.mu", mu)
    require(math.isfinite(L) and L > 0, "problem.L", L, "must be finite and > 0")
    if function_class == "strongly_convex":
        require(0.0 <= mu < L, "problem.mu", mu, f"must be in [0, L = {L})")
    else:
        require(mu == 0.0, "problem.mu", mu, "must be 0 for the nonconvex class")
    X = _numbers("points", points, (None, None))
    P, r = X.shape
    Gr = _numbers("gradients", gradients, (P, r))
    Fv = _numbers("values", values, (P,))
    fclass = FunctionClass(kind=function_class, L=float(L), mu=float(mu))
    return InterpolantProblem(function=class_interpolant(X, Gr, Fv, fclass), n=int(n), dim=r)


def interpolant_table(X: np.ndarray, Gr: np.ndarray, Fv: np.ndarray, fclass: FunctionClass,
                      n: int) -> dict[str, Any]:
    """The ``[problem]`` table of the interpolant through ``(X, Gr, Fv)`` (the PEP's data,
    :func:`~fedsim.worstcase.interpolant.interpolation_data`) on ``n`` clients."""
    require(fclass.kind in ("strongly_convex", "nonconvex"), "function_class", fclass.kind,
            "must be strongly_convex or nonconvex for a Gram interpolant")
    return {"kind": KIND, "n": int(n), "function_class": fclass.kind, "L": float(fclass.L),
            "mu": float(fclass.mu) if fclass.kind == "strongly_convex" else 0.0,
            "points": [[float(x) for x in row] for row in X],
            "gradients": [[float(x) for x in row] for row in Gr],
            "values": [float(x) for x in Fv]}


#: the problem kind, registered through the ``fedsim.problems`` entry point of fedsim itself
GRAM_INTERPOLANT = ProblemKind(
    name=KIND, builder=gram_interpolant,
    doc="the Gram interpolant of a solved PEP (fedsim worstcase --witness-out)")
