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
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["ScenarioConstants", "scenario_constants"]

_ALG_FIELDS = (("Q", "Q"), ("eta", "eta"), ("beta", "beta"), ("lam", "lam"), ("nu", "nu"),
               ("M", "M"))
_AREA = ("theorem7", "theorem8")
_PERSAFL = ("theorem1", "theorem2", "theorem3")


@dataclass
class ScenarioConstants:
    """What a scenario fixes of a theorem's keyword arguments."""

    values: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)
    facts: dict[str, tuple[bool | None, str]] = field(default_factory=dict)

    def put(self, name: str, value: Any, source: str) -> None:
        self.values[name] = value
        self.sources[name] = source
        self.missing.pop(name, None)

    def lack(self, name: str, why: str) -> None:
        if name not in self.values:
            self.missing.setdefault(name, why)

    def resolve(self, result: Any) -> Any:
        """``result`` with the hypotheses the scenario settles resolved
        (:func:`fedsim.validation.cases.resolve_hypotheses`: a failing one makes it
        NOT_APPLICABLE)."""
        from fedsim.theory.result import Hypothesis, Status
        from fedsim.validation.cases import resolve_hypotheses

        open_ = {k for k in self.facts
                 if any(h.holds is None and h.name.startswith(k) for h in result.hypotheses)}
        result = resolve_hypotheses(result, self.facts)
        extra = [Hypothesis(f"{k} (scenario)", False, f"scenario: {why}")
                 for k, (holds, why) in self.facts.items() if k not in open_ and holds is False]
        if extra:
            result.hypotheses = [*result.hypotheses, *extra]
            result.status = Status.NOT_APPLICABLE
        return result

    def table(self, overridden: Any = ()) -> str:
        """The filled and unfilled constants as text lines (``overridden``: names given
        otherwise, marked so)."""
        rows = ["  constants from the scenario:"]
        for k, v in self.values.items():
            if k in overridden:
                rows.append(f"    {k}: given on the command line (the scenario's value is not "
                            "used)")
                continue
            shown = (np.array2string(np.asarray(v), precision=4, separator=", ")
                     if np.ndim(v) else f"{v:.6g}" if isinstance(v, float) else str(v))
            rows.append(f"    {k} = {shown}  ({self.sources[k]})")
        missing = {k: v for k, v in self.missing.items() if k not in overridden}
        if missing:
            rows.append("  not determined by the scenario:")
            rows += [f"    {k}: {why}" for k, why in missing.items()]
        return "\n".join(rows)


def _x_star_distance(problem: Any, kind: str, w0: np.ndarray) -> tuple[float, str] | str:
    """``(||w0 - x*|| or an upper bound, how)``, or why it is not available."""
    if kind == "quadratic":
        return float(np.linalg.norm(w0 - problem.x_star)), "||w0 - x*||, x* exact (quadratic)"
    if kind in ("logistic", "digits") and hasattr(problem, "solve_global"):
        x, _, cert = problem.solve_global()
        if x is None or not cert.valid:
            return "the logistic objective has no certified minimiser (THEORY_SPEC 9.4)"
        return (float(np.linalg.norm(w0 - x)) + float(cert.dist_bound),
                "||w0 - x_hat|| + the certificate's distance bound (UPPER, THEORY_SPEC 9.4)")
    return f"no certified distance to a minimiser for problem kind {kind!r}"


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
    dist = _x_star_distance(problem, scenario.problem.kind, w0)
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


_MAML_VARIANT = {"maml": "MAML", "fomaml": "FO", "hfmaml": "HF"}


def _perfedavg(sc: ScenarioConstants, scenario: Any, problem: Any, w0: np.ndarray) -> None:
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


def _asypfl(sc: ScenarioConstants, scenario: Any, problem: Any, w0: np.ndarray) -> None:
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
    dist = _x_star_distance(problem, scenario.problem.kind, w0)
    if isinstance(dist, str):
        sc.lack("D2", dist)
    else:
        sc.put("D2", dist[0] ** 2, f"({dist[1]})^2")


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
        _perfedavg(sc, scenario, problem, w0)
    if th.name in ("asypfl_theorem1", "asypfl_theorem2"):
        _asypfl(sc, scenario, problem, w0)
    for k, par in sig.items():
        if k in names and par.default is inspect.Parameter.empty and k not in sc.values:
            sc.lack(k, "not determined by the scenario: fedsim has no derivation of it for "
                       f"{th.name} (give --{k.replace('_', '-')})")
    sc.values = {k: v for k, v in sc.values.items() if k in names}
    sc.sources = {k: v for k, v in sc.sources.items() if k in sc.values}
    sc.missing = {k: v for k, v in sc.missing.items()
                  if k in names and sig[k].default is inspect.Parameter.empty}
    return sc
