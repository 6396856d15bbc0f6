"""Validation scenarios of [F] Per-FedAvg Theorem 4.5 (docs/theory/per-fedavg.md 6).

Suite rows of the families ``perfedavg-quad`` and ``perfedavg-cx``
(:mod:`fedsim.validation.families.perfedavg`).  Simulation: fedsim's synchronous FedAvg
with the ``maml`` client rule (eq. (8) with three independent fresh batches, the Hessian
on D'': H10 holds by construction), server step 1, on one-dimensional quadratics with a
shared Hessian and additive noise, ``tau = Q = 1``.
With tau = 1 the theorem's ``wbar_{k+1,0} = w_k`` is the server model, so the recorded
``avg_grad_maml_sq`` at round K *is* the measured quantity (1/K) sum_{k<K} ||grad F(w_k)||^2
(for tau > 1 the local-iterate average is never formed by the server and the simulator
cannot measure it; :func:`fedsim.theory.perfedavg.perfedavg_quadratic_exact` covers tau > 1 in the
tests).  Each in-regime row also carries the exact oracle value (z-test column).

Out of regime (negative control (a)): participation r = 1/2 (H9, E-F1) and a step 10x
``1/(10 tau L_F)`` (H8).  The r < 1 counterexample of E-F1 needs tau = 1e4, K = 1e11: no
simulation reaches it, so :func:`perfedavg_counterexample` gives it as *exact* rows (the
measured value is the exact oracle value, :class:`fedsim.validation.cases.ExactSpec`):
the appendix constant B_45 (``paper_literal``, the same number as ``corrected`` with r
ignored) against the exact LHS at tau = 4096 (below the threshold: holds, bound/exact 1.54)
and tau = 1e4 (violated, bound/exact 0.688, docs/theory/per-fedavg.md section 4).
"""

from __future__ import annotations

from fedsim.validation.cases import Case, CaseGrid
from fedsim.validation.families.cases import family_case
from fedsim.validation.families.perfedavg import CX, CX_K, PERFEDAVG_CX, PERFEDAVG_QUAD

from fedsim.errors import require

__all__ = ["perfedavg_case", "perfedavg_counterexample", "CX", "CX_K", "R_ORACLE"]

#: replicates of every in-regime run (compared with the exact oracle), at least: the z-test of
#: :func:`fedsim.validation.compare.oracle_test` divides by the *sample* SEM, so for near-Gaussian
#: values its false-alarm rate is P(|t_{R-1}| > 3.29): 0.022 at R = 6, 0.005 at R = 16,
#: 0.0013 at R = 128 (nominal 1e-3).  The two scales L1 / Lsmall are an exact rescaling of
#: each other with the same random numbers, so their z-values coincide (not two tests).
R_ORACLE = 128

_OOR = {"": "", "r_half": "out_of_regime:partial_participation",
        "step10x": "out_of_regime:step10x"}


def perfedavg_case(scale: str = "L1", *, horizons: list[int] | None = None,
                   replicates: int = 8, variant: str = "") -> Case:
    """Per-FedAvg on n = 4 one-dimensional quadratics, a = L, additive noise sd 0.05 sqrt(L)
    (``perfedavg-quad``); ``variant``: ``"r_half"`` (participation 1/2: H9 fails) or
    ``"step10x"`` (beta 10x 1/(10 tau L_F): H8 fails), without exact rows."""
    require(scale in ("L1", "Lsmall"), "scale", scale, "must be 'L1' or 'Lsmall'")
    require(variant in _OOR, "variant", variant, "must be '', 'r_half' or 'step10x'")
    L = 1.0 if scale == "L1" else 0.01
    return family_case(
        PERFEDAVG_QUAD, name=f"quad-{scale}" + (f"-{variant}" if variant else ""),
        point=dict(n=4, L=L, alpha_L=0.5, noise_rel=0.05, heterogeneity=1.0, seed=3, w0=5.0,
                   r=0.5 if variant == "r_half" else 1.0,
                   beta_mult=10.0 if variant == "step10x" else 1.0),
        horizons=horizons or [10, 40, 160],
        # compared with the exact oracle: enough replicates (R_ORACLE)
        replicates=replicates if variant else max(replicates, R_ORACLE),
        control=_OOR[variant], expected_verdict="not_applicable" if variant else "",
        exact=not variant, title=f"[F] Per-FedAvg Thm 4.5, quadratic L={L:g}", x_label="K",
        expected_slope=-1.0, notes=["Exact oracle: theory.perfedavg.perfedavg_quadratic_exact."])


def perfedavg_counterexample(tau: int, expected: str = "") -> Case:
    """E-F1 (r = 1/2) at ``tau`` local steps, beta = 1e-12, K = 1e11: exact rows
    (``perfedavg-cx``).

    Mode ``paper_literal`` (PAPER_LITERAL_KNOWN_ERRATUM: B_45 for any r, as the appendix
    proves it) at horizon K = 1e11 with the exact LHS of
    :func:`fedsim.theory.perfedavg.perfedavg_quadratic_exact` as the measured value.  ``expected``:
    the verdict the row must get (fixed in advance from the docs, so the control can fail).
    """
    tau = int(tau)
    return family_case(
        PERFEDAVG_CX, name=f"counterexample-EF1-tau{tau}", point=dict(tau=tau),
        horizons=[CX_K], modes=("paper_literal",), replicates=2, control="counterexample",
        expected_verdict=expected,
        title=f"[F] Per-FedAvg Thm 4.5, E-F1 counterexample, tau = {tau} (exact)",
        x_label="K",
        notes=["E-F1: Theorem 4.5 is false for r < 1 whatever its O(1); at this beta and K "
               "B_45 is below the exact value from tau = 6481 on (bound/exact 1.00013 at "
               "6480, 0.99999 at 6481; docs/theory/per-fedavg.md section 4)."])


def _quick(R: int, c: int) -> list[Case]:
    return [perfedavg_case("L1", horizons=[10, 40, 160], replicates=R),
            perfedavg_case("Lsmall", horizons=[10, 40, 160], replicates=R),
            perfedavg_case("L1", horizons=[10], replicates=c, variant="r_half"),
            perfedavg_case("L1", horizons=[10], replicates=c, variant="step10x"),
            *_cx()]


def _cx() -> list[Case]:
    """E-F1's exact rows on both sides of the threshold (holds at 4096, violated at 1e4)."""
    return [perfedavg_counterexample(4096, "holds"), perfedavg_counterexample(10000, "violated")]


def _full(R: int, c: int) -> list[Case]:
    return [perfedavg_case("L1", horizons=[10, 40, 160, 640], replicates=R),
            perfedavg_case("Lsmall", horizons=[10, 40, 160, 640], replicates=R),
            perfedavg_case("L1", horizons=[10, 160], replicates=c, variant="r_half"),
            perfedavg_case("L1", horizons=[10, 160], replicates=c, variant="step10x"),
            *_cx()]


def _smoke(R: int, c: int) -> list[Case]:
    return [perfedavg_case("L1", horizons=[10], replicates=R),
            perfedavg_case("L1", horizons=[10], replicates=c, variant="r_half"),
            *_cx()]


#: the suites' grids of Per-FedAvg Theorems 4-5 (read by fedsim.validation.suites)
GRIDS = (CaseGrid(theorem="perfedavg_theorem4_5",
                  builders={"quick": _quick, "full": _full, "smoke": _smoke},
                  div1000=("quad-L1",)),)
