"""The recorded metrics of a replayed run, from its snapshots: the one place they are computed.

The replay loop (:mod:`fedsim.engine.replay.kernel`) keeps the global model at every
recorded step (``snap``), the running sum ``sum_{k<t} w^k`` there when ``ergodic_f_gap``
is recorded (``esnap``) and the clients' personal models when a personal metric is
(``psnap``).  :class:`MetricPlan` turns them into the values ``fedsim.trace.Recorder``
records:

* on a problem whose compiled view computes every recorded metric (evaluated inside the
  compiled loop at each recorded step, :meth:`MetricPlan.buffers`, or from snapshots)
  (:meth:`~fedsim.problems.compiled.CompiledView.has_metrics`, ``f_gap`` for the ergodic
  one; ``grad_maml_sq`` on the view's
  :meth:`~fedsim.problems.compiled.CompiledView.metric_data` for the run's ``maml_alpha``,
  ``f_gap``/``dist_sq`` of a logistic view with its ``f*``/``x*``),
  with the view's compiled ``metrics`` -- the very closed forms the problem's own
  methods call, so bitwise the Recorder's numbers;
* else with the Recorder's Python metric functions (:func:`fedsim.trace.metric_functions`:
  the MAML/Moreau gradients, ``f_gap`` on a view without it, ...);
* the held-out and personal metrics (:data:`fedsim.trace.HELD_OUT`,
  :data:`fedsim.trace.VALIDATION`: ``test_*``, ``pers_*``, ``val_*``) of every recorded step
  at once, from ``snap`` and ``psnap``
  (:func:`fedsim.problems.held_out_batch.held_out_values`, the Recorder's numbers bit for
  bit), whichever way the others are computed.

``ergodic_f_gap`` at step ``t`` is ``f_gap(wsum / t)`` (NaN at ``t = 0``), the Recorder's
rule.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from fedsim.jit import cache_closure, jit
from fedsim.problems.compiled import CompiledView
from fedsim.problems.held_out_batch import held_out_values
from fedsim.trace import HELD_OUT, PERSONAL, VALIDATION, metric_functions

__all__ = ["MetricPlan", "metric_rows_for"]


@functools.cache
def metric_rows_for(metrics: Any) -> Any:
    """``rows(mdata, codes, W, out)``: the view's compiled ``metrics`` of every row of ``W``
    into the rows of ``out`` (compiled once per view kind, cached on disk; no reference
    counting, as in the replay loop)."""
    @jit(nrt=False)
    def rows(mdata, codes, W, out):
        for r in range(W.shape[0]):
            metrics(mdata, codes, W[r], out[r])
        return 0

    return cache_closure(rows)


def _is_personal(name: str) -> bool:
    return name in PERSONAL or name.removeprefix("val_") in PERSONAL


class MetricPlan:
    """How the metrics ``names`` of ``problem`` are computed from snapshots (module
    docstring); ``cv``: the problem's compiled view or ``None``; ``maml_alpha``/``me_lam``:
    as :func:`fedsim.engine.setup.metric_params` resolves them."""

    def __init__(self, problem: Any, names: Any, cv: CompiledView | None,
                 maml_alpha: float | None, me_lam: float | None) -> None:
        self.names = list(names)
        self.ergodic = "ergodic_f_gap" in self.names
        self.plain = [m for m in self.names if m != "ergodic_f_gap"]
        self.personal = any(_is_personal(m) for m in self.names)
        self.held = [m for m in self.plain if m in HELD_OUT or m in VALIDATION]
        self.rest = [m for m in self.plain if m not in self.held]
        self.problem, self.maml_alpha, self.me_lam = problem, maml_alpha, me_lam
        # the Recorder's checks of the held-out names (rows, alpha, lam), raised here
        metric_functions(problem, self.held, maml_alpha, me_lam, personal=lambda: None)
        want = self.rest + (["f_gap"] if self.ergodic else [])
        params = dict(maml_alpha=maml_alpha, me_lam=me_lam)
        #: the problem's compiled view (``None``: interpreted), whether or not its metrics
        #: serve this plan
        self.view = cv
        self.cv = cv if cv is not None and cv.has_metrics(want, **params) else None
        if self.cv is not None:
            #: the view's metric data for the run's parameters (``grad_maml_sq``'s alpha)
            self.mdata = self.cv.metric_data(names=want, **params)
            self.codes = self.cv.codes(self.rest)
            self.ecode = self.cv.codes(["f_gap"] if self.ergodic else [])
            self.rows = metric_rows_for(self.cv.metrics)
        else:
            self._models: np.ndarray | None = None
            self.fns = metric_functions(problem, self.rest, maml_alpha, me_lam,
                                        personal=lambda: self._models)
            if self.ergodic:
                (_, self.efn), = metric_functions(problem, ["f_gap"], maml_alpha, me_lam)

    @property
    def kernel_metrics(self) -> Any:
        """The view's compiled ``metrics`` the replay loop is built with
        (:func:`fedsim.engine.replay.kernel.table_kernel`), or ``None`` (a view without
        them: snapshots only).  A plan its metrics do not serve (:attr:`compiled` false)
        gets them too, with :meth:`idle_buffers` (never evaluated): one compiled loop per
        combination of rules and view kind, whichever metrics a run records."""
        view = self.view
        return getattr(view, "metrics", None) if view is not None else None

    def idle_buffers(self, rows_like: np.ndarray) -> tuple:
        """The loop's inline-metric arguments when :attr:`kernel_metrics` is given but does
        not serve the plan: ``mon`` false, the view's metric data for no metric (the same
        types as :meth:`buffers`' arguments), empty codes and one-cell value buffers."""
        codes = np.zeros(0, dtype=np.int64)
        cells = np.empty((1, 1))
        return (False, self.view.metric_data(), codes, cells, codes, cells,
                np.zeros(rows_like.shape[0]))

    def buffers(self, rows: int, w0: np.ndarray) -> tuple:
        """The loop's inline-metric arguments ``(mon, mdata, codes, mvals, ecodes, evals,
        xbar)`` for ``rows`` recorded rows, row 0 (step 0, model ``w0``) filled here; pass
        the tuple back to :meth:`values` as ``inline``.  Compiled plans only."""
        d = w0.shape[0]
        mvals = np.empty((rows, len(self.rest)))
        evals = np.empty((rows, 1)) if self.ergodic else np.empty((1, 1))
        if self.rest:
            with np.errstate(all="ignore"):
                self.rows(self.mdata, self.codes, np.ascontiguousarray(w0[None, :]),
                          mvals[:1])
        return (True, self.mdata, self.codes, mvals, self.ecode, evals, np.zeros(d))

    @property
    def compiled(self) -> bool:
        """Whether the view's compiled metrics serve every recorded one."""
        return self.cv is not None

    def values(self, steps: np.ndarray, snap: np.ndarray, esnap: np.ndarray | None = None,
               psnap: np.ndarray | None = None, inline: tuple | None = None
               ) -> dict[str, np.ndarray]:
        """``{name: values}`` at ``steps`` (row ``r`` of the snapshots is step
        ``steps[r]``), in the Recorder's order (``ergodic_f_gap`` last); ``inline``: the
        :meth:`buffers` the loop filled (the values are then read from them)."""
        m = steps.size
        out: dict[str, np.ndarray] = {}
        with np.errstate(all="ignore"):
            if inline is not None:
                vals, ev = inline[3][:m], inline[5][:m]
                cols = {name: vals[:, k] for k, name in enumerate(self.rest)}
                if self.ergodic:
                    e = np.full(m, math.nan)
                    pos = steps > 0
                    e[pos] = ev[pos, 0]
                    cols["ergodic_f_gap"] = e
            elif self.cv is not None:
                vals = np.empty((m, len(self.rest)))
                if self.rest and m:
                    self.rows(self.mdata, self.codes, np.ascontiguousarray(snap[:m]), vals)
                cols = {name: vals[:, k] for k, name in enumerate(self.rest)}
                if self.ergodic:
                    e = np.full((m, 1), math.nan)
                    pos = steps > 0
                    if pos.any():
                        xbar = esnap[:m][pos] / steps[pos][:, None].astype(np.float64)
                        ev = np.empty((int(pos.sum()), 1))
                        self.rows(self.mdata, self.ecode, np.ascontiguousarray(xbar), ev)
                        e[pos] = ev
                    cols["ergodic_f_gap"] = e[:, 0]
            else:
                cols = {name: np.empty(m) for name in self.rest}
                for r in range(m):
                    if psnap is not None:
                        self._models = psnap[r]
                    for name, fn in self.fns:
                        cols[name][r] = fn(snap[r])
                if self.ergodic:
                    cols["ergodic_f_gap"] = np.array(
                        [self.efn(esnap[r] / int(steps[r])) if steps[r] > 0 else math.nan
                         for r in range(m)], dtype=np.float64)
            if self.held:
                if m:
                    cols.update(held_out_values(
                        self.problem, self.held, snap[:m],
                        psnap[:m] if psnap is not None else None, self.maml_alpha,
                        self.me_lam))
                else:
                    cols.update({name: np.empty(0) for name in self.held})
        for name in self.plain + (["ergodic_f_gap"] if self.ergodic else []):
            out[name] = np.asarray(cols[name], dtype=np.float64)  # the Recorder's order
        return out
