"""Exact expectations by enumerating AREA event sequences (THEORY_SPEC 7.d, 10.3).

:func:`enumerate_events` -- for a deterministic (sub)gradient oracle, every event sequence of
[A] eqs. (5)-(7) is followed and bit-identical states are merged.  Works for any problem,
including non-smooth ones; it is the tool behind the [A] Theorem 8 counterexample (7.d).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
from fedsim.theory.oracle._common import Schedule, event_probs, record_steps, schedule, vector

from fedsim.errors import ConfigError, check_integer, require

__all__ = ["enumerate_events"]


def enumerate_events(problem: Any, p: Any, p_s: float, M: int, alpha: Schedule, x_s0: Any,
                     K: int, *, subgrad: Callable[[int, np.ndarray], np.ndarray] | None = None,
                     record_every: int = 1, max_states: int = 2_000_000) -> pd.DataFrame:
    """Exact expectations for AREA with a deterministic client map, by enumerating events.

    Model: THEORY_SPEC 2.2 ([A] eqs (5)-(7)), events i.i.d. over {1..n, s}; at client event i
    ``x_i <- G^M_{i,alpha_k}[x_s]`` with ``G_{i,a}[x] = x - a subgrad(i, x)`` (M deterministic
    subgradient steps; ``subgrad`` defaults to ``problem.grad``, the problem's fixed
    subgradient selection) and ``y_i <- x_i`` (old); at a server event ``x_s <- mean_j y_j``.
    The state ``(x, y, x_s, Ssum)`` with ``Ssum_k = sum_{j<k} x_{s,j}`` is carried exactly;
    states are merged only when bit-identical (their probabilities add).  For n clients and K
    steps at most (n+1)^K states; use it for small K.

    Needs ``problem.n``, ``problem.dim``, ``problem.f``, ``problem.x_star``, ``problem.f_star``.
    Columns: ``k``, ``sq_dist`` = E||x_{s,k} - x*||^2, ``f_gap`` = E f(x_{s,k}) - f*,
    ``ergodic_f_gap`` = E f(xbar_{s,k}) - f* with ``xbar_{s,k} = (1/k) sum_{j<k} x_{s,j}``
    ([A] Theorem 8's measured quantity; NaN at k = 0) and ``n_states`` (distinct states).
    """
    n = check_integer("problem.n", getattr(problem, "n", None), low=1)
    d = check_integer("problem.dim", getattr(problem, "dim", None), low=1)
    pv, ps = event_probs(p, p_s, n)
    M = check_integer("M", M, low=1)
    K = check_integer("K", K, low=0)
    record_every = check_integer("record_every", record_every, low=1)
    max_states = check_integer("max_states", max_states, low=1)
    sched = schedule(alpha, "alpha")
    sg = subgrad if subgrad is not None else problem.grad
    require(callable(sg), "subgrad", sg, "must be callable (i, x) -> subgradient")
    xs0 = vector("x_s0", x_s0, d)
    x_star = vector("problem.x_star", problem.x_star, d)
    f_star = float(problem.f_star)

    # layout of a state vector: x (n*d) | y (n*d) | x_s (d) | Ssum (d)
    ox, oy, os_, oS = 0, n * d, 2 * n * d, 2 * n * d + d
    z0 = np.concatenate([np.tile(xs0, 2 * n), xs0, np.zeros(d)])
    states: dict[bytes, list[Any]] = {z0.tobytes(): [1.0, z0]}

    rec = record_steps(K, record_every)
    rows: list[tuple[int, float, float, float, int]] = []

    def measure(k: int) -> None:
        sq = f = erg = 0.0
        for prob, z in states.values():
            xs = z[os_:oS]
            sq += prob * float(np.sum((xs - x_star) ** 2))
            f += prob * (float(problem.f(xs)) - f_star)
            if k > 0:
                erg += prob * (float(problem.f(z[oS:] / k)) - f_star)
        rows.append((k, sq, f, erg if k > 0 else np.nan, len(states)))

    j = 0
    if rec[0] == 0:
        measure(0)
        j = 1
    for k in range(K):
        a = sched(k)
        gm_cache: dict[tuple[int, bytes], np.ndarray] = {}
        new: dict[bytes, list[Any]] = {}
        for prob, z in states.values():
            xs = z[os_:oS]
            S1 = z[oS:] + xs
            xs_key = xs.tobytes()
            children: list[tuple[float, np.ndarray]] = []
            for i in range(n):
                ck = (i, xs_key)
                gm = gm_cache.get(ck)
                if gm is None:
                    x = xs.copy()
                    for _ in range(M):
                        step = np.asarray(sg(i, x), dtype=np.float64).reshape(d)
                        x = x - a * step
                    gm_cache[ck] = gm = x
                z1 = z.copy()
                z1[oy + i * d: oy + (i + 1) * d] = z[ox + i * d: ox + (i + 1) * d]
                z1[ox + i * d: ox + (i + 1) * d] = gm
                z1[oS:] = S1
                children.append((prob * pv[i], z1))
            z1 = z.copy()
            z1[os_:oS] = z[oy:os_].reshape(n, d).mean(axis=0)
            z1[oS:] = S1
            children.append((prob * ps, z1))
            for cp, cz in children:
                key = cz.tobytes()
                slot = new.get(key)
                if slot is None:
                    new[key] = [cp, cz]
                else:
                    slot[0] += cp
        states = new
        if len(states) > max_states:
            raise ConfigError(f"max_states must bound the number of distinct states, got "
                              f"max_states={max_states} but step {k + 1} has {len(states)} "
                              f"states; lower K or raise max_states")
        if j < len(rec) and rec[j] == k + 1:
            measure(k + 1)
            j += 1
    df = pd.DataFrame(rows, columns=["k", "sq_dist", "f_gap", "ergodic_f_gap", "n_states"])
    df.attrs.update({"oracle": "enumerate_events", "model": "AREA Appendix A, i.i.d. events",
                     "n": n, "dim": d, "M": M, "K": K, "exact": True,
                     "total_prob": float(sum(v[0] for v in states.values()))})
    return df
