"""Conventions of the bound functions: input checks, ``0*inf`` arithmetic, ``f_lower``.

Written for [P] Theorems 1-3 (the modes and ``f_lower`` are theirs); the input checks and the
arithmetic are shared by the [Y] AsyPFL and Per-FedAvg theorems.

THEORY_SPEC 1.5 (infinite constants), 2.1 (``f_lower``), 3-5 (modes).  The number checks are
:mod:`fedsim.errors`' validators (a bool or a string is never a number, 2.0 is not an
integer).
"""

from __future__ import annotations

import functools
import inspect
import math
from typing import Any, Literal

import numpy as np
from fedsim.theory.result import BoundResult, Status

from fedsim.errors import ConfigError, check_integer, check_number, require

__all__ = ["HELP", "REL_TOL", "MODES_12", "MODES_3", "Mode12", "Mode3", "FLower", "SIM", "OBJ",
           "real",
           "count", "horizons", "step", "mode_of", "m0", "ge", "close", "ratio", "with_f_lower"]


#: relative tolerance for "eta equals the prescription" and "T meets the threshold"
REL_TOL = 1e-12

MODES_12 = ("paper", "general_eta")
MODES_3 = ("corrected", "paper_literal", "general_eta")
#: the modes as types: ``fedsim bounds`` offers them as choices
Mode12 = Literal["paper", "general_eta"]
Mode3 = Literal["corrected", "paper_literal", "general_eta"]
FLower = Literal["paper", "global_inf"]
SIM = "simulator property: the engine/validation layer must check it"
OBJ = "property of the objective: its constants table must certify it"


# --------------------------------------------------------------------------- validation
def real(name: str, v: Any, *, lo: float | None = None, strict: bool = False,
         allow_inf: bool = False) -> float:
    """A real number (not a bool or a string), not NaN, finite unless ``allow_inf``, and
    ``>= lo`` (``> lo`` when ``strict``): :func:`fedsim.errors.check_number`."""
    return check_number(name, v, low=lo, strict=strict, allow_inf=allow_inf)


def count(name: str, v: Any, lo: int) -> int:
    """An integer count (2.0 is not one) ``>= lo``: ``"<name> must be >= <lo>, got ..."``."""
    x = check_integer(name, v)
    require(x >= lo, name, v, f"must be >= {lo}")
    return x


def horizons(T: Any) -> tuple[np.ndarray, bool]:
    """``T`` as a float64 array (0-d for a scalar) with every entry finite and > 0."""
    try:
        arr = np.array(T, dtype=np.float64)
    except (TypeError, ValueError):
        raise ConfigError(f"T must be a number or an array of numbers, got T={T!r}") from None
    require(arr.size > 0, "T", T, "must not be empty")
    for x in arr.ravel():
        require(not math.isnan(x), "T", float(x), "must not be NaN")
        require(math.isfinite(x), "T", float(x), "must be finite")
        require(x > 0, "T", float(x), "must be > 0")
    return arr, arr.ndim > 0


def step(name: str, v: Any, shape: tuple[int, ...]) -> np.ndarray | None:
    """A user step size (scalar or array broadcastable to ``shape``), each entry > 0."""
    if v is None:
        return None
    try:
        arr = np.array(v, dtype=np.float64)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a number, got {name}={v!r}") from None
    for x in arr.ravel():
        real(name, float(x), lo=0.0, strict=True)
    try:
        return np.broadcast_to(arr, shape).copy() if arr.ndim else arr
    except ValueError:
        raise ConfigError(
            f"{name} must be a scalar or match the shape of T {shape}, got shape {arr.shape}"
        ) from None


def mode_of(mode: Any, allowed: tuple[str, ...]) -> str:
    require(mode in allowed, "mode", mode, f"must be one of {allowed}")
    return str(mode)


# --------------------------------------------------------------------------- arithmetic
def m0(*factors: float) -> float:
    """Product with ``0 * inf = 0``: use only when a zero factor is an exact zero of the proof."""
    if any(f == 0 for f in factors):
        return 0.0
    out = 1.0
    for f in factors:
        out *= f
    return out


def ge(x: np.ndarray | float, threshold: float) -> np.ndarray:
    """``x >= threshold`` up to the relative tolerance ``REL_TOL``."""
    return np.asarray(x) >= threshold * (1.0 - REL_TOL)


def close(a: np.ndarray | float, b: np.ndarray | float) -> np.ndarray:
    return np.abs(np.asarray(a) - np.asarray(b)) <= REL_TOL * np.abs(np.asarray(b))


def ratio(num: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``num / c`` where ``c > 0``; ``+inf`` where the proof coefficient ``c <= 0`` (no bound)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.where(c > 0, num / np.where(c > 0, c, 1.0), np.inf)



F_LOWER = ("paper", "global_inf")


def with_f_lower(fn):
    """Add THEORY_SPEC 2.1's ``f_lower`` option to a Theorem 1-3 evaluator.

    ``f_lower="paper"`` (default): the gap argument is ``f(w0) - f_star_P`` as the theorem
    states.  ``f_lower="global_inf"``: the caller passes ``f(w0) - inf f`` (resp.
    ``F(w0) - inf F``) instead; the proofs only use ``F(w0) - E F(w^T) <= F(w0) - (any lower
    bound of inf F)``, so the value is still a valid bound, but it is no longer the stated
    theorem: a certified status becomes ``PROOF_LEVEL``.
    """

    @functools.wraps(fn)
    def wrapper(*, f_lower: str = "paper", **kw: Any) -> BoundResult:
        require(f_lower in F_LOWER, "f_lower", f_lower, f"must be one of {list(F_LOWER)}")
        res = fn(**kw)
        res.derived_constants["f_lower"] = f_lower
        if f_lower == "global_inf":
            cert = (Status.CERTIFIED_PAPER, Status.CERTIFIED_CORRECTED)
            if res.status in cert:
                res.status = Status.PROOF_LEVEL
            per = res.derived_constants.get("status_per_T")
            if per is not None:
                res.derived_constants["status_per_T"] = [
                    Status.PROOF_LEVEL.value if Status(x) in cert else x for x in per]
            res.warnings.append("f_lower='global_inf': the gap uses inf f (or inf F) instead "
                                "of f_star_P, a valid proof-level tightening (THEORY_SPEC "
                                "2.1), not the theorem as stated")
        return res

    sig = inspect.signature(fn)
    extra = inspect.Parameter("f_lower", inspect.Parameter.KEYWORD_ONLY, default="paper",
                              annotation=FLower)
    wrapper.__signature__ = sig.replace(parameters=[*sig.parameters.values(), extra])
    wrapper.__annotations__ = {**fn.__annotations__, "f_lower": FLower}
    return wrapper


#: ``fedsim bounds`` help texts of the arguments shared by Theorems 1-3
HELP = {
    "L": "smoothness constant L of each f_i",
    "Q": "local steps per upload",
    "tau": "staleness bound (Assumption 1)",
    "b": "batch size",
    "sigma_g2": "per-sample gradient variance (may be inf)",
    "gamma_g2": "gradient diversity (may be inf)",
    "T": "server steps: a number or a comma list",
    "beta": "server step (the theorems need 1; default 1)",
    "eta": "client step (default: the theorem's prescription)",
    "f_lower": "'paper' (f_star_P) or 'global_inf' (gap to inf f: PROOF_LEVEL)",
}
