"""Many replicates' tables replayed in one compiled call: the outer loop over a group.

:func:`group_kernel` ``(draw_round, update, apply, metrics, compiled)`` returns
``run_group(...)``, which replays the tables of ``G`` replicates one after the other, each
by the one loop of :mod:`fedsim.engine.replay.kernel` (:func:`~fedsim.engine.replay.
kernel.loop_kernel`, called once per replicate with that replicate's views: there is no
second loop body).  Nothing of a replicate depends on the others: its state is set afresh
from its initial templates before its first step, its streams, counters, records and
outputs are its own rows, and the scratch it shares with the others (the ring ``hist``,
the client states ``cst``, the round buffers, ``wsum``) is written before it is read.

*The group's arrays* (:class:`fedsim.engine.replay.group.TableGroup` builds them):
replicate ``g``'s steps are rows ``soff[g]:soff[g+1]`` of the step columns (``kind``,
``fills``), its ``ptr`` rows ``soff[g] + g .. soff[g+1] + g`` of ``ptr`` (each table's own,
from 0), its contributions rows ``coff[g]:coff[g+1]`` of ``c_*``, its recorded steps rows
``moff[g]:moff[g+1]`` of ``rec`` and its snapshot rows (one more, for a divergence) rows
``moff[g] + g .. moff[g+1] + g + 1`` of ``snap``/``esnap``/``psnap``/``mvals``/``evals``.
``states[g]`` its clients' stream rows, ``ccnt[g]``/``scnt[g]`` its counters, ``isnap[g]``
its next record, ``init[g]`` the index of its initial templates ``hist0`` (server state
``(s_rows, d)``) and ``cst0`` (client states ``(n, c_rows, d)``).

*Outputs*: ``done[g]`` the loop's return value (``T``, or ``-t`` for a divergence at step
``t``), ``final[g]`` row 0 of the server state after its last step, and with ``keep`` its
clients' states ``cout[g]``.

*Resuming.*  ``pos = [g, t, started]`` is where the call begins (replicate ``g``, its
steps done ``t``) and where it stopped: a call replays at most ``budget`` steps, so a
caller may report progress between calls; the loop resumes exactly (its state lives in
the arrays), so the numbers do not depend on the budget.
"""

from __future__ import annotations

import functools
from typing import Any

from fedsim.engine.replay.kernel import loop_kernel, no_metrics
from fedsim.jit import cache_closure, jit
from fedsim.local.forms import tag_closure

__all__ = ["group_kernel", "built_kernels"]

#: the names of the compiled outer loops this process used, one entry per call of
#: :func:`group_kernel` (:func:`built_kernels`)
_USED: list[str] = []


def _group_src(loop, metrics):
    """The outer loop's one source around ``loop`` (compiled or interpreted) and the
    view's ``metrics`` (the step-0 record, as :meth:`fedsim.engine.replay.metrics.
    MetricPlan.buffers` computes it)."""

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
            r1 = m1 + g + 1
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
            res = loop(vdata, t0, t1, ptr[s0 + g:s0 + g + T + 1], kind[s0:s0 + T],
                       c_client[coff[g]:coff[g + 1]], c_read[coff[g]:coff[g + 1]],
                       c_steps[coff[g]:coff[g + 1]], c_stale[coff[g]:coff[g + 1]], hist, cst,
                       states[g], Z, clients, reads, news, stale, cfp, sfp, ccnt[g], scnt[g],
                       rec[m0:m1], isnap[g:g + 1], snap[r0:r1], ergo, wsum, esnap[r0:r1], prow,
                       psnap[r0:r1], div2, fills[s0:s0 + T], mon, mdata, codes, mvals[r0:r1],
                       ecodes, evals[r0:r1], xbar)
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
    """The outer loop for these rules (module docstring): compiled once per combination and
    process, cached on disk, allocation-free (``jit(nrt=False)``), or (``compiled=False``)
    the same source interpreted around :func:`~fedsim.engine.replay.kernel.loop_kernel`'s
    interpreted loop.  ``metrics``: the view's compiled ``metrics`` evaluated inline (the
    ``mon`` arguments), else ``None`` (snapshots only)."""
    kern = _build(draw_round, update, apply, metrics, compiled)
    if compiled:
        _USED.append(kern.py_func.__qualname__)
    return kern


@functools.cache
def _build(draw_round: Any, update: Any, apply: Any, metrics: Any, compiled: bool) -> Any:
    """:func:`group_kernel`'s loop, built once per combination and process."""
    m = no_metrics if metrics is None else metrics
    loop = loop_kernel(draw_round, update, apply, m, compiled)
    if not compiled:
        return _group_src(loop, m.py_func)
    src = tag_closure(_group_src(loop, m), draw_round, update, apply, m)
    return cache_closure(jit(nrt=False)(src))


def built_kernels() -> list[str]:
    """The names (tagged with what they bind) of the compiled outer loops this process has
    used, one entry per :func:`group_kernel` call, in call order: the distinct names since
    an index are the replay kernels a piece of work needed, compiled, loaded from the disk
    cache or already in memory (:mod:`fedsim.validation.warmup` counts them)."""
    return list(_USED)
