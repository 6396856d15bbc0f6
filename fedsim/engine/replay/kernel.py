"""The one replay loop: a client rule and a server rule applied along an event table.

:func:`table_kernel` ``(draw_round, update, apply)`` returns the loop
``run_table(...)`` that replays steps ``t0 + 1 .. t1`` of one replicate's
:class:`~fedsim.engine.replay.table.EventTable` (REPLAY_SPEC sections 2-3).  At step ``t``,
for each of its contributions ``p = ptr[t-1] .. ptr[t] - 1`` (arrival order):

1. ``draw_round(vdata, i, gen, nsteps, Z)``: the randomness of the round of client
   ``i = c_client[p]`` (``nsteps = c_steps[p]`` local steps), from its own ``noise`` stream
   ``gen`` (row ``i`` of ``states``, :mod:`fedsim.rng.streams`).  A client's
   rounds are sequential and consumed in arrival order, so drawing a round when the step
   consuming it is replayed consumes each stream round after round as the engine does
   (which draws at the read); rounds never consumed are never drawn;
2. ``update(vdata, i, cst[i], read, tread, Z, nsteps, cfp, news[c], ccnt)``: the client
   rule from ``read`` = row 0 of the server state after step ``tread = c_read[p]`` (copied
   into ``reads[c]``), ``cst[i]`` the client's state ``(c_rows, d)``;
3. once the step's ``k`` messages are in: ``S = hist[t]`` gets a copy of ``hist[t-1]`` and
   ``fill = apply(S, clients, reads, news, k, stale, kind[t-1], sfp, scnt)``.

The server states live in a ring ``hist`` ``(H, s_rows, d)`` (``H`` a power of two above
the table's :meth:`~fedsim.engine.replay.table.EventTable.max_lag`), ``hist[t & (H-1)]``
the state after step ``t``; row 0 is the global model.  Divergence uses the engine's rule
on row 0 (``not w.w <= DIVERGE_NORM^2``): the loop stops at that step and returns ``-t``
(the replicate is frozen there).  At the recorded steps ``rec[isnap[0]] == t`` the loop
snapshots row 0 into ``snap[isnap[0]]`` (and the diverged model into the next row), and,
with ``ergo``, the running sum ``sum_{k<t} w^k`` into ``esnap`` (``ergodic_f_gap``,
``fedsim.trace.Recorder``'s ``wsum``: the additions in step order), and with ``prow >= 0``
row ``prow`` of every client's state into ``psnap[isnap[0]]`` (personal metrics);
:mod:`fedsim.engine.replay.metrics` turns snapshots into metrics, or, when the view's
compiled metrics serve, the loop evaluates them there (:func:`table_kernel` with
``metrics``).  ``fills[t-1]`` gets
the server rule's fill (the caller checks it against the table's ``buffer_fill``).

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
Nothing here changes: the loop is built per combination ``(draw_round, update, apply)``
and cached on disk (its signature holds only arrays and numbers).
"""

from __future__ import annotations

import functools
from typing import Any

from fedsim.jit import cache_closure, jit
from fedsim.local.forms import tag_closure
from fedsim.rng.streams import stream

__all__ = ["table_kernel", "python_kernel", "python_stream", "loop_kernel", "no_metrics"]


def python_stream(states: Any, i: int) -> Any:
    """The interpreted loop's stream of client ``i``: ``states`` is a list of NumPy
    ``Generator``s (the compiled loop's :func:`~fedsim.rng.streams.stream`)."""
    return states[i]


@jit(inline=True)
def no_metrics(mdata, codes, w, out):
    """The metrics of a loop that only snapshots (:func:`table_kernel` without ``metrics``)."""
    return 0


def _loop_src(draw_round, update, apply, get_stream, metrics):
    """The loop's one source; ``get_stream`` is :func:`stream` compiled and
    :func:`python_stream` interpreted; ``metrics`` the view's compiled metrics."""

    def run_table_m(vdata, t0, t1, ptr, kind, c_client, c_read, c_steps, c_stale, hist, cst,
                    states, Z, clients, reads, news, stale, cfp, sfp, ccnt, scnt, rec, isnap,
                    snap, ergo, wsum, esnap, prow, psnap, div2, fills, mon, mdata, codes,
                    mvals, ecodes, evals, xbar):
        """Steps ``t0 + 1 .. t1`` (module docstring); returns ``t1`` or ``-t`` when the
        model diverged at step ``t``."""
        H = hist.shape[0]
        mask = H - 1
        d = hist.shape[2]
        s_rows = hist.shape[1]
        nrec = rec.shape[0]
        j = isnap[0]
        nxt = rec[j] if j < nrec else -1
        for t in range(t0 + 1, t1 + 1):
            a = ptr[t - 1]
            k = ptr[t] - a
            for c in range(k):
                p = a + c
                i = c_client[p]
                tr = c_read[p]
                ns = c_steps[p]
                src = hist[tr & mask, 0]
                rd = reads[c]
                for m in range(d):
                    rd[m] = src[m]
                draw_round(vdata, i, get_stream(states, i), ns, Z)
                update(vdata, i, cst[i], rd, tr, Z, ns, cfp, news[c], ccnt)
                clients[c] = i
                stale[c] = c_stale[p]
            S = hist[t & mask]
            prev = hist[(t - 1) & mask]
            for r in range(s_rows):
                Sr = S[r]
                pr = prev[r]
                for m in range(d):
                    Sr[m] = pr[m]
            fills[t - 1] = apply(S, clients, reads, news, k, stale, kind[t - 1], sfp, scnt)
            w = S[0]
            nrm = 0.0
            for m in range(d):
                nrm += w[m] * w[m]
            bad = not nrm <= div2
            if bad or t == nxt:
                sj = snap[j]
                for m in range(d):
                    sj[m] = w[m]
                if ergo:
                    ej = esnap[j]
                    for m in range(d):
                        ej[m] = wsum[m]
                if mon:
                    metrics(mdata, codes, w, mvals[j])
                    if ergo:
                        for m in range(d):
                            xbar[m] = wsum[m] / t
                        metrics(mdata, ecodes, xbar, evals[j])
                if prow >= 0:
                    for i2 in range(cst.shape[0]):
                        for m in range(d):
                            psnap[j, i2, m] = cst[i2, prow, m]
                if bad:
                    isnap[0] = j
                    return -t
                j += 1
                nxt = rec[j] if j < nrec else -1
            if ergo:
                for m in range(d):
                    wsum[m] = wsum[m] + w[m]
        isnap[0] = j
        return t1

    return run_table_m


def _snap_only(loop):
    """``loop`` with the module docstring's signature (no inline metrics: ``mon`` false,
    its metric arguments stand-ins that are never read)."""

    def run_table(vdata, t0, t1, ptr, kind, c_client, c_read, c_steps, c_stale, hist, cst,
                  states, Z, clients, reads, news, stale, cfp, sfp, ccnt, scnt, rec, isnap,
                  snap, ergo, wsum, esnap, prow, psnap, div2, fills):
        """Steps ``t0 + 1 .. t1``, snapshots only."""
        return loop(vdata, t0, t1, ptr, kind, c_client, c_read, c_steps, c_stale, hist, cst,
                    states, Z, clients, reads, news, stale, cfp, sfp, ccnt, scnt, rec, isnap,
                    snap, ergo, wsum, esnap, prow, psnap, div2, fills, False, vdata, rec,
                    snap, rec, snap, wsum)

    return run_table


@functools.cache
def table_kernel(draw_round: Any, update: Any, apply: Any, metrics: Any = None) -> Any:
    """The compiled loop for these rules (module docstring), built once per combination
    and process, cached on disk; allocation-free (``jit(nrt=False)``).

    With ``metrics`` (a view's compiled ``metrics(mdata, codes, w, out)``,
    :mod:`fedsim.engine.replay.metrics`) the loop takes seven more arguments ``mon, mdata,
    codes, mvals, ecodes, evals, xbar`` and, with ``mon``, evaluates the metrics at each
    recorded step as it snapshots: ``metrics(mdata, codes, w, mvals[j])`` and with ``ergo``
    ``metrics(mdata, ecodes, xbar, evals[j])``, ``xbar = wsum / t`` (the Recorder's
    ergodic average; ``xbar`` a ``(d,)`` scratch row) -- the same function and inputs as
    the pass over the snapshots, so the same bits.  Without, the module docstring's
    signature (snapshots only).

    The loop's name carries a hash of the rules it binds (:func:`fedsim.local.forms.
    tag_closure`): a compiled caller (:func:`_snap_only`'s wrapper, the group's outer
    loop) calls it by that name, and machine code loaded from the disk cache for two
    combinations must not define one name twice (the second caller would run the first
    combination's loop)."""
    if metrics is None:
        loop = table_kernel(draw_round, update, apply, no_metrics)
        return cache_closure(jit(nrt=False)(_snap_only(loop)))
    fn = tag_closure(_loop_src(draw_round, update, apply, stream, metrics), draw_round,
                     update, apply, metrics)
    return cache_closure(jit(nrt=False)(fn))


@functools.cache
def loop_kernel(draw_round: Any, update: Any, apply: Any, metrics: Any,
                compiled: bool = True) -> Any:
    """The loop with the inline-metric signature (:func:`table_kernel` with ``metrics``),
    or (``compiled=False``) the same source interpreted, ``metrics`` then its ``py_func``:
    what :mod:`fedsim.engine.replay.group_kernel` calls once per replicate."""
    if compiled:
        return table_kernel(draw_round, update, apply, metrics)
    fn = getattr(metrics, "py_func", metrics)
    return _loop_src(draw_round, update, apply, python_stream, fn)


def python_kernel(draw_round: Any, update: Any, apply: Any) -> Any:
    """The same loop interpreted (streams: a list of NumPy ``Generator``s; snapshots
    only)."""
    return _snap_only(_loop_src(draw_round, update, apply, python_stream, no_metrics.py_func))
