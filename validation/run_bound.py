"""``fedsim run SCENARIO --bound THEOREM[,MODE]``: a theorem's bound over one's own run.

The theorem is evaluated with every constant the scenario fixes
(:func:`fedsim.validation.scenario_constants.scenario_constants`, the derivation ``fedsim
bounds --scenario`` uses) at the run's recorded horizons, its hypotheses resolved by what
the scenario settles.  :func:`prepare` does this before anything is simulated (a constant the
scenario does not determine is a one-line error naming it and why); :func:`tightness_table`
prints bound / measured along the horizon; :func:`draw` is the ``--plot`` panel: the
quantity the theorem bounds (the running average ``avg_<metric>`` where the theorem speaks
of one, the raw metric faint behind it), the bound's curve, and the hypotheses' statuses in
the legend.  A bound whose hypotheses fail is drawn dotted and grey with the failing ones
named, never as a plain curve.

The measured values are one run; the theorems bound an expectation (``fedsim validate``
estimates it with confidence intervals), so a single run above the bound is not by itself a
violation.

Metric of each theorem (the suite families' choice, :mod:`fedsim.validation.families`):
[P] Theorems 1/2/3 the running averages ``avg_grad_sq`` / ``avg_grad_maml_sq`` /
``avg_grad_me_sq`` (``(1/T) sum_{t<T}``); [A] Theorem 7 ``dist_sq`` (``E||x_{s,K} -
x*||^2``); Theorem 8 ``ergodic_f_gap``; [F] Theorem 4.5 ``avg_grad_maml_sq`` (Q = 1 only:
then the server model is the theorem's wbar_{k+1,0}); [Y] Theorems
1/2 ``f_gap``.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from fedsim.errors import ConfigError

__all__ = ["BoundOverRun", "THEOREM_METRICS", "prepare", "evaluate", "tightness_table", "draw"]

#: theorem -> (the trace column it bounds, the per-step metric it averages, what it is)
THEOREM_METRICS: dict[str, tuple[str, str, str]] = {
    "theorem1": ("avg_grad_sq", "grad_sq", "(1/T) sum_{t<T} ||grad f(w^t)||^2"),
    "theorem2": ("avg_grad_maml_sq", "grad_maml_sq", "(1/T) sum_{t<T} ||grad F^(b)(w^t)||^2"),
    "theorem3": ("avg_grad_me_sq", "grad_me_sq", "(1/T) sum_{t<T} ||grad F^(c)(w^t)||^2"),
    "theorem7": ("dist_sq", "dist_sq", "||x_{s,K} - x*||^2"),
    "theorem8": ("ergodic_f_gap", "f_gap", "f(xbar_{s,K}) - f*"),
    "perfedavg_theorem4_5": ("avg_grad_maml_sq", "grad_maml_sq",
                             "(1/K) sum_{k<K} ||grad F(w_k)||^2"),
    "asypfl_theorem1": ("f_gap", "f_gap", "F(w^T) - F*"),
    "asypfl_theorem2": ("f_gap", "f_gap", "F(w^T) - F*"),
}

#: the most horizons the bound is evaluated at (geometrically spaced recorded steps)
MAX_POINTS = 60


@dataclass
class BoundOverRun:
    """A theorem prepared for a scenario: its name, mode, fixed arguments and metric."""

    theorem: Any
    mode: str | None
    kwargs: dict[str, Any]
    filled: Any
    column: str
    raw: str
    quantity: str
    result: Any = None
    horizons: np.ndarray | None = None
    measured: np.ndarray | None = None


def _mode_option(theorem: Any) -> tuple[str, tuple[str, ...]] | None:
    """``(argument, choices)`` of the theorem's mode (``mode`` or ``level``), if any."""
    import typing

    hints = typing.get_type_hints(theorem.function)
    for name in ("mode", "level"):
        par = inspect.signature(theorem.function).parameters.get(name)
        if par is None:
            continue
        ann = hints.get(name)
        choices = (tuple(str(a) for a in typing.get_args(ann))
                   if typing.get_origin(ann) is typing.Literal else ())
        return name, choices
    return None


def prepare(scenario: Any, spec: str) -> BoundOverRun:
    """Parse ``THEOREM[,MODE]`` and fix every constant ``scenario`` determines; a required
    constant it does not is a ConfigError naming it and why (before any simulation)."""
    from fedsim.theory.registry import get_theorem, theorems
    from fedsim.validation.scenario_constants import scenario_constants

    name, _, mode = (s.strip() for s in str(spec).partition(","))
    known = [t.name for t in theorems()]
    if name not in known:
        raise ConfigError(f"--bound must name a theorem ({', '.join(known)}), got {name!r}")
    th = get_theorem(name)
    if name not in THEOREM_METRICS:
        raise ConfigError(f"--bound {name}: fedsim does not know which recorded metric this "
                          "theorem bounds (see fedsim.validation.run_bound.THEOREM_METRICS)")
    column, raw, quantity = THEOREM_METRICS[name]
    if raw not in scenario.record.metrics:
        raise ConfigError(f"--bound {name} bounds {quantity}: record.metrics must include "
                          f"{raw!r} (--set 'record.metrics=[\"{raw}\"]')")
    filled = scenario_constants(scenario, th)
    tau = filled.values.get("tau", 1)
    if name == "perfedavg_theorem4_5" and tau != 1:
        raise ConfigError(f"--bound {name} needs algorithm.Q = 1 (--set algorithm.Q=1): with "
                          f"tau = Q = {tau} local steps the theorem bounds the average of "
                          "||grad F||^2 over the local iterates wbar_{k+1,t}, t < tau, which "
                          "the trace does not record (it records the server model w_k)")
    opt = _mode_option(th)
    kw = dict(filled.values)
    if mode:
        if opt is None:
            raise ConfigError(f"--bound {name}: the theorem has no modes, got mode {mode!r}")
        if opt[1] and mode not in opt[1]:
            raise ConfigError(f"--bound {name},{mode}: the mode must be one of "
                              f"{', '.join(opt[1])}")
        kw[opt[0]] = mode
    kw.pop(th.horizon, None)
    missing = {k: v for k, v in filled.missing.items() if k != th.horizon}
    if missing:
        k, why = next(iter(missing.items()))
        more = [m for m in missing if m != k]
        raise ConfigError(f"--bound {name}: {k} is not determined by the scenario: {why}"
                          + (f" (also: {', '.join(more)})" if more else ""))
    try:  # a bad mode or constant is refused now, not after the run (horizon 1: cheap)
        with np.errstate(all="ignore"):
            th.function(**kw, **{th.horizon: 1})
    except (ConfigError, ValueError, TypeError) as exc:
        raise ConfigError(f"--bound {spec}: {str(exc).splitlines()[0]}") from None
    return BoundOverRun(th, mode or None, kw, filled, column, raw, quantity)


def _horizons(steps: np.ndarray) -> np.ndarray:
    """Up to :data:`MAX_POINTS` recorded steps >= 1, geometrically spaced, the last kept."""
    s = np.unique(steps[steps >= 1].astype(np.int64))
    if s.size <= MAX_POINTS:
        return s
    idx = np.unique(np.geomspace(1, s.size, MAX_POINTS).astype(np.int64) - 1)
    return s[idx]


def evaluate(b: BoundOverRun, trace: Any) -> BoundOverRun:
    """The bound at the run's recorded horizons and the measured values there."""
    cols = trace.metrics
    if b.column not in cols:
        raise ConfigError(f"--bound: the run has no {b.column!r} column")
    steps = np.asarray(trace.metric_steps, dtype=np.int64)
    hs = _horizons(steps)
    if hs.size == 0:
        raise ConfigError("--bound: the run recorded no step >= 1")
    from fedsim.theory.cli import MAX_ITERATIONS

    if b.theorem.horizon == "K" and hs[-1] > MAX_ITERATIONS:
        hs = hs[hs <= MAX_ITERATIONS]
    arg = ([float(h) for h in hs] if b.theorem.horizon == "T" else [int(h) for h in hs])
    with np.errstate(all="ignore"):
        res = b.theorem.function(**b.kwargs, **{b.theorem.horizon: arg})
    b.result = b.filled.resolve(res)
    pos = {int(s): i for i, s in enumerate(steps)}
    b.measured = np.array([float(cols[b.column][pos[int(h)]]) for h in hs])
    b.horizons = hs
    return b


def _status_per_h(b: BoundOverRun) -> list[str]:
    per = b.result.derived_constants.get("status_per_T")
    if per is not None and len(per) == len(b.horizons):
        return [str(s) for s in per]
    return [b.result.status.value] * len(b.horizons)


def failing(b: BoundOverRun) -> list[str]:
    """The names of the hypotheses that fail."""
    return [h.name for h in b.result.hypotheses if h.holds is False]


def tightness_table(b: BoundOverRun, rows: int = 8) -> str:
    """bound / measured at up to ``rows`` horizons, with the status and the failing
    hypotheses named."""
    res, hs = b.result, b.horizons
    vals = np.broadcast_to(np.asarray(res.value, dtype=np.float64), hs.shape)
    pick = np.unique(np.linspace(0, hs.size - 1, min(rows, hs.size)).astype(int))
    h = b.theorem.horizon
    mode = f" [{res.mode}]" if res.mode else ""
    out = [f"{b.theorem.label}{mode} over this run: bound on E[{b.quantity}] "
           f"(column {b.column}); status {res.status.value}"]
    bad = failing(b)
    if bad:
        out.append("  hypotheses that FAIL (the bound does not apply): " + "; ".join(bad))
    unknown = [x.name for x in res.hypotheses if x.holds is None]
    if unknown:
        out.append("  hypotheses not checked (unknown): " + "; ".join(unknown))
    out.append("  one run, not the expectation the theorem bounds (fedsim validate "
               "estimates it)")
    out.append(f"  {h:>8} {'measured':>12} {'bound':>12} {'bound/measured':>15}  status")
    status = _status_per_h(b)
    for i in pick:
        m, v = b.measured[i], vals[i]
        ratio = v / m if m > 0 and math.isfinite(v) else math.nan
        out.append(f"  {int(hs[i]):>8} {m:>12.4g} {v:>12.4g} {ratio:>15.4g}  {status[i]}")
    return "\n".join(out)


def draw(b: BoundOverRun, trace: Any, ax: Any) -> None:
    """The ``--plot`` panel: the measured quantity, the per-step metric faint, the bound."""
    steps = np.asarray(trace.metric_steps, dtype=np.float64)
    cols = trace.metrics
    keep = steps >= 1
    if b.raw != b.column and b.raw in cols:
        ax.plot(steps[keep], np.asarray(cols[b.raw])[keep], color="#9ecae1", lw=0.6,
                label=f"{b.raw} (per step)")
    ax.plot(steps[keep], np.asarray(cols[b.column])[keep], color="#08519c", lw=1.4,
            label=f"{b.column} (this run)")
    res, hs = b.result, b.horizons
    vals = np.broadcast_to(np.asarray(res.value, dtype=np.float64), hs.shape)
    held = sum(1 for x in res.hypotheses if x.holds is True)
    unk = sum(1 for x in res.hypotheses if x.holds is None)
    bad = failing(b)
    tag = f"hypotheses: {held} hold, {unk} unknown, {len(bad)} fail"
    finite = np.isfinite(vals)
    pos = finite & (vals > 0)
    if bad:
        ax.plot(hs[pos], vals[pos], ls=":", color="0.5",
                label=f"bound NOT APPLICABLE ({tag}: {', '.join(bad)})")
    else:
        ax.plot(hs[pos], vals[pos], color="#d62728", lw=1.6,
                label=f"{b.theorem.name} bound, {res.status.value} ({tag})")
    if np.any(finite & ~pos):
        ax.annotate(f"bound <= 0 at {int(np.sum(finite & ~pos))} horizons (not drawn on a "
                    "log axis)", xy=(0.01, 0.02), xycoords="axes fraction", fontsize=7)
    if not np.any(finite):
        ax.annotate("bound is infinite at every horizon (vacuous): nothing to draw",
                    xy=(0.01, 0.02), xycoords="axes fraction", fontsize=7)
    if pos.sum() >= 2 and vals[pos][-1] > 1.05 * vals[pos][0]:   # name the term that grows
        from fedsim.validation.report.plots import growing_term

        terms = {k: np.broadcast_to(np.asarray(v, dtype=np.float64), hs.shape).tolist()
                 for k, v in res.terms.items()}
        what = growing_term(hs[pos].astype(float), {"bound_terms": {"": {
            "horizons": hs.tolist(), "bound": vals.tolist(), "terms": terms}}}, "")
        ax.annotate(f"bound grows with {b.theorem.horizon}: {what or 'terms not recorded'}",
                    xy=(0.01, 0.97), xycoords="axes fraction", fontsize=7, va="top",
                    color="#d62728")
    y = np.asarray(cols[b.column])[keep]
    if np.all(y[np.isfinite(y)] > 0):
        ax.set_xscale("log")
        ax.set_yscale("log")
    ax.set_xlabel(b.theorem.horizon + " (server steps)")
    ax.set_ylabel(b.quantity, fontsize=8)
    ax.set_title(f"{b.theorem.label} over this run (one run; the bound is on the "
                 "expectation)", fontsize=9)
    # below the axes: never over the data
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=1,
              frameon=False)
