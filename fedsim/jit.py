"""Compilation of the update rules, the problems' oracle views and the replay (numba).

Every rule is written once, in the subset of Python that numba compiles, and decorated
with :func:`jit`.  The same function then runs compiled (``rule(...)``) or interpreted
through ``rule.py_func(...)`` -- for a problem whose oracles do not compile (an
:class:`~fedsim.problems.autodiff.AutogradProblem`), and for step-by-step tests.

Compiled code is cached on disk (``cache=True``), in the first of these that can be
written, fixed before numba is imported (:func:`_ensure_cache_dir`): ``NUMBA_CACHE_DIR`` if
the user set it; ``fedsim/__pycache__/numba`` when the package directory is writable (a
checkout);
``$XDG_CACHE_HOME/fedsim/numba`` (default ``~/.cache/fedsim/numba``); a fresh temporary
directory, removed at exit, with a one-line notice on stderr.  Under that root
(:func:`cache_root`) entries are kept per module name, not per file path: a wheel installed
from a checkout finds the checkout's compiled code (``NUMBA_CACHE_DIR`` pointing at it).  A
read-only install is never written into, and nothing here fails at import.  A damaged cache
entry (garbage in an index or data file) is a cache miss: the function is compiled again.  A
cache entry is keyed on the function and on everything that changes its machine code
(:func:`source_digest`): its compile options, and everything it calls or reads, in any module,
with their compile options (``inline`` decides whether a callee is inlined or linked) and the
constants they freeze; editing a callee compiles its callers again (numba's own key sees the
caller's file only).  A compiled closure is named after what it binds (:func:`jit` appends
the digest to its ``__qualname__``): numba links a callee's machine code into each caller
under the callee's name with "link once" semantics, so two bindings of one source loaded
from the cache into one process must not share a name (the second would run the first's
code).
``error_model="numpy"``: a division by zero gives inf/NaN as in NumPy (a diverging
replicate is marked by the caller, never an exception).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["jit", "cache_dir", "cache_root", "Bound", "cache_closure", "source_digest",
           "compile_options"]


def cache_dir() -> str | None:
    """Where numba caches compiled code: ``NUMBA_CACHE_DIR`` when set, else ``None``
    (next to the sources)."""
    return os.environ.get("NUMBA_CACHE_DIR")


def _usable(path: Path) -> bool:
    """Whether ``path`` is (or can be made) a directory this process can write a file in."""
    import tempfile

    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=path, prefix=".probe-")
        os.close(fd)
        os.unlink(probe)
        return True
    except (OSError, ValueError):
        return False


def _notice(text: str) -> None:
    import sys

    try:
        sys.stderr.write(f"fedsim: note: {text}\n")
    except (OSError, ValueError, AttributeError):  # stderr closed: nothing to tell
        pass


def _temporary_cache() -> str:
    """A fresh temporary directory, removed when the process that made it exits."""
    import atexit
    import shutil
    import tempfile

    path = tempfile.mkdtemp(prefix="fedsim-numba-")
    owner = os.getpid()
    atexit.register(lambda: os.getpid() == owner and shutil.rmtree(path, ignore_errors=True))
    return path


def _ensure_cache_dir() -> None:
    """Point ``NUMBA_CACHE_DIR`` at a directory that can be written (module doc): the one
    the user set, else -- when the package directory is read-only -- the user cache
    directory, else a fresh temporary directory (one line on stderr says so).  numba's own
    fallback, the package's ``__pycache__``, is never reached; nothing here raises."""
    configured = os.environ.get("NUMBA_CACHE_DIR")
    if configured:
        if _usable(Path(configured)):
            return
        tried = f"NUMBA_CACHE_DIR={configured}"
    else:
        here = Path(__file__).resolve().parent
        if os.access(here, os.W_OK) and _usable(here / "__pycache__"):
            return
        tried = f"the package directory {here}"
    try:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        target: Path | None = base / "fedsim" / "numba"
    except (RuntimeError, KeyError, OSError):  # no home directory
        target = None
    if target is not None and _usable(target):
        os.environ["NUMBA_CACHE_DIR"] = str(target)
        return
    try:
        os.environ["NUMBA_CACHE_DIR"] = _temporary_cache()
    except OSError:  # no writable temporary directory either: compile in memory only
        os.environ.pop("NUMBA_CACHE_DIR", None)
        _notice(f"no writable directory for compiled code ({tried}, {target}, the temporary "
                "directory); every run compiles again")
        return
    _notice(f"{tried} and {target} cannot be written; compiled code goes to the temporary "
            f"{os.environ['NUMBA_CACHE_DIR']} and is compiled again next run")


_ensure_cache_dir()

import numba  # noqa: E402  (after the cache directory is fixed)
from numba.core.caching import (  # noqa: E402
    CompileResultCacheImpl,
    FunctionCache,
    UserProvidedCacheLocator,
)

from fedsim.jit_digest import (  # noqa: E402
    compile_options,
    digest_with_options,
    options_text,
    source_digest,
)

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

    A closure (a function with free variables, e.g. a loop binding its rules) gets
    ``[<16 hex digits>]`` appended to its ``__qualname__`` before it is compiled: the
    :func:`source_digest` of what it binds and of these options (module docstring).
    """
    opts = {"cache": cache, "error_model": "numpy", "inline": "always" if inline else "never"}
    if not nrt:
        opts["_nrt"] = False

    def make(f: Callable[..., Any]) -> Any:
        if getattr(f, "__closure__", None):
            tag = digest_with_options(f, options_text(opts))[:16]
            f.__qualname__ = f"{f.__qualname__}[{tag}]"
        dispatcher = numba.njit(**{**opts, "cache": False})(f)
        return cache_closure(dispatcher) if cache else dispatcher

    return make if fn is None else make(fn)


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


def cache_root() -> Path | None:
    """The directory fedsim's compiled code is cached under (module docstring):
    ``NUMBA_CACHE_DIR`` when set (:func:`_ensure_cache_dir` sets it when the package
    directory is read-only), else ``fedsim/__pycache__/numba`` of this package; ``None``
    when there is none.  Entries are kept per module *name* (not per file path), so two
    copies of the same source (a checkout and a wheel installed from it) share them."""
    configured = os.environ.get("NUMBA_CACHE_DIR")
    if configured:
        return Path(configured)
    here = Path(__file__).resolve().parent
    return here / "__pycache__" / "numba" if os.access(here, os.W_OK) else None


class _ModuleLocator(UserProvidedCacheLocator):
    """numba's cache locator for fedsim's functions: ``cache_root() / <module>_<sha1 of
    the module name>``, the source file's content hash its stamp (numba's): the place
    depends on the module, not on where the package is installed."""

    def __init__(self, py_func: Any, py_file: str) -> None:
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        mod = py_func.__module__
        tag = hashlib.sha1(mod.encode()).hexdigest()
        self._cache_path = os.path.join(str(cache_root()), f"{mod.rsplit('.', 1)[-1]}_{tag}")

    @classmethod
    def from_function(cls, py_func: Any, py_file: str) -> Any:
        if (getattr(py_func, "__module__", None) or "").split(".")[0] != "fedsim" or \
                cache_root() is None or not os.path.exists(py_file):
            return None
        self = cls(py_func, py_file)
        try:
            self.ensure_cache_path()
        except OSError:
            return None
        return self


class _DeepCacheImpl(CompileResultCacheImpl):
    _locator_classes = [_ModuleLocator, *CompileResultCacheImpl._locator_classes]


class _DeepCache(FunctionCache):
    """numba's on-disk cache, keyed on what the function and everything it calls ARE.

    numba's own key is the function's bytecode (and, for a closure, its pickled closure
    contents) and the time stamp of its source file: a change in a callee defined in
    another file, in a constant read from another module, or in a compile option (its own,
    or a callee's ``inline``) is not seen, and the stale machine code is loaded.  Here the
    key also holds :func:`source_digest` of the dispatcher (its options included), so such a
    change is a cache miss and the function is compiled again.  A pickled dispatcher in a
    closure carries a per-process id, which made numba's closure key differ in every
    process; the digest does not.  The digest is computed once per cache (per dispatcher
    and process): numba asks for the key at every load and save.
    """

    _impl_class = _DeepCacheImpl

    def __init__(self, dispatcher: Any) -> None:
        super().__init__(dispatcher.py_func)
        self._dispatcher = dispatcher
        self._digest: str | None = None

    def _index_key(self, sig: Any, codegen: Any) -> tuple:
        if self._digest is None:
            self._digest = source_digest(self._dispatcher)
        fn = self._py_func
        return (sig, codegen.magic_tuple(), (hashlib.sha256(fn.__code__.co_code).hexdigest(),
                                             self._digest))

    def load_overload(self, sig: Any, target_context: Any) -> Any:
        """The cached code, or ``None`` (compile again) when the entry cannot be read: a
        damaged index or data file (garbage, truncated) is a cache miss, not a crash."""
        try:
            return super().load_overload(sig, target_context)
        except Exception:  # noqa: BLE001 - any damage of the cache file: recompile
            return None

    def save_overload(self, sig: Any, data: Any) -> None:
        """Save the compiled code; a cache that cannot be written (full disk, read-only, a
        damaged index) only costs the next process a compile."""
        try:
            super().save_overload(sig, data)
        except Exception:  # noqa: BLE001 - the cache is an optimisation
            pass


class _LazyCache:
    """A dispatcher's :class:`_DeepCache`, built on its first use (the first compile or cache
    load): building one stats the source and writes a probe file into the cache directory,
    which for the few dozen compiled functions a ``fedsim run`` imports (and mostly never
    calls) was start-up time."""

    __slots__ = ("dispatcher", "cache")

    def __init__(self, dispatcher: Any) -> None:
        self.dispatcher, self.cache = dispatcher, None

    def __getattr__(self, name: str) -> Any:
        if self.cache is None:
            try:
                self.cache = _DeepCache(self.dispatcher)
            except RuntimeError:  # numba found no directory it can cache in: compile only
                from numba.core.caching import NullCache

                self.cache = NullCache()
        return getattr(self.cache, name)


def cache_closure(dispatcher: Any) -> Any:
    """Give a compiled function (``jit`` with ``cache=True``) an on-disk cache that is found
    again by other processes and keyed on what changes its machine code
    (:class:`_DeepCache`, built on first use); returns ``dispatcher``."""
    dispatcher._cache = _LazyCache(dispatcher)
    return dispatcher
