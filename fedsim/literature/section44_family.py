"""The ``koloskova-44`` family: §4.4's claim (asynchronous SGD with steps (11) never slower
than mini-batch SGD with the same ``n`` workers) as a bound on time, for ``fedsim search``
to look for a delay law, a heterogeneity or a step under which it fails.

``n`` workers, a quadratic (dim 4, ``mu = 0.1``, ``L = 1``, shared Hessian, client
heterogeneity ``heterogeneity``; no gradient noise), ``w0 = (1, ..., 1)``, the target
``f(w) - f* <= eps_rel (f(w0) - f*)``, the base step of asynchronous SGD ``eta =
eta_mult/(4L)`` (Theorem 8's ``eta <= 1/(4L)`` iff ``eta_mult <= 1``) and mini-batch SGD's
own step ``mb_eta_mult/(4L)`` (default: the same; up to ``8/(4L) = 2/L``, gradient
descent's stability limit on a quadratic, since the text's comparison is of tuned O(.)
rates, not of one shared step):

* the bound (:mod:`fedsim.literature.section44`): mini-batch SGD (``fedavg``, every worker
  one gradient, the average) takes ``rounds`` rounds to the target -- counted on one
  engine run, exact since without noise its iterates do not depend on the delays -- and
  ``E T_mb = rounds E max_{i<=n} Delta_i``;
* the measurement: asynchronous SGD (``async_sgd``, steps (11) with ``tau_C = n``, every
  worker always busy: Koloskova's Example 3), the simulated time at which ``f - f*`` first
  reaches the target (recorded at every step), mean over replicates with a 99% normal
  interval.  A replicate that has not reached it by the time horizon ``4 E T_mb + 50``
  counts as that horizon (a lower bound on its time, so the mean is too); ``detail`` says
  how many.

The compute law is ``delay`` with mean about 1 and shape ``shape``: ``exponential`` (rate
1), ``uniform`` on ``[1 - shape, 1 + shape]`` (``shape < 1``), ``lognormal`` (``sigma =
shape``, ``mu = -shape^2/2``), ``pareto`` (``shape > 1``, scale ``(shape - 1)/shape``),
``straggler`` (uniform [0.5, 1.5] multiplied by ``m = shape`` with probability ``p``).
The server's time is zero (the engine has no server queue, so §4.4's "negligible server
time" holds by construction; a nonzero server time cannot be simulated and is not
offered).  The hypotheses the construction settles are resolved (homogeneous iff
``heterogeneity = 0``; the server time); the measured time is not a trace metric, so
``fedsim search --confirm`` cannot re-run it: use ``--confirm 0``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import fedsim
from fedsim.literature.section44 import section44
from fedsim.validation.families import Family, Instance, Measurement, Param, resolve_hypotheses

__all__ = ["FAMILY", "build", "compute_law", "scenarios", "first_time"]

DIM = 4


def compute_law(delay: str, shape: float, p: float) -> dict[str, Any]:
    """The compute-time table of ``delay`` with shape ``shape`` (module docstring)."""
    s = float(shape)
    if delay == "exponential":
        return {"kind": "exponential", "rate": 1.0}
    if delay == "uniform":
        return {"kind": "uniform", "low": 1.0 - min(s, 0.999), "high": 1.0 + min(s, 0.999)}
    if delay == "lognormal":
        return {"kind": "lognormal", "mu": -0.5 * s * s, "sigma": s}
    if delay == "pareto":  # mean 1 for shape > 1; scale 1/3 (infinite mean) otherwise
        return {"kind": "pareto", "shape": s, "scale": (s - 1.0) / s if s > 1.0 else 1 / 3}
    return {"kind": "straggler", "base": {"kind": "uniform", "low": 0.5, "high": 1.5},
            "p": float(p), "m": s}


def scenarios(q: dict[str, Any], horizon: float, max_steps: int) -> tuple[dict, dict]:
    """``(asynchronous, mini-batch)`` engine scenarios of the point ``q``."""
    n = int(q["n"])
    prob = {"kind": "quadratic", "n": n, "dim": DIM, "mu": 0.1, "L": 1.0,
            "heterogeneity": float(q["heterogeneity"]), "shared_hessian": True,
            "noise_sd": 0.0, "seed": 0}
    eta = float(q["eta_mult"]) / 4.0
    delays = {"compute": compute_law(q["delay"], q["shape"], q["p"])}
    rec = {"every": 1, "metrics": ["f_gap"]}
    base = {"seed": int(q["seed"]), "problem": prob, "delays": delays, "record": rec}
    asy = {**base, "name": "koloskova-44-async",
           "algorithm": {"name": "async_sgd", "client_rule": "sgd", "Q": 1, "batch": 1,
                         "eta": eta, "beta": 1.0, "tau_C": n, "step_rule": "koloskova",
                         "w0": [1.0] * DIM},
           "trigger": {"kind": "every_upload"},
           "horizon": {"time": float(horizon), "steps": int(max_steps)}}
    mb = {**base, "name": "koloskova-44-minibatch",
          "algorithm": {"name": "fedavg", "client_rule": "sgd", "Q": 1, "batch": 1,
                        "eta": float(q["mb_eta_mult"]) / 4.0, "participation": 1.0,
                        "w0": [1.0] * DIM},
          "delays": {"compute": {"kind": "constant", "value": 1.0}},
          "horizon": {"steps": int(max_steps)}}
    return asy, mb


def first_time(trace: Any, target: float) -> float:
    """The first recorded simulated time at which ``f - f* <= target`` (``inf``: never)."""
    v = np.asarray(trace.metrics["f_gap"], dtype=np.float64)
    hit = np.flatnonzero(v <= target)
    return float(trace.time[trace.metric_steps][hit[0]]) if hit.size else float("inf")


def build(q: dict[str, Any]) -> Instance:
    """The instance at the (completed, checked) parameters ``q``."""
    n, max_rounds = int(q["n"]), int(q["max_rounds"])
    _, mb = scenarios(q, 1.0, max_rounds)
    tr = fedsim.run(fedsim.Scenario.from_dict(mb), replicate=0)
    gaps = np.asarray(tr.metrics["f_gap"], dtype=np.float64)
    target = float(q["eps_rel"]) * float(gaps[0])
    hit = np.flatnonzero(gaps <= target)
    rounds = int(tr.metric_steps[hit[0]]) if hit.size else max_rounds + 1
    law = compute_law(q["delay"], q["shape"], q["p"])
    raw = section44(rounds=rounds, n=n, compute=law, L=1.0, eta=float(q["eta_mult"]) / 4.0,
                    heterogeneity=float(q["heterogeneity"]), sigma=0.0)
    bound = resolve_hypotheses(raw, {"server_time_zero": (True, "the engine's server takes "
                                                                "zero time")})
    horizon = 4.0 * raw.value + 50.0 if np.isfinite(raw.value) else 1e6
    asy, _ = scenarios(q, horizon, 50 * max_rounds * n)
    notes = [] if hit.size else [f"mini-batch SGD did not reach the target in {max_rounds} "
                                 "rounds: the bound counts max_rounds + 1"]

    def mc(replicates: int, seed: int) -> Measurement:
        s = fedsim.Scenario.from_dict({**asy, "seed": int(seed) + int(q["seed"])})
        t = np.array([first_time(fedsim.run(s, replicate=r), target)
                      for r in range(replicates)])
        cut = int(np.sum(~np.isfinite(t)))
        v = np.minimum(t, horizon)
        se = float(v.std(ddof=1) / np.sqrt(v.size)) if v.size > 1 else float("inf")
        return Measurement(float(v.mean()), "mc", 2.6 * se, se, int(v.size),
                           f"engine, {replicates} replicates, time to f - f* <= {target:.3g}"
                           f"; {cut} not reached by t = {horizon:.4g} (counted at it)")

    return Instance(family="koloskova-44", theorem="koloskova_44", mode="minibatch_time",
                    params=dict(q), bound=bound, scenario=asy, metric="time_to_target",
                    horizon=rounds, quantity="E T_async (time to f - f* <= eps_rel "
                    "(f(w0) - f*))", description=f"n = {n}, compute {q['delay']} "
                    f"(shape {q['shape']:g}), heterogeneity {q['heterogeneity']:g}, "
                    f"eta = {q['eta_mult']:g}/(4L); mini-batch {rounds} rounds at "
                    f"{q['mb_eta_mult']:g}/(4L)",
                    constants=[], mc=mc, notes=notes)


FAMILY = Family(
    name="koloskova-44", theorem="koloskova_44",
    title="[K] §4.4: async SGD (11) against mini-batch SGD, time to a target", doc=__doc__,
    params=(Param(name="n", kind="int", default=4, doc="workers (tau_C = n)", low=1),
            Param(name="delay", kind="choice", default="exponential", doc="compute law",
                  choices=("exponential", "uniform", "lognormal", "pareto", "straggler")),
            Param(name="shape", kind="float", default=1.5, doc="the law's shape (module "
                  "docstring)", low=0.0, open_low=True),
            Param(name="p", kind="float", default=0.05, doc="straggler probability",
                  low=0.0, high=1.0),
            Param(name="heterogeneity", kind="float", default=0.0,
                  doc="client heterogeneity (0: the claim's homogeneous setting)", low=0.0),
            Param(name="eta_mult", kind="float", default=1.0, doc="eta = eta_mult/(4L)",
                  low=0.0, open_low=True),
            Param(name="mb_eta_mult", kind="float", default=1.0,
                  doc="mini-batch step mb_eta_mult/(4L), < 8 (GD on a quadratic)", low=0.0,
                  high=7.99, open_low=True),
            Param(name="eps_rel", kind="float", default=1e-3,
                  doc="target f - f* relative to f(w0) - f*", low=0.0, high=1.0,
                  open_low=True),
            Param(name="max_rounds", kind="int", default=4000,
                  doc="cap on mini-batch rounds", low=1),
            Param(name="seed", kind="int", default=1, doc="root seed", low=0)),
    builder=build)
