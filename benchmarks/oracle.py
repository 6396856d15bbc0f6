"""Speed of the exact-expectation oracles (theory/oracle/, THEORY_SPEC 10).

Target (issue 5): ``area_moments`` at n = 10, d = 5, K = 1e5 with the Theorem 7 step schedule
(alpha changes at every k, the worst case) in < 60 s on one core.  BLAS is pinned to one
thread before numpy is imported, so the figure is a one-core figure.

    python benchmarks/oracle.py            # full: K = 1e5 (AREA), T = 2e4 (FedAsync)
    python benchmarks/oracle.py --quick    # K = 1e4, T = 2e3

Reference figures (2 shared cores, load average 3-4, one BLAS thread):
    area_moments, Thm 7 schedule, K = 1e5:   22.6 s wall, 16.7 s CPU (~230 us/step)
    area_moments, constant alpha, K = 1e5:   27.0 s wall, 16.5 s CPU
    fedasync_window_moments, tau = 10, T = 2e4: 5.5 s wall, 2.8 s CPU
    fedasync_expcycle_moments, T = 2e4:         4.6 s wall, 3.0 s CPU
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from fedsim.theory.area import step_size  # noqa: E402
from fedsim.theory.oracle import (  # noqa: E402
    area_moments,
    fedasync_expcycle_moments,
    fedasync_window_moments,
)

from fedsim.problems.quadratic import QuadraticProblem  # noqa: E402

__all__ = ["main"]


def _timed(fn, *args, **kw):
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn(*args, **kw)
    return out, time.perf_counter() - w0, time.process_time() - c0


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print one line per case (wall and CPU seconds)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="K = 1e4 instead of 1e5")
    ap.add_argument("--K", type=int, default=None, help="override the AREA horizon")
    args = ap.parse_args(argv)
    K = args.K if args.K is not None else (10_000 if args.quick else 100_000)
    T = K // 5
    n, d, M = 10, 5, 5
    mu, L = 1.0, 10.0
    q = QuadraticProblem.random(n, d, mu, L, shared_hessian=False, seed=7, noise_sd=0.3)
    rng = np.random.default_rng(7)
    rates = rng.uniform(0.5, 2.0, n)
    rate_s = 3.0
    tot = rates.sum() + rate_s
    p, p_s = rates / tot, rate_s / tot
    p_min = min(float(p.min()), p_s)
    alphas = step_size(np.arange(K + 1), L=L, mu=mu, M=M, p_min=p_min)
    sched = lambda k: float(alphas[k])
    x0 = q.x_star + 3.0 * rng.standard_normal(d)

    print(f"oracle benchmark (one BLAS thread), n={n}, d={d}, M={M}, "
          f"state dim {(2 * n + 1) * d}")
    df, wall, cpu = _timed(area_moments, q, p, p_s, M, sched, x0, K, record_every=max(1, K // 100))
    print(f"area_moments, Thm 7 schedule, K={K}: wall {wall:.2f} s, cpu {cpu:.2f} s "
          f"({1e6 * wall / K:.1f} us/step); E||x_s,K - x*||^2 = {df.sq_dist.iloc[-1]:.6e}")
    df, wall, cpu = _timed(area_moments, q, p, p_s, M, 0.01, x0, K, record_every=max(1, K // 100))
    print(f"area_moments, constant alpha, K={K}: wall {wall:.2f} s, cpu {cpu:.2f} s "
          f"({1e6 * wall / K:.1f} us/step)")
    qs = QuadraticProblem.random(n, d, mu, L, shared_hessian=True, seed=8, noise_sd=0.3)
    pmf = np.full(11, 1.0 / 11)
    df, wall, cpu = _timed(fedasync_window_moments, qs, "A", 2, 0.01, 1.0, pmf, T, x0)
    print(f"fedasync_window_moments, Option A, tau=10, T={T}: wall {wall:.2f} s, "
          f"cpu {cpu:.2f} s ({1e6 * wall / T:.1f} us/step)")
    df, wall, cpu = _timed(fedasync_expcycle_moments, qs, "C", 2, 0.01, 1.0, rates, T, x0,
                           lam=70.0)
    print(f"fedasync_expcycle_moments, Option C, T={T}: wall {wall:.2f} s, "
          f"cpu {cpu:.2f} s ({1e6 * wall / T:.1f} us/step)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
