"""[A] AREA families: Theorem 8 on the norm family (THEORY_SPEC 7.d), Theorem 7 on quadratics.

``theorem8-norm``
    ``f_i(x) = B |x - c_i|`` in one dimension, ``c_i = -1 + spread (i/(n-1) - 1/2)`` (all
    ``-1`` at spread 0, the 7.d family), ``x_{s,0} = 0``, deterministic subgradients, the
    iterate model with i.i.d. events (p_i, p_s), the constant step of [A] Theorem 8 for the
    chosen ``mode`` (``paper``: ``C_B = sigma2 + (M+1) B^2/2``; ``corrected``: ``sigma2 +
    M B^2``, E-A6).  Measured: ``E f(xbar_{s,K}) - f*``.  Exact oracle: lumped enumeration
    (:func:`fedsim.theory.lumped.lumped_events`, exchangeable clients lumped) within a state budget,
    else the vectorised Monte Carlo of the same event process
    (:func:`fedsim.theory.lumped_mc.mc_events`, 99% normal CI).  Construction settles:
    bounded variance (the oracle is exact: variance 0 <= sigma2), i.i.d. events (independent
    Poisson clocks of rates p_i, p_s), the minimiser (the median interval of the centres:
    ``R`` is the exact distance from ``x_{s,0}`` to it).
``theorem7-quad``
    n quadratic clients ``d=2`` with client-specific Hessians, spectra in ``[L/kappa, L]``,
    optima spread ``heterogeneity``, additive Gaussian noise ``noise_sd``, M local steps,
    the Theorem 7 schedule ``alpha_k = c/(k+d)`` (certified level, THEORY_SPEC 6.d).
    Measured: ``E||x_{s,K} - x*||^2``, exact by :func:`fedsim.theory.oracle.area_moments`.
    Construction settles H7.2 (fresh additive noise, ``sigma^2 = max tr S_i / b`` EXACT)
    and H7.3 (independent Poisson clocks, ``x_{i,0} = x_{s,0}``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from fedsim.theory import area as tarea
from fedsim.theory import oracle
from fedsim.theory.lumped import lumped_events
from fedsim.validation.families.base import (
    MAX_CLIENTS,
    MAX_ITERATIONS,
    Family,
    Instance,
    Measurement,
    Param,
    build_problem_from,
    constants_of,
    engine_scenario,
    event_probabilities,
    poisson_delays,
    resolve_hypotheses,
)
from fedsim.validation.families.mc import engine_mc
from fedsim.validation.families.norm_mc import norm_ergodic_mc

from fedsim.errors import ConfigError, require

__all__ = ["THEOREM8_NORM", "THEOREM7_QUAD", "norm_centres"]

_Z99 = 2.5758293035489004   # two-sided 99% normal quantile

_P_LAW = (
    Param("p", "list", None, "client event probabilities p_i (default equal (1-p_s)/n)"),
    Param("rates", "list", None, "client Poisson rates (with rate_s; instead of p, p_s)"),
    Param("rate_s", "float", None, "server Poisson rate (with rates)", low=0.0),
)


def norm_centres(n: int, spread: float) -> np.ndarray:
    """Centres ``-1 + spread (i/(n-1) - 1/2)`` (all -1 for n = 1 or spread = 0), shape (n, 1)."""
    if n == 1 or spread == 0.0:
        return np.full((n, 1), -1.0)
    return (-1.0 + spread * (np.arange(n) / (n - 1) - 0.5)).reshape(n, 1)


def _law(q: dict[str, Any]) -> tuple[np.ndarray, float]:
    p, ps, _, _ = event_probabilities(int(q["n"]), p=q.get("p"), rates=q.get("rates"),
                                      p_s=q.get("p_s"), rate_s=q.get("rate_s"))
    return p, ps


def _build8(q: dict[str, Any]) -> Instance:
    n, M, K, B = int(q["n"]), int(q["M"]), int(q["K"]), float(q["B"])
    spread, sigma2, mode = float(q["centre_spread"]), float(q["sigma2"]), str(q["mode"])
    require(spread < 2.0, "centre_spread", spread, "must be < 2 (every centre below x_s0 = 0)")
    p, ps = _law(q)
    c = norm_centres(n, spread)
    srt = np.sort(c[:, 0])
    hi = srt[n // 2]                       # the median interval is [srt[(n-1)//2], srt[n//2]]
    R = abs(hi)                            # distance from x_s0 = 0 to the nearest minimiser
    pcfg = {"kind": "norm", "B": B, "n": n, "dim": 1, "centers": c.tolist()}
    prob = build_problem_from(pcfg)
    res = tarea.theorem8(M=M, p=p, p_s=ps, sigma2=sigma2, B=B, R=R, K=K, mode=mode)
    facts = {
        "bounded_variance": (True, f"deterministic subgradients: variance 0 <= sigma2 = "
                                   f"{sigma2:g}"),
        "iid_events": (True, "iterate model: independent Poisson clocks of rates p_i, p_s"),
        "minimiser_exists": (True, f"minimisers = the median interval [{srt[(n - 1) // 2]:g}, "
                                   f"{hi:g}] of the centres; R = {R:g} EXACT"),
    }
    res = resolve_hypotheses(res, facts)
    alpha = float(res.step_sizes["alpha_prescribed"])
    alg = {"name": "area", "model": "iterate_model", "client_rule": "area", "M": M, "batch": 1,
           "alpha": {"kind": "constant", "value": alpha}}
    sc = engine_scenario(f"theorem8-norm-n{n}-M{M}-K{K}", pcfg, alg, K, ["ergodic_f_gap"],
                         every=K, delays=poisson_delays(p), trigger={"kind": "poisson",
                                                                      "rate": ps})
    x0 = np.zeros(1)

    def exact(max_states: int) -> Measurement | None:
        try:
            df = lumped_events(prob, p, ps, M, alpha, x0, K, record_every=K,
                               max_states=max_states)
        except ConfigError as e:
            if "max_states" in str(e):
                return None
            raise
        last = df.iloc[-1]
        return Measurement(float(last["ergodic_f_gap"]), "exact", float(last["error_bound"]),
                           0.0, int(last["n_states"]), str(df.attrs.get("method", "")))

    def mc(replicates: int, seed: int) -> Measurement:
        mean, se = norm_ergodic_mc(c[:, 0], B, float(prob.f_star), p, ps, M, alpha, 0.0, K,
                                   replicates, seed)
        return Measurement(mean, "mc", _Z99 * se, se, int(replicates),
                           "norm_ergodic_mc (closed-form G^M), 99% normal CI")

    return Instance("theorem8-norm", "theorem8", mode, dict(q), res, sc, "ergodic_f_gap", K,
                    "E f(xbar_{s,K}) - f*",
                    f"f_i(x) = {B:g}|x - c_i|, n={n}, centres spread {spread:g}, p_s={ps:.4g}, "
                    f"M={M}, K={K}, x_s0 = 0, R = {R:g}, deterministic subgradients; "
                    f"{mode} step alpha = {alpha:.4g}", constants_of(prob), exact, mc)


THEOREM8_NORM = Family(
    "theorem8-norm", "theorem8", "[A] Theorem 8 on the norm family (THEORY_SPEC 7.d)",
    __doc__.split("``theorem7-quad``")[0].split("``theorem8-norm``")[1].strip(),
    (
        Param("n", "int", 2, "clients", low=1, high=MAX_CLIENTS),
        Param("p_s", "float", 0.4, "server event probability", low=0.0, open_low=True, high=1.0),
        *_P_LAW,
        Param("M", "int", 50, "local steps", low=1),
        Param("K", "int", 9, "global iterations (horizon)", low=1,
              high=MAX_ITERATIONS),
        Param("B", "float", 1.0, "Lipschitz constant: f_i = B|x - c_i|", low=0.0, open_low=True),
        Param("centre_spread", "float", 0.0, "spread of the centres around -1 (< 2)", low=0.0),
        Param("sigma2", "float", 0.0, "declared gradient-noise variance (true: 0)", low=0.0),
        Param("mode", "choice", "paper", "theorem8 mode", choices=("paper", "corrected")),
    ),
    _build8, ("paper", "corrected"))


def _build7(q: dict[str, Any]) -> Instance:
    n, M, K = int(q["n"]), int(q["M"]), int(q["K"])
    L, kappa = float(q["L"]), float(q["kappa"])
    require(kappa >= 1.0, "kappa", kappa, "must be >= 1")
    mu = L / kappa
    p, ps = _law(q)
    b = 1
    pcfg = {"kind": "quadratic", "n": n, "dim": 2, "mu": mu, "L": L,
            "heterogeneity": float(q["heterogeneity"]), "noise_sd": float(q["noise_sd"]),
            "shared_hessian": False, "seed": int(q["seed"])}
    prob = build_problem_from(pcfg)
    cv = prob.constants.values()
    sigma = math.sqrt(float(cv["sigma_g2"]) / b)
    zeta = float(cv["zeta"])
    consts = tarea.area_constants(L=L, mu=mu, M=M, p=p, p_s=ps, sigma=sigma, zeta=zeta)
    c0, d0 = float(consts["c"]), float(consts["d"])
    x0 = np.zeros(prob.dim)
    R0 = float(np.linalg.norm(x0 - prob.x_star))
    r_init = np.linalg.norm(x0 - prob.x_star + (c0 / d0) * M * np.asarray(prob.grad_at_xstar),
                            axis=1)
    res = tarea.theorem7(L=L, mu=mu, M=M, p=p, p_s=ps, sigma=sigma, zeta=zeta, R0=R0, K=K,
                         r_init=r_init, level="certified")
    res = resolve_hypotheses(res, {
        "H7.2": (True, "additive Gaussian noise N(0, S_i/b), fresh at each local step, "
                       "independent of the events; sigma^2 = max_i tr(S_i)/b EXACT"),
        "H7.3": (True, "iterate model: independent Poisson clocks, x_(i,0) = x_(s,0)")})
    alg = {"name": "area", "model": "iterate_model", "client_rule": "area", "M": M, "batch": b,
           "alpha": {"kind": "theorem7"}}
    sc = engine_scenario(f"theorem7-quad-n{n}-M{M}-K{K}", pcfg, alg, K, ["dist_sq"], every=K,
                         delays=poisson_delays(p), trigger={"kind": "poisson", "rate": ps})

    def exact(_max_states: int) -> Measurement:
        df = oracle.area_moments(prob, p, ps, M, lambda k: c0 / (k + d0), x0, K,
                                 record_every=K, batch=b)
        return Measurement(float(df["sq_dist"].iloc[-1]), "exact", 0.0, 0.0, 0,
                           "area_moments")

    def mc(replicates: int, seed: int) -> Measurement:
        return engine_mc(sc, "dist_sq", K, replicates, seed)

    return Instance("theorem7-quad", "theorem7", "certified", dict(q), res, sc, "dist_sq", K,
                    "E||x_{s,K} - x*||^2",
                    f"n={n}, d=2 quadratic clients, Hessian spectra in [L/kappa, L] (L={L:g}, "
                    f"kappa={kappa:g}), optima spread {q['heterogeneity']:g}, noise sd "
                    f"{q['noise_sd']:g}, M={M}, p_s={ps:.4g}; alpha_k = {c0:.4g}/(k+{d0:.4g})",
                    constants_of(prob), exact, mc,
                    notes=[f"Step-size offset d = {d0:.1f}: the O(1/K) regime needs K >> d."])


THEOREM7_QUAD = Family(
    "theorem7-quad", "theorem7", "[A] Theorem 7 (certified) on quadratics",
    __doc__.split("``theorem7-quad``")[1].strip(),
    (
        Param("n", "int", 3, "clients", low=1, high=MAX_CLIENTS),
        Param("p_s", "float", 0.25, "server event probability", low=0.0, open_low=True, high=1.0),
        *_P_LAW,
        Param("M", "int", 1, "local steps", low=1),
        Param("K", "int", 1000, "global iterations (horizon)", low=1,
              high=MAX_ITERATIONS),
        Param("kappa", "float", 2.0, "condition number L/mu", low=1.0),
        Param("L", "float", 1.0, "smoothness", low=0.0, open_low=True),
        Param("heterogeneity", "float", 1.0, "spread of the client optima", low=0.0),
        Param("noise_sd", "float", 0.3, "additive gradient-noise sd", low=0.0),
        Param("seed", "int", 11, "problem-generation seed", low=0),
    ),
    _build7, ("certified",))
