"""AREA server ([A] Algorithm 1) and the client step-size schedules.

The server keeps the global model ``x_s``, an aggregator ``u_s`` (initially 0) and the
global counter ``k``, which counts **both** client arrivals and aggregations (THEORY_SPEC
2.2).  On a message ``m_i`` from client i: ``u_s <- u_s + m_i / n`` and the server sends
back ``x_s`` and ``alpha_k``; when the aggregation criterion fires: ``x_s <- x_s + u_s``,
``u_s <- 0``.  With ``y_i`` the clients' memories ([A] Algorithm 2) the invariant
``x_s + u_s - mean_i y_i = 0`` holds after every event ([A] Appendix A, ``zbar_k = 0``);
the engine checks it in tests to 1e-12.

Step sizes ``alpha_k``: constant, ``c/(k + d)``, or [A] Theorem 7's
``1/(p_min M gamma k / 48 + 1/D)`` (= ``c/(k+d)`` with c, d of THEORY_SPEC 6.b), the latter
computed by :func:`theory.area.step_size` when the schedule is built.
"""

from __future__ import annotations

import numpy as np

from fedsim.errors import require

__all__ = ["AreaServer", "StepSizes"]


class StepSizes:
    """``alpha_k`` as a function of the global counter k (``kind``: constant | c_over_k_plus_d)."""

    def __init__(self, kind: str, value: float | None = None, c: float | None = None,
                 d: float | None = None) -> None:
        require(kind in ("constant", "c_over_k_plus_d"), "algorithm.alpha.kind", kind,
                "must be 'constant' or 'c_over_k_plus_d'")
        self.kind = kind
        if kind == "constant":
            require(value is not None and value > 0, "algorithm.alpha.value", value,
                    "must be > 0")
            self.value = float(value)
        else:
            require(c is not None and c > 0, "algorithm.alpha.c", c, "must be > 0")
            require(d is not None and d > 0, "algorithm.alpha.d", d, "must be > 0")
            self.c, self.d = float(c), float(d)

    def __call__(self, k: int) -> float:
        if self.kind == "constant":
            return self.value
        return self.c / (k + self.d)


class AreaServer:
    """State ``x_s``, ``u_s``, ``k`` of [A] Algorithm 1 and its two event handlers."""

    def __init__(self, x0: np.ndarray, n: int) -> None:
        self.x_s = np.array(x0, dtype=np.float64)
        self.u_s = np.zeros_like(self.x_s)
        self.n = int(n)
        self.k = 0
        self.pending = 0
        self._tmp = np.empty_like(self.x_s)

    def receive(self, message: np.ndarray) -> None:
        """Client arrival: ``u_s <- u_s + m_i / n`` (Alg. 1); k += 1."""
        np.divide(message, float(self.n), out=self._tmp)
        np.add(self.u_s, self._tmp, out=self.u_s)
        self.pending += 1
        self.k += 1

    def aggregate(self) -> int:
        """Aggregation: ``x_s <- x_s + u_s``, ``u_s <- 0`` (Alg. 1); k += 1; returns the count."""
        np.add(self.x_s, self.u_s, out=self.x_s)
        self.u_s.fill(0.0)
        p, self.pending = self.pending, 0
        self.k += 1
        return p
