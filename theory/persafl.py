"""PersA-FL Theorems 1-3 and the Lemma 1-7 constants, as :class:`BoundResult` values.

Source: Toghani, Lee, Uribe, *PersA-FL* ([P], ``shared/papers/persa-fl.md``); every
formula below is the one of THEORY_SPEC sections 3 (Thm 1), 4 (Thm 2), 5 (Thm 3),
with the [P] errata of section 8 applied where stated.

Conventions shared by the three evaluators
------------------------------------------
* ``eta=None`` means the theorem's prescribed client step ``1/(Q sqrt(L T))`` (``L_b``
  for Thm 2, ``L_c`` for Thm 3); ``step_sizes`` always reports ``eta`` and ``beta``.
* In the paper/corrected/literal modes, ``eta`` or ``beta`` different from the
  prescription (relative tolerance ``REL_TOL``) is a failing hypothesis.  Horizon
  thresholds are compared with the same relative tolerance, so ``T`` equal to a
  threshold up to rounding meets it.
* Status (THEORY_SPEC 1.4): a checkable hypothesis that fails gives ``NOT_APPLICABLE``
  and ``terms["value_if_hypotheses_ignored"]``; ``value`` is always the formula's
  number (``value == sum`` of the other terms), so only ``result.is_bound`` certifies it.
* Infinite constants (THEORY_SPEC 1.5, 9.3, 12.7).  Assumptions 2-4, shared by all
  three theorems, fail globally when their constant is infinite: ``f_gap = inf``
  (some f_i unbounded below), ``sigma_g2 = inf``, ``gamma_g2 = inf`` give
  ``NOT_APPLICABLE`` (e.g. quadratics with unequal A_i: gamma_g = inf).  The
  second-order/bounded-gradient constants of Assumptions 5-6 (``rho``, ``sigma_h2``,
  ``gamma_h2``, ``G``), used by Thm 2 only through Lemmas 1-4, hold *formally* when
  infinite: the bound is ``+inf`` with status ``VACUOUS`` (quadratic Thm 2: G = inf)
  -- unless the infinity reaches ``L_b`` (alpha rho G = inf), where the horizon
  hypothesis ``T >= 64 L_b`` fails and the status is ``NOT_APPLICABLE``.
  ``0 * inf = 0`` is used only where the zero factor is an exact zero of the proof:
  ``alpha``, ``rho``, ``sigma_h2``, ``gamma_h2``, ``G``, ``sigma_g2`` in Lemmas 1-3,
  and ``gamma_g2 = 0`` in Lemma 7 (identical gradients give identical envelopes).
* Arrays of ``T`` give arrays of values and terms; the status is the worst over the
  horizons and ``derived_constants["status_per_T"]`` lists each one.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from fedsim.errors import ConfigError, require
from theory.result import BoundResult, Hypothesis, Status, worst_status

__all__ = ["REL_TOL", "maml_constants", "me_constants", "theorem1", "theorem2", "theorem3"]

#: relative tolerance for "eta equals the prescription" and "T meets the threshold"
REL_TOL = 1e-12

_MODES_12 = ("paper", "general_eta")
_MODES_3 = ("corrected", "paper_literal", "general_eta")
_SIM = "simulator property: the engine/validation layer must check it"
_OBJ = "property of the objective: its constants table must certify it"


# --------------------------------------------------------------------------- validation
def _real(name: str, v: Any, *, lo: float | None = None, strict: bool = False,
          allow_inf: bool = False) -> float:
    """A float that is not NaN, finite unless ``allow_inf``, and >= (or >) ``lo``."""
    if isinstance(v, (str, bytes)) or np.ndim(v) != 0:
        raise ConfigError(f"{name} must be a real number, got {name}={v!r}")
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a real number, got {name}={v!r}") from None
    require(not math.isnan(x), name, x, "must not be NaN")
    if not allow_inf:
        require(math.isfinite(x), name, x, "must be finite")
    if lo is not None:
        if strict:
            require(x > lo, name, x, f"must be > {lo:g}")
        else:
            require(x >= lo, name, x, f"must be >= {lo:g}")
    return x


def _count(name: str, v: Any, lo: int) -> int:
    """An integer-valued count >= ``lo``."""
    x = _real(name, v, lo=lo)
    require(x.is_integer(), name, x, "must be an integer")
    return int(x)


def _horizons(T: Any) -> tuple[np.ndarray, bool]:
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


def _step(name: str, v: Any, shape: tuple[int, ...]) -> np.ndarray | None:
    """A user step size (scalar or array broadcastable to ``shape``), each entry > 0."""
    if v is None:
        return None
    try:
        arr = np.array(v, dtype=np.float64)
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a number, got {name}={v!r}") from None
    for x in arr.ravel():
        _real(name, float(x), lo=0.0, strict=True)
    try:
        return np.broadcast_to(arr, shape).copy() if arr.ndim else arr
    except ValueError:
        raise ConfigError(
            f"{name} must be a scalar or match the shape of T {shape}, got shape {arr.shape}"
        ) from None


def _mode(mode: Any, allowed: tuple[str, ...]) -> str:
    require(mode in allowed, "mode", mode, f"must be one of {allowed}")
    return str(mode)


# --------------------------------------------------------------------------- arithmetic
def _m0(*factors: float) -> float:
    """Product with ``0 * inf = 0``: use only when a zero factor is an exact zero of the proof."""
    if any(f == 0 for f in factors):
        return 0.0
    out = 1.0
    for f in factors:
        out *= f
    return out


def _ge(x: np.ndarray | float, threshold: float) -> np.ndarray:
    """``x >= threshold`` up to the relative tolerance ``REL_TOL``."""
    return np.asarray(x) >= threshold * (1.0 - REL_TOL)


def _close(a: np.ndarray | float, b: np.ndarray | float) -> np.ndarray:
    return np.abs(np.asarray(a) - np.asarray(b)) <= REL_TOL * np.abs(np.asarray(b))


def _ratio(num: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``num / c`` where ``c > 0``; ``+inf`` where the proof coefficient ``c <= 0`` (no bound)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.where(c > 0, num / np.where(c > 0, c, 1.0), np.inf)


# --------------------------------------------------------------------------- assembly
@dataclass
class _Check:
    """A hypothesis under construction: ``ok`` is a bool, a bool array over T, or None."""

    name: str
    ok: Any
    detail: str


def _per_T_detail(ok: np.ndarray, T: np.ndarray, detail: str) -> str:
    ok = np.broadcast_to(ok, T.shape)
    if T.ndim == 0 or ok.all():
        return detail
    bad = T[~ok]
    span = f"T={_g(bad.min())}..{_g(bad.max())}"
    return f"{detail}; fails at {bad.size} of {T.size} horizons ({span})"


def _g(x: Any) -> str:
    return f"{float(x):.10g}"


def _assemble(*, theorem: str, mode: str, T: np.ndarray, is_array: bool,
              terms: dict[str, Any], checks: list[_Check], base: Status,
              derived: dict[str, Any], step_sizes: dict[str, Any], errata: list[str],
              warnings: list[str] | None = None) -> BoundResult:
    """Sum the terms, derive the per-horizon and overall status (THEORY_SPEC 1.4)."""
    shape = T.shape
    terms = {k: np.broadcast_to(np.asarray(v, dtype=np.float64), shape).copy()
             for k, v in terms.items()}
    value = 0.0
    for v in terms.values():
        value = value + v
    value = np.asarray(value, dtype=np.float64)
    if np.isnan(value).any():  # pragma: no cover - guarded by the 0*inf rules above
        raise FloatingPointError(f"{theorem}: NaN in the bound; please report this input")
    fail = np.zeros(shape, dtype=bool)
    hyps = []
    for c in checks:
        if c.ok is None:
            hyps.append(Hypothesis(c.name, None, c.detail))
            continue
        ok = np.broadcast_to(np.asarray(c.ok, dtype=bool), shape)
        fail |= ~ok
        hyps.append(Hypothesis(c.name, bool(ok.all()), _per_T_detail(ok, T, c.detail)))
    per = np.where(fail, Status.NOT_APPLICABLE.value,
                   np.where(np.isinf(value), Status.VACUOUS.value, base.value))
    status = worst_status([Status(s) for s in np.atleast_1d(per)])
    if fail.any():
        terms["value_if_hypotheses_ignored"] = value.copy()
    out = (lambda a: a) if is_array else (lambda a: float(a) if np.ndim(a) == 0 else a)
    derived = {k: (out(np.asarray(v, dtype=np.float64)) if isinstance(v, np.ndarray) else v)
               for k, v in derived.items()}
    if is_array:
        derived["status_per_T"] = [str(s) for s in per]
    steps = {k: (out(np.asarray(v, dtype=np.float64)) if isinstance(v, np.ndarray) else v)
             for k, v in step_sizes.items()}
    return BoundResult(
        value=out(value), status=status, terms={k: out(v) for k, v in terms.items()},
        hypotheses=hyps, derived_constants=derived, step_sizes=steps,
        errata_applied=list(errata), warnings=list(warnings or []), theorem=theorem, mode=mode,
    )


def _common_checks(*, f_gap: float, gap_name: str, sigma_g2: float, gamma_g2: float,
                   option: str, local_rule: str) -> list[_Check]:
    """Assumptions 1-4 of [P] (shared by Thms 1-3; THEORY_SPEC 3.b, 4.b, 5.b)."""
    return [
        _Check("Asm 1 staleness <= tau, iid uniform arrivals", None,
               "t - Omega(t) <= tau; i_t iid Uniform[n] independent of delays and noise: "
               + _SIM + " (THEORY_SPEC 2.1, window model 10.2(a))"),
        _Check("Asm 2 each f_i differentiable and L-smooth", None, _OBJ),
        _Check("Asm 2 each f_i bounded below", bool(math.isfinite(f_gap)),
               f"{gap_name} = {_g(f_gap)}" if math.isfinite(f_gap)
               else f"{gap_name} = inf: some f_i is unbounded below (f_star_P = -inf)"),
        _Check("Asm 3 per-sample gradient variance <= sigma_g2", bool(math.isfinite(sigma_g2)),
               f"sigma_g2 = {_g(sigma_g2)}" if math.isfinite(sigma_g2)
               else "sigma_g2 = inf: Asm 3 fails globally"),
        _Check("Asm 3 fresh independent batches of size >= b", None, _SIM),
        _Check("Asm 4 gradient diversity <= gamma_g2", bool(math.isfinite(gamma_g2)),
               f"gamma_g2 = {_g(gamma_g2)}" if math.isfinite(gamma_g2)
               else "gamma_g2 = inf: Asm 4 fails globally (e.g. quadratics with unequal A_i)"),
        _Check(f"{option} local rule", None, f"the scenario must run {local_rule}; " + _SIM),
    ]


def _beta_eta_checks(*, beta: float, eta: np.ndarray, eta_pres: np.ndarray, user_eta: bool,
                     Lname: str) -> list[_Check]:
    eta_ok = _close(eta, eta_pres) if user_eta else True
    return [
        _Check("beta == 1", beta == 1.0, f"beta = {_g(beta)}"),
        _Check(f"eta == 1/(Q sqrt({Lname} T))", eta_ok,
               "prescribed step used" if not user_eta else "user eta vs prescribed step"),
    ]


def _general_checks(*, beta: float, eta: np.ndarray, eta_max: float, c: np.ndarray,
                    cname: str, cite: str) -> list[_Check]:
    return [
        _Check("beta == 1", beta == 1.0, f"beta = {_g(beta)} (general-eta bound is for beta=1)"),
        _Check(f"eta <= 1/(4 L (Q+1)) = {_g(eta_max)}",
               np.asarray(eta) <= eta_max * (1.0 + REL_TOL),
               f"drift lemma step cap {cite}"),
        _Check(f"{cname}(eta) > 0", np.asarray(c) > 0,
               f"proof coefficient {cite}; min {cname} = {_g(np.min(c))}"),
    ]


# --------------------------------------------------------------------------- Lemmas 1-4
def maml_constants(*, L: float, rho: float, G: float, alpha: float, sigma_g2: float,
                   sigma_h2: float, gamma_g2: float, gamma_h2: float, b: int) -> dict[str, float]:
    """MAML constants of [P] Lemmas 1-4 (eqs. (21)-(25)); THEORY_SPEC 4.c.

    ``L_b = L(1+aL)^2 + a rho G`` (Lemma 1), ``mu_b = a L (1+aL) sigma_g/sqrt(b)`` (Lemma 2,
    (22); b is the inner batch |D'|), ``sigma_b2`` (Lemma 2, (23)), ``gamma_b2`` (Lemma 3,
    (24)), ``G_b = (1+aL) G`` (Lemma 4, (25)).  Valid for every ``alpha >= 0`` (E-P7);
    ``sigma_h2`` is the Frobenius-norm Hessian variance (E-P13).  Infinite ``rho``,
    ``G``, ``sigma_*``, ``gamma_*`` are allowed; ``0 * inf = 0`` as in THEORY_SPEC 1.5.
    """
    L = _real("L", L, lo=0.0, strict=True)
    rho = _real("rho", rho, lo=0.0, allow_inf=True)
    G = _real("G", G, lo=0.0, allow_inf=True)
    a = _real("alpha", alpha, lo=0.0)
    sg2 = _real("sigma_g2", sigma_g2, lo=0.0, allow_inf=True)
    sh2 = _real("sigma_h2", sigma_h2, lo=0.0, allow_inf=True)
    gg2 = _real("gamma_g2", gamma_g2, lo=0.0, allow_inf=True)
    gh2 = _real("gamma_h2", gamma_h2, lo=0.0, allow_inf=True)
    b = _count("b", b, 1)
    one = 1.0 + a * L
    bfac = 1.0 / b + a * a * L * L / b
    L_b = L * one**2 + _m0(a, rho, G)
    mu_b = _m0(a * L * one, math.sqrt(sg2)) / math.sqrt(b)
    sigma_b2 = (_m0(3.0 * one**2, sg2) * bfac
                + _m0(3.0 * a * a, G * G, sh2) / b
                + _m0(3.0 * a * a, sg2, sh2) / b * bfac)
    gamma_b2 = _m0(12.0 * one**2 * (1.0 + a * a * L * L), gg2) + _m0(12.0 * a * a, G * G, gh2)
    G_b = one * G
    return {"L_b": L_b, "mu_b": mu_b, "sigma_b2": sigma_b2, "gamma_b2": gamma_b2, "G_b": G_b}


# --------------------------------------------------------------------------- Lemmas 5-7
def me_constants(*, L: float, lam: float, nu: float, sigma_g2: float, b: int, gamma_g2: float,
                 kappa_me: float | None = None, affine_additive: bool = False) -> dict[str, Any]:
    """Moreau-envelope constants of [P] Lemmas 5-7 (eqs. (26)-(28)); THEORY_SPEC 5.c.

    ``L_c = lam/(kappa_me - 1)`` (Lemma 5; ``kappa_me`` in ``(1, lam/L]``, default lam/L so
    ``L_c = lam L/(lam - L)``, E-P12), ``mu_c = lam nu/(lam - L)`` (Lemma 6 (26), valid only
    under H3.y: affine gradients and additive noise, E-P10), ``mu_c_safe = sqrt(sigma_c2)``
    (always valid), ``sigma_c2 = 2 lam^2/(lam-L)^2 (sigma_g2/b + nu^2)`` (Lemma 6 (27)),
    ``gamma_c2 = 16 lam^2/(lam^2 - 48 L^2) gamma_g2`` (Lemma 7 (28); ``+inf`` unless
    ``lam^2 > 48 L^2``, E-P9).  ``mu_c_used`` is ``mu_c`` if ``affine_additive`` else
    ``mu_c_safe``.  Requires ``lam > L`` (Lemmas 5-6).
    """
    L = _real("L", L, lo=0.0, strict=True)
    lam = _real("lam", lam, lo=0.0, strict=True)
    require(lam > L, "lam", lam, f"must be > L={L:g} (Lemmas 5-6 need lam > L)")
    nu = _real("nu", nu, lo=0.0)
    sg2 = _real("sigma_g2", sigma_g2, lo=0.0, allow_inf=True)
    gg2 = _real("gamma_g2", gamma_g2, lo=0.0, allow_inf=True)
    b = _count("b", b, 1)
    require(isinstance(affine_additive, (bool, np.bool_)), "affine_additive", affine_additive,
            "must be a bool")
    if kappa_me is None:
        kappa = lam / L
        L_c = lam * L / (lam - L)
    else:
        kappa = _real("kappa_me", kappa_me, lo=1.0, strict=True)
        require(kappa <= (lam / L) * (1.0 + REL_TOL), "kappa_me", kappa,
                f"must be <= lam/L={lam / L:g} (Lemma 5 needs lam >= kappa_me L)")
        L_c = lam / (kappa - 1.0)
    mu_c = lam * nu / (lam - L)
    sigma_c2 = 2.0 * lam**2 / (lam - L) ** 2 * (sg2 / b + nu**2)
    mu_c_safe = math.sqrt(sigma_c2)
    den = lam**2 - 48.0 * L**2
    if gg2 == 0.0:
        gamma_c2 = 0.0
    elif den > 0:
        gamma_c2 = 16.0 * lam**2 / den * gg2
    else:
        gamma_c2 = math.inf
    return {"L_c": L_c, "mu_c": mu_c, "mu_c_safe": mu_c_safe, "sigma_c2": sigma_c2,
            "gamma_c2": gamma_c2, "kappa_me": kappa,
            "mu_c_used": mu_c if affine_additive else mu_c_safe}


# --------------------------------------------------------------------------- Theorem 1
_F_LOWER = ("paper", "global_inf")


def _with_f_lower(fn):
    """Add THEORY_SPEC 2.1's ``f_lower`` option to a Theorem 1-3 evaluator.

    ``f_lower="paper"`` (default): the gap argument is ``f(w0) - f_star_P`` as the theorem
    states.  ``f_lower="global_inf"``: the caller passes ``f(w0) - inf f`` (resp.
    ``F(w0) - inf F``) instead; the proofs only use ``F(w0) - E F(w^T) <= F(w0) - (any lower
    bound of inf F)``, so the value is still a valid bound, but it is no longer the stated
    theorem: a certified status becomes ``PROOF_LEVEL``.
    """

    @functools.wraps(fn)
    def wrapper(*, f_lower: str = "paper", **kw: Any) -> BoundResult:
        require(f_lower in _F_LOWER, "f_lower", f_lower, f"must be one of {list(_F_LOWER)}")
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

    return wrapper


@_with_f_lower
def theorem1(*, L: float, Q: int, tau: int, b: int, sigma_g2: float, gamma_g2: float,
             f_gap: float, T: Any, beta: float = 1.0, eta: Any = None,
             mode: str = "paper") -> BoundResult:
    """[P] Theorem 1 (FedAsync, Option A): bound on ``(1/T) sum_{t<T} E||grad f(w^t)||^2``.

    ``mode="paper"`` (THEORY_SPEC 3.c, status CERTIFIED_PAPER)::

        s2 = sigma_g2/b + gamma_g2
        B1 = 4 sqrt(L) f_gap/sqrt(T) + 8 sqrt(L) s2/sqrt(T) + 80 L (1+Q)(tau^2+1) s2/T

    under ``beta = 1``, ``eta = 1/(Q sqrt(L T))``, ``T >= 160 L (Q+7)(tau+1)^3``.
    ``mode="general_eta"`` (THEORY_SPEC 3.d, PROOF_LEVEL): (A74)-(A76) divided by the
    coefficient ``c_T1 = (2Q-1)/Q - 4 eta L Q - 16 eta^2 L^2 Q^2 (1+2Q) tau' (tau+1)^2
    (1+4 eta L)`` with ``tau' = max(tau, 1)`` (E-P6), (A76) counted once (E-P5), ``n beta Q``
    read as ``eta beta Q`` (E-P4); valid if ``eta <= 1/(4L(Q+1))`` (A78) and ``c_T1 > 0``.
    ``f_gap = f(w^0) - f_star_P``.
    """
    mode = _mode(mode, _MODES_12)
    L = _real("L", L, lo=0.0, strict=True)
    Q = _count("Q", Q, 1)
    tau = _count("tau", tau, 0)
    b = _count("b", b, 1)
    sg2 = _real("sigma_g2", sigma_g2, lo=0.0, allow_inf=True)
    gg2 = _real("gamma_g2", gamma_g2, lo=0.0, allow_inf=True)
    f_gap = _real("f_gap", f_gap, lo=0.0, allow_inf=True)
    beta = _real("beta", beta, lo=0.0, strict=True)
    Ts, is_array = _horizons(T)
    user_eta = _step("eta", eta, Ts.shape)
    eta_pres = 1.0 / (Q * np.sqrt(L * Ts))
    eta_u = eta_pres if user_eta is None else user_eta
    s2 = sg2 / b + gg2
    taup = max(tau, 1)
    T_min = 160.0 * L * (Q + 7) * (tau + 1) ** 3
    eta_max = 1.0 / (4.0 * L * (Q + 1))

    def c_T1(e: np.ndarray) -> np.ndarray:
        return ((2 * Q - 1) / Q - 4 * e * L * Q
                - 16 * e**2 * L**2 * Q**2 * (1 + 2 * Q) * taup * (tau + 1) ** 2 * (1 + 4 * e * L))

    checks = _common_checks(f_gap=f_gap, gap_name="f_gap", sigma_g2=sg2, gamma_g2=gg2,
                            option="Option A", local_rule="Option A (unbiased SGD steps)")
    derived: dict[str, Any] = {"s2": s2, "T_min": T_min, "eta_prescribed": eta_pres,
                               "eta_max": eta_max, "c_T1": c_T1(eta_u)}
    warnings: list[str] = []
    if mode == "paper":
        checks = _beta_eta_checks(beta=beta, eta=eta_u, eta_pres=eta_pres,
                                  user_eta=user_eta is not None, Lname="L") + [
            _Check("T >= 160 L (Q+7)(tau+1)^3", _ge(Ts, T_min), f"T_min = {_g(T_min)}"),
        ] + checks
        terms = {
            "gap": 4.0 * math.sqrt(L) * f_gap / np.sqrt(Ts),
            "noise_diversity": 8.0 * math.sqrt(L) * s2 / np.sqrt(Ts),
            "staleness": 80.0 * L * (1 + Q) * (tau**2 + 1) * s2 / Ts,
        }
        c_pres = c_T1(eta_pres)
        if np.any(_ge(Ts, T_min) & (c_pres < 0.5)):  # never seen (THEORY_SPEC 3.c)
            warnings.append("c_T1 < 1/2 at the prescribed eta although T >= T_min")
        return _assemble(theorem="PersA-FL Theorem 1", mode=mode, T=Ts, is_array=is_array,
                         terms=terms, checks=checks, base=Status.CERTIFIED_PAPER,
                         derived=derived, step_sizes={"eta": eta_u, "beta": beta},
                         errata=[], warnings=warnings)
    c = c_T1(eta_u)
    checks = _general_checks(beta=beta, eta=eta_u, eta_max=eta_max, c=c, cname="c_T1",
                             cite="(A74), (A77)-(A78)") + checks
    terms = {
        "gap": _ratio(2.0 * f_gap / (eta_u * Q * Ts), c),
        "noise_diversity": _ratio(4.0 * eta_u * L * Q * s2 + 0.0 * Ts, c),
        "drift_staleness": _ratio(16.0 * eta_u**2 * L**2 * Q**2 * (1 + 2 * Q) * (tau**2 + 1)
                                  * (1 + 4 * eta_u * L) * s2 + 0.0 * Ts, c),
    }
    return _assemble(theorem="PersA-FL Theorem 1", mode=mode, T=Ts, is_array=is_array,
                     terms=terms, checks=checks, base=Status.PROOF_LEVEL, derived=derived,
                     step_sizes={"eta": eta_u, "beta": beta},
                     errata=["E-P4", "E-P5", "E-P6"])


# --------------------------------------------------------------------------- Theorem 2
@_with_f_lower
def theorem2(*, L: float, rho: float, G: float, alpha: float, sigma_g2: float, sigma_h2: float,
             gamma_g2: float, gamma_h2: float, b: int, Q: int, tau: int, F_gap: float, T: Any,
             beta: float = 1.0, eta: Any = None, mode: str = "paper") -> BoundResult:
    """[P] Theorem 2 (PersA-FL-MAML, Option B): bound on ``(1/T) sum E||grad F^(b)(w^t)||^2``.

    ``mode="paper"`` (THEORY_SPEC 4.d, CERTIFIED_PAPER), with the Lemma 1-4 constants of
    :func:`maml_constants`::

        B2 = 4 sqrt(L_b) F_gap/sqrt(T) + 8 sqrt(L_b)(sigma_b2 + gamma_b2)/sqrt(T)
           + 20 Q L_b (G_b^2 + sigma_b2)(tau^2+1)/T + 4 Q alpha^2 L^2 (1+alpha L)^2 sigma_g2/b

    under ``beta = 1``, ``eta = 1/(Q sqrt(L_b T))``, ``T >= 64 L_b``.
    ``mode="general_eta"`` (THEORY_SPEC 4.e, PROOF_LEVEL): (B50)-(B53) divided by
    ``c_T2 = (2Q-1)/Q - 4 eta L_b Q``, with ``(1 + 2 eta L_b)`` in (B51) (E-P19); valid if
    ``c_T2 > 0``.  ``F_gap = F^(b)(w^0) - f_star_P``.
    """
    mode = _mode(mode, _MODES_12)
    cs = maml_constants(L=L, rho=rho, G=G, alpha=alpha, sigma_g2=sigma_g2, sigma_h2=sigma_h2,
                        gamma_g2=gamma_g2, gamma_h2=gamma_h2, b=b)
    L, a = float(L), float(alpha)
    sg2, gg2 = float(sigma_g2), float(gamma_g2)
    rho, G, sh2, gh2, b = float(rho), float(G), float(sigma_h2), float(gamma_h2), int(b)
    Q = _count("Q", Q, 1)
    tau = _count("tau", tau, 0)
    F_gap = _real("F_gap", F_gap, lo=0.0, allow_inf=True)
    beta = _real("beta", beta, lo=0.0, strict=True)
    Ts, is_array = _horizons(T)
    user_eta = _step("eta", eta, Ts.shape)
    L_b, mu_b, sb2, gb2, G_b = (cs[k] for k in ("L_b", "mu_b", "sigma_b2", "gamma_b2", "G_b"))
    finite_Lb = math.isfinite(L_b)
    eta_pres = 1.0 / (Q * np.sqrt(L_b * Ts))
    eta_u = eta_pres if user_eta is None else user_eta
    T_min = 64.0 * L_b

    def c_T2(e: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore"):
            return (2 * Q - 1) / Q - 4 * e * L_b * Q if finite_Lb else -np.inf + 0 * e

    def formal(name: str, x: float) -> str:
        if math.isinf(x):
            return f"{name} = inf: holds only formally; bound is +inf (VACUOUS, THEORY_SPEC 1.5)"
        return f"{name} = {_g(x)}"

    checks = _common_checks(f_gap=F_gap, gap_name="F_gap", sigma_g2=sg2, gamma_g2=gg2,
                            option="Option B", local_rule="Option B (MAML, batches D, D', D'')")
    checks += [
        _Check("alpha >= 0", True, f"alpha = {_g(a)} (no alpha <= 1/L needed, E-P7)"),
        _Check("Asm 5 f_i twice differentiable", None, _OBJ),
        _Check("Asm 5 Hessian Lipschitz <= rho", True, formal("rho", rho)),
        _Check("Asm 5 Hessian variance (Frobenius) <= sigma_h2", True,
               formal("sigma_h2", sh2) + "; must be the Frobenius quantity (E-P13): " + _OBJ),
        _Check("Asm 5 Hessian diversity <= gamma_h2", True, formal("gamma_h2", gh2)),
        _Check("Asm 6 ||grad f_i|| <= G", True, formal("G", G)),
        _Check("batches D, D', D'' independent, each of size >= b", None, _SIM),
    ]
    derived: dict[str, Any] = dict(cs)
    derived.update({"T_min": T_min, "eta_prescribed": eta_pres, "c_T2": c_T2(eta_u)})
    errata = ["E-P7", "E-P13", "E-P14"]
    if mode == "paper":
        checks = _beta_eta_checks(beta=beta, eta=eta_u, eta_pres=eta_pres,
                                  user_eta=user_eta is not None, Lname="L_b") + [
            _Check("T >= 64 L_b", _ge(Ts, T_min) if finite_Lb else False,
                   f"T_min = {_g(T_min)}" + ("" if finite_Lb else " (L_b = inf: alpha rho G = inf)")
                   ),
        ] + checks
        bias = _m0(4.0 * Q * a**2 * L**2 * (1 + a * L) ** 2, sg2) / b
        if finite_Lb:
            terms = {
                "gap": 4.0 * math.sqrt(L_b) * F_gap / np.sqrt(Ts),
                "noise_diversity": 8.0 * math.sqrt(L_b) * (sb2 + gb2) / np.sqrt(Ts),
                "staleness": 20.0 * Q * L_b * (G_b**2 + sb2) * (tau**2 + 1) / Ts,
                "bias": bias,
            }
        else:
            terms = {"gap": np.inf, "noise_diversity": np.inf, "staleness": np.inf, "bias": bias}
        return _assemble(theorem="PersA-FL Theorem 2", mode=mode, T=Ts, is_array=is_array,
                         terms=terms, checks=checks, base=Status.CERTIFIED_PAPER,
                         derived=derived, step_sizes={"eta": eta_u, "beta": beta},
                         errata=errata)
    c = c_T2(eta_u)
    checks = [_Check("beta == 1", beta == 1.0,
                     f"beta = {_g(beta)} (the general-eta bound is for beta=1)"),
              _Check("c_T2(eta) > 0", c > 0,
                     f"proof coefficient (B50); min c_T2 = {_g(np.min(c))}"),
              ] + checks
    if finite_Lb:
        terms = {
            "gap": _ratio(2.0 * F_gap / (eta_u * Q * Ts), c),
            "drift_staleness": _ratio(8.0 * eta_u**2 * Q**3 * L_b**2 * (1 + 2 * eta_u * L_b)
                                      * (G_b**2 + sb2) * (tau**2 + 1) + 0.0 * Ts, c),
            "noise_diversity": _ratio(4.0 * eta_u * L_b * Q * (sb2 + gb2) + 0.0 * Ts, c),
            "bias": _ratio(2.0 * Q * mu_b**2 + 0.0 * Ts, c),
        }
    else:
        terms = {"gap": np.inf, "drift_staleness": np.inf, "noise_diversity": np.inf,
                 "bias": np.inf}
    return _assemble(theorem="PersA-FL Theorem 2", mode=mode, T=Ts, is_array=is_array,
                     terms=terms, checks=checks, base=Status.PROOF_LEVEL, derived=derived,
                     step_sizes={"eta": eta_u, "beta": beta}, errata=errata + ["E-P19"])


# --------------------------------------------------------------------------- Theorem 3
@_with_f_lower
def theorem3(*, L: float, lam: float, nu: float, sigma_g2: float, gamma_g2: float, b: int,
             Q: int, tau: int, F_gap: float, T: Any, kappa_me: float | None = None,
             affine_additive: bool = False, beta: float = 1.0, eta: Any = None,
             mode: str = "corrected") -> BoundResult:
    """[P] Theorem 3 (PersA-FL-ME, Option C): bound on ``(1/T) sum E||grad F^(c)(w^t)||^2``.

    Constants from :func:`me_constants` (Lemmas 5-7).  ``F_gap = F^(c)(w^0) - f_star_P``.

    * ``mode="corrected"`` (THEORY_SPEC 5.d, CERTIFIED_CORRECTED; E-P1, E-P2, E-P3)::

        B3 = 4 sqrt(L_c) F_gap/sqrt(T) + 8 sqrt(L_c)(sigma_c2 + gamma_c2)/sqrt(T)
           + 144 L_c (1+Q)(tau^2+1)(sigma_c2 + gamma_c2)/T + 4 Q mu^2

      with ``mu = mu_c`` if ``affine_additive`` (H3.y) else ``mu_c_safe`` (E-P10).  It is
      certified when the proof's requirements hold at the user's T: ``eta <= 1/(4 L_c (Q+1))``
      and ``c_T3 = (2Q-1)/Q - 4 eta Q L_c - 32 eta^2 Q^2 L_c^2 (1+2Q) tau' (tau+1)^2
      (1 + 2 eta L_c) >= 1/2`` ((C61), tau' = max(tau,1), E-P6); ``T >= 288 L_c (Q+7)
      (tau+1)^3`` guarantees both.  T meeting only the paper's ``(tau+1)^2`` threshold with
      ``c_T3 < 1/2`` fails with reason E-P3.
    * ``mode="paper_literal"`` (PAPER_LITERAL_KNOWN_ERRATUM): the displayed statement, first
      term read with ``F_gap``, third term with ``gamma_g2``, last term ``4 Q lam^2 nu^2/
      (lam-L)^2``, horizon ``T >= 288 L_c (Q+7)(tau+1)^2``.
    * ``mode="general_eta"`` (THEORY_SPEC 5.e, PROOF_LEVEL): (C61)-(C63) divided by
      ``c_T3(eta)``; valid if ``eta <= 1/(4 L_c (Q+1))`` and ``c_T3 > 0``.
    """
    mode = _mode(mode, _MODES_3)
    cs = me_constants(L=L, lam=lam, nu=nu, sigma_g2=sigma_g2, b=b, gamma_g2=gamma_g2,
                      kappa_me=kappa_me, affine_additive=affine_additive)
    L, lam, nu, b = float(L), float(lam), float(nu), int(b)
    sg2, gg2 = float(sigma_g2), float(gamma_g2)
    Q = _count("Q", Q, 1)
    tau = _count("tau", tau, 0)
    F_gap = _real("F_gap", F_gap, lo=0.0, allow_inf=True)
    beta = _real("beta", beta, lo=0.0, strict=True)
    Ts, is_array = _horizons(T)
    user_eta = _step("eta", eta, Ts.shape)
    L_c, sc2, gc2 = cs["L_c"], cs["sigma_c2"], cs["gamma_c2"]
    mu = cs["mu_c_used"]
    eta_pres = 1.0 / (Q * np.sqrt(L_c * Ts))
    eta_u = eta_pres if user_eta is None else user_eta
    taup = max(tau, 1)
    T_min = 288.0 * L_c * (Q + 7) * (tau + 1) ** 3
    T_min_paper = 288.0 * L_c * (Q + 7) * (tau + 1) ** 2
    eta_max = 1.0 / (4.0 * L_c * (Q + 1))

    def c_T3(e: np.ndarray) -> np.ndarray:
        return ((2 * Q - 1) / Q - 4 * e * Q * L_c
                - 32 * e**2 * Q**2 * L_c**2 * (1 + 2 * Q) * taup * (tau + 1) ** 2
                * (1 + 2 * e * L_c))

    c = c_T3(eta_u)
    checks = _common_checks(f_gap=F_gap, gap_name="F_gap", sigma_g2=sg2, gamma_g2=gg2,
                            option="Option C", local_rule="Option C (inexact Moreau prox)")
    checks += [
        _Check("lam >= 7 L", lam >= 7.0 * L,
               f"lam/L = {_g(lam / L)} (Lemma 7 needs lam^2 > 48 L^2, E-P9)"),
        _Check("inner accuracy ||grad h_tilde|| <= nu", None, _SIM),
        _Check("H3.x batch losses L-weakly convex", None,
               "needed by Lemma 6 (27) (E-P11); " + _OBJ),
    ]
    if mode == "general_eta" or mode == "corrected":
        checks.append(_Check(
            "H3.y affine gradients and additive noise",
            None,
            "declared by the caller (affine_additive=True): paper mu_c used; " + _OBJ
            if affine_additive else "not assumed: mu_c_safe = sqrt(sigma_c2) used (E-P10)"))
    derived: dict[str, Any] = dict(cs)
    derived.update({"T_min": T_min, "T_min_paper": T_min_paper, "eta_prescribed": eta_pres,
                    "eta_max": eta_max, "c_T3": c})
    errata = ["E-P12"]
    if mode in ("corrected", "general_eta") and not affine_additive:
        errata.append("E-P10")
    be = _beta_eta_checks(beta=beta, eta=eta_u, eta_pres=eta_pres,
                          user_eta=user_eta is not None, Lname="L_c")
    if mode == "corrected":
        ok = (c >= 0.5) & (np.asarray(eta_u) <= eta_max * (1 + REL_TOL))
        meets3, meets2 = _ge(Ts, T_min), _ge(Ts, T_min_paper)
        ep3 = meets2 & ~ok
        detail = (f"(C61): c_T3 >= 1/2 and eta <= 1/(4 L_c (Q+1)) = {_g(eta_max)}; min c_T3 = "
                  f"{_g(np.min(c))}; T >= 288 L_c (Q+7)(tau+1)^3 = {_g(T_min)} (sufficient): "
                  f"{'yes' if meets3.all() else 'no'}")
        if ep3.any():
            detail = ("E-P3: T meets the paper's threshold 288 L_c (Q+7)(tau+1)^2 = "
                      f"{_g(T_min_paper)} but c_T3 < 1/2; " + detail)
        checks = be + [_Check("horizon: c_T3(T) >= 1/2 and eta <= 1/(4 L_c (Q+1)) (E-P3)", ok,
                              detail)] + checks
        terms = {
            "gap": 4.0 * math.sqrt(L_c) * F_gap / np.sqrt(Ts),
            "noise_diversity": 8.0 * math.sqrt(L_c) * (sc2 + gc2) / np.sqrt(Ts),
            "staleness": 144.0 * L_c * (1 + Q) * (tau**2 + 1) * (sc2 + gc2) / Ts,
            "bias": 4.0 * Q * mu**2,
        }
        return _assemble(theorem="PersA-FL Theorem 3", mode=mode, T=Ts, is_array=is_array,
                         terms=terms, checks=checks, base=Status.CERTIFIED_CORRECTED,
                         derived=derived, step_sizes={"eta": eta_u, "beta": beta},
                         errata=["E-P1", "E-P2", "E-P3", "E-P6", "E-P9"] + errata)
    if mode == "paper_literal":
        checks = be + [_Check("T >= 288 L_c (Q+7)(tau+1)^2 (paper's threshold)",
                              _ge(Ts, T_min_paper), f"T_min_paper = {_g(T_min_paper)}")] + checks
        terms = {
            "gap": 4.0 * math.sqrt(L_c) * F_gap / np.sqrt(Ts),
            "noise_diversity": 8.0 * math.sqrt(L_c) * (sc2 + gc2) / np.sqrt(Ts),
            "staleness": 144.0 * L_c * (1 + Q) * (tau**2 + 1) * (sc2 + gg2) / Ts,
            "bias": 4.0 * Q * lam**2 * nu**2 / (lam - L) ** 2,
        }
        warn = ["literal statement: E-P1 (F(w^t) read as F(w^0) via F_gap), E-P2 (gamma_g2 in the "
                "third term), E-P3 ((tau+1)^2 threshold) and E-P10 (mu_c) are NOT corrected"]
        return _assemble(theorem="PersA-FL Theorem 3", mode=mode, T=Ts, is_array=is_array,
                         terms=terms, checks=checks, base=Status.PAPER_LITERAL_KNOWN_ERRATUM,
                         derived=derived, step_sizes={"eta": eta_u, "beta": beta},
                         errata=errata, warnings=warn)
    checks = _general_checks(beta=beta, eta=eta_u, eta_max=eta_max, c=c, cname="c_T3",
                             cite="(C61)") + checks
    terms = {
        "gap": _ratio(2.0 * F_gap / (eta_u * Q * Ts), c),
        "bias": _ratio(2.0 * Q * mu**2 + 0.0 * Ts, c),
        "drift_staleness": _ratio(32.0 * eta_u**2 * Q**2 * L_c**2 * (1 + 2 * Q) * (tau**2 + 1)
                                  * (1 + 2 * eta_u * L_c) * (sc2 + gc2) + 0.0 * Ts, c),
        "noise_diversity": _ratio(4.0 * eta_u * Q * L_c * (sc2 + gc2) + 0.0 * Ts, c),
    }
    return _assemble(theorem="PersA-FL Theorem 3", mode=mode, T=Ts, is_array=is_array,
                     terms=terms, checks=checks, base=Status.PROOF_LEVEL, derived=derived,
                     step_sizes={"eta": eta_u, "beta": beta},
                     errata=["E-P1", "E-P2", "E-P4", "E-P6", "E-P9"] + errata)
