"""Fixed Moreau-rule ([P] Option C) cases whose outputs were recorded on main at bd440e6,
before the rule was rewritten as one compiled function (``fedsim.local.moreau``).

``python tests/rules/moreau_cases.py`` rewrites ``tests/rules/data/moreau_bd440e6.npz``
from the tree it runs in (run it only on the tree the file is named after).  The tests
(``tests/rules/test_moreau_compiled.py``) recompute every case and compare.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parent / "data" / "moreau_bd440e6.npz"

#: the rule cases: problem, solver, lam, nu, eta, Q, batch, inner_max_iter
RULE_CASES = {
    "quad_iso_gd": ("quad_iso", "gd", 8.0, 1e-8, 0.05, 3, 1, 1000),
    "quad_iso_exact": ("quad_iso", "exact", 8.0, 0.0, 0.05, 3, 2, 1000),
    "quad_exactgrad_gd": ("quad_zero", "gd", 6.0, 1e-9, 0.1, 2, 1, 1000),
    "quad_iso_gd_capped": ("quad_iso", "gd", 8.0, 1e-14, 0.05, 2, 1, 3),
    "softmax_gd": ("softmax", "gd", None, 1e-6, 0.1, 2, 8, 200),
    "logistic_gd": ("logistic", "gd", None, 1e-7, 0.1, 3, 4, 500),
}

SOFTMAX = {"kind": "softmax", "n_clients": 5, "split": "dirichlet", "a": 0.5,
           "test_fraction": 0.2, "reg": 1e-3, "seed": 0, "min_rows": 5}
QUAD = {"kind": "quadratic", "n": 5, "dim": 3, "mu": 0.2, "L": 1.0, "noise_sd": 0.2,
        "seed": 2}
DELAYS = {"download": {"kind": "exponential", "rate": 5.0},
          "compute": {"kind": "exponential", "rate": 3.0},
          "upload": {"kind": "lognormal", "mu": -1.0, "sigma": 0.5}}

#: the engine cases: scenario dictionaries
ENGINE_CASES = {
    "fedasync_moreau_quad": {
        "name": "m1", "seed": 5, "problem": QUAD,
        "algorithm": {"name": "fedasync", "client_rule": "moreau", "lam": 9.0, "Q": 2,
                      "eta": 0.05, "beta": 0.9},
        "delays": DELAYS, "horizon": {"steps": 300},
        "record": {"metrics": ["grad_sq", "grad_me_sq", "dist_sq"]}},
    "fedasync_moreau_quad_exact": {
        "name": "m2", "seed": 6, "problem": QUAD,
        "algorithm": {"name": "fedasync", "client_rule": "moreau", "lam": 9.0, "Q": 2,
                      "eta": 0.05, "beta": 0.9, "inner_solver": "exact"},
        "delays": DELAYS, "horizon": {"steps": 300},
        "record": {"metrics": ["grad_sq", "grad_me_sq"]}},
    "pfedme_quad": {
        "name": "m3", "seed": 7, "problem": QUAD,
        "algorithm": {"name": "fedavg", "client_rule": "moreau", "lam": 9.0, "Q": 3,
                      "eta": 0.05, "participation": 0.6},
        "delays": DELAYS, "horizon": {"steps": 60},
        "record": {"metrics": ["grad_sq", "grad_me_sq"]}},
    "fedasync_moreau_softmax": {
        "name": "m4", "seed": 3, "problem": SOFTMAX,
        "algorithm": {"name": "fedasync", "client_rule": "moreau", "lam": 12.0, "nu": 1e-6,
                      "inner_max_iter": 300, "Q": 2, "eta": 0.1, "batch": 8,
                      "beta": 0.5},
        "delays": {"compute": {"kind": "exponential", "rate": 1.0}},
        "horizon": {"steps": 60}, "record": {"every": 10, "metrics": ["grad_sq",
                                                                     "test_acc"]}},
    "pfedme_softmax": {
        "name": "m5", "seed": 4, "problem": SOFTMAX,
        "algorithm": {"name": "fedavg", "client_rule": "moreau", "lam": 12.0, "nu": 1e-6,
                      "inner_max_iter": 300, "Q": 2, "eta": 0.1, "batch": 8,
                      "participation": 0.6},
        "delays": {"compute": {"kind": "exponential", "rate": 1.0}},
        "horizon": {"steps": 12}, "record": {"every": 2, "metrics": ["grad_sq",
                                                                    "test_acc"]}},
}


def problem(kind: str):
    """The problems of :data:`RULE_CASES`."""
    from fedsim.config import Scenario
    from fedsim.engine import problem_for
    from fedsim.problems.logistic import LogisticProblem
    from fedsim.problems.quadratic import QuadraticProblem

    if kind == "softmax":
        sc = Scenario.from_dict({"name": "p", "seed": 0, "problem": dict(SOFTMAX),
                                 "algorithm": {"name": "fedasync"},
                                 "horizon": {"steps": 1}})
        return problem_for(sc)
    if kind == "logistic":
        rng = np.random.default_rng(4)
        X = [rng.standard_normal((12, 5)) for _ in range(3)]
        y = [np.where(rng.random(12) < 0.5, -1.0, 1.0) for _ in range(3)]
        return LogisticProblem(X, y, nu_reg=0.05)
    rng = np.random.default_rng(0)
    n, d = 3, 4
    A = []
    for _ in range(n):
        Qm, _ = np.linalg.qr(rng.standard_normal((d, d)))
        A.append(Qm @ np.diag(np.linspace(0.3, 1.0, d)) @ Qm.T)
    b = rng.standard_normal((n, d))
    sd = 0.3 if kind == "quad_iso" else 0.0
    return QuadraticProblem(A, b, noise_cov=sd ** 2 * np.eye(d))


def rule_case(name: str):
    """``(rule, outputs)``: the case's rule and its iterates over 3 rounds of every client
    (client ``i``, round ``r``: ``default_rng(100 r + i)``, from ``w0 = linspace(-1, 1)``)
    plus the counters ``(inner_iters, inner_solves, inner_failures)``."""
    from fedsim.local import MoreauRule

    kind, solver, lam, nu, eta, Q, batch, cap = RULE_CASES[name]
    p = problem(kind)
    L = float(p.constants["L"].value) if solver == "gd" else None
    if lam is None:
        lam = 2.0 * L + 1.0
    rule = MoreauRule(p, eta, Q, batch, lam, nu=nu, inner_max_iter=cap, solver=solver, L=L)
    out = []
    w = np.linspace(-1.0, 1.0, p.dim)
    for r in range(3):
        for i in range(p.n):
            rng = np.random.default_rng(100 * r + i)
            w = rule.round(i, w, np.empty(p.dim), rng).copy()
            out.append(w)
        rng = np.random.default_rng(7 + r)
        w = rule.step(r % p.n, w.copy(), rng)
        out.append(w.copy())
    cnt = np.array([rule.inner_iters, rule.inner_solves, rule.inner_failures])
    return rule, np.array(out), cnt


def engine_case(name: str):
    """The trace of the engine case ``name`` (``fedsim.engine.run``)."""
    from fedsim.config import Scenario
    from fedsim.engine import run

    return run(Scenario.from_dict(ENGINE_CASES[name]))


def record() -> dict[str, np.ndarray]:
    """Every case's outputs, flattened into named arrays."""
    data: dict[str, np.ndarray] = {}
    for name in RULE_CASES:
        _, out, cnt = rule_case(name)
        data[f"rule/{name}/w"] = out
        data[f"rule/{name}/cnt"] = cnt
    for name in ENGINE_CASES:
        tr = engine_case(name)
        data[f"engine/{name}/final_w"] = tr.final_w
        data[f"engine/{name}/time"] = tr.time
        for m, v in tr.metrics.items():
            data[f"engine/{name}/metric/{m}"] = np.asarray(v, dtype=np.float64)
        data[f"engine/{name}/cnt"] = np.array([tr.info.get(k, -1) for k in (
            "inner_iters", "inner_solves", "inner_failures")])
    return data


if __name__ == "__main__":
    DATA.parent.mkdir(exist_ok=True)
    np.savez(DATA, **record())
    print(f"wrote {DATA}", file=sys.stderr)
