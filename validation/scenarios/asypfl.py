"""Validation scenarios of [Y] AsyPFL Theorems 1-2 (docs/theory/asypfl.md 6).

Suite rows of the families ``asypfl1-quad``, ``asypfl2-quad`` and ``asypfl1-periods``
(:mod:`fedsim.validation.families.asypfl`). Simulation, one client only: fedsim's AsyPFL
engine (Algorithm 1 with ``lam = 0``, the personal model irrelevant) is the theorems' tick
model exactly when n = 1 (pi = 1, server step t <-> tick t E, and the decay index r_k is the
tick when E = 1). For n >= 2 the engine is *not* the tick model (sequential reads, adaptive
pi_k, decay index r_k), so the n >= 2 instances are not simulated here. Reader 2's
counterexample with periods (5, 8) (R2-4, docs/theory/asypfl.md) is a suite case all the
same, as *exact* rows (:func:`asypfl_periods_counterexample`: the measured value is
:func:`fedsim.theory.asypfl.tick_oracle`'s exact gap,
:class:`fedsim.validation.cases.ExactSpec`).

* Theorem 1: strongly convex 2-d quadratic, additive noise, ``eta = 1/(4L)``, E = 1 at L = 1
  and L = 0.01 (corrected form: CERTIFIED_CORRECTED).  Known counterexample CE1 (E-Y2):
  1-d, L = mu = 2, sigma^2 = 1, eta = 1/8, w0 = w*: the literal (5) is negative at T = 1, 2
  (``violated``); the corrected form holds (its value equals the exact gap at T = 1).
* Theorem 2: 1-d, mu = L, prescribed gamma = 8, ``eta_tau = 2/(mu(gamma+tau))`` realised as
  Algorithm 1's ``eta/(1 + gamma_alg tau)``.  Known counterexample CE3 (E-Y4): noiseless,
  ``||w0 - w*|| = 100``: the literal (6) is ``violated`` at T = 1, 10; corrected holds.
* Out of regime (a): eta 10x 1/(4L) (H8), mu = 0 (H2).
* R2-4 (Theorem 1, exact rows): two clients F_k = w^2/2, p = (1/2, 1/2), E = 1, periods
  pi = (5, 8), eta = 1/4, w0 = 1, at the common sync ticks T = 40, 80: exact 8.4805e-6 vs
  bound 5.0283e-6 at T = 40 (bound/exact 0.593), 1.4384e-10 vs 5.0567e-11 at T = 80.  The
  literal (5) is ``violated``; the corrected form is ``not_applicable`` (H12: distinct pi_k
  with some E_k > 1), its row showing the same exact value above the same number.
"""

from __future__ import annotations

from fedsim.validation.cases import Case, CaseGrid
from fedsim.validation.families.asypfl import ASYPFL1_PERIODS, ASYPFL1_QUAD, ASYPFL2_QUAD
from fedsim.validation.families.cases import family_case

from fedsim.errors import require

__all__ = ["asypfl_case", "asypfl_counterexample", "asypfl_periods_counterexample",
           "R2_4", "R_ORACLE"]

#: replicates of every run compared with the exact oracle (at least; the suite's R if larger).
#: The measured quantity is one iterate's ``F(w^T) - F*``, a scaled non-central chi-square
#: (skewness ~ 2-3), so the sample-SEM z-test of :func:`fedsim.validation.compare.oracle_test` has
#: far more than its nominal 1e-3 false-alarm rate at small R: under the exact law of
#: Theorem 2's quad-L1 run at T = 10 (w^T Gaussian, mean and variance from ``tick_oracle``)
#: it is 0.106 at R = 6, 0.019 at R = 32, 0.0028 at R = 256, 0.0020 at R = 512 (1e5-2e5
#: simulated tests each; the low tail dominates: R draws all near 0 give a tiny SEM).
#: 512 replicates of <= 160 one-client steps cost ~15 s.
R_ORACLE = 512

_FAMILY = {"asypfl_theorem1": ASYPFL1_QUAD, "asypfl_theorem2": ASYPFL2_QUAD}


def asypfl_case(theorem: str, scale: str = "L1", *, horizons: list[int] | None = None,
                replicates: int = 8, variant: str = "") -> Case:
    """In-regime (``variant=""``) or out-of-regime (``"step10x"``: eta 10x, H8 fails;
    ``"mu0"``: mu = 0, H2 fails; neither with exact rows) single-client run."""
    require(theorem in _FAMILY, "theorem", theorem, f"must be one of {sorted(_FAMILY)}")
    require(scale in ("L1", "Lsmall"), "scale", scale, "must be 'L1' or 'Lsmall'")
    require(variant in ("", "step10x", "mu0"), "variant", variant,
            "must be '', 'step10x' or 'mu0'")
    t1 = theorem == "asypfl_theorem1"
    fam = _FAMILY[theorem]
    point = dict(L=1.0 if scale == "L1" else 0.01, eta_mult=10.0 if variant == "step10x"
                 else 1.0, mode="corrected")
    if variant == "mu0":
        point.update(mu_over_L=0.0, dim=2)
    return family_case(
        fam, name=f"quad-{scale}" + (f"-{variant}" if variant else ""), point=point,
        horizons=horizons or ([5, 20, 60] if t1 else [10, 40, 160]),
        # compared with the exact oracle: enough replicates (R_ORACLE)
        replicates=replicates if variant else max(replicates, R_ORACLE),
        control=f"out_of_regime:{variant}" if variant else "",
        expected_verdict="not_applicable" if variant else "", exact=not variant,
        title=f"[Y] AsyPFL {'Thm 1' if t1 else 'Thm 2'}, one client, L={point['L']:g}",
        x_label="T", expected_slope=float("nan") if t1 else -1.0)


def asypfl_counterexample(theorem: str, *, replicates: int = 32) -> Case:
    """CE1 (Theorem 1, E-Y2: 1-d, L = mu = 2, sigma^2 = 1, eta = 1/8, w0 = w*: the literal
    (5) is negative at T = 1, 2) or CE3 (Theorem 2, E-Y4: 1-d, L = mu = 1, noiseless,
    gamma = 8, ||w0 - w*|| = 100): the literal bound must be violated and the corrected one
    hold (CE1's corrected bound equals the exact gap at T = 1, tight: no verdict expected)."""
    require(theorem in _FAMILY, "theorem", theorem, f"must be one of {sorted(_FAMILY)}")
    t1 = theorem == "asypfl_theorem1"
    base = dict(dim=1, heterogeneity=0.0, seed=0, mu_over_L=1.0)
    point = (dict(base, L=2.0, noise_sd=1.0) if t1 else
             dict(base, L=1.0, noise_sd=0.0, w0=-100.0))
    return family_case(
        _FAMILY[theorem], name="counterexample-CE1" if t1 else "counterexample-CE3",
        point=point, horizons=[1, 2] if t1 else [1, 10], modes=("paper_literal", "corrected"),
        replicates=replicates, control="counterexample",
        expected_verdict={"paper_literal": "violated", "corrected": "" if t1 else "holds"},
        title=f"[Y] AsyPFL {'Thm 1 CE1 (E-Y2)' if t1 else 'Thm 2 CE3 (E-Y4)'}", x_label="T",
        notes=["The literal bound must be violated and the corrected one must hold."])


#: reader 2's R2-4 (docs/theory/asypfl.md): two identical clients F_k = w^2/2, periods (5, 8)
R2_4 = dict(p=[0.5, 0.5], pi=[5, 8], E=1, eta=0.25, w0=1.0, T=(40, 80))


def asypfl_periods_counterexample() -> Case:
    """R2-4: the corrected Theorem 1 fails for unequal periods; exact rows (tick model,
    ``asypfl1-periods``).

    Rows ``paper_literal`` (expected ``violated``) and ``corrected`` (status NOT_APPLICABLE by
    H12, expected ``not_applicable``; mean = exact above the bound, tightness < 1) at the
    common synchronisation ticks T = 40, 80 (lcm(5, 8) E = 40), with chi^2 the oracle's
    synchronised chi^2 (0: the clients are identical and noiseless).
    """
    c = R2_4
    return family_case(
        ASYPFL1_PERIODS, name="counterexample-R2-4-periods-5-8",
        point=dict(pi=c["pi"], eta=c["eta"], w0=c["w0"]), horizons=list(c["T"]),
        modes=("paper_literal", "corrected"), replicates=2, control="counterexample",
        expected_verdict={"paper_literal": "violated", "corrected": "not_applicable"},
        title="[Y] AsyPFL Thm 1, R2-4 periods (5, 8) (exact)", x_label="T",
        notes=["R2-4: the corrected Theorem 1 (rate (1 - mu eta)^T) is below the exact gap "
               "for distinct periods: NOT_APPLICABLE by H12; the literal (5) is violated."])


def _grids(theorem: str):
    def quick(R: int, c: int) -> list[Case]:
        return [asypfl_case(theorem, "L1", replicates=2 * R),
                asypfl_case(theorem, "Lsmall", replicates=2 * R),
                asypfl_case(theorem, "L1", horizons=[10], replicates=c, variant="step10x"),
                asypfl_case(theorem, "L1", horizons=[10], replicates=c, variant="mu0"),
                asypfl_counterexample(theorem, replicates=max(32, 2 * R)), *_r2_4(theorem)]

    def full(R: int, c: int) -> list[Case]:
        hz = [5, 20, 60, 200] if theorem.endswith("1") else [10, 40, 160, 640]
        return [asypfl_case(theorem, "L1", horizons=hz, replicates=R),
                asypfl_case(theorem, "Lsmall", horizons=hz, replicates=R),
                asypfl_case(theorem, "L1", horizons=[10], replicates=c, variant="step10x"),
                asypfl_case(theorem, "L1", horizons=[10], replicates=c, variant="mu0"),
                asypfl_counterexample(theorem, replicates=max(64, R)), *_r2_4(theorem)]

    def smoke(R: int, c: int) -> list[Case]:
        return [asypfl_case(theorem, "L1", horizons=[10], replicates=R),
                asypfl_counterexample(theorem, replicates=32), *_r2_4(theorem)]

    return {"quick": quick, "full": full, "smoke": smoke}


def _r2_4(theorem: str) -> list[Case]:
    """R2-4's exact rows belong to Theorem 1 only."""
    return [asypfl_periods_counterexample()] if theorem == "asypfl_theorem1" else []


# bound/1000 controls: the scenario whose rows are all decisive at the quick suite's R (Theorem
# 2's quad-L1 at T = 10 has a CI reaching 0 with 2R replicates)
GRIDS = tuple(CaseGrid(theorem=_name, builders=_grids(_name), div1000=(_ctrl,))
              for _name, _ctrl in (("asypfl_theorem1", "quad-L1"),
                                   ("asypfl_theorem2", "quad-Lsmall")))
