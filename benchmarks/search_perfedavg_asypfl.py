"""Violation search for issue 13 item 5 with the exact oracles (no simulation noise).

1. AsyPFL Theorem 1 at small T where ||w0-w*||^2 - 2B < 0: random 1-d / 2-client tick-model
   instances with E_k = 1 (certified regime), literal and corrected bounds vs the exact gap.
2. AsyPFL Theorem 2's T^{-2/3}: the exact error of the decayed step times (gamma+T) and
   (gamma+T)^{2/3}, and the fitted log-log slope.
3. Per-FedAvg Theorem 4.5, r = 1/2: the smallest bound/exact over a (tau, beta) grid.

Run: ``.venv/bin/python benchmarks/search_perfedavg_asypfl.py``.
"""

from __future__ import annotations

import numpy as np
from fedsim.theory.asypfl import theorem1, theorem2, tick_oracle
from fedsim.theory.perfedavg import perfedavg_quadratic_exact, theorem4_5


def search_t1(n_inst: int = 300, seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    worst_lit, worst_cor, neg_bracket, lit_viol = np.inf, np.inf, 0, 0
    for _ in range(n_inst):
        M = int(rng.integers(1, 3))
        a = rng.uniform(0.2, 6.0, size=M)
        b = rng.normal(size=M) * rng.uniform(0, 1)
        s = rng.uniform(0, 2, size=M)
        p = np.full(M, 1.0 / M)
        ws = float(p @ (a * b) / (p @ a))
        Fs = float(p @ (0.5 * a * (ws - b) ** 2))
        L, mu = float(a.max()), float(a.min())
        eta = rng.uniform(0.2, 1.0) / (4 * L)
        w0 = ws + rng.normal() * rng.choice([0.0, 0.01, 0.1, 1.0])
        T = 12
        o = tick_oracle(A=[[[x]] for x in a], b=[[x] for x in b], p=p, pi=[1] * M, E=1,
                        eta=eta, w0=[w0], T=T, C=[[[x]] for x in s])
        kw = dict(L=L, mu=mu, eta=eta, T=np.arange(1, T + 1), D2=(w0 - ws) ** 2, p=p,
                  sigma2=s, Gamma=Fs, E=1, pi=[1] * M, chi2=np.inf)
        lit = theorem1(**kw, mode="paper_literal")
        cor = theorem1(**kw)
        ex = o["gap"][1:]
        if (w0 - ws) ** 2 - 2 * lit.derived_constants["B"] < 0:
            neg_bracket += 1
        ok = ex > 0
        worst_lit = min(worst_lit, float(np.min(lit.value[ok] / ex[ok])))
        worst_cor = min(worst_cor, float(np.min(cor.value[ok] / ex[ok])))
        lit_viol += int(np.any(lit.value < ex))
    return dict(instances=n_inst, negative_bracket=neg_bracket, literal_violated=lit_viol,
                min_literal_over_exact=worst_lit, min_corrected_over_exact=worst_cor)


def rate_t2() -> dict:
    T = 20000
    o = tick_oracle(A=[[[1.0]]], b=[[0.0]], p=[1.0], pi=[1], E=1,
                    eta=lambda t: 2.0 / (8 + t), w0=[0.0], T=T, C=[[[1.0]]])
    hs = np.array([100, 1000, 10000, 20000])
    g = o["gap"][hs]
    slope = float(np.polyfit(np.log(hs[1:]), np.log(g[1:]), 1)[0])
    lit = theorem2(L=1, mu=1, T=hs, D2=0.0, p=[1], sigma2=[1], Gamma=0, E=1, pi=[1], chi2=0,
                   mode="paper_literal").value
    return dict(T=hs.tolist(), exact_times_gammaT=(g * (8 + hs)).tolist(),
                slope_1e3_to_2e4=slope, literal_over_exact=(lit / g).tolist())


def search_pf() -> list[tuple]:
    out = []
    for tau in (100, 1000, 10000, 100000):
        beta = 1e-8 / tau
        kw = dict(L=1.0, alpha=1e-3, sigma_G2=0.0, gamma_G2=1.0, gamma_H2=0.25, rho=1.0,
                  B=2.5, f_gap=0.0, tau=tau, K=10**11, n=2, r=0.5, beta=beta)
        b = theorem4_5(**kw, mode="paper_literal").value
        e = perfedavg_quadratic_exact(A=[[1.0]], centers=[[-1.0], [1.0]], alpha=1e-3,
                                      beta=beta, tau=tau, K=1e11, w0=[0.0], s=1)
        out.append((tau, beta, e, b, b / e))
    return out


if __name__ == "__main__":
    print("AsyPFL Thm 1 small-T search:", search_t1())
    print("AsyPFL Thm 2 rate:", rate_t2())
    for tau, beta, e, b, q in search_pf():
        print(f"Per-FedAvg r=1/2 tau={tau} beta={beta:.0e} exact={e:.6e} literal={b:.6e} "
              f"ratio={q:.4f}")
