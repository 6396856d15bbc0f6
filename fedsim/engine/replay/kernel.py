"""The one replay loop: a client rule and a server rule applied along a timeline (compiled).

For an asynchronous timeline in which every server step consumes one upload (FedAsync =
[P] Algorithm 1, and every algorithm whose server rule has the same shape), step ``t``
(``t = t0 + 1 + j`` for row ``j`` of the chunk) is

1. ``client_round(grad, view, i, w^{omega}, new, Z[zrow[j]], eta, Q, g)``: the uploader
   ``i = client[j]`` runs its round from the model it read at step ``omega[j]``, with the
   randomness of that round (``Z[zrow[j]]``, drawn from the client's own stream by the
   caller, round after round in the client's order);
2. ``server_apply(w, w^{omega}, new, beta)``: the server step on a copy of ``w^{t-1}``.

The models live in a ring ``hist`` of ``H`` (a power of two) past models, ``hist[t & (H -
1)]`` being ``w^t``; the caller keeps ``H`` above every staleness still to come.  Metrics
are evaluated by the problem's compiled ``metrics(mview, codes, w, out)`` at the steps
that are multiples of ``every`` (``grid[t // every]``).  Divergence uses the engine's rule
(``not w.w <= DIVERGE_NORM^2``): the loop stops at that step, writes its metrics into
``last`` and returns its row, so the replicate is frozen there.

The rules are arguments, so the loop never names an algorithm; the same function runs
compiled or, through ``replay_chunk.py_func`` with interpreted rules, in Python.
"""

from __future__ import annotations

from fedsim.jit import jit

__all__ = ["replay_chunk"]


@jit(cache=False)
def replay_chunk(client_round, grad, view, server_apply, metrics, mview, codes, hist, t0,
                 client, omega, zrow, Z, eta, Q, beta, every, g, new, grid, last, div2):
    """Steps ``t0 + 1 .. t0 + len(client)`` (module docstring); returns the number of
    steps done (``j + 1`` for a divergence at row ``j``, which is then recorded in
    ``last``) or ``-(j + 1)`` on divergence."""
    H = hist.shape[0]
    mask = H - 1
    d = hist.shape[1]
    S = client.shape[0]
    for j in range(S):
        t = t0 + 1 + j
        read = hist[omega[j] & mask]
        client_round(grad, view, client[j], read, new, Z[zrow[j]], eta, Q, g)
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
        if t % every == 0:
            metrics(mview, codes, w, grid[t // every])
    return S
