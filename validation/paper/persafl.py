"""PersA-FL ([P] = Toghani, Lee, Uribe): Figure 2(a), concurrency against simulated time.

[P] Sec. 6: n = 30 clients, random upload and download delays with the mean upload 4-6
times the mean download, local computation much faster than communication; the share of
active (not idle) clients over time, asynchronous against synchronous.  Here: download
``~ Exp(mean 1)``, upload ``~ Exp(mean u_i)`` with ``u_i`` = 4, 5, 6 (clients by index mod
3), compute ``~ Exp(mean 0.1)``; asynchronous = FedAsync (clients never wait for each
other), synchronous = FedAvg with every client every round (a round waits for the slowest
upload).  The busy fraction is the engine's ``concurrency`` record; the model (a small
quadratic) does not influence the timeline at all.
"""

from __future__ import annotations

from validation.paper.common import Arm, Claim, Experiment, Setting, scenario_dict

__all__ = ["fig2a_experiment", "fig2a_delays"]


def fig2a_delays(n: int) -> dict:
    """``[delays]``: download Exp(mean 1), upload Exp(mean 4/5/6 by client), compute Exp(0.1)."""
    over = [{"clients": [i for i in range(n) if i % 3 == k],
             "upload": {"kind": "exponential", "rate": 1.0 / (4.0 + k)}} for k in (1, 2)]
    return {"download": {"kind": "exponential", "rate": 1.0},
            "compute": {"kind": "exponential", "rate": 10.0},
            "upload": {"kind": "exponential", "rate": 0.25},
            "override": [o for o in over if o["clients"]]}


def fig2a_experiment(*, replicates: int = 5, n: int = 30, horizon: float = 200.0) -> Experiment:
    """[P] Figure 2(a) (module docstring)."""
    problem = {"kind": "quadratic", "n": n, "dim": 3, "mu": 0.5, "L": 1.0,
               "heterogeneity": 1.0, "noise_sd": 0.1, "seed": 0}
    alg_async = {"name": "fedasync", "client_rule": "sgd", "Q": 10, "eta": 0.05,
                 "batch": 1, "beta": 0.5}
    alg_sync = {"name": "fedavg", "client_rule": "sgd", "Q": 10, "eta": 0.05, "batch": 1,
                "participation": 1.0}
    d = fig2a_delays(n)
    arms = (
        Arm("fig2a/async", "async", "asynchronous (FedAsync)",
            scenario_dict("fig2a-async", problem, alg_async, d, horizon=horizon,
                          metrics=("dist_sq",), every=50, trigger={"kind": "every_upload"})),
        Arm("fig2a/sync", "sync", "synchronous (FedAvg, all clients)",
            scenario_dict("fig2a-sync", problem, alg_sync, d, horizon=horizon,
                          metrics=("dist_sq",), every=1)),
    )
    claims = (Claim("n30", "busy", "async", ">", "sync", stat="mean",
                    text="time-averaged share of active clients: asynchronous > synchronous"),)
    return Experiment(
        name="persafl_fig2a", title="PersA-FL Fig. 2(a): concurrency, async vs sync",
        source="[P] Sec. 6, Figure 2(a)",
        claim='"The orange curve in Figure 2(a) shows the proportion of active users, which '
              'is up to 80% on average over time ... the concurrency level for asynchronous '
              'methods is considerably higher than that of their synchronous counterparts"',
        analogue=f"n={n}; download Exp(mean 1), upload Exp(mean 4/5/6), compute Exp(mean "
                 "0.1); no think time, so an asynchronous client is idle never: the "
                 "analogue tests the ordering, and reports (does not test) the 80% level, "
                 "which in [P] depends on idle times it does not describe",
        settings=(Setting("n30", f"n={n}", arms),), claims=claims, horizon=horizon,
        replicates=replicates, curve_metric="busy", metrics=("dist_sq",),
        rule="no step size is involved (the timeline does not depend on the model)",
        extra={"gantt": ["fig2a/async", "fig2a/sync"], "gantt_window": 25.0})
