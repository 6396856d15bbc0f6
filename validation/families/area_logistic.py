"""[A] AREA Theorem 8 on logistic data: the family ``theorem8-logistic``.

``theorem8-logistic``
    n unregularised logistic clients (d = 3, 20 rows each, feature scale ``feature_scale``),
    anchor rows in client 0 so that the global minimiser exists (THEORY_SPEC 9.4); B = G and
    ``sigma^2 = sigma_g2 / b`` (UPPER), ``R = ||x_0 - xhat|| +`` the certificate's bound on
    ``||xhat - x*||``.  The iterate model with equal client Poisson rates 1 and server rate
    ``rate_s`` (default :func:`fedsim.theory.area.optimal_server_rate`, THEORY_SPEC 7.c), M
    local steps, batch b, the constant step of [A] Theorem 8 for ``mode`` times
    ``alpha_mult`` (1: the prescribed step; any other value makes the statement not
    applicable).  The step depends on K: one run per horizon.  Measured ``E f(xbar_{s,K}) -
    f*``, by Monte Carlo of the engine (no exact oracle for stochastic logistic gradients).
    Construction settles bounded variance (b rows drawn uniformly with replacement), i.i.d.
    events (independent Poisson clocks) and the minimiser (anchors, valid certificate).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from fedsim.theory import area as tarea
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
    poisson_delays,
    required,
)
from fedsim.validation.families.mc import engine_mc

from fedsim.errors import require

__all__ = ["THEOREM8_LOGISTIC"]


def _build(q: dict[str, Any]) -> Instance:
    n, M, b, K = int(q["n"]), int(q["M"]), int(q["b"]), int(required(q, "K"))
    s, mode, mult = float(q["feature_scale"]), str(q["mode"]), float(q["alpha_mult"])
    pcfg = {"kind": "logistic", "n_clients": n, "dim": 3, "samples_per_client": 20,
            "heterogeneity": float(q["heterogeneity"]), "seed": int(q["seed"]),
            "anchors": "first", "anchor_scale": s, "feature_scale": s}
    prob = build_problem_from(pcfg)
    rates = [1.0] * n
    rate_s = (float(tarea.optimal_server_rate(rates)) if q["rate_s"] is None
              else float(q["rate_s"]))
    tot = sum(rates) + rate_s
    p, p_s = np.array(rates) / tot, rate_s / tot
    cv = prob.constants.values()
    B, sigma2 = float(cv["B"]), float(cv["sigma_g2"]) / b
    _, _, cert = prob.solve_global()
    require(cert.valid, "problem", "logistic", "needs a valid minimiser certificate")
    R = float(np.linalg.norm(prob.x_star)) + float(cert.dist_bound)
    kw = dict(M=M, p=p, p_s=p_s, sigma2=sigma2, B=B, R=R, K=K, mode=mode)
    alpha = mult * float(tarea.theorem8(**kw).step_sizes["alpha_prescribed"])
    res = resolve_hypotheses(tarea.theorem8(**kw, alpha=alpha), {
        "bounded_variance": (True, "b rows drawn uniformly with replacement: unbiased, "
                                   "variance <= sigma_g2/b (UPPER)"),
        "iid_events": (True, "iterate model with independent Poisson clocks"),
        "minimiser_exists": (True, "anchor rows in client 0 make f coercive (unique x*); "
                                   f"certificate valid, R inflated by "
                                   f"{float(cert.dist_bound):.2e}")})
    alg = {"name": "area", "model": "iterate_model", "client_rule": "area", "M": M,
           "batch": b, "alpha": {"kind": "constant", "value": alpha}}
    sc = engine_scenario(f"theorem8-logistic-n{n}-M{M}-K{K}-{mode}", pcfg, alg, K,
                         ["ergodic_f_gap"], every=K, delays=poisson_delays(rates),
                         trigger={"kind": "poisson", "rate": rate_s})

    def mc(replicates: int, seed: int) -> Measurement:
        return engine_mc(sc, "ergodic_f_gap", K, replicates, seed)

    return Instance(
        family="theorem8-logistic",
        theorem="theorem8",
        mode=mode,
        params=dict(q),
        bound=res,
        scenario=sc,
        metric="ergodic_f_gap",
        horizon=K,
        quantity="E f(xbar_{s,K}) - f*",
        description=f"n={n} logistic clients (d=3, feature scale {s:g}, nu_reg=0, anchors in "
                    f"client 0); B = G = {B:.4g} (UPPER), sigma^2 = {sigma2:.4g}, R = {R:.4g};"
                    f" M={M}, batch {b}; client rates 1, server rate {rate_s:.4g}; constant "
                    f"step {mult:g} x alpha(K).",
        constants=constants_of(prob),
        exact=None,
        mc=mc,
        notes=["No exact oracle for stochastic logistic gradients."],
    )


THEOREM8_LOGISTIC = Family(
    name="theorem8-logistic",
    theorem="theorem8",
    title="[A] Theorem 8 on logistic data (anchored minimiser)",
    doc=__doc__.split("``theorem8-logistic``")[1].strip(),
    params=(
        Param("n", "int", 4, "clients", low=1, high=MAX_CLIENTS),
        Param("M", "int", 2, "local steps", low=1),
        Param("b", "int", 2, "batch size", low=1),
        Param("K", "int", 100, "global iterations (horizon)", low=1, high=MAX_ITERATIONS),
        Param("feature_scale", "float", 1.0, "feature (and anchor) scale", low=0.0,
              open_low=True),
        Param("heterogeneity", "float", 1.0, "client data heterogeneity", low=0.0),
        Param("seed", "int", 1, "problem-generation seed", low=0),
        Param("rate_s", "float", None, "server Poisson rate (default: the optimal one)",
              low=0.0, open_low=True),
        Param("alpha_mult", "float", 1.0, "step / prescribed step", low=0.0, open_low=True),
        Param("mode", "choice", "corrected", "theorem8 mode", choices=("paper", "corrected")),
    ),
    builder=_build,
    modes=("corrected", "paper"),
    horizon="K",
)
