"""Per-client timelines (download / compute / upload / think) and ``fedsim run --plot``.

The timeline drawn is the one the run had: the phases its execution model's home records
with its table (:func:`fedsim.engine.timeline_phases`, the home's SimPy reference writer
run with a :class:`~fedsim.engine.models.phases.PhaseLog`; the times are the writer's own,
from its one set of draws).  Nothing here samples a delay or adds a time.  A model whose
home records no phases (the window model, which has no simulated time; the literature's
recorded schedule, which has none either; uniform assignment, whose writer draws a job's
duration as one sum) gets a one-line refusal, not a picture.  :func:`plot_run` draws the
recorded metrics against simulated time above the per-client Gantt chart, and checks first
that the writer's table is the trace's (:meth:`~fedsim.engine.models.phases.Phases.matches`),
so a timeline that drifted from the run is flagged, not drawn silently.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from fedsim.errors import ConfigError

__all__ = ["Interval", "client_timeline", "intervals", "draw_gantt", "plot_run"]

PHASES = ("download", "compute", "upload", "think")
COLORS = {"download": "#4e79a7", "compute": "#f28e2b", "upload": "#e15759",
          "think": "#d3d3d3"}
#: each phase's (start, end) columns of :class:`~fedsim.engine.models.phases.Phases`
BOUNDS = {"download": ("start", "download_end"), "compute": ("download_end", "compute_end"),
          "upload": ("compute_end", "upload_end"), "think": ("upload_end", "think_end")}


@dataclass(frozen=True)
class Interval:
    """Client ``client`` is in ``phase`` from ``start`` to ``end`` (simulated time) in
    ``round`` (the server round when synchronous, the client's own round otherwise)."""

    client: int
    phase: str
    start: float
    end: float
    round: int = 0


def intervals(phases: Any, t_end: float | None = None) -> list[Interval]:
    """The recorded ``phases`` (:class:`~fedsim.engine.models.phases.Phases`) as
    intervals, round by round in the order the writer began them, keeping those of
    positive length that start before ``t_end`` (default: the run's simulated time);
    a think pause is one only where the writer paused."""
    t_end = float(phases.table.sim_time if t_end is None else t_end)
    cols = {k: getattr(phases, k).tolist() for k in ("client", "round", "start",
                                                      "download_end", "compute_end",
                                                      "upload_end", "think_end")}
    out = []
    for j in range(len(cols["client"])):
        for phase in PHASES:
            a, b = (cols[k][j] for k in BOUNDS[phase])
            if a < t_end and b > a:  # NaN (no think pause) is never > a
                out.append(Interval(cols["client"][j], phase, a, b, cols["round"][j]))
    return out


def client_timeline(scenario: Any, replicate: int = 0, t_end: float | None = None
                    ) -> list[Interval]:
    """The per-client phases of ``(scenario, replicate)`` that start before ``t_end``
    (default: the run's end), as its home records them (:func:`fedsim.engine.
    timeline_phases`; a ``ConfigError`` naming the model when it records none)."""
    from fedsim.engine import timeline_phases

    return intervals(timeline_phases(scenario, replicate), t_end)


def draw_gantt(ax: Any, timeline: list[Interval], n: int, t_end: float,
               max_clients: int = 30, arrivals: Sequence[tuple[int, float]] | None = None
               ) -> None:
    """One row per client (the first ``max_clients``), one bar per phase; ``arrivals``
    ``(client, time)``, if given, marks each upload's arrival at the server (the events of
    a model whose rounds have no download or upload, e.g. AREA's iterate model)."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.ticker import MaxNLocator

    for phase in PHASES:
        rows: dict[int, list[tuple[float, float]]] = {}
        for iv in timeline:
            if iv.phase == phase and iv.client < max_clients:
                rows.setdefault(iv.client, []).append((iv.start, min(iv.end, t_end)
                                                       - iv.start))
        for c, bars in rows.items():
            ax.broken_barh(bars, (c - 0.4, 0.8), facecolors=COLORS[phase], linewidth=0)
    handles: list[Any] = [Patch(color=COLORS[p], label=p) for p in PHASES[:3]]
    if arrivals is not None:
        pts = [(t, c) for c, t in arrivals if c < max_clients and t <= t_end]
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], ls="none", marker="|",
                    ms=9, mew=1.0, color="black")
        handles.append(Line2D([], [], ls="none", marker="|", ms=9, mew=1.0, color="black",
                              label="arrival"))
    ax.set_xlim(0, t_end)
    ax.set_ylim(-0.6, min(n, max_clients) - 0.4)
    ax.yaxis.set_major_locator(MaxNLocator(integer=True, steps=[1, 2, 5, 10]))
    ax.set_ylabel("client")
    ax.set_xlabel("simulated time")
    # beside the axes, so no client's bar (nor the panel's title) is hidden behind it
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7,
              ncol=1, frameon=False, borderaxespad=0.0)


def plot_run(scenario: Any, trace: Any, path: str | Path, replicate: int = 0,
             gantt_steps: int = 40, panel: Callable[[Any], None] | None = None) -> Path:
    """Write ``path`` (PNG/PDF/SVG): recorded metrics against simulated time, then the
    per-client timeline (omitted, with a note, for execution models without one).
    ``panel(ax)``, if given, draws a first panel above them (``fedsim run --bound``: the
    bound over the run, :func:`fedsim.validation.run_bound.draw`)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from fedsim.engine import timeline_phases

    t_end = float(trace.sim_time)
    try:
        phases = timeline_phases(scenario, replicate)
        tl: list[Interval] | None = intervals(phases, t_end)
        why = ""
    except ConfigError as exc:
        phases, tl, why = None, None, str(exc)
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
        ok = phases.matches(trace)
        # the first ~gantt_steps server steps: a readable window of the whole run
        t_show = float(trace.time[min(trace.steps_done, gantt_steps)]) or t_end
        up = phases.arrived()
        draw_gantt(ax2, tl, trace.client_updates.size, t_show,
                   arrivals=list(zip(phases.client[up].tolist(),
                                     phases.upload_end[up].tolist(), strict=True)))
        ax2.set_title(f"per-client timeline, first {min(trace.steps_done, gantt_steps)} "
                      "server steps (" + ("recorded by the model's reference writer; "
                                          "its table is the trace's)" if ok else
                                          "WARNING: its table is not the trace's)"),
                      loc="left", fontsize=9)
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

