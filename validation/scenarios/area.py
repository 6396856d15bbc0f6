"""Validation scenarios of [A] AREA Theorems 7 and 8: suite rows of the AREA families.

* Theorem 7 (``theorem7-quad``, a curve family): AREA's iterate model (i.i.d. Poisson
  events) on strongly convex quadratics with client-specific Hessians and the Theorem 7
  schedule; that schedule does not depend on K, so one trajectory gives the whole curve, and
  :func:`fedsim.theory.oracle.area_moments` gives the exact curve.  Client Poisson rates
  (1, 2, 4), server rate 1.5 (THEORY_SPEC 10.1's validation instance).
* Theorem 8 (``theorem8-logistic``): the iterate model on an unregularised logistic problem
  (convex, B-Lipschitz, minimiser guaranteed by an anchor client) with the constant step of
  Theorem 8, which depends on K: one run set per K.  R is inflated by the minimiser's
  certified error (THEORY_SPEC 9.4).  The known counterexample (THEORY_SPEC 7.d,
  ``theorem8-norm``) uses ``f_i(x) = |x + 1|`` from ``x_{s,0} = 0`` (the paper's ``|x|`` from
  1, shifted).
* Out of regime: a step 10x the prescribed one; a fixed-count aggregation (Theorem 7).

A suite row here is a family, a point, its horizons and a control kind
(:func:`fedsim.validation.families.cases.family_case`); :data:`GRIDS` lists them per suite.
"""

from __future__ import annotations

from fedsim.validation.cases import Case, CaseGrid
from fedsim.validation.families.area import THEOREM7_QUAD, THEOREM8_NORM
from fedsim.validation.families.area_logistic import THEOREM8_LOGISTIC
from fedsim.validation.families.cases import family_case

from fedsim.errors import require

__all__ = ["theorem7_case", "theorem8_case", "theorem8_counterexample"]

_OOR = {"": "", "step10x": "out_of_regime:step10x",
        "fixed_count": "out_of_regime:fixed_count_aggregation"}


def theorem7_case(scale: str = "L1", *, horizons: list[int] | None = None,
                  replicates: int = 8, variant: str = "") -> Case:
    """[A] Theorem 7 (certified level (C), THEORY_SPEC 6.d) on client-specific quadratics.

    n=3, d=2, A_i differ with spectra in [mu, L] (kappa = 2), additive noise sd 0.3,
    M = 1 local step, client Poisson rates (1, 2, 4), server rate 1.5, the Theorem 7
    schedule alpha_k = c/(k+d).  ``variant``: ``"step10x"`` (c 10x the prescribed one: H7.4
    fails) or ``"fixed_count"`` (Algorithm 1 with an every-2-uploads aggregation: the events
    are not i.i.d., H7.3 fails); neither has an exact row (step 10x: the exact second moment
    explodes through rare events, which a few replicates cannot estimate; fixed count: the
    events are not i.i.d.).
    """
    require(scale in ("L1", "Lsmall"), "scale", scale, "must be 'L1' or 'Lsmall'")
    require(variant in _OOR, "variant", variant, "must be '', 'step10x' or 'fixed_count'")
    L = 1.0 if scale == "L1" else 0.01
    point = dict(n=3, L=L, kappa=2.0, M=1, rates=[1.0, 2.0, 4.0], rate_s=1.5,
                 heterogeneity=1.0, noise_sd=0.3, seed=11,
                 c_mult=10.0 if variant == "step10x" else 1.0,
                 trigger_every=2 if variant == "fixed_count" else 0)
    return family_case(
        THEOREM7_QUAD, name=f"quad-{scale}" + (f"-{variant}" if variant else ""), point=point,
        horizons=horizons or [100, 300, 1000, 3000, 10000], replicates=replicates,
        control=_OOR[variant], expected_verdict="not_applicable" if variant else "",
        exact=not variant, title=f"[A] Thm 7, AREA iterate model, quadratic L={L:g}",
        x_label="K", expected_slope=-1.0,
        notes=["One trajectory per replicate gives the whole curve: the schedule does not "
               "depend on K."])


def theorem8_case(scale: str = "L1", *, horizons: list[int] | None = None,
                  replicates: int = 8, variant: str = "") -> Case:
    """[A] Theorem 8 (corrected constant, E-A6) on unregularised logistic data
    (``theorem8-logistic``: n=4 clients x 20 rows, anchors in client 0, equal client rates
    1, the optimal server rate, M = 2, batch 2).  ``variant="step10x"``: 10x the step."""
    require(scale in ("L1", "Lsmall"), "scale", scale, "must be 'L1' or 'Lsmall'")
    require(variant in ("", "step10x"), "variant", variant, "must be '' or 'step10x'")
    s = 1.0 if scale == "L1" else 0.1
    case = family_case(
        THEOREM8_LOGISTIC, name=f"logistic-{scale}" + (f"-{variant}" if variant else ""),
        point=dict(n=4, M=2, b=2, feature_scale=s, heterogeneity=1.0, seed=1,
                   alpha_mult=10.0 if variant else 1.0, mode="corrected"),
        horizons=horizons or [100, 400, 1600], replicates=replicates,
        control=_OOR[variant], expected_verdict="not_applicable" if variant else "",
        exact=False, x_label="K", expected_slope=-0.5,
        notes=["Theorem 8 with its prescribed step is invariant under x -> s x, w -> w/s "
               "(B R, sigma/B and the dynamics are unchanged), so the two feature scales "
               "must give the same numbers up to rounding: a check of that invariance."])
    L = float(next(c["value"] for c in case.constants if c["name"] == "L"))
    case.title = f"[A] Thm 8, AREA iterate model, logistic L={L:.3g}"
    return case


def theorem8_counterexample(*, M: int = 50, K: int = 9, replicates: int = 2000) -> Case:
    """Negative control (c): THEORY_SPEC 7.d, where the paper's Theorem 8 statement fails.

    ``f_i(x) = |x + 1|`` for n = 2 clients (B = 1, x* = -1, f* = 0), ``x_{s,0} = 0`` (R = 1),
    deterministic subgradients (sigma^2 = 1e-4 declared), p_i = 0.3, p_s = 0.4 (Poisson
    rates 3, 3 and 4).  Mode ``paper`` runs the paper's step with the paper's constant
    (M+1)B^2/2: its bound must be ``violated``; mode ``corrected`` runs the corrected step
    with C_B = sigma^2 + M B^2: its bound must hold.  Exact values by the lumped enumeration
    of event sequences (``theorem8-norm``'s oracle).
    """
    return family_case(
        THEOREM8_NORM, name=f"counterexample-M{M}-K{K}",
        point=dict(n=2, rates=[3.0, 3.0], rate_s=4.0, M=M, B=1.0, centre_spread=0.0,
                   sigma2=1e-4),
        horizons=[K], modes=("paper", "corrected"), replicates=replicates,
        control="counterexample", expected_verdict={"paper": "violated", "corrected": "holds"},
        title=f"[A] Thm 8 known counterexample (THEORY_SPEC 7.d), M={M}", x_label="K",
        notes=["The paper-literal bound (M+1)B^2/2 must be violated; the corrected M B^2 "
               "bound must hold (E-A6)."])


# ---------------------------------------------------------------------------------------
# the suites' grids (validation.suites builds each suite from the registry, in its order)
# ---------------------------------------------------------------------------------------
_K7 = [100, 300, 1000, 3000, 10000]


def _quick7(R: int, c: int) -> list[Case]:
    return [
        theorem7_case("L1", horizons=_K7, replicates=R),
        theorem7_case("Lsmall", horizons=_K7, replicates=R),
        theorem7_case("L1", horizons=[100, 1000], replicates=c, variant="step10x"),
        theorem7_case("L1", horizons=[100, 1000], replicates=c, variant="fixed_count"),
    ]


def _quick8(R: int, c: int) -> list[Case]:
    return [
        theorem8_case("L1", horizons=[100, 400, 1600], replicates=R),
        theorem8_case("Lsmall", horizons=[100, 400, 1600], replicates=R),
        theorem8_case("L1", horizons=[100], replicates=c, variant="step10x"),
        theorem8_counterexample(M=50, K=9, replicates=10 * R),
        theorem8_counterexample(M=10, K=8, replicates=10 * R),
    ]


def _full7(R: int, c: int) -> list[Case]:
    top = 5 * R
    return [
        theorem7_case("L1", horizons=[*_K7, 30000], replicates=top),
        theorem7_case("Lsmall", horizons=[*_K7, 30000], replicates=top),
        theorem7_case("L1", horizons=[100, 1000, 10000], replicates=c, variant="step10x"),
        theorem7_case("L1", horizons=[100, 1000, 10000], replicates=c, variant="fixed_count"),
    ]


def _full8(R: int, c: int) -> list[Case]:
    low = max(10, R // 4)
    return [
        theorem8_case("L1", horizons=[100, 400, 1600, 6400, 25600], replicates=low),
        theorem8_case("Lsmall", horizons=[100, 400, 1600, 6400, 25600], replicates=low),
        theorem8_case("L1", horizons=[100, 1600], replicates=c, variant="step10x"),
        theorem8_counterexample(M=50, K=9, replicates=5 * R),
        theorem8_counterexample(M=10, K=8, replicates=5 * R),
    ]


def _smoke7(R: int, c: int) -> list[Case]:
    return [
        theorem7_case("L1", horizons=[100, 1000], replicates=8 * R),
        theorem7_case("L1", horizons=[100], replicates=c, variant="fixed_count"),
        theorem7_case("L1", horizons=[100], replicates=c, variant="step10x"),
    ]


def _smoke8(R: int, c: int) -> list[Case]:
    return [
        theorem8_case("L1", horizons=[100], replicates=R),
        theorem8_case("L1", horizons=[100], replicates=c, variant="step10x"),
        theorem8_counterexample(M=10, K=8, replicates=max(200, 10 * R)),
    ]


#: the suites' grids of [A] Theorems 7-8 (read by fedsim.validation.suites when a suite runs)
GRIDS = (
    CaseGrid(theorem="theorem7", builders={"quick": _quick7, "full": _full7, "smoke": _smoke7},
             div1000=("quad-L1",)),
    CaseGrid(theorem="theorem8", builders={"quick": _quick8, "full": _full8, "smoke": _smoke8},
             div1000=("logistic-L1",)),
)
