"""Speed of the worst-case engine (fedsim.worstcase, issue 32).

Targets: a K = 20 PEP cell in at most 5 s, a K = 40 cell in at most 60 s, a rate
certificate in at most 10 s, on 2 cores.  Each cell prints its value, solver and status;
the Gram-interpolant witness of the K_small cell (its replay against the PEP) is timed too.
The first solve also pays cvxpy's import and first compile (a warm-up cell runs first and
is not a target).

    .venv/bin/python benchmarks/worst_case.py            # K = 20 and 40, the rates
    .venv/bin/python benchmarks/worst_case.py --quick    # K = 10 and 20

Reference figures (2 shared cores, load average 12-13, L = 1, mu = 0.1, gamma = 1/(2(tau+1))):
    delayed GD tau=1 K=20: 0.354041, Clarabel optimal 0.74 s, SCS optimal 0.31 s
    delayed GD tau=1 K=40: 0.125171, Clarabel optimal 10.7 s, SCS optimal 2.3 s
    3 clients zeta^2=0.01 tau=2 K=40: 0.267289, Clarabel optimal_inaccurate 6.6 s,
        SCS optimal 2.0 s
    FedAsync Q=2 beta=0.5 tau=1 K=20: 0.358845, Clarabel optimal 7.8 s, SCS optimal 2.0 s
    rate certificates tau = 0, 1, 2, 4: 0.902500, 0.949342, 0.965784, 0.979253, 1.3-2.1 s
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    K_small, K_big = (10, 20) if args.quick else (20, 40)
    print(f"load average: {os.getloadavg()}")
    t0 = time.perf_counter()
    solve_pep(delayed_gd(0.25), SC, Schedule.constant(1, 3), "dist_sq")
    print(f"warm-up (cvxpy import, first compile): {time.perf_counter() - t0:.2f} s")
    for name, method, sched, zeta in _cells(K_small, K_big):
        for solver in ("CLARABEL", "SCS"):
            r = solve_pep(method, SC, sched, "dist_sq", zeta_sq=zeta, solver=solver)
            print(f"{name:62s} {solver:9s} {r.status:19s} value {r.value:.6f}  "
                  f"{r.seconds:7.2f} s  (Gram {r.size['gram']}, "
                  f"{r.size['interpolation_rows']} rows)")
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
