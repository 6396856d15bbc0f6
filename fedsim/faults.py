"""Fault injection for the ``kill -9`` tests (issue 21): a process ends itself with SIGKILL
at a named moment, so that a test can kill a real run exactly there and check the resume.

``FEDSIM_FAULT=<point>[@<n>]`` (environment) makes the process send itself SIGKILL the
``n``-th time (default 1) it reaches :func:`fault_point` with that name.  The points:

* ``setup``            -- the run directory is locked, nothing is computed yet
  (:func:`fedsim.validation.montecarlo_store.lock_run_dir`);
* ``chunk``            -- a chunk of records has just been committed
  (:func:`fedsim.validation.montecarlo.run_tasks`);
* ``point``            -- a search point has just been stored (``fedsim search``);
* ``write:<name>``     -- an output file called ``<name>`` (e.g. ``verdicts.csv``) is
  complete in its temporary file, fsynced, not yet renamed (:func:`fedsim.safefile.atomic_writer`).

Unset (the normal case) it costs one dictionary lookup.  Nothing else reads it.
"""

from __future__ import annotations

import os
import signal

__all__ = ["ENV", "fault_point"]

ENV = "FEDSIM_FAULT"
_SEEN: dict[str, int] = {}


def fault_point(name: str) -> None:
    """SIGKILL this process if ``FEDSIM_FAULT`` names ``name`` and this is its n-th visit."""
    spec = os.environ.get(ENV)
    if not spec:
        return
    point, _, nth = spec.partition("@")
    if point != name:
        return
    _SEEN[name] = _SEEN.get(name, 0) + 1
    if _SEEN[name] == (int(nth) if nth.isdigit() else 1):
        os.kill(os.getpid(), signal.SIGKILL)
