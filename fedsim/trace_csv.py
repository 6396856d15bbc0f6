"""A trace as CSV without pandas: the bytes ``Trace.to_pandas().to_csv(fh, index=False)``
writes (``fedsim run --out``) and ``Trace.metrics_frame()`` with a ``diverged`` column
(``--metrics-out``), for a run that does not otherwise need pandas (about 0.3 CPU-s of
start-up, issue 19).

The formatting is pandas' own for ``to_csv`` with its defaults (``pandas.core.indexes.base.
get_values_for_csv``, minimal quoting): a float column is ``values.astype(str)`` (NumPy's
shortest round-trip repr) with NaN written as the empty string, an integer column
``values.astype(str)``, a string column ``str``; rows through :func:`csv.writer` with
``lineterminator="\\n"``.  The metric columns of ``--out`` are the left merge on ``step``
that :meth:`fedsim.trace.Trace.to_pandas` makes: a metric's value at its recorded steps,
NaN elsewhere (an integer metric column becomes float64 when a step is missing, as in
pandas).  ``tests/core/test_trace_csv.py`` compares the bytes with pandas'.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from typing import IO, Any

import numpy as np

__all__ = ["write_trace_csv", "write_metrics_csv", "column_text"]


def column_text(values: Any) -> list[str]:
    """One column as the strings pandas' ``to_csv`` writes for it (module docstring)."""
    a = np.asarray(values)
    if a.dtype.kind == "f":
        text = a.astype(str)
        nan = np.isnan(a)
        if nan.any():
            text = text.astype(object)
            text[nan] = ""
        return text.tolist()
    if a.dtype.kind in "iub":
        return a.astype(str).tolist()
    return [str(v) for v in a.tolist()]


def _write(fh: IO[str], header: list[str], columns: Iterable[Any]) -> None:
    writer = csv.writer(fh, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(zip(*[column_text(c) for c in columns], strict=True))


def _metric_column(values: np.ndarray, steps: np.ndarray, nrows: int) -> np.ndarray:
    """A metric on every step: its values at ``steps``, NaN at the others."""
    values = np.asarray(values)
    if steps.size == nrows:  # recorded at every step: the merge keeps the dtype
        return values
    col = np.full(nrows, np.nan)
    col[steps] = values
    return col


def write_trace_csv(trace: Any, fh: IO[str]) -> None:
    """``trace.to_pandas().to_csv(fh, index=False)``, byte for byte (module docstring)."""
    nrows = trace.time.size
    steps = np.asarray(trace.metric_steps)
    if steps.size and (np.any(np.diff(steps) <= 0) or steps[0] < 0 or steps[-1] >= nrows):
        # not strictly increasing steps of the table (the left merge would repeat or drop
        # rows): pandas says what that means
        trace.to_pandas().to_csv(fh, index=False)
        return
    header = ["step", "time", "kind", "client", "staleness_steps", "staleness_time",
              "buffer_fill", *trace.metrics, "diverged"]
    columns = [np.arange(nrows), trace.time, trace.kind, trace.client, trace.staleness_steps,
               trace.staleness_time, trace.buffer_fill,
               *(_metric_column(v, steps, nrows) for v in trace.metrics.values()),
               np.full(nrows, int(bool(trace.diverged)), dtype=np.int64)]
    _write(fh, header, columns)


def write_metrics_csv(trace: Any, fh: IO[str]) -> None:
    """``trace.metrics_frame()`` with a ``diverged`` column (0/1) as ``to_csv(fh,
    index=False)`` writes it, byte for byte."""
    steps = np.asarray(trace.metric_steps)
    header = ["step", "time", *trace.metrics, "diverged"]
    columns = [steps, trace.time[steps], *trace.metrics.values(),
               np.full(steps.size, int(bool(trace.diverged)), dtype=np.int64)]
    _write(fh, header, columns)
