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
    the Theorem 7 schedule ``alpha_k = c/(k+d)`` (certified level, THEORY_SPEC 6.d), or
    ``c_mult`` times it.  Measured: ``E||x_{s,K} - x*||^2``, exact by
    :func:`fedsim.theory.oracle.area_moments`.  The schedule does not depend on K, so one
    run gives the whole curve (a curve family).  Construction settles H7.2 (fresh additive
    noise, ``sigma^2 = max tr S_i / b`` EXACT), H7.3 (independent Poisson clocks,
    ``x_{i,0} = x_{s,0}``; ``trigger_every = k`` runs Algorithm 1 aggregating after every k
    uploads instead, where H7.3 fails and there is no oracle) and H7.4 (``c_mult = 1``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from fedsim.theory import area as tarea
from fedsim.theory import oracle
from fedsim.theory.lumped import lumped_events
from fedsim.theory.result import Hypothesis, Status
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
    event_probabilities,
    poisson_delays,
    required,
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


def _law(q: dict[str, Any]) -> tuple[np.ndarray, float, dict, dict]:
    """``(p, p_s, delays, trigger)``: the event law and the engine's Poisson clocks (the given
    rates themselves, else the probabilities)."""
    p, ps, rates, rate_s = event_probabilities(int(q["n"]), p=q.get("p"), rates=q.get("rates"),
                                               p_s=q.get("p_s"), rate_s=q.get("rate_s"))
    return p, ps, poisson_delays(rates), {"kind": "poisson", "rate": rate_s}


def _build8(q: dict[str, Any]) -> Instance:
    n, M, K, B = int(q["n"]), int(q["M"]), int(q["K"]), float(q["B"])
    spread, sigma2, mode = float(q["centre_spread"]), float(q["sigma2"]), str(q["mode"])
    require(spread < 2.0, "centre_spread", spread, "must be < 2 (every centre below x_s0 = 0)")
    p, ps, delays, trigger = _law(q)
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
    sc = engine_scenario(f"theorem8-norm-n{n}-M{M}-K{K}-{mode}", pcfg, alg, K,
                         ["ergodic_f_gap"], every=K, delays=delays, trigger=trigger)
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
        mean, se = norm_ergodic_mc(sc, replicates, seed)
        return Measurement(mean, "mc", _Z99 * se, se, int(replicates),
                           "norm_ergodic_mc (run_batch replay), 99% normal CI")

    return Instance(
        family="theorem8-norm",
        theorem="theorem8",
        mode=mode,
        params=dict(q),
        bound=res,
        scenario=sc,
        metric="ergodic_f_gap",
        horizon=K,
        quantity="E f(xbar_{s,K}) - f*",
        description=f"f_i(x) = {B:g}|x - c_i|, n={n}, centres spread {spread:g}, p_s={ps:.4g}, "
                    f"M={M}, K={K}, x_s0 = 0, R = {R:g}, deterministic subgradients; "
                    f"{mode} step alpha = {alpha:.4g}",
        constants=constants_of(prob),
        exact=exact,
        mc=mc,
        exact_source="fedsim.theory.lumped.lumped_events",
    )


THEOREM8_NORM = Family(
    name="theorem8-norm",
    theorem="theorem8",
    title="[A] Theorem 8 on the norm family (THEORY_SPEC 7.d)",
    doc=__doc__.split("``theorem7-quad``")[0].split("``theorem8-norm``")[1].strip(),
    params=(
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
    builder=_build8,
    modes=("paper", "corrected"),
    horizon="K",
)


_H73 = "H7.3 i.i.d. events, model (5)-(7) (scenario)"
_H74 = "H7.4 step size = c/(k+d) (scenario)"


def _scenario7(trigger_every: int, c: float, d: float, c_mult: float) -> list[Hypothesis]:
    """What the simulated schedule and aggregation settle of H7.3 / H7.4."""
    if trigger_every:
        return [Hypothesis(_H73, False, f"Algorithm 1 with aggregation after every "
                                        f"{trigger_every} uploads: events are not i.i.d. ([A] "
                                        "footnote 3)")]
    if c_mult != 1.0:
        return [Hypothesis(_H74, False, f"simulated alpha_k = {c_mult * c:.4g}/(k+{d:.4g}), "
                                        f"prescribed c = {c:.4g}")]
    return [Hypothesis(_H73, True, "iterate model: independent Poisson clocks, "
                                   "x_{i,0} = x_{s,0}"),
            Hypothesis(_H74, True, "engine uses the Theorem 7 schedule of these constants")]


def _curve7(q: dict[str, Any], hs: tuple[int, ...]) -> Instance:
    n, M, K = int(q["n"]), int(q["M"]), int(hs[-1])
    L, kappa = float(q["L"]), float(q["kappa"])
    c_mult, every_k = float(q["c_mult"]), int(q["trigger_every"])
    require(kappa >= 1.0, "kappa", kappa, "must be >= 1")
    mu = L / kappa
    p, ps, delays, trigger = _law(q)
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
    res = tarea.theorem7(L=L, mu=mu, M=M, p=p, p_s=ps, sigma=sigma, zeta=zeta, R0=R0,
                         K=hs[0] if len(hs) == 1 else np.array(hs), r_init=r_init,
                         level="certified")
    iid = ((False, f"Algorithm 1 with aggregation after every {every_k} uploads: events not "
                   "i.i.d.") if every_k else
           (True, "iterate model: independent Poisson clocks, x_(i,0) = x_(s,0)"))
    res = resolve_hypotheses(res, {
        "H7.2": (True, "additive Gaussian noise N(0, S_i/b), fresh at each local step, "
                       "independent of the events; sigma^2 = max_i tr(S_i)/b EXACT"),
        "H7.3": iid})
    res.hypotheses = [*res.hypotheses, *_scenario7(every_k, c0, d0, c_mult)]
    if any(h.holds is False for h in res.hypotheses):
        res.status = Status.NOT_APPLICABLE
    c_used = c_mult * c0
    alpha = ({"kind": "theorem7"} if c_mult == 1.0 and not every_k
             else {"kind": "c_over_k_plus_d", "c": c_used, "d": d0})
    alg = {"name": "area", "model": "algorithm" if every_k else "iterate_model",
           "client_rule": "area", "M": M, "batch": b, "alpha": alpha}
    if every_k:
        trigger = {"kind": "every_k", "count": every_k}
    sc = engine_scenario(f"theorem7-quad-n{n}-M{M}-K{K}", pcfg, alg, K, ["dist_sq"],
                         every=math.gcd(*hs), delays=delays, trigger=trigger)

    def curve() -> list[float]:
        df = oracle.area_moments(prob, p, ps, M, lambda k: c_used / (k + d0), x0, K,
                                 record_every=math.gcd(*hs), batch=b)
        ex = dict(zip(df["k"].astype(int), df["sq_dist"], strict=True))
        return [float(ex[h]) for h in hs]

    def exact(_max_states: int) -> Measurement:
        return Measurement(curve()[-1], "exact", 0.0, 0.0, 0, "area_moments")

    def mc(replicates: int, seed: int) -> Measurement:
        return engine_mc(sc, "dist_sq", K, replicates, seed)

    return Instance(
        family="theorem7-quad",
        theorem="theorem7",
        mode="certified",
        params=dict(q),
        bound=res,
        scenario=sc,
        metric="dist_sq",
        horizon=K,
        quantity="E||x_{s,K} - x*||^2",
        description=f"n={n}, d=2 quadratic clients, Hessian spectra in [L/kappa, L] (L={L:g}, "
                    f"kappa={kappa:g}), optima spread {q['heterogeneity']:g}, noise sd "
                    f"{q['noise_sd']:g} (sigma = {sigma:.3g}), M={M}, p_s={ps:.4g}; "
                    f"alpha_k = {c_used:.4g}/(k+{d0:.4g})"
                    + (f", aggregation after every {every_k} uploads" if every_k else ""),
        constants=constants_of(prob),
        exact=None if every_k else exact,
        mc=mc,
        notes=[f"Step-size offset d = {d0:.1f}: the O(1/K) regime needs K >> d."],
        horizons=hs,
        exact_curve=None if every_k else curve,
        exact_source="fedsim.theory.oracle.area_moments",
    )


def _build7(q: dict[str, Any]) -> Instance:
    return _curve7(q, (int(required(q, "K")),))


THEOREM7_QUAD = Family(
    name="theorem7-quad",
    theorem="theorem7",
    title="[A] Theorem 7 (certified) on quadratics",
    doc=__doc__.split("``theorem7-quad``")[1].strip(),
    params=(
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
        Param("c_mult", "float", 1.0, "alpha_k = c_mult c/(k+d) (1: the Theorem 7 schedule)",
              low=0.0, open_low=True),
        Param("trigger_every", "int", 0, "0: the iterate model (i.i.d. events); k >= 1: "
              "Algorithm 1 aggregating after every k uploads (not i.i.d.)", low=0),
    ),
    builder=_build7,
    modes=("certified",),
    horizon="K",
    curve=_curve7,
)
