"""Lumped event enumeration for AREA: exchangeable clients as counts, with bounded merging.

THEORY_SPEC 7.d / 10 (issue 11, item 2).  :func:`fedsim.theory.oracle.enumerate_events` carries the
labelled state ``(x_1..x_n, y_1..y_n, x_s, Ssum)`` of [A] Appendix A eqs (5)-(7) and merges
only bit-identical states.  This module computes the same expectations with two reductions.

**Markov state.**  With a deterministic client map ``G^M_{i,alpha_k}`` (THEORY_SPEC 2.2, E-A10)
and i.i.d. events, ``(x_i, y_i)_i, x_s`` is Markov for eqs (5)-(7); appending
``Ssum_k = sum_{j<k} x_{s,j}`` (updated by ``Ssum' = Ssum + x_s`` at every event) makes the
ergodic average of [A] Theorem 8, ``xbar_{s,k} = Ssum_k / k``, a function of the state.

**Lumping (exact).**  Clients i and j are *exchangeable* when ``p_i = p_j`` and their client
maps coincide (for :class:`fedsim.problems.nonsmooth.NormProblem`: equal centres).  Permuting
exchangeable clients commutes with every event map and preserves the event law, so the law of
``(x_s, Ssum)`` is unchanged when the labelled state is replaced by its orbit: per class, the
*multiset* of pairs ``(x_i, y_i)`` (a strong lumping of the chain).  A client event in class C
picks a pair with probability ``p_C * count``; the server event uses ``ybar = (1/n) sum count*y``,
summed in a canonical order so equal multisets give bit-identical ``x_s``.

**Tolerance merging of Ssum (bounded).**  Two states with the same core ``(x_s, pairs)`` and
``Ssum`` values ``S, S'`` have identical futures except that ``Ssum`` differs by the constant
``S - S'`` (``Ssum`` enters no update map, it is only translated).  The measured quantity
``phi_k = f(Ssum_k / k) - f*`` is ``B/k``-Lipschitz in ``Ssum`` (every f_i is B-Lipschitz, [A]
Asm 6).  Replacing a group of atoms ``(w_j, S_j)`` by one atom at their weighted mean
``Sbar`` moves mass ``tau = sum_j w_j ||S_j - Sbar||`` (a transport cost); the synchronous
coupling keeps the displacement constant afterwards, so the error in ``E phi_k`` is at most
``(B/k) * sum_{steps <= k} tau``.  This is the reported ``merge_bound``.

**Mass pruning (bounded).**  Optionally, states of probability below ``prune`` are dropped.
For the norm family every value stays in the ball ``||v - x*|| <= rho`` (equal centres:
``rho = max(||x_s0 - x*||, alpha B)`` since ``| ||x - c|| - alpha B | <= max(||x - c||, alpha B)``
and averaging keeps a ball; otherwise ``rho = ||x_s0 - x*|| + k M alpha B``), so a dropped
mass ``m`` contributes some value in ``[0, m B rho]`` to ``E phi``; the estimate adds the
midpoint ``m B rho / 2`` and the bound adds ``m B rho / 2`` (``prune_bound``).

The update maps themselves are NOT Lipschitz (the subgradient step ``x - alpha B sign(x - c)``
jumps by ``2 alpha B`` across ``c``), so ``x_i, y_i, x_s`` are never merged with a tolerance.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from fedsim.errors import ConfigError, check_integer, check_number, check_positive, require

__all__ = ["lumped_events", "exchangeable_classes", "event_law"]


def exchangeable_classes(problem: Any, p: Any) -> list[int]:
    """Class label per client: equal ``p_i`` and equal data (``problem.centers`` rows).

    Without ``centers`` every client is its own class (no lumping; still exact).
    """
    pv = np.asarray(p, dtype=np.float64).reshape(-1)
    centers = getattr(problem, "centers", None)
    keys: dict[tuple[float, bytes], int] = {}
    out = []
    for i in range(pv.size):
        data = (np.asarray(centers[i], dtype=np.float64).tobytes() if centers is not None
                else str(i).encode())
        out.append(keys.setdefault((float(pv[i]), data), len(keys)))
    return out


def event_law(p: Any, p_s: Any, n: int) -> tuple[np.ndarray, float]:
    """The checked event law: client probabilities ``p`` (shape ``(n,)``, each > 0) and the
    server's ``p_s > 0``, with ``sum(p) + p_s = 1`` within 1e-12."""
    pv = np.asarray(p, dtype=np.float64).reshape(-1)
    require(pv.shape == (n,), "p", pv.shape, f"must have shape (n,) = ({n},)")
    for i, v in enumerate(pv):
        check_positive(f"p[{i}]", float(v))
    ps = check_positive("p_s", p_s)
    tot = float(pv.sum()) + ps
    require(abs(tot - 1.0) <= 1e-12, "p", pv.tolist(),
            f"must satisfy sum(p) + p_s = 1 within 1e-12 (sum is {tot!r})")
    return pv, ps


def lumped_events(problem: Any, p: Any, p_s: float, M: int, alpha: float | Callable[[int], float],
                  x_s0: Any, K: int, *, classes: list[int] | None = None, tol: float = 0.0,
                  prune: float = 0.0, lipschitz: float | None = None, record_every: int = 1,
                  max_states: int = 2_000_000) -> pd.DataFrame:
    """Expectations of AREA ([A] eqs (5)-(7)) by lumped event enumeration (module docstring).

    Same model and columns as :func:`fedsim.theory.oracle.enumerate_events` (``k``, ``sq_dist``,
    ``f_gap``, ``ergodic_f_gap``, ``n_states``), plus ``error_bound`` (a rigorous bound on
    ``|ergodic_f_gap - exact|``, merge + prune parts), ``f_error_bound`` (bound for ``f_gap``
    and, times ``rho/B``, ``sq_dist``: pruning only) and ``dropped_mass``.

    ``classes``: a label per client; clients sharing a label must be exchangeable (equal p_i and
    equal client maps).  Default :func:`exchangeable_classes`.  ``tol`` > 0 merges ``Ssum``
    values of equal cores on a grid of spacing ``tol`` (each atom moves at most
    ``sqrt(d) tol``); ``prune`` > 0 drops states of probability < ``prune``.  Both need the
    Lipschitz constant ``lipschitz`` (default ``problem.B``).  ``attrs["method"]`` is
    ``"lumped-exact"`` when neither is used (or neither changed anything), else
    ``"lumped-merged"`` (also the ``method`` column); ``attrs["error_bound"]`` is the bound at K.
    :func:`fedsim.theory.lumped_mc.area_oracle` falls back to Monte Carlo past ``max_states``.
    """
    n = check_integer("problem.n", getattr(problem, "n", None), low=1)
    d = check_integer("problem.dim", getattr(problem, "dim", None), low=1)
    pv, ps = event_law(p, p_s, n)
    M = check_integer("M", M, low=1)
    K = check_integer("K", K, low=0)
    record_every = check_integer("record_every", record_every, low=1)
    max_states = check_integer("max_states", max_states, low=1)
    tol = check_number("tol", tol, low=0.0)
    prune = check_number("prune", prune, low=0.0)
    if callable(alpha):
        sched = alpha
        const_alpha = False
    else:
        a0 = check_positive("alpha", alpha)
        sched = (lambda _k: a0)
        const_alpha = True
    if classes is None:
        classes = exchangeable_classes(problem, pv)
    require(len(classes) == n, "classes", classes, f"must have one label per client (n={n})")
    labels = sorted(set(classes))
    cls_of = [labels.index(c) for c in classes]
    nc = len(labels)
    members = [[i for i in range(n) if cls_of[i] == c] for c in range(nc)]
    pc = np.array([pv[m[0]] for m in members])
    for c, m in enumerate(members):
        require(bool(np.all(pv[m] == pc[c])), "classes", classes,
                "must group only clients with equal p_i")
    B = lipschitz if lipschitz is not None else getattr(problem, "B", None)
    if tol > 0 or prune > 0:
        require(B is not None, "lipschitz", B, "must be given (or problem.B) when tol or prune > 0")
        B = check_positive("lipschitz", B)
    xs0 = np.asarray(x_s0, dtype=np.float64).reshape(-1)
    require(xs0.shape == (d,), "x_s0", np.shape(x_s0), f"must have shape ({d},)")
    x_star = np.asarray(problem.x_star, dtype=np.float64).reshape(d)
    f_star = float(problem.f_star)

    # value table: every x, y, x_s vector is interned once; states refer to ids
    vals: list[np.ndarray] = []
    vid: dict[bytes, int] = {}

    def intern(v: np.ndarray) -> int:
        key = v.tobytes()
        i = vid.get(key)
        if i is None:
            i = len(vals)
            vals.append(v)
            vid[key] = i
        return i

    gcache: dict[tuple[int, int, int], int] = {}

    def gmap(c: int, xs_id: int, k: int) -> int:
        ck = (c, xs_id, 0 if const_alpha else k)
        r = gcache.get(ck)
        if r is None:
            a = float(sched(k))
            require(math.isfinite(a) and a > 0, f"alpha({k})", a, "must be finite and > 0")
            rep = members[c][0]
            x = vals[xs_id].copy()
            for _ in range(M):
                x = x - a * np.asarray(problem.grad(rep, x), dtype=np.float64).reshape(d)
            r = gcache[ck] = intern(x)
        return r

    mean_cache: dict[tuple[tuple[int, int], ...], int] = {}

    def server_mean(ycounts: tuple[tuple[int, int], ...]) -> int:
        r = mean_cache.get(ycounts)
        if r is None:
            s = np.zeros(d)
            for yid, cnt in ycounts:
                s = s + cnt * vals[yid]
            r = mean_cache[ycounts] = intern(s / n)
        return r

    i0 = intern(xs0.copy())
    # pairs: sorted tuple of (class, x_id, y_id, count)
    pairs0 = tuple((c, i0, i0, len(members[c])) for c in range(nc))
    # state key: (xs_id, S key, pairs) -> [w, S]
    states: dict[Any, list[Any]] = {(i0, np.zeros(d).tobytes(), pairs0): [1.0, np.zeros(d)]}

    # rho: radius around x* that holds every value (module docstring, prune bound)
    R0 = float(np.linalg.norm(xs0 - x_star))
    centers = getattr(problem, "centers", None)
    equal_centres = (centers is not None
                     and bool(np.all(np.asarray(centers) == np.asarray(centers)[0])))

    transport = 0.0      # sum of merge transport costs so far
    dropped = 0.0        # dropped probability mass so far
    amax = 0.0
    rows = []
    rec = set(range(0, K + 1, record_every)) | {K}

    def rho_at(k: int) -> float:
        if equal_centres:
            return max(R0, amax * (B or 0.0))
        return R0 + k * M * amax * (B or 0.0)

    def measure(k: int) -> None:
        sq = f = erg = 0.0
        for (xs_id, _sk, _pairs), (w, S) in states.items():
            xs = vals[xs_id]
            sq += w * float(np.sum((xs - x_star) ** 2))
            f += w * (float(problem.f(xs)) - f_star)
            if k > 0:
                erg += w * (float(problem.f(S / k)) - f_star)
        rho = rho_at(k)
        mb = (B * transport / k) if (k > 0 and transport > 0) else 0.0
        pb = dropped * (B or 0.0) * rho / 2.0
        sb = dropped * rho**2 / 2.0
        rows.append((k, sq + sb, f + pb, (erg + pb) if k > 0 else np.nan, len(states),
                     (mb + pb) if k > 0 else np.nan, pb, sb, dropped))

    if 0 in rec:
        measure(0)
    for k in range(K):
        amax = max(amax, float(sched(k)))
        new: dict[Any, list[Any]] = {}
        for (xs_id, _sk, pairs), (w, S) in states.items():
            S1 = S + vals[xs_id]
            children: list[tuple[Any, float]] = []
            for j, (c, x_id, y_id, cnt) in enumerate(pairs):
                gx = gmap(c, xs_id, k)
                lst = list(pairs)
                if cnt == 1:
                    del lst[j]
                else:
                    lst[j] = (c, x_id, y_id, cnt - 1)
                key = (c, gx, x_id)
                for t, q in enumerate(lst):
                    if q[:3] == key:
                        lst[t] = (c, gx, x_id, q[3] + 1)
                        break
                else:
                    lst.append((c, gx, x_id, 1))
                    lst.sort()
                children.append(((xs_id, tuple(lst)), w * pc[c] * cnt))
            ycount: dict[int, int] = {}
            for (_c, _x, y_id, cnt) in pairs:
                ycount[y_id] = ycount.get(y_id, 0) + cnt
            m_id = server_mean(tuple(sorted(ycount.items())))
            children.append(((m_id, pairs), w * ps))
            for (cx, cp), cw in children:
                if tol > 0:
                    skey = np.floor(S1 / tol).astype(np.int64).tobytes()
                else:
                    skey = S1.tobytes()
                key = (cx, skey, cp)
                slot = new.get(key)
                if slot is None:
                    new[key] = [cw, S1, [(cw, S1)] if tol > 0 else None]
                else:
                    slot[0] += cw
                    if tol > 0:
                        slot[2].append((cw, S1))
        states = {}
        for key, slot in new.items():
            w = slot[0]
            if prune > 0 and w < prune:
                dropped += w
                continue
            if tol > 0 and len(slot[2]) > 1:
                atoms = slot[2]
                Sbar = sum(cw * s for cw, s in atoms) / w
                transport += sum(cw * float(np.linalg.norm(s - Sbar)) for cw, s in atoms)
                states[key] = [w, Sbar]
            else:
                states[key] = [w, slot[1]]
        if len(states) > max_states:
            raise ConfigError(f"max_states must bound the number of lumped states, got "
                              f"max_states={max_states} but step {k + 1} has {len(states)} "
                              f"states; lower K, raise max_states, or use tol / prune")
        if k + 1 in rec:
            measure(k + 1)
    df = pd.DataFrame(rows, columns=["k", "sq_dist", "f_gap", "ergodic_f_gap", "n_states",
                                     "error_bound", "f_error_bound", "sq_error_bound",
                                     "dropped_mass"])
    exact = transport == 0.0 and dropped == 0.0
    df["method"] = "lumped-exact" if exact else "lumped-merged"
    df.attrs.update({
        "oracle": "lumped_events", "model": "AREA Appendix A, i.i.d. events",
        "method": "lumped-exact" if exact else "lumped-merged",
        "n": n, "dim": d, "M": M, "K": K, "classes": list(cls_of), "n_classes": nc,
        "tol": tol, "prune": prune, "exact": exact,
        "error_bound": float(df["error_bound"].iloc[-1]) if K > 0 else 0.0,
        "merge_transport": transport, "dropped_mass": dropped,
        "total_prob": float(sum(v[0] for v in states.values())) + dropped,
        "n_values": len(vals),
    })
    return df
