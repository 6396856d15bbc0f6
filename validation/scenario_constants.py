"""Every constant of a theorem that a scenario determines, with how it was derived.

One place serves ``fedsim bounds THEOREM --scenario FILE`` (:mod:`fedsim.theory.cli`) and
``fedsim run FILE --bound THEOREM`` (:mod:`fedsim.validation.run_bound`).
:func:`scenario_constants` returns the theorem's keyword arguments the scenario fixes
(``values``), how each was derived (``sources``), the required ones it cannot fill and why
(``missing``), and what the scenario settles of the theorem's hypotheses (``facts``, for
:func:`fedsim.validation.cases.resolve_hypotheses`).  The derivations mirror the suite
families' (:mod:`fedsim.validation.families`), so a scenario of a family gives the family's
bound:

* problem constants by name (``L``, ``mu``, ``rho``, ``sigma_g2``, ``gamma_g2``, ``G``,
  ``B``, ``zeta`` ...: ``Problem.constants``, THEORY_SPEC 9);
* algorithm fields (``Q``, ``eta``, ``beta``, ``lam``, ``nu``, ``M``, ``batch -> b``, a
  numeric ``alpha``, a constant AREA step ``alpha``), ``horizon.steps -> T, K``;
* [A] Theorems 7/8: ``p_i = rate_i / (rate_s + sum_j rate_j)``, ``p_s = rate_s / (...)``
  from the iterate model's Poisson clocks ([A] Example 3, :func:`fedsim.engine.models.area.
  event_probabilities`); ``sigma = sqrt(sigma_g2 / b)`` (H7.2) and ``sigma2 = sigma_g2 / b``
  (Theorem 8's variance bound, THEORY_SPEC 9.4); ``R0 = R = ||w0 - x*||`` (quadratic: x*
  exact; logistic: plus the certificate's distance bound, THEORY_SPEC 9.4);
  ``r_init_i = ||w0 - x* + (c/d) M grad f_i(x*)||`` (THEORY_SPEC 6.c, the exact r_i);
* [P] Theorems 1-3: ``tau`` = the provable staleness (window model: its ``tau`` by
  construction; physical model: :func:`fedsim.engine.staleness.physical_staleness_bound`,
  [P] Assumption 1); ``f_gap = f(w0) - f_star_P``, ``F_gap = F_maml(w0, alpha) - f_star_P``
  (Theorem 2), ``F_me(w0, lam) - f_star_P`` (Theorem 3), ``f_star_P <= inf`` of the
  objective (the families' gaps);
* [F] Per-FedAvg Theorem 4.5 (as the ``perfedavg-quad`` family): ``sigma_G2, gamma_G2,
  sigma_H2, gamma_H2, rho, B`` and ``f_gap = F(w0) - F_inf`` of the MAML objective
  (:func:`fedsim.problems.perfedavg_constants.perfedavg_constants_table` at the run's
  ``alpha`` and ``w0``), ``tau = Q`` local steps, ``n``, ``r = participation``, ``beta = eta``,
  the batches ``D = batch_inner`` (fedsim's D', the inner step), ``Dp = batch`` (the outer
  gradient), ``Dpp = batch_hess`` (:mod:`fedsim.local.maml`), ``variant`` from the rule;
* [Y] AsyPFL Theorems 1-2 (as the ``asypfl*-quad`` families): ``L, mu, p, sigma2, Gamma,
  chi2`` (:func:`fedsim.problems.asypfl_constants.asypfl_constants_table`), ``E``,
  ``D2 = ||w0 - x*||^2`` and, for one client only, ``pi = [1]`` (with n >= 2 the engine's
  server sets pi_k from the measured delays and is not the theorems' tick model; with
  E != 1 a failing "tick model" fact: server step t is tick t E).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from fedsim.validation.constants_record import ScenarioConstants, x_star_distance
from fedsim.validation.personal_constants import asypfl_constants, perfedavg_constants

__all__ = ["ScenarioConstants", "scenario_constants"]

_ALG_FIELDS = (("Q", "Q"), ("eta", "eta"), ("beta", "beta"), ("lam", "lam"), ("nu", "nu"),
               ("M", "M"))
_AREA = ("theorem7", "theorem8")
_PERSAFL = ("theorem1", "theorem2", "theorem3")


def _tau(sc: ScenarioConstants, scenario: Any) -> None:
    alg = scenario.algorithm
    if alg.name not in ("fedasync", "fedbuff", "asfedavg"):
        sc.lack("tau", f"[P] Assumption 1's tau is the staleness of asynchronous FedAsync; "
                       f"algorithm {alg.name!r} is not analysed by the theorem")
        return
    from fedsim.engine.models import model_of

    home = model_of(scenario)
    if home.staleness is None:
        sc.lack("tau", f"execution model {home.key!r} declares no provable staleness")
        return
    st = home.staleness(scenario)
    if math.isfinite(st.bound):
        sc.put("tau", int(st.bound), st.why)
    else:
        sc.lack("tau", f"{st.why}; give --tau for a bound conditional on Assumption 1")
    sc.facts.update(st.facts)


def _area(sc: ScenarioConstants, scenario: Any, problem: Any, w0: np.ndarray,
          theorem: str) -> None:
    alg = scenario.algorithm
    b = int(alg.get("batch") or 1)
    cv = problem.constants.values()
    if "sigma_g2" in cv and math.isfinite(float(cv["sigma_g2"])):
        if theorem == "theorem7":
            sc.put("sigma", math.sqrt(float(cv["sigma_g2"]) / b),
                   f"sqrt(sigma_g2 / b), b = {b} (H7.2)")
        else:
            sc.put("sigma2", float(cv["sigma_g2"]) / b, f"sigma_g2 / b, b = {b}")
    if alg.name != "area":
        for k in ("p", "p_s"):
            sc.lack(k, f"[A]'s event law is AREA's; algorithm {alg.name!r} has none")
        return
    if alg.get("model") == "iterate_model":
        from fedsim.engine.models.area.schedule import event_probabilities

        p, ps = event_probabilities(scenario)
        sc.put("p", [float(x) for x in p], "rate_i / (rate_s + sum rates): iterate model's "
                                            "Poisson clocks ([A] Example 3)")
        sc.put("p_s", float(ps), "rate_s / (rate_s + sum rates)")
        sc.facts["H7.3" if theorem == "theorem7" else "iid_events"] = (
            True, "iterate model: independent Poisson clocks, x_(i,0) = x_(s,0)")
    else:
        why = ("Algorithm 1 (model = 'algorithm'): the events are not i.i.d. with fixed "
               "probabilities ([A] footnote 3); p, p_s exist in the iterate model only")
        for k in ("p", "p_s"):
            sc.lack(k, why)
        sc.facts["H7.3" if theorem == "theorem7" else "iid_events"] = (False, why)
    dist = x_star_distance(problem, scenario.problem.kind, w0)
    name = "R0" if theorem == "theorem7" else "R"
    if isinstance(dist, str):
        sc.lack(name, dist)
    else:
        sc.put(name, dist[0], dist[1])
        if theorem == "theorem8":
            sc.facts["minimiser_exists"] = (True, dist[1])
    a = alg.get("alpha")
    kind = getattr(a, "kind", None)
    if theorem == "theorem8" and kind == "constant":
        sc.put("alpha", float(a.value), "algorithm.alpha (constant step)")
    if theorem == "theorem7":
        sc.facts["H7.4"] = ((True, "the run uses the Theorem 7 schedule of these constants")
                            if kind == "theorem7" else
                            (False, f"the run's step schedule is {kind!r}, not the "
                                    "prescribed alpha_k = c/(k+d) (alpha.kind = 'theorem7')"))
        if scenario.problem.kind == "quadratic" and getattr(problem, "noise", "") == "additive":
            sc.facts["H7.2"] = (True, "additive noise, fresh at each local step, independent of "
                                      "the events; sigma^2 = max_i tr(S_i)/b")
        _r_init(sc, problem, w0)


def _r_init(sc: ScenarioConstants, problem: Any, w0: np.ndarray) -> None:
    need = ("L", "mu", "M", "p", "p_s", "sigma", "zeta", "R0")
    if not all(k in sc.values for k in need) or not hasattr(problem, "grad_at_xstar"):
        return
    from fedsim.theory import area as tarea

    v = sc.values
    try:
        c = tarea.area_constants(L=v["L"], mu=v["mu"], M=v["M"], p=np.asarray(v["p"]),
                                 p_s=v["p_s"], sigma=v["sigma"], zeta=v["zeta"])
    except (ValueError, ArithmeticError):
        return
    c0, d0 = float(c["c"]), float(c["d"])
    r = np.linalg.norm(w0 - problem.x_star + (c0 / d0) * v["M"] *
                       np.asarray(problem.grad_at_xstar), axis=1)
    sc.put("r_init", [float(x) for x in r], "||w0 - x* + alpha_0 M grad f_i(x*)||, the exact "
                                           "r_i (THEORY_SPEC 6.c)")


def _gaps(sc: ScenarioConstants, scenario: Any, problem: Any, w0: np.ndarray,
          theorem: str) -> None:
    cv = problem.constants.values()
    if "f_star_P" not in cv:
        return
    lo = float(cv["f_star_P"])
    alg = scenario.algorithm
    if theorem == "theorem1":
        sc.put("f_gap", float(problem.f(w0)) - lo, "f(w0) - f_star_P")
    elif theorem == "theorem2" and isinstance(alg.get("alpha"), int | float):
        a = float(alg.get("alpha"))
        sc.put("F_gap", float(problem.F_maml(w0, a)) - lo, f"F_maml(w0, alpha={a:g}) - f_star_P")
    elif theorem == "theorem3" and alg.get("lam") is not None:
        lam = float(alg.get("lam"))
        sc.put("F_gap", float(problem.F_me(w0, lam)) - lo, f"F_me(w0, lam={lam:g}) - f_star_P")
    rule = alg.client_rule
    want = {"theorem1": ("sgd",), "theorem2": ("maml", "fomaml", "hfmaml"),
            "theorem3": ("moreau",)}[theorem]
    label = {"theorem1": "Option A", "theorem2": "Option B", "theorem3": "Option C"}[theorem]
    sc.facts[label] = (rule in want, f"the run's client rule is {rule!r}")


def _constants_table(problem: Any, kind: str) -> Any:
    """``problem.constants``; a table that cannot be built (a plug-in problem kind's code,
    :mod:`fedsim.problems.registry`) is a one-line ConfigError, never a traceback."""
    from fedsim.errors import ConfigError, FedsimError
    from fedsim.plugins import first_line

    try:
        return problem.constants
    except (FedsimError, KeyboardInterrupt):
        raise
    except Exception as exc:  # noqa: BLE001 - a plug-in problem's table is foreign code
        raise ConfigError(f"problem: the {kind} problem has no constants table "
                          f"({first_line(exc)})") from None


def scenario_constants(scenario: Any, theorem: Any, names: Any = None) -> ScenarioConstants:
    """The keyword arguments of ``theorem`` (a registry entry or its name) that ``scenario``
    determines; ``names`` (default: the function's keywords) restricts the output, and the
    required ones left unfilled are in ``missing`` with the reason."""
    import inspect

    from fedsim.theory.registry import get_theorem

    from fedsim import config
    from fedsim.engine.setup import initial_model

    th = get_theorem(theorem) if isinstance(theorem, str) else theorem
    sig = inspect.signature(th.function).parameters
    names = set(sig) if names is None else set(names)
    problem = config.build_problem(scenario.problem)
    w0 = initial_model(problem, scenario)
    sc = ScenarioConstants()
    for k, c in _constants_table(problem, scenario.problem.kind).items():
        sc.put(k, float(c.value), f"problem constant ({c.tag.name})")
    alg = scenario.algorithm
    for src, dst in _ALG_FIELDS:
        try:
            v = alg.get(src)
        except (KeyError, AttributeError, TypeError, ValueError):
            v = None
        if isinstance(v, int | float) and not isinstance(v, bool):
            sc.put(dst, v, f"algorithm.{src}")
    a = getattr(alg, "alpha", None)
    if isinstance(a, int | float) and not isinstance(a, bool):
        sc.put("alpha", float(a), "algorithm.alpha")
    sc.put("b", int(alg.get("batch") or 1), "algorithm.batch")
    if scenario.horizon.steps is not None:
        for h in ("T", "K"):
            sc.put(h, int(scenario.horizon.steps), "horizon.steps")
    if th.name in _AREA:
        _area(sc, scenario, problem, w0, th.name)
    if th.name in _PERSAFL:
        _tau(sc, scenario)
        _gaps(sc, scenario, problem, w0, th.name)
    if th.name == "perfedavg_theorem4_5":
        perfedavg_constants(sc, scenario, problem, w0)
    if th.name in ("asypfl_theorem1", "asypfl_theorem2"):
        asypfl_constants(sc, scenario, problem, w0)
    for k, par in sig.items():
        if k in names and par.default is inspect.Parameter.empty and k not in sc.values:
            sc.lack(k, "not determined by the scenario: fedsim has no derivation of it for "
                       f"{th.name} (give --{k.replace('_', '-')})")
    sc.values = {k: v for k, v in sc.values.items() if k in names}
    sc.sources = {k: v for k, v in sc.sources.items() if k in sc.values}
    sc.missing = {k: v for k, v in sc.missing.items()
                  if k in names and sig[k].default is inspect.Parameter.empty}
    return sc
