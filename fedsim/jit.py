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

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["jit", "cache_dir", "Bound", "cache_closure"]


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
from numba.core.caching import FunctionCache  # noqa: E402

try:  # numba's C fingerprint of an argument (dtype, layout, read-only flag; the dispatcher's
    from numba._dispatcher import compute_fingerprint as _fingerprint  # noqa: E402
except ImportError:  # pragma: no cover - other numba versions: the dispatcher decides
    _fingerprint = None


def jit(fn: Callable[..., Any] | None = None, *, cache: bool = True, inline: bool = False,
        nrt: bool = True) -> Any:
    """``numba.njit(cache=True, error_model="numpy")``: ``fn`` compiled on first call (or
    loaded from the cache), ``fn.py_func`` the same function interpreted.

    ``inline=True`` (``inline="always"``): compiled code that calls ``fn`` through a global
    or closure name gets its body inlined (numba IR), not a call.  For the rules and
    oracles the replay runs per step: a call costs tens of nanoseconds (the arrays are
    passed field by field), more than a d = 10 step's arithmetic.  The arithmetic is the
    same either way (no fast-math), so the results are too, bit for bit.

    ``cache=False`` (``@jit(cache=False)``) for a function that takes compiled functions as
    arguments (a rule taking its oracle, the replay taking its rules): numba 0.68 cannot
    re-save a cache index holding such a signature once another process added one
    (``ReferenceError: underlying object has vanished`` while pickling the index), so
    those are compiled once per process; the leaf functions they call stay cached.
    """
    opts = {"cache": cache, "error_model": "numpy", "inline": "always" if inline else "never"}
    if not nrt:
        opts["_nrt"] = False
    if fn is None:
        return lambda f: numba.njit(**opts)(f)
    return numba.njit(**opts)(fn)


class Bound:
    """``fn`` with its leading arguments fixed (compiled functions, e.g. a rule's oracle),
    called per event from Python.

    A compiled function passed as an argument from Python costs tens of microseconds of
    typing per call.  ``Bound`` calls the compiled specialization's entry point directly,
    found once per fingerprint of the other arguments (numba's own C fingerprint: type,
    layout, read-only flag), so a call costs what a call with plain arrays costs.  The first
    call of a new fingerprint (and any argument numba cannot fingerprint) goes through the
    dispatcher, which types and compiles as usual.
    """

    __slots__ = ("fn", "lead", "entries")

    def __init__(self, fn: Any, *lead: Any) -> None:
        self.fn, self.lead = fn, lead
        self.entries: dict[tuple, Any] = {}

    def __call__(self, *args: Any) -> Any:
        if _fingerprint is None:  # pragma: no cover
            return self.fn(*self.lead, *args)
        try:
            key = tuple([_fingerprint(a) for a in args])
        except (TypeError, ValueError, NotImplementedError):
            return self.fn(*self.lead, *args)
        entry = self.entries.get(key)
        if entry is None:
            out = self.fn(*self.lead, *args)
            sig = tuple(self.fn.typeof_pyval(a) for a in (*self.lead, *args))
            self.entries[key] = self.fn.overloads[sig].entry_point
            return out
        return entry(*self.lead, *args)


def _fingerprint_of(value: Any) -> tuple:
    """A process-independent identity of a closure constant: a compiled function by its
    module, name, bytecode and constants, and its source file's size and time stamp."""
    f = getattr(value, "py_func", value)
    code = getattr(f, "__code__", None)
    if code is None:
        return (type(value).__qualname__, repr(value))
    try:
        st = os.stat(code.co_filename)
        stamp = (st.st_mtime_ns, st.st_size)
    except OSError:
        stamp = (0, 0)
    body = hashlib.sha256(code.co_code + repr(code.co_consts).encode()).hexdigest()
    return (getattr(f, "__module__", ""), getattr(f, "__qualname__", ""), body, stamp)


class _ClosureCache(FunctionCache):
    """numba's on-disk cache of a closure, keyed on what its closure constants ARE.

    numba keys a closure's cache entries on the pickled closure contents; a pickled
    dispatcher carries a per-process id, so that key never matches in another process and
    every process compiled (and appended) its own copy.  Here a constant compiled function
    counts by module, name, code and source stamp (:func:`_fingerprint_of`).  As with
    numba's own cache, a change in a function that those call is not seen.
    """

    def _index_key(self, sig: Any, codegen: Any) -> tuple:
        fn = self._py_func
        cells = tuple(_fingerprint_of(c.cell_contents) for c in fn.__closure__ or ())
        h = hashlib.sha256
        return (sig, codegen.magic_tuple(), (h(fn.__code__.co_code).hexdigest(),
                                             h(repr(cells).encode()).hexdigest()))


def cache_closure(dispatcher: Any) -> Any:
    """Give a compiled closure (``jit`` with ``cache=True``) an on-disk cache that is found
    again by other processes (:class:`_ClosureCache`); returns ``dispatcher``."""
    dispatcher._cache = _ClosureCache(dispatcher.py_func)
    return dispatcher
