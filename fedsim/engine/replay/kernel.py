"""The one replay loop: a client rule and a server rule applied along a timeline (compiled).

For an asynchronous timeline in which every server step consumes one upload (FedAsync =
[P] Algorithm 1, and every algorithm whose server rule has the same shape), step ``t``
(``t = t0 + 1 + j`` for row ``j`` of the chunk) is

1. ``draw(view, i, stream(states, i), Z[q])`` for ``q < Q``: the randomness of the round
   of the uploader ``i = client[j]``, drawn from its own stream (row ``i`` of ``states``,
   :mod:`fedsim.engine.replay.streams`).  The rounds of a client are sequential (a round
   reads after the previous one uploaded), so drawing them at their uploads, in step
   order, consumes each stream round after round as the engine does (which draws a round
   at its read); rounds still in flight at the end are never drawn, and the streams
   serve nothing else;
2. ``client_round(grad, view, i, w^{omega}, new, Z, eta, Q, g)``: the uploader runs its
   round from the model it read at step ``omega[j]``;
3. ``server_apply(w, w^{omega}, new, beta)``: the server step on a copy of ``w^{t-1}``.

The models live in a ring ``hist`` of ``H`` (a power of two) past models, ``hist[t & (H -
1)]`` being ``w^t``; the caller keeps ``H`` above every staleness still to come.  Metrics
are evaluated by the problem's compiled ``metrics(mview, codes, w, out)`` at the steps
that are multiples of ``every`` (``grid[t // every]``).  Divergence uses the engine's rule
(``not w.w <= DIVERGE_NORM^2``): the loop stops at that step, writes its metrics into
``last`` and returns its row, so the replicate is frozen there.

The rules and the problem's oracles are bound by :func:`replay_kernel`, which returns the
loop compiled for one combination ``(client_round, grad, draw, server_apply, metrics)``:
they are closure constants of the loop, so numba inlines them (they are compiled with
``jit(inline=True)``; passed as arguments, each call would cost tens of nanoseconds, more
than the arithmetic of a d = 10 step) and the loop never names an algorithm.  The
signature of the compiled loop holds only arrays and numbers, so it is cached on disk,
one entry per combination, found again by other processes
(:func:`fedsim.jit.cache_closure`).
"""

from __future__ import annotations

from typing import Any

from fedsim.engine.replay.streams import stream
from fedsim.jit import cache_closure, jit

__all__ = ["replay_kernel"]

_KERNELS: dict[tuple, Any] = {}


def replay_kernel(client_round: Any, grad: Any, draw: Any, server_apply: Any,
                  metrics: Any) -> Any:
    """The compiled loop ``replay_chunk(view, mview, codes, hist, t0, client, omega, states,
    Z, eta, Q, beta, every, g, new, grid, last, div2)`` for these rules and oracles
    (module docstring; built once per combination and process)."""
    key = (client_round, grad, draw, server_apply, metrics)
    kern = _KERNELS.get(key)
    if kern is None:
        kern = _KERNELS[key] = _make(client_round, grad, draw, server_apply, metrics)
    return kern


def _make(client_round, grad, draw, server_apply, metrics):
    @jit(nrt=False)
    def replay_chunk(view, mview, codes, hist, t0, client, omega, states, Z, eta, Q, beta,
                     every, g, new, grid, last, div2):
        """Steps ``t0 + 1 .. t0 + len(client)`` (module docstring); returns the number of
        steps done, or ``-(j + 1)`` on a divergence at row ``j`` (its metrics then in
        ``last``)."""
        H = hist.shape[0]
        mask = H - 1
        d = hist.shape[1]
        S = client.shape[0]
        col = t0 // every + 1  # the next recorded step is col * every
        nxt = col * every
        for j in range(S):
            t = t0 + 1 + j
            read = hist[omega[j] & mask]
            i = client[j]
            gen = stream(states, i)
            for q in range(Q):
                draw(view, i, gen, Z[q])
            client_round(grad, view, i, read, new, Z, eta, Q, g)
            w = hist[t & mask]
            prev = hist[(t - 1) & mask]
            for k in range(d):
                w[k] = prev[k]
            server_apply(w, read, new, beta)
            nrm = 0.0
            for k in range(d):
                nrm += w[k] * w[k]
            if not nrm <= div2:
                metrics(mview, codes, w, last)
                return -(j + 1)
            if t == nxt:
                metrics(mview, codes, w, grid[col])
                col += 1
                nxt += every
        return S

    return cache_closure(replay_chunk)
