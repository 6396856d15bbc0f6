"""[Y] AsyPFL Theorems 1-2 families (docs/theory/asypfl.md 6).

``asypfl1-quad`` / ``asypfl2-quad``
    One client: fedsim's AsyPFL engine (Algorithm 1 with ``lam = 0``, the personal model
    irrelevant) is the theorems' tick model exactly when n = 1 (pi = 1, server step t <->
    tick t E, the decay index r_k is the tick when E = 1).  A ``dim``-dimensional quadratic
    (``mu = mu_over_L L``), optima spread ``heterogeneity``, additive noise sd ``noise_sd``
    (default ``0.5 sqrt(L)``), start ``w0`` (default 0), E = 1.  Theorem 1: ``eta =
    eta_mult/(4L)``; Theorem 2: ``gamma = max(8L/mu, 1)`` (8 when mu = 0), ``eta_tau =
    2/(mu (gamma + tau))`` realised as Algorithm 1's ``eta/(1 + gamma_alg tau)`` with
    ``eta = eta_mult 2/(max(mu, L) gamma)``, ``gamma_alg = 1/gamma``.  The step does not
    depend on T: one run gives the whole curve.  Measured ``E F(w^T) - F*``, exact by
    :func:`fedsim.theory.asypfl.tick_oracle`.  (For n >= 2 the engine is not the tick model:
    sequential reads, adaptive pi_k.)
``asypfl1-periods``
    Reader 2's R2-4: two identical clients ``F_k = w^2/2``, p = (1/2, 1/2), E = 1, periods
    ``pi``, ``eta``, ``w0``, at common synchronisation ticks, with chi^2 the oracle's
    synchronised chi^2.  Not simulated (the engine is not the tick model for n = 2): the
    measured value is :func:`fedsim.theory.asypfl.tick_oracle`'s exact gap (exact rows).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from fedsim.theory.asypfl import gamma_t2, theorem1, theorem2, tick_oracle
from fedsim.validation.families.base import (
    MAX_ITERATIONS,
    Family,
    Instance,
    Measurement,
    Param,
)
from fedsim.validation.families.helpers import (
    build_problem_from,
    constants_of,
    engine_scenario,
    required,
)
from fedsim.validation.families.mc import engine_mc

from fedsim.problems.asypfl_constants import asypfl_constants_table

__all__ = ["ASYPFL1_QUAD", "ASYPFL2_QUAD", "ASYPFL1_PERIODS"]

_DELAYS = {"compute_per": "step", "compute": {"kind": "constant", "value": 1.0},
           "download": {"kind": "constant", "value": 0.1},
           "upload": {"kind": "constant", "value": 0.1}}
_MODES = ("corrected", "paper_literal")


def _curve(q: dict[str, Any], hs: tuple[int, ...], *, t1: bool) -> Instance:
    L, K, dim = float(q["L"]), int(hs[-1]), int(q["dim"])
    mu = float(q["mu_over_L"]) * L
    noise = 0.5 * math.sqrt(L) if q["noise_sd"] is None else float(q["noise_sd"])
    pcfg = {"kind": "quadratic", "n": 1, "dim": dim, "mu": mu, "L": L,
            "heterogeneity": float(q["heterogeneity"]), "noise_sd": noise,
            "seed": int(q["seed"])}
    prob = build_problem_from(pcfg)
    tab = asypfl_constants_table(prob, batch=1, pi=[1])
    cv = tab.values()
    x0 = np.zeros(dim) if q["w0"] is None else np.full(dim, float(q["w0"]))
    common = dict(L=cv["L"], mu=cv["mu"], p=[1.0], sigma2=[cv["sigma2_0"]], Gamma=cv["Gamma"],
                  E=1, pi=[1], chi2=cv["chi2"],
                  D2=float(np.sum((x0 - np.asarray(prob.x_star)) ** 2)),
                  T=hs[0] if len(hs) == 1 else np.array(hs))
    mult, mode = float(q["eta_mult"]), str(q["mode"])
    if t1:
        eta, g_alg = mult / (4.0 * L), 0.0
        res = theorem1(eta=eta, mode=mode, **common)
    else:
        g = gamma_t2(L, mu, 1, [1]) if mu > 0 else 8.0
        eta, g_alg = mult * 2.0 / (max(mu, L) * g), 1.0 / g
        res = theorem2(mode=mode, gamma=(g / mult if mu > 0 else None), **common)
    alg = {"name": "asypfl", "client_rule": "asypfl", "E": 1, "eta": eta, "delta": 0.01,
           "gamma": g_alg, "lam": 0.0, "batch": 1}
    if q["w0"] is not None:
        alg["w0"] = [float(v) for v in x0]
    name = "asypfl1-quad" if t1 else "asypfl2-quad"
    sc = engine_scenario(f"{name}-T{K}", pcfg, alg, K, ["f_gap"], delays=_DELAYS)

    def curve() -> list[float]:
        o = tick_oracle(A=[prob.A_stack[0]], b=[prob.b_stack[0]], p=[1.0], pi=[1], E=1,
                        eta=lambda t: eta / (1.0 + g_alg * t), w0=x0, T=K,
                        C=[prob.C_stack[0]])
        return [float(o["gap"][h]) for h in hs]

    def exact(_ms: int) -> Measurement:
        return Measurement(curve()[-1], "exact", 0.0, 0.0, 0, "tick_oracle")

    def mc(replicates: int, seed: int) -> Measurement:
        return engine_mc(sc, "f_gap", K, replicates, seed)

    what = "eta = 1/(4L)" if t1 else "eta_tau = 2/(mu(gamma+tau)), gamma = max(8L/mu, 1)"
    return Instance(
        family=name,
        theorem="asypfl_theorem1" if t1 else "asypfl_theorem2",
        mode=mode,
        params=dict(q),
        bound=res,
        scenario=sc,
        metric="f_gap",
        horizon=K,
        quantity="E F(w^T) - F*",
        description=f"one client, d={dim} quadratic (mu={mu:g}, L={L:g}), additive noise, E=1, "
                    f"{what} (x{mult:g}); T = ticks = server steps.",
        constants=constants_of(prob) + tab.to_frame().to_dict("records"),
        exact=exact,
        mc=mc,
        notes=["Simulation: fedsim's AsyPFL engine with n = 1 is the tick model "
                           "of eqs. (3)-(4); exact oracle theory.asypfl.tick_oracle."],
        horizons=hs,
        exact_curve=curve,
        exact_source="fedsim.theory.asypfl.tick_oracle",
    )


def _params(t1: bool) -> tuple[Param, ...]:
    return (
        Param("T", "int", 60 if t1 else 160, "ticks (horizon)", low=1, high=MAX_ITERATIONS),
        Param("L", "float", 1.0, "smoothness", low=0.0, open_low=True),
        Param("mu_over_L", "float", 0.5 if t1 else 1.0, "mu / L (H2 needs > 0)", low=0.0,
              high=1.0),
        Param("dim", "int", 2 if t1 else 1, "dimension", low=1, high=1000),
        Param("heterogeneity", "float", 1.0 if t1 else 3.0, "spread of the optimum", low=0.0),
        Param("noise_sd", "float", None, "additive noise sd (default 0.5 sqrt(L))", low=0.0),
        Param("seed", "int", 5, "problem-generation seed", low=0),
        Param("w0", "float", None, "start, every coordinate (default 0)"),
        Param("eta_mult", "float", 1.0, "step / prescribed step", low=0.0, open_low=True),
        Param("mode", "choice", "corrected", "theorem mode", choices=_MODES),
    )


def _doc(tag: str) -> str:
    return __doc__.split(tag)[1].split("``asypfl1-periods``")[0].strip()


ASYPFL1_QUAD = Family(
    name="asypfl1-quad",
    theorem="asypfl_theorem1",
    title="[Y] AsyPFL Theorem 1, one client (tick model)",
    doc=_doc("``asypfl1-quad`` / ``asypfl2-quad``"),
    params=_params(True),
    builder=lambda q: _curve(q, (int(required(q, "T")),), t1=True),
    modes=_MODES,
    horizon="T",
    curve=lambda q, hs: _curve(q, hs, t1=True),
)

ASYPFL2_QUAD = Family(
    name="asypfl2-quad",
    theorem="asypfl_theorem2",
    title="[Y] AsyPFL Theorem 2, one client (tick model)",
    doc=_doc("``asypfl1-quad`` / ``asypfl2-quad``"),
    params=_params(False),
    builder=lambda q: _curve(q, (int(required(q, "T")),), t1=False),
    modes=_MODES,
    horizon="T",
    curve=lambda q, hs: _curve(q, hs, t1=False),
)


def _periods(q: dict[str, Any], hs: tuple[int, ...]) -> Instance:
    pi, eta, w0, mode = [int(v) for v in q["pi"]], float(q["eta"]), float(q["w0"]), q["mode"]
    o = tick_oracle(A=[[[1.0]], [[1.0]]], b=[[0.0], [0.0]], p=[0.5, 0.5], pi=pi, E=1, eta=eta,
                    w0=[w0], T=hs[-1])
    gaps = [float(o["gap"][t]) for t in hs]
    chi2 = float(np.max(np.abs(o["chi2_sync"])))
    res = theorem1(L=1.0, mu=1.0, eta=eta, p=[0.5, 0.5], sigma2=[0.0, 0.0], Gamma=0.0, E=1,
                   pi=pi, chi2=chi2, D2=w0 ** 2, T=hs[0] if len(hs) == 1 else np.array(hs),
                   mode=mode)
    src = (f"fedsim.theory.asypfl.tick_oracle(A=[[[1]],[[1]]], b=[[0],[0]], p=[1/2,1/2], "
           f"pi={pi}, E=1, eta={eta:g}, w0=[{w0:g}], T={hs[-1]})")
    consts = [dict(name="L", value=1.0, tag="EXACT", reason="F_k = w^2/2"),
              dict(name="mu", value=1.0, tag="EXACT", reason="F_k = w^2/2"),
              dict(name="sigma2", value=0.0, tag="EXACT", reason="exact gradients"),
              dict(name="Gamma", value=0.0, tag="EXACT", reason="identical clients"),
              dict(name="chi2", value=chi2, tag="EXACT",
                   reason="synchronised chi^2 of the exact tick oracle")]

    def exact(_ms: int) -> Measurement:
        return Measurement(gaps[-1], "exact", 0.0, 0.0, 0, "tick_oracle")

    return Instance(
        family="asypfl1-periods",
        theorem="asypfl_theorem1",
        mode=str(mode),
        params=dict(q),
        bound=res,
        scenario=None,
        metric="f_gap",
        horizon=hs[-1],
        quantity="E F(w^T) - F*",
        description=f"two clients F_k = w^2/2, p = (1/2, 1/2), E = 1, periods pi = {pi}, "
                    f"eta = {eta:g}, w0 = {w0:g}, at the common sync ticks: exact tick-model "
                    "gap, nothing simulated.",
        constants=consts,
        exact=exact,
        mc=None,
        notes=["Exact rows (no simulation, no CI): the measured value is "
                           + src + "."],
        horizons=hs,
        exact_curve=lambda: gaps,
        exact_source=src,
    )


ASYPFL1_PERIODS = Family(
    name="asypfl1-periods",
    theorem="asypfl_theorem1",
    title="[Y] AsyPFL Theorem 1, R2-4 periods (exact rows)",
    doc=__doc__.split("``asypfl1-periods``")[1].strip(),
    params=(
        Param("T", "int", 80, "tick (horizon; a common sync tick)", low=1, high=10**6),
        Param("pi", "list", [5, 8], "the two clients' periods"),
        Param("eta", "float", 0.25, "step", low=0.0, open_low=True),
        Param("w0", "float", 1.0, "start"),
        Param("mode", "choice", "paper_literal", "theorem1 mode", choices=_MODES),
    ),
    builder=lambda q: _periods(q, (int(required(q, "T")),)),
    modes=_MODES,
    horizon="T",
    curve=_periods,
)
