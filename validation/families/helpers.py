"""The families' helpers: parameters to the engine's scenario dict, the event law, the problem.

Public, so that a family written outside fedsim (a plug-in) needs nothing private:
:func:`event_probabilities` (p_i, p_s from probabilities or Poisson rates),
:func:`poisson_delays`, :func:`engine_scenario` (the one scenario-dict helper of the suites,
:func:`fedsim.validation.cases.scenario_dict`, with keyword arguments),
:func:`build_problem_from`, :func:`constants_of`, :func:`required`, :func:`params_digest`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from fedsim.validation.cases import SEED, constants_records, problem_from_dict, scenario_dict

from fedsim.errors import check_positive, require

__all__ = ["required", "params_digest", "event_probabilities", "engine_scenario",
           "build_problem_from", "constants_of", "poisson_delays"]


def required(q: Mapping[str, Any], name: str) -> Any:
    """``q[name]``, which must not be None (a parameter without a derived default, such as a
    horizon given as None: one-line ConfigError)."""
    require(q.get(name) is not None, name, None, "must be given (it has no derived default)")
    return q[name]


def params_digest(params: Mapping[str, Any]) -> str:
    """A stable 12-hex digest of a parameter dict (names a point on disk)."""
    blob = json.dumps({k: params[k] for k in sorted(params)}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def event_probabilities(n: int, *, p: Sequence[float] | None = None,
                        rates: Sequence[float] | None = None, p_s: float | None = None,
                        rate_s: float | None = None) -> tuple[np.ndarray, float, np.ndarray,
                                                              float]:
    """Event law of AREA's iterate model ([A] eqs (5)-(7)) from probabilities or rates.

    Give either ``p`` (n client probabilities; ``p_s = 1 - sum p`` if omitted), or ``rates``
    and ``rate_s`` (Poisson rates: ``p_i = rate_i / total``), or only ``p_s`` (equal
    ``p_i = (1 - p_s)/n``).  Returns ``(p, p_s, rates, rate_s)``, the last two the engine's
    Poisson clock rates: the given rates themselves, else ``p`` and ``p_s`` (either way the
    clocks realise exactly ``p``).
    """
    if rates is not None:
        r = np.asarray(rates, dtype=np.float64).reshape(-1)
        require(r.size == n, "rates", list(r), f"must have n = {n} entries")
        require(rate_s is not None, "rate_s", rate_s, "is required with rates")
        for i, v in enumerate(r):
            check_positive(f"rates[{i}]", float(v))
        rs = check_positive("rate_s", rate_s)
        tot = float(r.sum()) + rs
        return r / tot, rs / tot, r.copy(), float(rs)
    elif p is not None:
        pv = np.asarray(p, dtype=np.float64).reshape(-1)
        require(pv.size == n, "p", list(pv), f"must have n = {n} entries")
        for i, v in enumerate(pv):
            check_positive(f"p[{i}]", float(v))
        ps = 1.0 - float(pv.sum()) if p_s is None else float(p_s)
        check_positive("p_s", ps)
        require(abs(float(pv.sum()) + ps - 1.0) <= 1e-9, "p", list(pv),
                f"must sum with p_s={ps:g} to 1")
    else:
        require(p_s is not None, "p_s", p_s, "is required without p or rates")
        ps = check_positive("p_s", p_s)
        require(ps < 1.0, "p_s", ps, "must be < 1")
        pv = np.full(n, (1.0 - ps) / n)
    return pv, float(ps), pv.copy(), float(ps)


def engine_scenario(name: str, problem: Mapping[str, Any], algorithm: Mapping[str, Any],
                    steps: int, metrics: Sequence[str], *, every: int = 1,
                    delays: Mapping[str, Any] | None = None,
                    trigger: Mapping[str, Any] | None = None, seed: int = SEED,
                    record_extra: Mapping[str, Any] | None = None) -> dict:
    """An engine scenario dict (the ``fedsim run`` TOML shape) for one simulated run set
    (:func:`fedsim.validation.cases.scenario_dict`, keyword arguments)."""
    return scenario_dict(name, dict(problem), dict(algorithm), steps, list(metrics), every,
                         delays=None if delays is None else dict(delays),
                         trigger=None if trigger is None else dict(trigger),
                         record_extra=None if record_extra is None else dict(record_extra),
                         seed=seed)


#: the problem of a ``[problem]`` table (``{"kind": ..., **kwargs}``); the suites' helper
build_problem_from = problem_from_dict
#: the problem's tagged constants as records (for reports); the suites' helper
constants_of = constants_records


def poisson_delays(rates: Sequence[float]) -> dict:
    """A ``[delays]`` table giving client i an exponential compute time of rate ``rates[i]``."""
    r = [float(v) for v in rates]
    d: dict[str, Any] = {"compute": {"kind": "exponential", "rate": r[0]}}
    over = [{"clients": [i], "compute": {"kind": "exponential", "rate": v}}
            for i, v in enumerate(r) if i > 0 and v != r[0]]
    if over:
        d["override"] = over
    return d
