"""Speed of the worst-case engine (fedsim.worstcase, issue 32).

Targets: a K = 20 PEP cell in at most 5 s, a K = 40 cell in at most 60 s, a rate
certificate in at most 10 s, on 2 cores.  Each cell prints its solver, status and value,
its wall time and the process's CPU time, where the time went (cvxpy's canonicalisation,
the solver's own solve; the rest is the Gram assembly and cvxpy's set-up), the Gram
dimension and the number of scalar constraints cvxpy hands the solver (the interpolation
rows in brackets); the Gram-interpolant witness of the K_small cell (its replay against the
PEP) is timed too.  The first solve also pays cvxpy's import and first compile (a warm-up
cell runs first and is not a target).  Under load, read the CPU column: wall time is
whatever share of a core the scheduler gives.

    .venv/bin/python benchmarks/worst_case.py            # K = 20 and 40, the rates
    .venv/bin/python benchmarks/worst_case.py --quick    # K = 10 and 20

Reference figures (worstcase helper, round twelve, nice -n 19, load average 1.4 at the start
and 4.3 at the end; L = 1, mu = 0.1, gamma = 1/(2(tau+1)); wall / CPU seconds):
    delayed GD tau=1 K=20: 0.354041, Clarabel optimal 0.09 / 0.09 s, SCS optimal 0.05 / 0.05 s
    delayed GD tau=1 K=40: 0.125171, Clarabel optimal 4.20 / 3.96 s, SCS optimal 0.88 / 0.88 s
        (Gram 40, 2382 constraints, 1560 interpolation rows)
    3 clients zeta^2=0.01 tau=2 K=40: 0.267289, Clarabel optimal_inaccurate 3.88 / 3.86 s,
        SCS optimal 0.62 / 0.62 s
    FedAsync Q=2 beta=0.5 tau=1 K=20: 0.358845, Clarabel optimal 2.82 / 2.80 s, SCS 0.59 s
    nonconvex f_star, delayed GD 1/4, tau=1: K=20 0.215330 (Clarabel optimal_inaccurate
        0.28 s, SCS optimal 1.69 s); K=40 0.107839 (Clarabel optimal 9.67 s, SCS optimal
        80.9 s wall / 25.8 CPU s)
    rate certificates tau = 0, 1, 2, 4: 0.902500, 0.949342, 0.965784, 0.979253, 0.26-0.84 s
Clarabel runs on one thread (fedsim.worstcase.pep.SOLVERS): its default, faer on every core,
spends the same CPU but waits for its second thread under contention (K = 40 at load 6:
11-16 s wall against 5-7.5 s on one thread, both about 3.5 CPU s).
"""

from __future__ import annotations

import argparse
import os
import time

from fedsim.worstcase import FedAsync, FunctionClass, Schedule, delayed_gd, solve_pep
from fedsim.worstcase.gram_witness import gram_witness
from fedsim.worstcase.rate import rate_certificate

__all__ = ["main"]

SC = FunctionClass(kind="strongly_convex", L=1.0, mu=0.1)
NC = FunctionClass(kind="nonconvex", L=1.0)


def _cells(K_small: int, K_big: int) -> list[tuple[str, object, Schedule, float | None]]:
    return [
        (f"delayed GD, tau=1, K={K_small}", delayed_gd(0.25), Schedule.constant(1, K_small),
         None),
        (f"delayed GD, tau=1, K={K_big}", delayed_gd(0.25), Schedule.constant(1, K_big), None),
        (f"delayed GD, 3 clients zeta^2=0.01, round robin tau=2, K={K_big}", delayed_gd(1 / 6),
         Schedule.constant(2, K_big, n=3), 0.01),
        (f"FedAsync Q=2 beta=0.5, tau=1, K={K_small}", FedAsync(eta=0.25, Q=2, beta=0.5),
         Schedule.constant(1, K_small), None),
    ]


def _nonconvex_cells(K_small: int, K_big: int) -> list[tuple[str, object, Schedule]]:
    """avg ||grad f||^2 over f(x_0) - f_* (``nonconvex_norm = "f_star"``), L = 1."""
    return [(f"nonconvex f_star, delayed GD 1/4, tau=1, K={K}", delayed_gd(0.25),
             Schedule.constant(1, K)) for K in (K_small, K_big)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    K_small, K_big = (10, 20) if args.quick else (20, 40)
    print(f"load average: {os.getloadavg()}")
    t0 = time.perf_counter()
    solve_pep(delayed_gd(0.25), SC, Schedule.constant(1, 3), "dist_sq")
    print(f"warm-up (cvxpy import, first compile): {time.perf_counter() - t0:.2f} s")
    print(f"{'cell':62s} {'solver':9s} {'status':19s} {'value':>9s} {'total s':>8s} "
          f"{'cpu s':>7s} {'canon s':>8s} {'solve s':>8s}  Gram  constraints (interp.)")
    cells = [(n, m, s, z, SC, "dist_sq", "f_K") for n, m, s, z in _cells(K_small, K_big)]
    cells += [(n, m, s, None, NC, "avg_grad_sq", "f_star")
              for n, m, s in _nonconvex_cells(K_small, K_big)]
    for name, method, sched, zeta, fclass, measure, norm in cells:
        for solver in ("CLARABEL", "SCS"):
            c0 = time.process_time()
            r = solve_pep(method, fclass, sched, measure, zeta_sq=zeta, solver=solver,
                          nonconvex_norm=norm)
            cpu = time.process_time() - c0
            print(f"{name:62s} {solver:9s} {r.status:19s} {r.value:9.6f} {r.seconds:8.2f} "
                  f"{cpu:7.2f} {r.timing['canonicalisation']:8.2f} {r.timing['solve']:8.2f}"
                  f"  {r.size['gram']:4d}  {r.size['constraints']:6d} "
                  f"({r.size['interpolation_rows']})")
    sched = Schedule.constant(1, K_small)
    r = solve_pep(delayed_gd(0.25), SC, sched, "dist_sq")
    t0 = time.perf_counter()
    w = gram_witness(delayed_gd(0.25), SC, sched, "dist_sq", r)
    print(f"{'Gram-interpolant witness, delayed GD tau=1, K=' + str(K_small):62s} "
          f"CLARABEL  {r.status:19s} value {w.replayed:.6f}  {time.perf_counter() - t0:7.2f} s"
          f"  (PEP {r.value:.6f}, relative gap {w.gap:.1e}, R^{w.dim})")
    for tau in (0, 1, 2, 4):
        rc = rate_certificate(delayed_gd(1 / (2 * (tau + 1))), SC, [tau])
        print(f"{'rate certificate, tau=' + str(tau):62s} CLARABEL  {rc.status:19s} "
              f"rho {rc.rho:.6f}  {rc.seconds:7.2f} s  ({rc.solves} solves)")
    rc = rate_certificate(FedAsync(eta=0.25, Q=2, beta=0.5), SC, [0, 2, 1])
    print(f"{'rate certificate, FedAsync Q=2, cyclic [0,2,1]':62s} CLARABEL  "
          f"{rc.status:19s} rho {rc.rho:.6f}  {rc.seconds:7.2f} s  ({rc.solves} solves)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
