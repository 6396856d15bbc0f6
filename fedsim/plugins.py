"""Entry-point plug-ins: load one group, report a broken entry point in one line, go on.

fedsim reads three entry-point groups (``docs/EXTENDING.md``, "A plug-in package"):

* ``fedsim.theorems`` -- a :class:`fedsim.theory.registry.Theorem` (or a callable that
  registers what it wants), read by :func:`fedsim.theory.registry.load_plugins`;
* ``fedsim.families`` -- a :class:`fedsim.validation.families.Family` (or a list of them),
  read by :func:`fedsim.validation.families.load_family_plugins`;
* ``fedsim.suite_rows`` -- a list of :class:`fedsim.validation.rows.SuiteRow` (or a callable
  returning one), read by :func:`fedsim.validation.rows.load_row_plugins`.

An entry point that fails to import, or names an object of the wrong kind, is skipped: one
line on stderr names it, its value and the first line of the error (once per process), and
:func:`broken_plugins` lists it.  Every other command keeps working.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from importlib import metadata
from typing import Any

__all__ = ["load_group", "broken_plugins"]

_BROKEN: dict[tuple[str, str], str] = {}


def _first_line(exc: BaseException) -> str:
    msg = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {msg[0]}" if msg else type(exc).__name__


def load_group(group: str, accept: Callable[[str, Any], None]) -> list[str]:
    """Load every entry point of ``group`` and pass ``(name, object)`` to ``accept`` (which
    raises on an object of the wrong kind).  Returns the names accepted; a failing entry point
    is reported (module docstring) and skipped."""
    loaded = []
    for ep in metadata.entry_points(group=group):
        try:
            accept(ep.name, ep.load())
        except Exception as exc:  # noqa: BLE001 - any failure of foreign code: report, skip
            key = (group, ep.name)
            if key not in _BROKEN:
                _BROKEN[key] = (f"fedsim: plug-in {ep.name!r} ({group} = {ep.value}) is "
                                f"broken and was skipped: {_first_line(exc)}")
                sys.stderr.write(_BROKEN[key] + "\n")
            continue
        loaded.append(ep.name)
    return loaded


def broken_plugins() -> list[str]:
    """The one-line reports of the plug-ins skipped so far in this process."""
    return list(_BROKEN.values())
