"""AREA server ([A] Algorithm 1) and the client step-size schedules.

The server keeps the global model ``x_s``, an aggregator ``u_s`` (initially 0) and the
global counter ``k``, which counts **both** client arrivals and aggregations (THEORY_SPEC
2.2).  On a message ``m_i`` from client i: ``u_s <- u_s + m_i / n`` and the server sends
back ``x_s`` and ``alpha_k``; when the aggregation criterion fires: ``x_s <- x_s + u_s``,
``u_s <- 0``.  With ``y_i`` the clients' memories ([A] Algorithm 2) the invariant
``x_s + u_s - mean_i y_i = 0`` holds after every event ([A] Appendix A, ``zbar_k = 0``);
the engine checks it in tests to 1e-12.

Step sizes ``alpha_k``: constant, ``c/(k + d)`` (:class:`fedsim.local.area.StepSizes`, with
the client rule that applies them, re-exported here), or [A] Theorem 7's
``1/(p_min M gamma k / 48 + 1/D)`` (= ``c/(k+d)`` with c, d of THEORY_SPEC 6.b, H7.4), the
latter built by :func:`theorem7_step_sizes` (the arithmetic of ``fedsim.theory.area.step_size``,
kept here so that the engine never imports ``theory``; ``tests/rules`` checks both give
the same floats).

The rule is written once, :func:`area_apply`, on array state (``x_s``, ``u_s``) in the
subset numba compiles (:mod:`fedsim.jit`); the SimPy engine (through :class:`AreaServer`)
and the replay (:mod:`fedsim.engine.replay.kernel`) both call it.

Server-rule shape (:mod:`fedsim.servers.base`): :class:`AreaRule` ``init(x0)`` returns an
:class:`AreaServer`; ``apply(state, (upload,))`` is a client arrival (``upload.new`` is the
message ``m_i``), ``apply(state, ())`` an aggregation, each one global iteration k.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from fedsim.errors import check_integer, check_positive, require
from fedsim.jit import jit
from fedsim.local.area import StepSizes
from fedsim.local.forms import ServerForm
from fedsim.servers.base import Upload
from fedsim.trace import KINDS

__all__ = ["AreaServer", "AreaRule", "StepSizes", "area_apply", "area_server", "S_ROWS",
           "theorem7_constants", "theorem7_schedule", "theorem7_step_sizes"]

#: rows of the server state in the replay's layout (:func:`area_server`): ``x_s`` (row 0,
#: the model clients read), ``u_s``, and ``[pending, 0, ...]`` (messages since the last
#: aggregation)
S_ROWS = 3
_K_SERVER = KINDS.index("server")


@jit(inline=True)
def area_apply(x_s, u_s, m, n, arrival):
    """One event of [A] Algorithm 1 in place: a client arrival (``arrival``) adds
    ``m_i / n`` to the aggregator, ``u_s <- u_s + m / n``; an aggregation sets ``x_s <- x_s
    + u_s``, ``u_s <- 0`` (``m`` unused).  Coordinate by coordinate."""
    d = x_s.shape[0]
    if arrival:
        for k in range(d):
            u_s[k] = u_s[k] + m[k] / n
    else:
        for k in range(d):
            x_s[k] = x_s[k] + u_s[k]
            u_s[k] = 0.0
    return 0


@jit(inline=True)
def area_server(S, clients, reads, news, k, stale, kind, fp, cnt):
    """The replay's server rule (REPLAY_SPEC 2): one global iteration of [A] Algorithm 1 on
    ``S`` (rows ``x_s``, ``u_s``, ``[pending]``; :data:`S_ROWS`), ``fp = [n]``.  A step of
    kind ``"server"`` is the aggregation (:func:`area_apply`; returns the messages it
    consumed); otherwise each of the ``k`` messages ``news[j]`` is an arrival
    (:func:`area_apply`; returns the messages pending)."""
    if kind == _K_SERVER:
        area_apply(S[0], S[1], S[1], fp[0], False)
        fill = S[2, 0]
        S[2, 0] = 0.0
        return int(fill)
    for j in range(k):
        area_apply(S[0], S[1], news[j], fp[0], True)
        S[2, 0] += 1.0
    return int(S[2, 0])


class AreaServer:
    """State ``x_s``, ``u_s``, ``k`` of [A] Algorithm 1 and its two event handlers
    (:func:`area_apply`)."""

    def __init__(self, x0: np.ndarray, n: int) -> None:
        self.x_s = np.array(x0, dtype=np.float64)
        self.u_s = np.zeros_like(self.x_s)
        self.n = int(n)
        self.nf = float(n)
        self.k = 0
        self.pending = 0

    def receive(self, message: np.ndarray) -> None:
        """Client arrival: ``u_s <- u_s + m_i / n`` (Alg. 1); k += 1."""
        area_apply(self.x_s, self.u_s, message, self.nf, True)
        self.pending += 1
        self.k += 1

    def aggregate(self) -> int:
        """Aggregation: ``x_s <- x_s + u_s``, ``u_s <- 0`` (Alg. 1); k += 1; returns the count."""
        area_apply(self.x_s, self.u_s, self.u_s, self.nf, False)
        p, self.pending = self.pending, 0
        self.k += 1
        return p

    @property
    def w(self) -> np.ndarray:
        """The global model ``x_s``."""
        return self.x_s


class AreaRule:
    """[A] Algorithm 1 in the server-rule shape (module docstring), and the replay's
    (REPLAY_SPEC 2): :func:`area_server` on ``s_rows`` state rows, ``params() = [n]``."""

    s_rows = S_ROWS
    compiled_apply = staticmethod(area_server)

    def __init__(self, n: int) -> None:
        self.n = int(n)

    def init_state(self, S: np.ndarray, w0: np.ndarray) -> None:
        """``x_{s,0} = w0``, ``u_s = 0``, nothing pending."""
        S[0] = w0
        S[1:] = 0.0

    def params(self) -> np.ndarray:
        return np.array([float(self.n)])

    def replay_form(self) -> ServerForm:
        """:func:`area_server` as a :class:`fedsim.local.forms.ServerForm`."""
        return ServerForm(apply=area_server, s_rows=S_ROWS, fp=self.params(),
                          init_state=self.init_state)

    def init(self, w0: np.ndarray) -> AreaServer:
        return AreaServer(w0, self.n)

    def apply(self, state: AreaServer, uploads: Sequence[Upload]) -> tuple[AreaServer,
                                                                           dict[str, Any]]:
        if not uploads:
            return state, {"fill": state.aggregate(), "kind": "server"}
        for u in uploads:
            state.receive(u.new)
        return state, {"fill": state.pending, "kind": "client"}


def theorem7_constants(L: float, mu: float, M: int, p_min: float) -> dict[str, Any]:
    """gamma, D (with its four entries), c and d of [A] Theorem 7's step (H7.4), validated.

    The arithmetic is :func:`theorem7_schedule`, which ``fedsim.theory.area`` uses too, so the
    engine's steps and the bound's prescribed steps are the same floats by construction.
    """
    L = check_positive("L", L)
    mu = check_positive("mu", mu)
    require(mu <= L, "mu", mu, f"must be <= L={L!r}")
    M = check_integer("M", M, low=1)
    p_min = check_positive("p_min", p_min)
    require(p_min <= 1.0, "p_min", p_min, "must be <= 1")
    return theorem7_schedule(L, mu, M, p_min)


def theorem7_schedule(L: float, mu: float, M: int, p_min: float) -> dict[str, Any]:
    """The arithmetic of H7.4, unchecked: ``gamma = 2 mu L/(mu + L)``, ``D = min`` of the four
    entries, ``c = 48/(p_min M gamma)``, ``d = c/D`` ([A] Theorem 7).  Callers validate."""
    gamma = 2.0 * mu * L / (mu + L)
    if M == 1:
        entries = np.array([2.0 / (M * (mu + L)), math.inf, math.inf, math.inf])
    else:
        m1 = float(M - 1)
        entries = np.array(
            [
                2.0 / (M * (mu + L)),
                gamma / (L**2 * m1),
                math.sqrt(M * gamma**2 / (64.0 * L**4 * m1**3)),
                (gamma / (32.0 * L**4 * m1**3)) ** (1.0 / 3.0),
            ]
        )
    D = float(np.min(entries))
    c = 48.0 / (p_min * M * gamma)
    d = c / D
    return {"gamma": gamma, "D": D, "D_entries": entries, "c": c, "d": d}


def theorem7_step_sizes(L: float, mu: float, M: int, p_min: float) -> StepSizes:
    """[A] Theorem 7's ``alpha_k = c/(k + d)`` (H7.4) as a :class:`StepSizes`."""
    s = theorem7_constants(L, mu, M, p_min)
    return StepSizes("c_over_k_plus_d", c=s["c"], d=s["d"])
