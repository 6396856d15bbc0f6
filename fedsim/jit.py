"""Compilation of the update rules, the problems' oracle views and the replay (numba).

Every rule is written once, in the subset of Python that numba compiles, and decorated
with :func:`jit`.  The same function then runs compiled (``rule(...)``) or interpreted
through ``rule.py_func(...)`` -- for a problem whose oracles do not compile (an
:class:`~fedsim.problems.autodiff.AutogradProblem`), and for step-by-step tests.

Compiled code is cached on disk (``cache=True``).  numba writes its cache next to the
source when it can; when the package directory is read-only, this module points
``NUMBA_CACHE_DIR`` at ``$XDG_CACHE_HOME/fedsim/numba`` (default ``~/.cache/fedsim/numba``)
before numba is imported, unless the user set ``NUMBA_CACHE_DIR`` already.
``error_model="numpy"``: a division by zero gives inf/NaN as in NumPy (a diverging
replicate is marked by the caller, never an exception).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["jit", "cache_dir"]


def cache_dir() -> str | None:
    """Where numba caches compiled code: ``NUMBA_CACHE_DIR`` when set, else ``None``
    (next to the sources)."""
    return os.environ.get("NUMBA_CACHE_DIR")


def _ensure_cache_dir() -> None:
    if os.environ.get("NUMBA_CACHE_DIR"):
        return
    here = Path(__file__).resolve().parent
    if os.access(here, os.W_OK):
        return
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    target = base / "fedsim" / "numba"
    target.mkdir(parents=True, exist_ok=True)
    os.environ["NUMBA_CACHE_DIR"] = str(target)


_ensure_cache_dir()

import numba  # noqa: E402  (after the cache directory is fixed)


def jit(fn: Callable[..., Any]) -> Any:
    """``numba.njit(cache=True, error_model="numpy")``: ``fn`` compiled on first call (or
    loaded from the cache), ``fn.py_func`` the same function interpreted."""
    return numba.njit(cache=True, error_model="numpy")(fn)
