"""The ``sgd-quadratic`` scenario family and its suite rows (for :mod:`.theorem`).

One client holds ``f(x) = 1/2 (x - x*)' A (x - x*)`` in ``dim`` dimensions (fedsim's
``quadratic`` problem, spectrum of A in [mu, L]); fedsim's synchronous ``fedavg`` with one
client, one local ``sgd`` step of size ``eta = eta_mult / L`` and the plain average is
exactly SGD, with additive Gaussian gradient noise ``N(0, noise_sd^2 I)``, fresh at every
step, from ``x_0 = 0``.  Measured: ``E||x_K - x*||^2``; exact oracle: the mean and
covariance recursion ``m <- (I - eta A) m``, ``C <- (I - eta A) C (I - eta A)' + eta^2 S``.
The construction settles two hypotheses the theorem leaves open (strong convexity and
smoothness from the generated spectrum, unbiased noise with ``sigma2 = tr S`` exactly); the
third, fresh gradients, is a property of the run: a simulation check measures it (the
engine's staleness, 0 on every step), so a door that simulates nothing leaves it unknown.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from fedsim.validation.families import (
    Family,
    Instance,
    Measurement,
    Param,
    SimCheck,
    build_problem_from,
    constants_of,
    engine_mc,
    engine_scenario,
    resolve_hypotheses,
)
from fedsim.validation.rows import SuiteRow

from fedsim_sgd_example.theorem import sgd_bound

__all__ = ["FAMILY", "ROWS", "build"]


def build(q: dict[str, Any]) -> Instance:
    """The instance at the (completed, checked) parameters ``q``."""
    K = int(q["K"])
    pcfg = {"kind": "quadratic", "n": 1, "dim": int(q["dim"]), "mu": float(q["mu"]),
            "L": float(q["L"]), "heterogeneity": 1.0, "noise_sd": float(q["noise_sd"]),
            "seed": int(q["seed"])}
    prob = build_problem_from(pcfg)
    c = prob.constants.values()
    mu, L, sigma2 = float(c["mu"]), float(c["L"]), float(c["sigma_g2"])
    eta = float(q["eta_mult"]) / L
    R0 = float(np.linalg.norm(prob.x_star))
    bound = resolve_hypotheses(
        sgd_bound(mu=mu, L=L, eta=eta, sigma2=sigma2, R0=R0, K=K, mode=q["mode"]),
        {"strongly_convex_smooth": (True, f"quadratic, Hessian spectrum in [{mu:g}, {L:g}]"),
         "unbiased_bounded_noise": (True, f"additive N(0, S) noise, tr S = {sigma2:g} EXACT")})
    alg = {"name": "fedavg", "client_rule": "sgd", "Q": 1, "eta": eta}
    scenario = engine_scenario(f"sgd-quadratic-K{K}", pcfg, alg, K, ["dist_sq"], every=K)

    def exact(_max_states: int) -> Measurement:
        step = np.eye(prob.dim) - eta * np.asarray(prob.A[0])
        m, C = -np.asarray(prob.x_star, dtype=np.float64), np.zeros((prob.dim, prob.dim))
        for _ in range(K):
            m, C = step @ m, step @ C @ step.T + eta**2 * np.asarray(prob.noise_cov[0])
        return Measurement(float(m @ m + np.trace(C)), "exact", detail="moment recursion")

    def mc(replicates: int, seed: int) -> Measurement:
        return engine_mc(scenario, "dist_sq", K, replicates, seed)

    fresh = SimCheck("fresh gradients: staleness <= 0 (measured)", 0, "synchronous fedavg, "
                     "one client", kind="max_staleness", replaces=("fresh_gradient",))
    return Instance(family="sgd-quadratic", theorem="sgd_quadratic", mode=q["mode"],
                    params=dict(q), bound=bound, scenario=scenario, metric="dist_sq",
                    horizon=K, quantity="E||x_K - x*||^2",
                    description=f"SGD on a dim-{prob.dim} quadratic, spectrum in [{mu:g}, "
                                f"{L:g}], eta = {eta:.4g}, noise sd {q['noise_sd']:g}, K = {K}",
                    constants=constants_of(prob), exact=exact, mc=mc, sim_checks=[fresh])


FAMILY = Family(
    name="sgd-quadratic", theorem="sgd_quadratic",
    title="[T] SGD with a constant step on a strongly convex quadratic", doc=__doc__,
    params=(Param(name="dim", kind="int", default=2, doc="dimension", low=1),
            Param(name="mu", kind="float", default=0.2, doc="smallest Hessian eigenvalue",
                  low=0.0, open_low=True),
            Param(name="L", kind="float", default=1.0, doc="largest Hessian eigenvalue",
                  low=0.0, open_low=True),
            Param(name="eta_mult", kind="float", default=1.0, doc="step eta = eta_mult / L",
                  low=0.0, open_low=True),
            Param(name="noise_sd", kind="float", default=0.3, doc="gradient-noise sd",
                  low=0.0),
            Param(name="K", kind="int", default=50, doc="SGD steps (horizon)", low=1),
            Param(name="seed", kind="int", default=1, doc="problem seed", low=0),
            Param(name="mode", kind="choice", default="textbook", doc="bound (2) or (1)",
                  choices=("textbook", "sharp"))),
    builder=build, modes=("textbook", "sharp"), horizon="K")

ROWS = [
    SuiteRow(name="sgd-textbook", family="sgd-quadratic", point={"K": 50}, div1000=True),
    SuiteRow(name="sgd-sharp", family="sgd-quadratic", point={"K": 50, "mode": "sharp"}),
    # negative control (a): a step 1.9/L is past the textbook 1/L, the bound must not apply
    SuiteRow(name="sgd-step-too-large", family="sgd-quadratic",
             point={"K": 50, "eta_mult": 1.9}, expected_verdict="not_applicable"),
]
