"""The ``koloskova-lemma11`` family: Lemma 11's asynchronous time per ``C`` gradients against
Algorithm 2 simulated (``fedsim search`` looks for where they part).

``n`` clients, ``n_slow`` of them with constant compute time ``slow`` and the others ``1``;
asynchronous SGD under Koloskova's Algorithm 2 (``async_sgd``, model ``uniform_assign``,
concurrency ``tau_C = C``: jobs handed to uniformly random clients, piling up on a busy
one), ``K`` server steps. Measured: ``C T_K / K``, ``T_K`` the simulated time of step ``K``
(its mean over replicates, 99% normal interval); the bound is Lemma 11's ``Delta_bar`` (mode
``async_time``) or ``Delta_tilde`` (mode ``minibatch_time``: is the simulated asynchronous
algorithm slower than the lemma's mini-batch SGD?) (:mod:`fedsim.literature.lemma11`). The
measured quantity is not a recorded trace metric, so ``fedsim search --confirm`` (engine
Monte Carlo of a trace metric) cannot confirm it: use ``--confirm 0`` and the search's own
Monte-Carlo measurements. The construction settles the lemma's hypothesis (the compute times
are constants). The lemma's value is an expectation it states as exact, read here as the
claimed time; queueing on a client that is handed two jobs is what the simulation adds.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import fedsim
from fedsim.literature.lemma11 import lemma11
from fedsim.validation.families import Family, Instance, Measurement, Param, resolve_hypotheses

__all__ = ["FAMILY", "build", "scenario"]


def scenario(q: dict[str, Any]) -> dict[str, Any]:
    """The engine scenario of the parameters ``q``."""
    n, ns = int(q["n"]), int(q["n_slow"])
    over = ([{"clients": list(range(n - ns, n)),
              "compute": {"kind": "constant", "value": float(q["slow"])}}] if ns else [])
    return {"name": "koloskova-lemma11", "seed": int(q["seed"]),
            "problem": {"kind": "quadratic", "n": n, "dim": 2, "mu": 0.5, "L": 1.0,
                        "heterogeneity": 0.0, "shared_hessian": True, "seed": 0},
            "algorithm": {"name": "async_sgd", "model": "uniform_assign", "Q": 1,
                          "eta": 0.1, "tau_C": int(q["C"]), "w0": [1.0, 1.0]},
            "delays": {"compute": {"kind": "constant", "value": 1.0}, "override": over},
            "trigger": {"kind": "every_upload"}, "horizon": {"steps": int(q["K"])},
            "record": {"every": int(q["K"]), "metrics": ["f_gap"]}}


def build(q: dict[str, Any]) -> Instance:
    """The instance at the (completed, checked) parameters ``q``."""
    n, ns, C, K = int(q["n"]), int(q["n_slow"]), int(q["C"]), int(q["K"])
    delta = [1.0] * (n - ns) + [float(q["slow"])] * ns
    bound = resolve_hypotheses(lemma11(delta=delta, C=C, mode=q["mode"]),
                               {"constant_times": (True, "constant compute times by "
                                                         "construction")})
    sc = scenario(q)

    def mc(replicates: int, seed: int) -> Measurement:
        s = fedsim.Scenario.from_dict({**sc, "seed": int(seed) + int(q["seed"])})
        v = np.array([C * fedsim.run(s, replicate=r).sim_time / K for r in range(replicates)])
        se = float(v.std(ddof=1) / np.sqrt(v.size)) if v.size > 1 else float("inf")
        return Measurement(float(v.mean()), "mc", 2.6 * se, se, int(v.size),
                           f"engine, {replicates} replicates, C T_K / K")

    return Instance(family="koloskova-lemma11", theorem="koloskova_lemma11",
                    mode=q["mode"], params=dict(q), bound=bound, scenario=sc,
                    metric="time_per_C", horizon=K, quantity="C T_K / K (time per C "
                    "gradients)", description=f"Algorithm 2, n = {n} ({ns} at {q['slow']:g}, "
                    f"the others at 1), C = {C}, K = {K}", constants=[], mc=mc)


FAMILY = Family(
    name="koloskova-lemma11", theorem="koloskova_lemma11",
    title="[K] Lemma 11: Algorithm 2's time per C gradients", doc=__doc__,
    params=(Param(name="n", kind="int", default=10, doc="clients", low=1),
            Param(name="n_slow", kind="int", default=1, doc="slow clients", low=0),
            Param(name="slow", kind="float", default=6.0, doc="compute time of a slow client",
                  low=1.0),
            Param(name="C", kind="int", default=2, doc="concurrency tau_C", low=1),
            Param(name="K", kind="int", default=400, doc="server steps", low=1),
            Param(name="seed", kind="int", default=1, doc="root seed", low=0),
            Param(name="mode", kind="choice", default="async_time",
                  doc="bound: Delta_bar or Delta_tilde", choices=("async_time",
                                                                 "minibatch_time"))),
    builder=build, modes=("async_time", "minibatch_time"))
