"""Per-client timelines (download / compute / upload) and ``fedsim run --plot``.

The timeline of a run depends on delays, seeds and triggers only, never on the model
(docs/INTERNALS.md: the schedule/replay split), so it is rebuilt here from the same
streams the engine draws from, in the same order:

* the asynchronous physical model (``physical``): every client loops
  *download -> compute -> upload -> think* on its own ``delays`` stream
  (:class:`fedsim.rng.delays.DelaySampler`, one ``next_round`` per round);
* the synchronous runner (``sync``): each round the server draws its clients from its
  ``sampling`` stream (``choice(n, m, replace=False)``, sorted); each draws one round of
  delays; the next round starts when the slowest has uploaded ([P] Fig. 2(a)).

:func:`timeline_matches` checks the rebuilt upload ends against the trace's step times
(each asynchronous upload / each synchronous round is a server step at that time), so a
timeline that drifted from the engine is caught, not drawn.  :func:`plot_run` draws the
recorded metrics against simulated time above the per-client Gantt chart.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fedsim.errors import ConfigError

__all__ = ["Interval", "client_timeline", "timeline_matches", "draw_gantt", "plot_run"]

PHASES = ("download", "compute", "upload", "think")
COLORS = {"download": "#4e79a7", "compute": "#f28e2b", "upload": "#e15759",
          "think": "#d3d3d3"}


@dataclass(frozen=True)
class Interval:
    """Client ``client`` is in ``phase`` from ``start`` to ``end`` (simulated time) in
    ``round`` (the server round when synchronous, the client's own round otherwise)."""

    client: int
    phase: str
    start: float
    end: float
    round: int = 0


def _phases(i: int, t: float, rnd: tuple, k: int) -> tuple[list[Interval], float]:
    dl, cp, ul, _th = rnd
    out = []
    for phase, dur in (("download", dl), ("compute", float(sum(cp))), ("upload", ul)):
        out.append(Interval(i, phase, t, t + dur, k))
        t += dur
    return out, t


def client_timeline(scenario: Any, replicate: int = 0, t_end: float | None = None
                    ) -> list[Interval]:
    """The per-client phases of ``(scenario, replicate)`` up to ``t_end`` (default: the
    scenario's simulated-time horizon; required when that is infinite)."""
    from fedsim.engine import problem_for
    from fedsim.engine.models import model_of
    from fedsim.engine.setup import RunSetup
    from fedsim.rng import Streams

    t_end = scenario.horizon.time if t_end is None else float(t_end)
    if not math.isfinite(t_end):
        raise ConfigError("a timeline needs a finite t_end (or horizon.time)")
    home = model_of(scenario)
    if home.rounds is None:
        raise ConfigError(f"no timeline for the {home.key!r} execution model: its clients "
                          "have no phases in simulated time (ExecutionModel.rounds)")
    streams = Streams(scenario.seed, replicate)
    setup = RunSetup(scenario, problem_for(scenario), streams, False, simulate=False)
    samplers = setup.make_samplers()
    n = setup.n
    out: list[Interval] = []
    if home.rounds == "sync":
        sampling = streams.server("sampling")
        m = max(1, int(round(scenario.algorithm.get("participation") * n)))
        t0, k = 0.0, 0
        while t0 < t_end:
            chosen = np.sort(sampling.choice(n, size=m, replace=False)).tolist()
            ends = []
            for i in chosen:
                iv, t = _phases(i, t0, samplers[i].next_round(), k)
                out += iv
                ends.append(t)
            t0, k = max(ends), k + 1
        return [iv for iv in out if iv.start < t_end and iv.end > iv.start]
    for i in range(n):
        t, k = 0.0, 0
        while t < t_end:
            rnd = samplers[i].next_round()
            iv, t = _phases(i, t, rnd, k)
            out += iv
            if rnd[3] > 0:
                out.append(Interval(i, "think", t, t + rnd[3], k))
                t += rnd[3]
            k += 1
    return [iv for iv in out if iv.start < t_end and iv.end > iv.start]


def timeline_matches(trace: Any, timeline: list[Interval], sync: bool) -> bool:
    """Do the rebuilt ends match the trace's server-step times (to 1e-9 relative)?
    Synchronous: the round ends are the step times.  Asynchronous: every step time is the
    end of some client round (download + compute + upload)."""
    steps = np.sort(trace.time[1:trace.steps_done + 1])
    if sync:
        last: dict[int, float] = {}
        for iv in timeline:
            last[iv.round] = max(last.get(iv.round, -math.inf), iv.end)
        ends = np.sort(np.array(list(last.values())))
    else:
        by: dict[tuple[int, int], float] = {}
        for iv in timeline:
            if iv.phase != "think":
                key = (iv.client, iv.round)
                by[key] = max(by.get(key, -math.inf), iv.end)
        ends = np.sort(np.array(list(by.values())))
    ends = ends[ends <= trace.sim_time * (1 + 1e-12)]
    if ends.size < steps.size or steps.size == 0:
        return False
    if sync:
        return bool(np.allclose(ends[:steps.size], steps, rtol=1e-9, atol=1e-12))
    # asynchronous: every server step happens at an upload's end (one upload per step for
    # FedAsync; the upload that fills the buffer for FedBuff / AS-FedAvg)
    j = np.clip(np.searchsorted(ends, steps), 1, ends.size - 1)
    near = np.minimum(np.abs(ends[j] - steps), np.abs(ends[j - 1] - steps))
    return bool(np.all(near <= 1e-9 * np.maximum(1.0, np.abs(steps))))


def draw_gantt(ax: Any, timeline: list[Interval], n: int, t_end: float,
               max_clients: int = 30) -> None:
    """One row per client (the first ``max_clients``), one bar per phase."""
    from matplotlib.patches import Patch

    for phase in PHASES:
        rows: dict[int, list[tuple[float, float]]] = {}
        for iv in timeline:
            if iv.phase == phase and iv.client < max_clients:
                rows.setdefault(iv.client, []).append((iv.start, min(iv.end, t_end)
                                                       - iv.start))
        for c, bars in rows.items():
            ax.broken_barh(bars, (c - 0.4, 0.8), facecolors=COLORS[phase], linewidth=0)
    ax.set_xlim(0, t_end)
    ax.set_ylim(-0.6, min(n, max_clients) - 0.4)
    ax.set_ylabel("client")
    ax.set_xlabel("simulated time")
    # beside the axes, so no client's bar (nor the panel's title) is hidden behind it
    ax.legend(handles=[Patch(color=COLORS[p], label=p) for p in PHASES[:3]],
              loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, ncol=1,
              frameon=False, borderaxespad=0.0)


def plot_run(scenario: Any, trace: Any, path: str | Path, replicate: int = 0,
             gantt_steps: int = 40, panel: Callable[[Any], None] | None = None) -> Path:
    """Write ``path`` (PNG/PDF/SVG): recorded metrics against simulated time, then the
    per-client timeline (omitted, with a note, for execution models without one).
    ``panel(ax)``, if given, draws a first panel above them (``fedsim run --bound``: the
    bound over the run, :func:`fedsim.validation.run_bound.draw`)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t_end = float(trace.sim_time)
    try:
        tl: list[Interval] | None = client_timeline(scenario, replicate, t_end)
        why = ""
    except ConfigError as exc:
        tl, why = None, str(exc)
    low = 1.2 if tl is not None else 0.15       # a one-line note needs no full panel
    if panel is None:
        fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(9, 5.6 + 1.4 * low),
                                       height_ratios=[1, low])
    else:
        fig, (ax0, ax1, ax2) = plt.subplots(3, 1, figsize=(10, 8.6 + 1.4 * low),
                                            height_ratios=[1.2, 1, low])
        panel(ax0)
    mt = trace.time[trace.metric_steps]
    for name, v in trace.metrics.items():
        if name.startswith("avg_"):
            continue
        (line,) = ax1.plot(mt, v, label=name, lw=0.8)
        avg = trace.metrics.get(f"avg_{name}")
        if avg is not None:  # the running average the [P]/[F] theorems speak of
            ax1.plot(mt, avg, ls="--", lw=1.4, color=line.get_color(),
                     label=f"avg_{name} (running mean)")
    if all(np.all(np.asarray(v)[np.isfinite(v)] > 0) for k, v in trace.metrics.items()
           if not k.startswith("avg_") and not k.startswith(("test_acc", "pers_acc"))):
        ax1.set_yscale("log")
    ax1.set_xlabel("simulated time")
    # beside the axes, so no curve is hidden behind it
    ax1.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False,
               borderaxespad=0.0)
    ax1.set_title(f"{scenario.name}: metrics against simulated time")
    if tl is not None:
        ok = timeline_matches(trace, tl, _is_sync(scenario))
        # the first ~gantt_steps server steps: a readable window of the whole run
        t_show = float(trace.time[min(trace.steps_done, gantt_steps)]) or t_end
        draw_gantt(ax2, tl, trace.client_updates.size, t_show)
        ax2.set_title(f"per-client timeline, first {min(trace.steps_done, gantt_steps)} "
                      "server steps (" + ("rebuilt, checked against the trace)" if ok else
                                          "WARNING: does not match the trace)"), loc="left",
                      fontsize=9)
    else:
        ax2.text(0.5, 0.5, why, ha="center", va="center", wrap=True)
        ax2.set_axis_off()
    fig.tight_layout()
    path = Path(path)
    from fedsim.safefile import atomic_writer

    with atomic_writer(path, "wb") as fh:  # never through a symlink or a device
        fig.savefig(fh, format=path.suffix.lstrip(".").lower() or "png")
    plt.close(fig)
    return path


def _is_sync(scenario: Any) -> bool:
    from fedsim.engine.models import model_of

    return model_of(scenario).rounds == "sync"
