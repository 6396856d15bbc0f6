"""The replay's uniform shapes of a client and a server rule (REPLAY_SPEC section 2).

A rule object hands the replay (:mod:`fedsim.engine.replay.kernel`) its compiled functions
and parameters as a :class:`ClientForm` (client rules, ``replay_form()`` of the rule under
:mod:`fedsim.local`) or a :class:`ServerForm` (server rules under :mod:`fedsim.servers`);
the kernel module's docstring says what each function computes.  They live here, below
the engine, so that the rule modules can build them.
"""

from __future__ import annotations

import functools
import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from fedsim.jit import jit

__all__ = ["ClientForm", "ServerForm", "view_draw_round", "tag_closure", "RngSteps",
           "rng_draw_round", "round_form"]


@functools.cache
def _content_hash(path: str, mtime_ns: int, size: int) -> str:
    """The SHA-256 of a source file (memoised on its time stamp and size): the stamp of
    :func:`_ident`, the same for two copies of one source wherever they are installed."""
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _ident(fn: Any) -> str:
    """Module, name, bytecode, constants and source content hash of a (compiled)
    function, and of the functions its closure holds."""
    f = getattr(fn, "py_func", fn)
    code = getattr(f, "__code__", None)
    if code is None:
        return repr(fn)
    try:
        st = os.stat(code.co_filename)
        stamp = _content_hash(code.co_filename, st.st_mtime_ns, st.st_size)
    except OSError:
        stamp = ""
    inner = [_ident(c.cell_contents) for c in f.__closure__ or ()
             if callable(c.cell_contents)]
    return repr((f.__module__, f.__qualname__, code.co_code.hex(), repr(code.co_consts),
                 stamp, inner))


def tag_closure(fn: Any, *leaves: Any) -> Any:
    """``fn`` (a plain closure, before ``jit``) with its ``__qualname__`` naming a hash of
    the functions it binds: the on-disk cache of a compiled loop that holds ``fn``
    (:func:`fedsim.jit.cache_closure`) tells closures of one builder apart by what they
    bind, not only by their shared code."""
    h = hashlib.sha256("".join(_ident(x) for x in leaves).encode()).hexdigest()[:16]
    fn.__qualname__ = f"{fn.__qualname__}[{h}]"
    return fn


@dataclass(frozen=True)
class ClientForm:
    """A client rule in the replay's uniform shape (module docstring).

    ``update``/``draw_round``: compiled (``compiled=True``) or plain Python functions;
    ``vdata``: what they read (the view's data, or the interpreted view);
    ``c_rows``/``k``/``dtype``: the client state rows, the numbers a step draws and their
    dtype; ``fp``: the parameters; ``ncnt``: the counters; ``init_state(cst, w0)`` fills
    one client's state ``(c_rows, d)`` (once per replicate); ``make_z(nsteps)`` the
    round's randomness buffer (default ``np.empty((nsteps, k), dtype)``); ``counters``: the
    names of the counters (``Trace.info`` keys); ``personal_row``: the row of a client's
    state that is the personal model it keeps (AsyPFL's ``beta_k``), read by the personal
    metrics ``pers_*_beta``; ``-1`` (default): the rows are scratch, the rule keeps none.
    """

    update: Any
    draw_round: Any
    vdata: Any
    c_rows: int
    k: int
    dtype: Any
    fp: np.ndarray
    compiled: bool
    ncnt: int = 0
    init_state: Callable[[np.ndarray, np.ndarray], None] | None = None
    make_z: Callable[[int], Any] | None = None
    counters: tuple[str, ...] = ()
    personal_row: int = -1


@dataclass(frozen=True)
class ServerForm:
    """A server rule in the replay's uniform shape: ``apply`` (compiled or Python),
    ``s_rows`` state rows (row 0 the global model), ``fp`` its parameters, ``ncnt``
    counters, ``init_state(S, w0)`` (default: every row ``w0``)."""

    apply: Any
    s_rows: int
    fp: np.ndarray
    ncnt: int = 0
    init_state: Callable[[np.ndarray, np.ndarray], None] | None = None


def _draw_round_src(draw):
    def draw_round(vdata, i, gen, nsteps, Z):
        for q in range(nsteps):
            draw(vdata, i, gen, Z[q])
        return 0
    return draw_round


@functools.cache
def view_draw_round(draw: Any) -> Any:
    """The default ``draw_round``: the view's compiled ``draw`` once per local step, into
    row ``q`` of ``Z`` (the numbers ``nsteps`` calls of ``sample_batch`` draw)."""
    return jit(cache=False, inline=True)(tag_closure(_draw_round_src(draw), draw))


class RngSteps:
    """``Z`` of the interpreted path: step q's randomness is the generator itself
    (``rng``; :func:`rng_draw_round` sets it to the client's stream)."""

    __slots__ = ("rng",)

    def __init__(self, rng: np.random.Generator | None) -> None:
        self.rng = rng

    def __getitem__(self, q: int) -> np.random.Generator:
        return self.rng


def rng_draw_round(vdata, i, gen, nsteps, Z):
    """Interpreted ``draw_round``: the round's randomness is the stream itself (``Z`` a
    :class:`RngSteps`); the rule draws from it as it runs."""
    Z.rng = gen
    return 0


def round_form(rule: Any) -> ClientForm:
    """Any client rule object with the engines' ``round(i, w0, out, rng)`` (Q local steps
    from ``w0`` into ``out``, drawing from ``rng``) in the replay's shape, interpreted: the
    rule's own method, so its numbers (and its counters, on the object) are the engine's.
    For rules without a compiled form of their own."""
    def update(vdata, i, cst, read, tread, Z, nsteps, fp, out, cnt):
        rule.round(i, read, out, Z.rng)
        return 0

    return ClientForm(update=update, draw_round=rng_draw_round, vdata=None, c_rows=0, k=0,
                      dtype=np.float64, fp=np.zeros(1), compiled=False,
                      make_z=lambda nsteps: RngSteps(None))

