"""The deep digest of a compiled function: what its machine code depends on.

:func:`source_digest` hashes a function with everything that changes its machine code (its
compile options, bytecode, constants, closure constants, and each function or frozen
constant it reads from a global, in any module, each by its own digest), process- and
path-independently; :mod:`fedsim.jit` keys its on-disk cache and names its compiled
closures with it.  Pure Python (no numba import).
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

__all__ = ["source_digest", "digest_with_options", "compile_options", "options_text"]


def _code_digest(code: Any, h: Any) -> None:
    """Feed a code object to ``h``: its bytecode, names and constants, nested code objects
    (comprehensions, inner functions) by their own digest, never by their address."""
    h.update(code.co_code)
    h.update(repr(code.co_names).encode())
    for c in code.co_consts:
        if hasattr(c, "co_code"):
            _code_digest(c, h)
        else:
            h.update(repr(c).encode())


def _global_names(code: Any) -> set[str]:
    names = set(code.co_names)
    for c in code.co_consts:
        if hasattr(c, "co_code"):
            names |= _global_names(c)
    return names


#: compile options that do not change the machine code (where it is kept)
_NOT_CODE = frozenset({"cache"})


def options_text(opts: dict[str, Any] | None) -> str:
    return repr(sorted((k, repr(v)) for k, v in (opts or {}).items() if k not in _NOT_CODE))


def compile_options(fn: Any) -> str:
    """The compile options of a compiled function that change its machine code or its
    callers' (``inline``, ``error_model``, ``_nrt``, ``fastmath``, ...; not ``cache``), as
    text; ``""`` for a plain function."""
    opts = getattr(fn, "targetoptions", None)
    return options_text(opts) if opts is not None and hasattr(fn, "py_func") else ""


def _frozen(value: Any) -> bool:
    """A global numba freezes into the machine code as a constant (numbers, strings, arrays,
    NumPy scalars)."""
    return isinstance(value, (bool, int, float, complex, str, bytes, np.ndarray, np.generic))


def _deep_digest(value: Any, memo: dict[Any, str], stack: set[int]) -> str:
    """A process-independent digest of a compiled function (or a closure constant) AND of
    everything that changes its machine code: its compile options
    (:func:`compile_options`), bytecode and constants, its defaults, its closure constants,
    and each global it names that is a function (compiled or not, with its options), a
    function or a constant named as ``module.attr``, a tuple of those, or a constant numba
    freezes (a number, string or array), each by its own deep digest.  Any other value
    counts by its type and repr (arrays by their bytes); a module counts by its name."""
    f = getattr(value, "py_func", value)
    opts = compile_options(value)
    key = (id(f), opts)
    if key in memo:
        return memo[key]
    code = getattr(f, "__code__", None)
    h = hashlib.sha256()
    if code is None:
        if isinstance(value, (tuple, list)):
            h.update(type(value).__name__.encode())
            for v in value:
                h.update(_deep_digest(v, memo, stack).encode())
        elif isinstance(value, (np.ndarray, np.generic)):
            h.update(repr((value.dtype.str, getattr(value, "shape", ()))).encode())
            h.update(value.tobytes())
        elif type(value).__name__ == "module":
            h.update(b"module:" + value.__name__.encode())
        else:
            h.update(repr((type(value).__qualname__, repr(value))).encode())
        return h.hexdigest()  # not memoised: id() of a plain value may be reused
    if id(f) in stack:  # recursion: the cycle is covered by the outer digest
        return "cycle:" + getattr(f, "__qualname__", "")
    stack.add(id(f))
    h.update(f"{getattr(f, '__module__', '')}.{getattr(f, '__qualname__', '')}".encode())
    h.update(b"options:" + opts.encode())
    _code_digest(code, h)
    h.update(repr(getattr(f, "__defaults__", None)).encode())
    for cell in getattr(f, "__closure__", None) or ():
        try:
            h.update(_deep_digest(cell.cell_contents, memo, stack).encode())
        except ValueError:  # an empty cell
            h.update(b"<empty>")
    glb = getattr(f, "__globals__", {})
    names = _global_names(code)
    for name in sorted(names):
        g = glb.get(name)
        if g is None:
            continue
        if callable(getattr(g, "py_func", None)) or hasattr(g, "__code__"):
            h.update(name.encode() + _deep_digest(g, memo, stack).encode())
        elif type(g).__name__ == "module":  # module.attr: the functions, constants it names
            for attr in sorted(names):
                a = getattr(g, attr, None)
                if a is not None and (hasattr(a, "py_func") or hasattr(a, "__code__")
                                      or _frozen(a)):
                    h.update(f"{name}.{attr}".encode() + _deep_digest(a, memo, stack).encode())
        elif isinstance(g, tuple) or _frozen(g):
            h.update(name.encode() + _deep_digest(g, memo, stack).encode())
    stack.discard(id(f))
    memo[key] = h.hexdigest()
    return memo[key]


def digest_with_options(f: Any, options: str) -> str:
    """:func:`source_digest` of the plain function ``f`` as if compiled with ``options``."""
    h = hashlib.sha256(_deep_digest(f, {}, set()).encode())
    h.update(b"options:" + options.encode())
    return h.hexdigest()


def source_digest(fn: Any) -> str:
    """The deep digest of a compiled function (:func:`_deep_digest`): it changes when the
    function, its compile options, a function it calls (directly or through other functions,
    in any module) or that function's options, one of its closure constants, or a constant
    it reads from a global changes."""
    return _deep_digest(fn, {}, set())
