"""The one replay loop: a client rule and a server rule applied along event tables.

:func:`group_kernel` ``(draw_round, update, apply, metrics, compiled)`` returns
``run_group(...)``, which replays the tables of ``G`` replicates one after the other
(REPLAY_SPEC sections 2-3).  Nothing of a replicate depends on the others: its state is
set afresh from its initial templates before its first step, its streams, counters,
records and outputs are its own rows, and the scratch it shares with the others (the ring
``hist``, the client states ``cst``, the round buffers, ``wsum``) is written before it is
read.

*One step.*  At step ``t`` of a replicate, for each of its contributions
``p = ptr[t-1] .. ptr[t] - 1`` (arrival order):

1. ``draw_round(vdata, i, gen, nsteps, Z)``: the randomness of the round of client
   ``i = c_client[p]`` (``nsteps = c_steps[p]`` local steps), from its own ``noise`` stream
   ``gen`` (row ``i`` of the replicate's ``states``, :mod:`fedsim.rng.streams`).  A
   client's rounds are sequential and consumed in arrival order, so drawing a round when
   the step consuming it is replayed consumes each stream round after round as the engine
   does (which draws at the read); rounds never consumed are never drawn;
2. ``update(vdata, i, cst[i], read, tread, Z, nsteps, cfp, news[c], ccnt)``: the client
   rule from ``read`` = row 0 of the server state after step ``tread = c_read[p]`` (copied
   into ``reads[c]``), ``cst[i]`` the client's state ``(c_rows, d)``;
3. once the step's ``k`` messages are in: ``S = hist[t]`` gets a copy of ``hist[t-1]`` and
   ``fill = apply(S, clients, reads, news, k, stale, kind[t-1], sfp, scnt)``.

The server states live in a ring ``hist`` ``(H, s_rows, d)`` (``H`` a power of two above
the tables' :meth:`~fedsim.engine.replay.table.EventTable.max_lag`), ``hist[t & (H-1)]``
the state after step ``t``; row 0 is the global model.  Divergence uses the engine's rule
on row 0 (``not w.w <= DIVERGE_NORM^2``): the replicate stops at that step, ``done[g] =
-t`` (it is frozen there).  At the recorded steps ``rec[isnap[g]] == t`` the loop
snapshots row 0 into ``snap`` (and the diverged model into the next row), and, with
``ergo``, the running sum ``sum_{k<t} w^k`` into ``esnap`` (``ergodic_f_gap``,
``fedsim.trace.Recorder``'s ``wsum``: the additions in step order), and with ``prow >= 0``
row ``prow`` of every client's state into ``psnap`` (personal metrics); with ``mon`` it
evaluates the view's compiled ``metrics(mdata, codes, w, mvals[j])`` there, and with
``ergo`` ``metrics(mdata, ecodes, xbar, evals[j])``, ``xbar = wsum / t`` (the Recorder's
ergodic average) -- the same function and inputs as
:mod:`fedsim.engine.replay.metrics`' pass over the snapshots, so the same bits.
``fills`` gets the server rule's fill per step (the caller checks it against the table's
``buffer_fill``).

*The group's arrays* (:class:`fedsim.engine.replay.group.TableGroup` builds them):
replicate ``g``'s steps are rows ``soff[g]:soff[g+1]`` of the step columns (``kind``,
``fills``), its ``ptr`` rows ``soff[g] + g .. soff[g+1] + g`` of ``ptr`` (each table's own,
from 0), its contributions rows ``coff[g]:coff[g+1]`` of ``c_*``, its recorded steps rows
``moff[g]:moff[g+1]`` of ``rec`` and its snapshot rows (one more, for a divergence) rows
``moff[g] + g .. moff[g+1] + g + 1`` of ``snap``/``esnap``/``psnap``/``mvals``/``evals``.
``states[g]`` its clients' stream rows, ``ccnt[g]``/``scnt[g]`` its counters, ``isnap[g]``
its next record, ``init[g]`` the index of its initial templates ``hist0`` (server state
``(s_rows, d)``) and ``cst0`` (client states ``(n, c_rows, d)``).  *Outputs*: ``done[g]``
(``T``, or ``-t`` for a divergence at step ``t``), ``final[g]`` row 0 of the server state
after its last step, and with ``keep`` its clients' states ``cout[g]``.

*Resuming.*  ``pos = [g, t, started]`` is where the call begins (replicate ``g``, its
steps done ``t``) and where it stopped: a call replays at most ``budget`` steps, so a
caller may report progress between calls; the loop resumes exactly (its state lives in
the arrays), so the numbers do not depend on the budget.

*One compiled function per combination.*  The per-replicate steps are written inside the
outer loop, not called from it: a compiled callee is optimised and code-generated once on
its own and again inside every caller that links it, which for this loop cost a third of
its compile time.

Plugging a rule in
------------------
A client rule provides, in its module under ``fedsim/local/`` (:mod:`fedsim.local.sgd` is
the worked example: ``sgd_update_for`` and ``SGDRule.replay_form``):

* ``update(vdata, i, cst, read, tread, Z, nsteps, fp, out, cnt) -> 0`` compiled with
  ``jit(inline=True)``, its oracles bound as closure constants by a cached builder
  (``functools.cache``; the closure tagged with what it binds,
  :func:`fedsim.local.forms.tag_closure`, so that the loop's disk cache tells them
  apart); ``fp`` its float64 parameters (layout documented in its module), ``cnt`` its
  int64 counters.  It must not allocate: scratch rows belong in
  ``cst`` (``c_rows`` counts them) or in the view's data;
* ``draw_round(vdata, i, gen, nsteps, Z) -> 0``; the default,
  :func:`fedsim.local.forms.view_draw_round`, calls the view's ``draw`` per step;
* ``replay_form()`` on the rule object: a :class:`fedsim.local.forms.ClientForm`, compiled,
  or for a problem without a compiled view the same functions interpreted (``.py_func``
  with the interpreted oracles; ``Z`` is then whatever its ``draw_round`` fills, e.g. a
  :class:`fedsim.local.forms.RngSteps` holding the stream; :func:`fedsim.local.forms.
  round_form` wraps any rule object's own ``round`` so).

A server rule provides ``apply(S, clients, reads, news, k, stale, kind, fp, cnt) -> fill``
in its module under ``fedsim/servers/`` (:func:`fedsim.servers.fedasync.fedasync_step`)
and ``replay_form()`` on its rule object (a :class:`fedsim.local.forms.ServerForm`).
Nothing here changes: the loop is built per combination ``(draw_round, update, apply,
metrics)`` and cached on disk (its signature holds only arrays and numbers).
"""

from __future__ import annotations

import functools
from typing import Any

from fedsim.jit import cache_closure, jit
from fedsim.local.forms import tag_closure
from fedsim.rng.streams import stream

__all__ = ["group_kernel", "built_kernels", "python_stream", "no_metrics"]

#: the names of the compiled loops this process used, one entry per call of
#: :func:`group_kernel` (:func:`built_kernels`)
_USED: list[str] = []


def python_stream(states: Any, i: int) -> Any:
    """The interpreted loop's stream of client ``i``: ``states`` is a list of NumPy
    ``Generator``s (the compiled loop's :func:`~fedsim.rng.streams.stream`)."""
    return states[i]


@jit(inline=True)
def no_metrics(mdata, codes, w, out):
    """The metrics of a loop that only snapshots (``metrics=None``)."""
    return 0


def _group_src(draw_round, update, apply, get_stream, metrics):
    """The loop's one source (module docstring); ``get_stream`` is :func:`stream` compiled
    and :func:`python_stream` interpreted; ``metrics`` the view's compiled metrics (or
    their ``py_func``)."""

    def run_group(vdata, pos, budget, soff, coff, moff, ptr, kind, c_client, c_read, c_steps,
                  c_stale, rec, init, hist0, cst0, hist, cst, states, Z, clients, reads, news,
                  stale, cfp, sfp, ccnt, scnt, isnap, snap, ergo, wsum, esnap, prow, psnap,
                  div2, fills, done, final, keep, cout, mon, mdata, codes, mvals, ecodes, evals,
                  xbar):
        """Replicates ``pos[0] ..`` of the group, at most ``budget`` steps (module
        docstring); returns the steps replayed."""
        G = soff.shape[0] - 1
        mask = hist.shape[0] - 1
        s_rows = hist.shape[1]
        d = hist.shape[2]
        n = cst.shape[0]
        c_rows = cst.shape[1]
        left = budget
        g = pos[0]
        while g < G and left > 0:
            s0 = soff[g]
            T = soff[g + 1] - s0
            m0 = moff[g]
            m1 = moff[g + 1]
            r0 = m0 + g
            if pos[2] == 0:  # the replicate's first call: its state from its templates
                k0 = init[g]
                for r in range(s_rows):
                    for m in range(d):
                        hist[0, r, m] = hist0[k0, r, m]
                for i in range(n):
                    for r in range(c_rows):
                        for m in range(d):
                            cst[i, r, m] = cst0[k0, i, r, m]
                w0 = hist[0, 0]
                for m in range(d):
                    snap[r0, m] = w0[m]
                if ergo:
                    for m in range(d):
                        wsum[m] = w0[m]
                if prow >= 0:
                    for i in range(n):
                        for m in range(d):
                            psnap[r0, i, m] = cst[i, prow, m]
                if mon:
                    metrics(mdata, codes, w0, mvals[r0])
                isnap[g] = 1
                pos[1] = 0
                pos[2] = 1
            t0 = pos[1]
            t1 = min(T, t0 + left)
            # replicate g's rows of the group's columns
            p0 = s0 + g
            c0 = coff[g]
            gstates = states[g]
            gccnt = ccnt[g]
            gscnt = scnt[g]
            nrec = m1 - m0
            j = isnap[g]
            nxt = rec[m0 + j] if j < nrec else -1
            res = t1
            for t in range(t0 + 1, t1 + 1):
                a = ptr[p0 + t - 1]
                k = ptr[p0 + t] - a
                for c in range(k):
                    p = c0 + a + c
                    i = c_client[p]
                    tr = c_read[p]
                    ns = c_steps[p]
                    src = hist[tr & mask, 0]
                    rd = reads[c]
                    for m in range(d):
                        rd[m] = src[m]
                    draw_round(vdata, i, get_stream(gstates, i), ns, Z)
                    update(vdata, i, cst[i], rd, tr, Z, ns, cfp, news[c], gccnt)
                    clients[c] = i
                    stale[c] = c_stale[p]
                S = hist[t & mask]
                prev = hist[(t - 1) & mask]
                for r in range(s_rows):
                    Sr = S[r]
                    pr = prev[r]
                    for m in range(d):
                        Sr[m] = pr[m]
                fills[s0 + t - 1] = apply(S, clients, reads, news, k, stale, kind[s0 + t - 1],
                                          sfp, gscnt)
                w = S[0]
                nrm = 0.0
                for m in range(d):
                    nrm += w[m] * w[m]
                bad = not nrm <= div2
                if bad or t == nxt:
                    q = r0 + j
                    for m in range(d):
                        snap[q, m] = w[m]
                    if ergo:
                        for m in range(d):
                            esnap[q, m] = wsum[m]
                    if mon:
                        metrics(mdata, codes, w, mvals[q])
                        if ergo:
                            for m in range(d):
                                xbar[m] = wsum[m] / t
                            metrics(mdata, ecodes, xbar, evals[q])
                    if prow >= 0:
                        for i2 in range(n):
                            for m in range(d):
                                psnap[q, i2, m] = cst[i2, prow, m]
                    if bad:
                        res = -t
                        break
                    j += 1
                    nxt = rec[m0 + j] if j < nrec else -1
                if ergo:
                    for m in range(d):
                        wsum[m] = wsum[m] + w[m]
            isnap[g] = j
            t = -res if res < 0 else res
            left -= t - t0
            if res < 0 or t1 >= T:
                done[g] = res
                w = hist[t & mask, 0]
                for m in range(d):
                    final[g, m] = w[m]
                if keep:
                    for i in range(n):
                        for r in range(c_rows):
                            for m in range(d):
                                cout[g, i, r, m] = cst[i, r, m]
                g += 1
                pos[0] = g
                pos[1] = 0
                pos[2] = 0
            else:
                pos[1] = t1
        return budget - left

    return run_group


def group_kernel(draw_round: Any, update: Any, apply: Any, metrics: Any = None,
                 compiled: bool = True) -> Any:
    """The loop for these rules (module docstring): compiled once per combination and
    process, cached on disk, allocation-free (``jit(nrt=False)``), or (``compiled=False``)
    the same source interpreted (streams: lists of NumPy ``Generator``s).  ``metrics``: the
    view's compiled ``metrics`` evaluated inline (the ``mon`` arguments), else ``None``
    (snapshots only).

    The compiled loop's name carries a hash of the rules it binds (:func:`fedsim.local.
    forms.tag_closure`): machine code loaded from the disk cache for two combinations must
    not define one name twice."""
    kern = _build(draw_round, update, apply, metrics, compiled)
    if compiled:
        _USED.append(kern.py_func.__qualname__)
    return kern


@functools.cache
def _build(draw_round: Any, update: Any, apply: Any, metrics: Any, compiled: bool) -> Any:
    """:func:`group_kernel`'s loop, built once per combination and process."""
    m = no_metrics if metrics is None else metrics
    if not compiled:
        return _group_src(draw_round, update, apply, python_stream, m.py_func)
    src = tag_closure(_group_src(draw_round, update, apply, stream, m), draw_round, update,
                      apply, m)
    return cache_closure(jit(nrt=False)(src))


def built_kernels() -> list[str]:
    """The names (tagged with what they bind) of the compiled loops this process has used,
    one entry per :func:`group_kernel` call, in call order: the distinct names since an
    index are the replay kernels a piece of work needed, compiled, loaded from the disk
    cache or already in memory (:mod:`fedsim.validation.warmup` counts them)."""
    return list(_USED)
