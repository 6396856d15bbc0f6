"""The constants of the personalised-FL theorems a scenario fixes: [F] Per-FedAvg Theorem 4.5
(:func:`perfedavg_constants`, as the ``perfedavg-quad`` family) and [Y] AsyPFL Theorems 1-2
(:func:`asypfl_constants`, as the ``asypfl*-quad`` families); the derivations are listed in
:mod:`fedsim.validation.scenario_constants`."""

from __future__ import annotations

from typing import Any

import numpy as np
from fedsim.validation.constants_record import ScenarioConstants, x_star_distance

__all__ = ["perfedavg_constants", "asypfl_constants"]

_MAML_VARIANT = {"maml": "MAML", "fomaml": "FO", "hfmaml": "HF"}


def perfedavg_constants(sc: ScenarioConstants, scenario: Any, problem: Any,
                        w0: np.ndarray) -> None:
    """Fill ``sc`` with [F] Theorem 4.5's constants of a synchronous FedAvg run with a MAML
    client rule (else say why each is lacking, and a failing "Per-FedAvg algorithm" fact)."""
    alg = scenario.algorithm
    rule = alg.client_rule
    if alg.name != "fedavg" or rule not in _MAML_VARIANT:
        why = (f"[F] Theorem 4.5 analyses synchronous FedAvg rounds with a MAML client rule; "
               f"the run is {alg.name!r} with client rule {rule!r}")
        for k in ("sigma_G2", "gamma_G2", "f_gap", "tau", "n"):
            sc.lack(k, why)
        sc.facts["Per-FedAvg algorithm"] = (False, why)
        return
    from fedsim.problems.perfedavg_constants import perfedavg_constants_table

    alpha = sc.values.get("alpha")
    try:
        tab = perfedavg_constants_table(problem, alpha=alpha, w0=w0)
    except TypeError as exc:
        for k in ("sigma_G2", "gamma_G2", "f_gap"):
            sc.lack(k, str(exc))
        tab = None
    if tab is not None:
        cs = dict(tab.items())
        for k in ("sigma_G2", "gamma_G2", "sigma_H2", "gamma_H2", "rho", "B"):
            if k in cs:
                sc.put(k, float(cs[k].value), f"Per-FedAvg constant ({cs[k].tag.name}): "
                                              f"{cs[k].reason}")
        if "f_gap_maml" in cs:
            sc.put("f_gap", float(cs["f_gap_maml"].value), f"F(w0) - F_inf of the MAML "
                                                           f"objective at alpha = {alpha:g}")
        else:
            sc.lack("f_gap", "no exact MAML-objective gap for this problem kind (quadratics "
                             "only)")
    sc.put("tau", int(alg.get("Q") or 1), "algorithm.Q (local steps per round)")
    sc.put("n", int(scenario.problem.n), "problem.n")
    sc.put("r", float(alg.get("participation") or 1.0), "algorithm.participation")
    if "eta" in sc.values:
        sc.put("beta", float(sc.values["eta"]), "algorithm.eta (the local step beta)")
    b = int(alg.get("batch") or 1)
    sc.put("Dp", b, "algorithm.batch (|D|: the outer gradient, fedsim.local.maml)")
    sc.put("D", int(alg.get("batch_inner") or b), "algorithm.batch_inner (|D'|: the inner "
                                                   "step; default batch)")
    if rule != "fomaml":
        sc.put("Dpp", int(alg.get("batch_hess") or b), "algorithm.batch_hess (|D''|; default "
                                                       "batch)")
    sc.put("variant", _MAML_VARIANT[rule], f"client_rule = {rule!r}")
    if rule == "hfmaml" and isinstance(alg.get("hf_delta"), int | float):
        sc.put("hf_delta", float(alg.get("hf_delta")), "algorithm.hf_delta")
    if rule == "maml":
        sc.facts["H10"] = (True, "fedsim's maml rule draws D, D', D'' fresh and independent "
                                 "per local step")
    mix = float(alg.get("server_mix") or 1.0)
    if mix != 1.0:
        sc.facts["server average"] = (False, f"server_mix = {mix:g}: the server does not "
                                             "replace its model by the clients' average")


def asypfl_constants(sc: ScenarioConstants, scenario: Any, problem: Any,
                     w0: np.ndarray) -> None:
    """Fill ``sc`` with [Y] Theorems 1-2's constants of an AsyPFL run (else say why each is
    lacking); ``D2 = ||w0 - x*||^2`` (or its certified upper bound)."""
    alg = scenario.algorithm
    if alg.name != "asypfl":
        for k in ("p", "sigma2", "Gamma", "E", "pi", "chi2", "D2"):
            sc.lack(k, f"[Y]'s theorems analyse AsyPFL; the run is {alg.name!r}")
        return
    from fedsim.problems.asypfl_constants import asypfl_constants_table

    n = int(scenario.problem.n)
    b = int(alg.get("batch") or 1)
    try:
        tab = asypfl_constants_table(problem, batch=b, pi=[1] if n == 1 else None)
    except (TypeError, ValueError) as exc:
        for k in ("p", "sigma2", "Gamma", "chi2"):
            sc.lack(k, str(exc))
        tab = None
    if tab is not None:
        cs = dict(tab.items())
        for k in ("L", "mu", "Gamma", "chi2"):
            if k in cs:
                sc.put(k, float(cs[k].value), f"AsyPFL constant ({cs[k].tag.name}): "
                                              f"{cs[k].reason}")
        for k in ("p", "sigma2", "Sigma2"):
            per = [cs.get(f"{k}_{i}") for i in range(n)]
            if all(c is not None for c in per):
                sc.put(k, [float(c.value) for c in per], f"per client ({per[0].tag.name}): "
                                                          f"{per[0].reason}")
    e = int(alg.get("E") or 1)
    sc.put("E", e, "algorithm.E (local epochs)")
    if n == 1:
        sc.put("pi", [1], "one client: pi = 1 (docs/theory/asypfl.md 6)")
        if e != 1:   # server step t is tick t E, and the decay index r_k is the server step
            sc.facts["tick model"] = (False, f"E = {e}: server step t is tick t E and the "
                                             "step decay counts server steps; the engine is "
                                             "the theorems' tick model for n = 1, E = 1 only "
                                             "(validation/families/asypfl.py)")
    else:
        sc.lack("pi", f"n = {n}: the engine's server sets pi_k from the measured delays at "
                      "run time and is not the theorems' tick model (sequential reads; "
                      "docs/theory/asypfl.md 6); give --pi for a bound of the tick model")
    dist = x_star_distance(problem, scenario.problem.kind, w0)
    if isinstance(dist, str):
        sc.lack("D2", dist)
    else:
        sc.put("D2", dist[0] ** 2, f"({dist[1]})^2")
