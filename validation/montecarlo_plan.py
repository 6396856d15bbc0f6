"""Planning a Monte-Carlo run's dispatch: the function a task names, and the chunks its
tasks are sent in.

The chunks depend on the task list alone -- never on the backend or the number of
workers -- so a batch of replicates is the same whatever runs it
(:mod:`fedsim.validation.montecarlo_backends` sends them; a chunk is stored as one
transaction).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

__all__ = ["CHUNK", "GROUP_CHUNK", "resolve_task_function", "cut_chunks", "plan_chunks"]

#: tasks per chunk sent to a pool or Dask worker (independent of the number of workers, so
#: a batch of replicates is the same whatever the backend; a kill loses at most the
#: chunks in flight)
CHUNK = 16

#: at most this many tasks per chunk for a task function with a group key (``fn.group``:
#: payload -> key, e.g. one run set's replicates, which the batch variant runs in one call;
#: :func:`plan_chunks`)
GROUP_CHUNK = 64


def resolve_task_function(fn: str) -> Callable[[dict], Any]:
    """The function a task names (``"module:function"``)."""
    mod, name = fn.split(":")
    return getattr(importlib.import_module(mod), name)


def cut_chunks(items: list, size: int) -> list[list]:
    """``items`` cut in order into lists of ``size`` (the last may be shorter)."""
    return [items[i:i + size] for i in range(0, len(items), size)]


def _group_of(fn: str) -> Callable[[dict], Any] | None:
    try:
        f = resolve_task_function(fn)
    except Exception:  # noqa: BLE001 -- execute_task records the import error
        return None
    group = getattr(f, "group", None)
    return group if callable(group) and callable(getattr(f, "batch", None)) else None


def _group_runs(todo: list) -> list[tuple[bool, list]]:
    """``todo`` cut into runs of consecutive tasks: ``(True, tasks)`` for tasks of one
    function with a group key and one key, ``(False, tasks)`` for the tasks between them."""
    runs: list[tuple[bool, list]] = []
    groups: dict[str, Callable[[dict], Any] | None] = {}
    last: tuple | None = None
    for item in todo:
        fn = item[0].fn
        if fn not in groups:
            groups[fn] = _group_of(fn)
        g = groups[fn]
        key = (fn, g(item[0].payload)) if g is not None else None
        if runs and key == last and runs[-1][0] == (g is not None):
            runs[-1][1].append(item)
        else:
            runs.append((g is not None, [item]))
        last = key
    return runs


def plan_chunks(todo: list) -> list[list]:
    """The chunks ``todo`` is sent in; they depend on the task list alone (never on the
    backend or the number of workers).

    Tasks of a function with a group key (``fn.group``; e.g.
    :func:`fedsim.validation.worker.run_replicate`: the replicates of one run set) are
    chunked by group: a group larger than :data:`GROUP_CHUNK` is split into
    ``ceil(size / GROUP_CHUNK)`` near-equal chunks, and consecutive smaller groups share a
    chunk while it stays within :data:`GROUP_CHUNK`, so the batch variant replays many
    replicates per call.  Other tasks go in chunks of :data:`CHUNK`, as they come.
    """
    out: list[list] = []
    open_chunk: list | None = None   # the chunk that small groups are packed into
    for grouped, items in _group_runs(todo):
        if not grouped:
            out.extend(cut_chunks(items, CHUNK))
            open_chunk = None
            continue
        if len(items) > GROUP_CHUNK:
            k = -(-len(items) // GROUP_CHUNK)
            size = -(-len(items) // k)
            out.extend(cut_chunks(items, size))
            open_chunk = None
        elif open_chunk is not None and len(open_chunk) + len(items) <= GROUP_CHUNK:
            open_chunk.extend(items)
        else:
            open_chunk = list(items)
            out.append(open_chunk)
    return out
