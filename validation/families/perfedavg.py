"""[F] Per-FedAvg Theorem 4.5 families (docs/theory/per-fedavg.md 4, 6).

``perfedavg-quad``
    fedsim's synchronous FedAvg with the ``maml`` client rule (eq. (8), three independent
    fresh batches of size 1, the Hessian on D'': H10 holds by construction), server step 1,
    on n one-dimensional quadratics with the shared Hessian ``a = L``, optima spread
    ``heterogeneity``, additive noise sd ``noise_rel sqrt(L)``, MAML ``alpha = alpha_L / L``,
    ``w0`` far from the optima, tau = 1 local step, participation ``r`` (H9 needs 1), step
    ``beta = beta_mult 1/(10 tau L_F)`` (H8 needs ``beta_mult <= 1``).  With tau = 1 the
    theorem's ``wbar_{k+1,0} = w_k`` is the server model, so the recorded
    ``avg_grad_maml_sq`` at round K *is* the measured ``(1/K) sum_{k<K} ||grad F(w_k)||^2``;
    the step does not depend on K: one run gives the whole curve.  Exact oracle
    :func:`fedsim.theory.perfedavg.perfedavg_quadratic_exact` at ``r = 1``.
``perfedavg-cx``
    E-F1's counterexample CX: n = 2, r = 1/2 (one client per round), ``f_i = phi(w - c_i)``,
    c = (-1, 1), phi quadratic on ``|x| <= 2`` with a C^2 ramp beyond (the iterates stay in
    the quadratic region), alpha = 1e-3, beta = 1e-12, ``tau`` local steps, K = 1e11 rounds.
    No simulation reaches K = 1e11: the measured value is the exact oracle's (the rows are
    exact rows).  Nothing is left to settle: the constants are exact or proven bounds.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from fedsim.theory.perfedavg import perfedavg_quadratic_exact, theorem4_5
from fedsim.validation.families.base import (
    MAX_CLIENTS,
    MAX_ITERATIONS,
    Family,
    Instance,
    Measurement,
    Param,
    resolve_hypotheses,
)
from fedsim.validation.families.helpers import (
    build_problem_from,
    constants_of,
    engine_scenario,
    required,
)
from fedsim.validation.families.mc import engine_mc

from fedsim.problems.perfedavg_constants import perfedavg_constants_table

__all__ = ["PERFEDAVG_QUAD", "PERFEDAVG_CX", "CX", "CX_K"]

_DELAYS = {"download": {"kind": "constant", "value": 0.1},
           "compute": {"kind": "constant", "value": 1.0},
           "upload": {"kind": "constant", "value": 0.1}}


def _curve(q: dict[str, Any], hs: tuple[int, ...]) -> Instance:
    L, n, K, tau, b = float(q["L"]), int(q["n"]), int(hs[-1]), 1, 1
    alpha, r, w0 = float(q["alpha_L"]) / L, float(q["r"]), np.full(1, float(q["w0"]))
    pcfg = {"kind": "quadratic", "n": n, "dim": 1, "mu": L, "L": L,
            "heterogeneity": float(q["heterogeneity"]),
            "noise_sd": float(q["noise_rel"]) * math.sqrt(L), "seed": int(q["seed"])}
    prob = build_problem_from(pcfg)
    tab = perfedavg_constants_table(prob, alpha=alpha, w0=w0)
    cv = tab.values()
    kw = dict(L=cv["L"], alpha=alpha, sigma_G2=cv["sigma_G2"], gamma_G2=cv["gamma_G2"],
              f_gap=cv["f_gap_maml"], tau=tau, n=n)
    beta = float(theorem4_5(**kw, K=1).step_sizes["beta_max"]) * float(q["beta_mult"])
    res = theorem4_5(**kw, K=hs[0] if len(hs) == 1 else np.array(hs), r=r, beta=beta,
                     mode="corrected")
    res = resolve_hypotheses(res, {"H10": (True, "fedsim's maml rule draws D, D', D'' fresh "
                                                 "and independent per local step (the "
                                                 "Hessian is exact on quadratics)")})
    alg = {"name": "fedavg", "client_rule": "maml", "alpha": alpha, "Q": tau, "eta": beta,
           "batch": b, "participation": r, "server_mix": 1.0, "w0": [float(w0[0])]}
    sc = engine_scenario(f"perfedavg-quad-n{n}-K{K}", pcfg, alg, K, ["grad_maml_sq"],
                         delays=_DELAYS, record_extra={"maml_alpha": alpha})

    def curve() -> list[float]:
        v = perfedavg_quadratic_exact(A=np.asarray(prob.A_stack[0]),
                                      centers=np.asarray(prob.b_stack),
                                      Sigma=np.asarray(prob.S_stack[0]), alpha=alpha,
                                      beta=beta, tau=tau, K=np.array(hs, float), w0=w0,
                                      D=b, Dp=b)
        return [float(x) for x in np.atleast_1d(v)]

    def exact(_ms: int) -> Measurement:
        return Measurement(curve()[-1], "exact", 0.0, 0.0, 0, "perfedavg_quadratic_exact")

    def mc(replicates: int, seed: int) -> Measurement:
        return engine_mc(sc, "avg_grad_maml_sq", K, replicates, seed)

    full = r == 1.0
    return Instance(
        family="perfedavg-quad",
        theorem="perfedavg_theorem4_5",
        mode="corrected",
        params=dict(q),
        bound=res,
        scenario=sc,
        metric="avg_grad_maml_sq",
        horizon=K,
        quantity="(1/(tau K)) sum E||grad F(wbar_{k+1,t})||^2",
        description=f"n={n} one-dimensional quadratics (shared Hessian a = {L:g}, additive "
                    f"noise, sigma_G2 = {cv['sigma_G2']:.4g}, gamma_G2 = {cv['gamma_G2']:.4g}),"
                    f" MAML alpha = {alpha:g}, tau = 1, beta = {beta:.4g}, batches 1, r = {r:g}.",
        constants=constants_of(prob) + tab.to_frame().to_dict("records"),
        exact=exact if full else None,
        mc=mc,
        notes=["Simulation (fedsim sync FedAvg + maml rule); tau = 1 makes the "
                           "server model the theorem's wbar_{k+1,0}."],
        horizons=hs,
        exact_curve=curve if full else None,
        exact_source="fedsim.theory.perfedavg.perfedavg_quadratic_exact",
    )


def _build(q: dict[str, Any]) -> Instance:
    return _curve(q, (int(required(q, "K")),))


#: E-F1's counterexample CX (docs/theory/per-fedavg.md section 4)
CX = dict(L=1.0, alpha=1e-3, sigma_G2=0.0, gamma_G2=1.0, gamma_H2=0.25, rho=1.0, B=2.5,
          f_gap=0.0, n=2, r=0.5, beta=1e-12)
#: the rounds of CX (the average over K = 1e11 rounds is the stationary value to ~1e-10)
CX_K = 10**11

_CX_CONSTS = [
    dict(name="L", value=1.0, tag="EXACT", reason="phi'' <= 1 (quadratic part 1, ramp below)"),
    dict(name="rho", value=1.0, tag="UPPER", reason="Hessian Lipschitz constant of the C^2 ramp"),
    dict(name="B", value=2.5, tag="UPPER", reason="|phi'| <= 2.5 on the ramp"),
    dict(name="sigma_G2", value=0.0, tag="EXACT", reason="exact gradients (no noise)"),
    dict(name="gamma_G2", value=1.0, tag="EXACT",
         reason="mean |grad f_i - grad f|^2 = 1 for c = (-1, 1) on the quadratic part"),
    dict(name="gamma_H2", value=0.25, tag="UPPER", reason="Hessian dissimilarity <= 1/4"),
    dict(name="f_gap", value=0.0, tag="EXACT", reason="w0 = cbar = 0 minimises F"),
]


def _build_cx(q: dict[str, Any]) -> Instance:
    tau, K, mode = int(q["tau"]), int(required(q, "K")), str(q["mode"])
    res = theorem4_5(**CX, tau=tau, K=K, mode=mode)
    src = (f"fedsim.theory.perfedavg.perfedavg_quadratic_exact(A=[[1]], centers=[[-1],[1]], "
           f"alpha=1e-3, beta=1e-12, tau={tau}, K={K:g}, w0=[0], s=1)")

    def curve() -> list[float]:
        return [float(perfedavg_quadratic_exact(
            A=[[1.0]], centers=[[-1.0], [1.0]], alpha=CX["alpha"], beta=CX["beta"], tau=tau,
            K=float(K), w0=[0.0], s=1))]

    def exact(_ms: int) -> Measurement:
        return Measurement(curve()[0], "exact", 0.0, 0.0, 0, "perfedavg_quadratic_exact")

    return Instance(
        family="perfedavg-cx",
        theorem="perfedavg_theorem4_5",
        mode=mode,
        params=dict(q),
        bound=res,
        scenario=None,
        metric="avg_grad_maml_sq",
        horizon=K,
        quantity="(1/(tau K)) sum E||grad F(wbar_{k+1,t})||^2",
        description=f"n = 2, r = 1/2 (one client per round), f_i = phi(w - c_i), c = (-1, 1), "
                    f"alpha = 1e-3, beta = 1e-12, tau = {tau}, K = {K:g}, w0 = cbar: exact "
                    "oracle value, nothing simulated.",
        constants=[dict(c) for c in _CX_CONSTS],
        exact=exact,
        mc=None,
        notes=["Exact row (no simulation, no CI): the measured value is "
                                 + src + "."],
        exact_curve=curve,
        exact_source=src,
    )


PERFEDAVG_QUAD = Family(
    name="perfedavg-quad",
    theorem="perfedavg_theorem4_5",
    title="[F] Per-FedAvg Theorem 4.5 on quadratics",
    doc=__doc__.split("``perfedavg-quad``")[1].split("``perfedavg-cx``")[0].strip(),
    params=(
        Param("n", "int", 4, "clients", low=1, high=MAX_CLIENTS),
        Param("K", "int", 160, "rounds (horizon)", low=1, high=MAX_ITERATIONS),
        Param("L", "float", 1.0, "smoothness = the shared Hessian a", low=0.0, open_low=True),
        Param("alpha_L", "float", 0.5, "MAML alpha = alpha_L / L (H6 needs <= 1)", low=0.0),
        Param("noise_rel", "float", 0.05, "additive noise sd / sqrt(L)", low=0.0),
        Param("heterogeneity", "float", 1.0, "spread of the client optima", low=0.0),
        Param("seed", "int", 3, "problem-generation seed", low=0),
        Param("w0", "float", 5.0, "initial model"),
        Param("r", "float", 1.0, "participation (H9 needs 1)", low=0.0, open_low=True,
              high=1.0),
        Param("beta_mult", "float", 1.0, "beta / (1/(10 tau L_F))", low=0.0, open_low=True),
    ),
    builder=_build,
    modes=("corrected",),
    horizon="K",
    curve=_curve,
)

PERFEDAVG_CX = Family(
    name="perfedavg-cx",
    theorem="perfedavg_theorem4_5",
    title="[F] Per-FedAvg Theorem 4.5, E-F1 (exact rows)",
    doc=__doc__.split("``perfedavg-cx``")[1].strip(),
    params=(
        Param("tau", "int", 10000, "local steps", low=1, high=10**6),
        Param("K", "int", CX_K, "rounds (horizon; exact, nothing simulated)", low=1,
              high=10**15),
        Param("mode", "choice", "paper_literal", "theorem4_5 mode",
              choices=("paper_literal", "corrected")),
    ),
    builder=_build_cx,
    modes=("paper_literal", "corrected"),
    horizon="K",
)
