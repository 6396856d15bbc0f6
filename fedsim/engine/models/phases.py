"""The per-client phases of a run, recorded by a home's SimPy reference writer.

A writer that is handed a :class:`PhaseLog` stores, for every client round it begins, the
times its own arithmetic computes -- the download's start and end, the end of the local
computation, the upload's arrival at the server -- and, as the round reaches the server,
its place in the table's upload order and the model version the writer logs with it; a
think pause after it adds its end (``upload_end + think``, the addition the writer's pause
makes).  Nothing is drawn again: the numbers are the writer's, from its one set of draws,
and the event table it returns is the same table, bit for bit, with or without the log
(``tests/plot/test_phases.py``).  The fast writers record nothing; they are tested bitwise
equal to the reference writer, so its phases are the run's.

:func:`timeline_phases` is the door: the scenario's execution model's ``phases`` (its home's
reference writer run with a log, :class:`~fedsim.engine.models.base.ExecutionModel`), or a
``ConfigError`` for a model that records none.  :func:`fedsim.plot.client_timeline` draws
it; :meth:`Phases.matches` checks it against a run's Trace.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from fedsim.errors import ConfigError

__all__ = ["Phases", "PhaseLog", "record", "timeline_phases"]


@dataclass(frozen=True)
class Phases:
    """One row per client round a writer began, in the order it began them.

    ``client``; ``round`` (the client's own round index, or the server round when
    ``sync``: the chosen clients start together); ``start``, ``download_end``,
    ``compute_end``, ``upload_end`` (the upload's arrival at the server) in simulated time;
    ``think_end`` (the end of the think pause after the round, NaN: none); ``upload`` (the
    round's index in the table's upload order ``u_client``, -1: it never reached the
    server); ``read`` (the model version the writer logged with that upload, the table's
    ``c_read`` when the upload is consumed; -1 when it never arrived).  ``n`` is the number
    of clients and ``table`` the writer's :class:`~fedsim.engine.replay.table.EventTable`.
    A round the run stopped before its upload's time was computed (``read_at =
    "arrival"``: during its download) has no row.
    """

    client: np.ndarray
    round: np.ndarray
    start: np.ndarray
    download_end: np.ndarray
    compute_end: np.ndarray
    upload_end: np.ndarray
    think_end: np.ndarray
    upload: np.ndarray
    read: np.ndarray
    n: int
    sync: bool
    table: Any

    def arrived(self) -> np.ndarray:
        """The rows that reached the server, in the table's upload order."""
        rows = np.flatnonzero(self.upload >= 0)
        return rows[np.argsort(self.upload[rows], kind="stable")]

    def matches(self, trace: Any) -> bool:
        """Is ``trace`` the run these phases were recorded with: its timeline columns
        (time, kind, client, staleness, fill of every step it did) equal, bit for bit, to
        the writer's table's up to the trace's last step (a divergence stops it early)?"""
        t = int(trace.steps_done)
        if t > self.table.steps_done:
            return False
        cols = self.table.columns(t)
        return all(np.array_equal(getattr(trace, k), v) for k, v in cols.items())


class PhaseLog:
    """What a writer appends to (module docstring): :meth:`begin` when a client's round's
    times are known, :meth:`arrive` when that round's upload reaches the server (where the
    writer calls ``TableLog.upload``), :meth:`think` for a think pause after it.  A client
    has one round in flight at a time, so :meth:`arrive` and :meth:`think` name the
    client."""

    def __init__(self, n: int) -> None:
        self.n = int(n)
        self.rounds = [0] * self.n
        self.current = [-1] * self.n
        self.uploads = 0
        self.cols = {k: array(c) for k, c in (
            ("client", "q"), ("round", "q"), ("start", "d"), ("download_end", "d"),
            ("compute_end", "d"), ("upload_end", "d"), ("think_end", "d"), ("upload", "q"),
            ("read", "q"))}

    def begin(self, client: int, start: float, download_end: float, compute_end: float,
              upload_end: float, round: int | None = None) -> int:
        """A round of ``client`` with the writer's times; ``round`` defaults to the
        client's own count."""
        c = self.cols
        k = self.rounds[client] if round is None else int(round)
        self.rounds[client] += 1
        for key, v in (("client", client), ("round", k), ("start", start),
                       ("download_end", download_end), ("compute_end", compute_end),
                       ("upload_end", upload_end), ("think_end", math.nan), ("upload", -1),
                       ("read", -1)):
            c[key].append(v)
        self.current[client] = len(c["client"]) - 1

    def arrive(self, client: int, read: int) -> None:
        """``client``'s round's upload reached the server, logged with model version
        ``read``."""
        row = self.current[client]
        self.cols["upload"][row] = self.uploads
        self.cols["read"][row] = int(read)
        self.uploads += 1

    def think(self, client: int, think: float) -> None:
        """A think pause of ``think`` follows ``client``'s round's upload (it ends where the
        writer's pause ends, ``upload_end + think``)."""
        c, row = self.cols, self.current[client]
        c["think_end"][row] = c["upload_end"][row] + think

    def phases(self, table: Any, *, sync: bool = False) -> Phases:
        """The recorded rows with the writer's ``table``."""
        cols = {k: np.frombuffer(v, dtype=np.float64 if v.typecode == "d" else np.int64
                                 ).copy() if len(v) else
                np.empty(0, np.float64 if v.typecode == "d" else np.int64)
                for k, v in self.cols.items()}
        return Phases(**cols, n=self.n, sync=bool(sync), table=table)


def record(write: Callable[[PhaseLog], Any], n: int, *, sync: bool = False) -> Phases:
    """``write(log)`` -- a home's reference writer given a fresh :class:`PhaseLog` of
    ``n`` clients, returning its table -- and the phases it recorded."""
    log = PhaseLog(n)
    table = write(log)
    return log.phases(table, sync=sync)


def timeline_phases(scenario: Any, replicate: int = 0) -> Phases:
    """The per-client phases of ``(scenario, replicate)`` to the scenario's horizon, from
    its execution model's home (``ExecutionModel.phases``); a ``ConfigError`` for a model
    whose clients have no phases in simulated time."""
    from fedsim.engine.models.base import model_of
    from fedsim.engine.setup import problem_for

    home = model_of(scenario)
    if home.phases is None:
        raise ConfigError(f"no timeline for the {home.key!r} execution model: its clients "
                          "have no phases in simulated time (ExecutionModel.phases)")
    return home.phases(scenario, problem_for(scenario), int(replicate))
