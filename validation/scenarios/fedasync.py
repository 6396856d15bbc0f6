"""The FedAsync case builder shared by [P] Theorems 1-3: one run set per horizon T.

Window model (THEORY_SPEC 10.2(a)) by default: uploader i.i.d. uniform, staleness i.i.d.
uniform on {0..tau}, so [P] Assumption 1 holds by construction and
:func:`fedsim.theory.oracle.fedasync_window_moments` gives the exact measured quantity
(``(1/T) sum_{t<T} E||grad f(w^t)||^2``, the LHS of [P] Theorem 1, eq. (A74)).  With
``physical`` delays, always-busy clients with the engine's provable staleness bound instead.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from fedsim.theory import oracle
from fedsim.validation.cases import (
    Case,
    Row,
    RunSpec,
    SimCheck,
    cached,
    constants_records,
    resolve_hypotheses,
    scenario_dict,
)

from fedsim.errors import require

__all__ = ["persafl_case", "physical_tau", "window_exact"]


def physical_tau(delays: dict, n: int, Q: int) -> int:
    """The engine's provable staleness bound for always-busy FedAsync clients."""
    from fedsim.config import DelaysConfig
    from fedsim.engine import physical_staleness_bound

    tau = physical_staleness_bound(DelaysConfig.from_dict(delays), n, Q, False, 1)
    require(math.isfinite(tau), "delays", delays, "must have bounded supports")
    return int(tau)


def _uniform_pmf(tau: int) -> list[float]:
    return [1.0 / (tau + 1)] * (tau + 1)


def window_exact(problem, option: str, Q: int, eta: float, tau_sim: int, T: int, *,
                  batch: int, cache_key: Any = None, **kw: Any) -> float:
    def compute() -> float:
        df = oracle.fedasync_window_moments(problem, option, Q, eta, 1.0,
                                            _uniform_pmf(tau_sim), T, np.zeros(problem.dim),
                                            batch=batch, record_every=T, **kw)
        return float(df["avg_grad_sq"].iloc[-1])

    return float(cached("window", (cache_key, option, Q, eta, tau_sim, T, batch,
                                   sorted(kw.items())), compute))


def persafl_case(theorem: str, name: str, title: str, description: str, problem_cfg: dict,
                  problem, rule: dict, Q: int, tau_sim: int, tau_decl: int,
                  horizons: list[int], replicates: int, metric: str, quantity: str,
                  bound_fn, eta_of_T, modes: list[str], exact_fn=None, control: str = "",
                  expected: str = "", record_extra: dict | None = None,
                  notes: list[str] | None = None,
                  facts: dict[str, tuple[bool, str]] | None = None,
                  physical: dict | None = None) -> Case:
    """A FedAsync case for [P] Theorems 1-3: one run set per T.

    Window model by default; ``physical`` (a ``[delays]`` table) runs always-busy physical
    clients instead, with ``tau_sim`` the engine's provable staleness bound for them.
    """
    runs, rows = [], []
    for T in horizons:
        eta = float(eta_of_T(T))
        key = f"{theorem}/{name}/T{T}"
        if physical is None:
            alg = dict(name="fedasync", model="window", Q=Q, eta=eta, beta=1.0, tau=tau_sim,
                       delay_pmf=_uniform_pmf(tau_sim), **rule)
        else:
            alg = dict(name="fedasync", model="physical", Q=Q, eta=eta, beta=1.0, **rule)
        sc = scenario_dict(f"{theorem}-{name}-T{T}", problem_cfg, alg, T,
                           [metric.removeprefix("avg_")], record_extra=record_extra,
                           delays=physical)
        runs.append(RunSpec(key, sc, metric, (T,), replicates))
        ex = exact_fn(eta, T) if exact_fn is not None else math.nan
        for mode in modes:
            res = resolve_hypotheses(bound_fn(T=T, eta=eta, mode=mode, tau=tau_decl), facts or {})
            rows.append(Row(mode, T, key, res, float(res.value), ex, control, expected))
    if physical is None:
        checks = [SimCheck("H1.4 staleness <= tau (measured)", tau_decl,
                           f"window model: s_t i.i.d. uniform on {{0..{tau_sim}}}, uploader "
                           f"i.i.d. uniform (Assumption 1 by construction); declared tau = "
                           f"{tau_decl}", replaces=("Asm 1",))]
    else:
        checks = [SimCheck("H1.4(i) staleness <= tau (measured)", tau_decl,
                           f"physical clients with bounded delays: provable tau = {tau_sim} "
                           f"(fedsim.engine.physical_staleness_bound); declared tau = "
                           f"{tau_decl}")]
    if rule.get("client_rule") == "moreau":
        checks.append(SimCheck("inner accuracy ||grad h_tilde|| <= nu (measured)", 0,
                               "inner gradient descent stops at ||grad h~|| <= nu; every "
                               "solve that hit the iteration cap is counted",
                               "inner_failures", replaces=("inner accuracy",)))
    return Case(theorem, name, title, description, "T", quantity, -0.5, runs, rows,
                constants_records(problem), checks, list(notes or []), control, expected)


