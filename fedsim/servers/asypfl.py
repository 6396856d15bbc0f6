"""AsyPFL server (Ma, Lu, Li, Cui 2022; /work/shared/papers/asypfl.md): eq. (4) and the
staleness indicators ``pi_k`` / local epochs ``E_k`` of Algorithm 1 ("Server executes").

**Aggregation, eq. (4).**  ``omega^{tau+1} = omega^tau + sum_{k: tau+1 in Pi_k} p^k
(omega_k^{tau+1} - omega_k^{r_k^tau})`` with ``omega_k^{r_k^tau} = omega^{r_k^tau}`` the global
model client k downloaded.  In the asynchronous physical model one upload arrives per
server step, so the sum has one term: ``omega <- omega + p^k (omega_k^new - omega^{r_k})``
(:func:`asypfl_apply`).  ``p^k = m_k / m`` (Section 3.1, the weights of eq. (4));
:func:`client_weights` uses the REAL data-row counts ``m_data`` of a
:class:`~fedsim.problems.logistic.LogisticProblem` -- THEORY_SPEC 9.4's anchor rows are part
of every ``f_i`` (and of its minibatches) but are not samples, so they do not count -- and
``1/n`` for problems without sample counts (quadratics).

**Staleness indicator and local epochs.**  Algorithm 1: "pi_min = min{DeltaT_k^c /
(DeltaT_k^g p^k)}, pi_k = |DeltaT_k^c / (DeltaT_k^g p^k pi_min)|. E_k = pi_k E", with
``DeltaT_k^g`` the time of one local update and ``DeltaT_k^c`` the time of one communication
(the client's running averages, "Calculate the average DeltaT_k^g, DeltaT_k^c").
Choices (the paper does not fix them):

* ``|.|`` is read as the floor ``floor(.)`` (the brackets of an integer part; an absolute
  value would be void, the ratio is positive).  Since ``pi_min`` is the minimum, the ratio
  is ``>= 1`` and ``pi_k >= 1``; the floor is taken of ``ratio * (1 + 1e-12)`` so that a ratio
  that is an integer up to rounding (e.g. ``2.9999999999999996``) counts as that integer, and
  ``pi_k = max(1, .)`` guards the rest.
* The minimum runs over the clients the server has measurements from (it learns
  ``DeltaT^g, DeltaT^c`` from the uploads, "Push (omega_k, r_k, DeltaT_k^g, DeltaT_k^c) into
  Q"); before its first upload a client runs ``pi_k = 1`` (``E_k = E``).
* ``DeltaT^g_k`` = total simulated compute time / total local steps of client k;
  ``DeltaT^c_k`` = total (download + upload) time / rounds of client k.
* ``pi_k`` is computed as an exact Python integer; ``E_k = pi_k E`` above
  :data:`MAX_LOCAL_STEPS` (the event table's int32 local-step column) raises
  :class:`~fedsim.errors.FedsimError` naming the client, ``pi_k`` and the ratio, never an
  integer overflow (extreme time ratios, e.g. one client with a near-zero communication
  time, make ``pi_k`` astronomically large).
* No communication time at all (every reporting client has ``DeltaT^c = 0``, e.g. the
  default constant-0 download/upload) makes every ratio 0/0: then ``pi_k = 1`` (no client
  is slower to reach than another).  ``pi_min = 0`` with ``DeltaT^c_k > 0`` has no finite
  ``pi_k`` and raises :class:`~fedsim.errors.FedsimError` (the scenario check rules it out).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fedsim.errors import FedsimError, require
from fedsim.jit import jit
from fedsim.problems.asypfl_constants import asypfl_weights

__all__ = ["asypfl_apply", "client_weights", "staleness_indicator", "AsyPFLServer",
           "AsyPFLServerRule", "AsyPFLState", "MAX_LOCAL_STEPS"]

#: the largest ``E_k = pi_k E`` one round may run (the table's ``c_steps`` column is int32)
MAX_LOCAL_STEPS = int(np.iinfo(np.int32).max)


@jit(inline=True)
def asypfl_apply(S, clients, reads, news, k, stale, kind, fp, cnt):
    """Eq. (4) in the server-rule signature of the replay (docs/INTERNALS.md section 3), in
    place on the global model ``S[0]`` (``s_rows = 1``): for each of the step's ``k``
    contributions ``j`` (one per server step in the physical model), ``w <- w + p^{k_j}
    (news[j] - reads[j])``, coordinate by coordinate, ``k_j = clients[j]``; returns ``k``
    (the uploads consumed).  ``fp[c] = p^c`` for every client ``c`` (no scalars);
    ``stale``, ``kind`` and ``cnt`` are not used."""
    w = S[0]
    for j in range(k):
        pk = fp[clients[j]]
        for c in range(w.shape[0]):
            w[c] = w[c] + pk * (news[j, c] - reads[j, c])
    return k


def client_weights(problem) -> np.ndarray:
    """``p^k = m_k / m`` of eq. (4): real data rows of a logistic problem (anchor rows
    excluded), else ``1/n`` each (:func:`fedsim.problems.asypfl_constants.asypfl_weights`,
    the one definition the constants table uses too)."""
    return asypfl_weights(problem)


def staleness_indicator(dTc: np.ndarray, dTg: np.ndarray, p: np.ndarray, k: int,
                        known: np.ndarray | None = None) -> int:
    """``pi_k = floor(DeltaT_k^c / (DeltaT_k^g p^k pi_min))`` (module docstring), at least 1.

    ``known`` masks the clients whose averages the server has (default: all).
    """
    dTc = np.asarray(dTc, dtype=np.float64)
    dTg = np.asarray(dTg, dtype=np.float64)
    p = np.asarray(p, dtype=np.float64)
    mask = np.ones(dTc.shape, dtype=bool) if known is None else np.asarray(known, dtype=bool)
    if not mask[k]:
        return 1
    ratios = dTc[mask] / (dTg[mask] * p[mask])
    return _indicator(dTc[k], dTg[k], p[k], float(np.min(ratios)), k)


def _indicator(dTc_k: np.float64, dTg_k: np.float64, p_k: np.float64, pi_min: float,
               k: int) -> int:
    """``max(1, floor(DeltaT_k^c / (DeltaT_k^g p^k pi_min)))`` given ``pi_min`` (the
    floor and the ``pi_min = 0`` cases of the module docstring)."""
    if pi_min == 0.0:
        if dTc_k == 0.0:
            return 1
        raise FedsimError(
            f"asypfl: pi_min = 0 (a client has no communication time) but client {k} has "
            f"DeltaT^c = {dTc_k!r} > 0, so pi_k = DeltaT^c/(DeltaT^g p^k pi_min) is infinite")
    ratio = float(dTc_k / (dTg_k * p_k * pi_min))
    require(math.isfinite(ratio), "pi_k", ratio, "must be finite (DeltaT^g_k > 0 needed)")
    return max(1, int(math.floor(ratio * (1.0 + 1e-12))))


class AsyPFLServer:
    """Running averages of the clients' times, ``pi_k``/``E_k``, and eq. (4)."""

    def __init__(self, p: np.ndarray, E: int) -> None:
        p = np.asarray(p, dtype=np.float64)
        require(p.ndim == 1 and p.size >= 1 and bool(np.all(p > 0)), "p", p.tolist(),
                "must be a non-empty vector of positive client weights")
        require(isinstance(E, (int, np.integer)) and E >= 1, "algorithm.E", E,
                "must be an integer >= 1")
        n = p.size
        self.p = p
        self.E = int(E)
        self.compute_time = np.zeros(n)
        self.steps = np.zeros(n, dtype=np.int64)
        self.comm_time = np.zeros(n)
        self.rounds = np.zeros(n, dtype=np.int64)
        self.pi = np.ones(n, dtype=np.int64)
        # per client, updated at its reports: DeltaT^c, DeltaT^g and DeltaT^c/(DeltaT^g p^k)
        # (+inf before any report: never the minimum of staleness_indicator's known ratios)
        self._dTc = np.zeros(n)
        self._dTg = np.ones(n)
        self._ratio = np.full(n, np.inf)
        self._client = [np.array([k], dtype=np.int32) for k in range(n)]
        self._stale = np.zeros(1, dtype=np.int64)
        self._cnt = np.zeros(0, dtype=np.int64)

    def params(self) -> np.ndarray:
        """``fp`` of :func:`asypfl_apply`: ``p^k`` for every client."""
        return self.p.copy()

    @property
    def dTg(self) -> np.ndarray:
        """``DeltaT^g_k``: mean compute time per local step (NaN before any report)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.steps > 0, self.compute_time / np.maximum(self.steps, 1),
                            np.nan)

    @property
    def dTc(self) -> np.ndarray:
        """``DeltaT^c_k``: mean download + upload time per round (NaN before any report)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.rounds > 0, self.comm_time / np.maximum(self.rounds, 1),
                            np.nan)

    def report(self, k: int, compute_time: float, steps: int, comm_time: float) -> None:
        """Client k's round: ``steps`` local updates taking ``compute_time``, and one
        communication (download + upload) taking ``comm_time``."""
        self.compute_time[k] += compute_time
        self.steps[k] += steps
        self.comm_time[k] += comm_time
        self.rounds[k] += 1
        self._dTc[k] = self.comm_time[k] / self.rounds[k]
        self._dTg[k] = self.compute_time[k] / self.steps[k]
        self._ratio[k] = self._dTc[k] / (self._dTg[k] * self.p[k])

    def epochs(self, k: int) -> int:
        """``E_k = pi_k E`` for client k's next round (``pi_k`` recomputed now):
        :func:`staleness_indicator` over the clients that reported, from the averages kept
        up to date by :meth:`report` (the same numbers, O(n) per call)."""
        if self.rounds[k] == 0:
            pi = 1
        else:
            pi = _indicator(self._dTc[k], self._dTg[k], self.p[k], float(np.min(self._ratio)), k)
        E_k = pi * self.E  # Python integers: exact
        if E_k > MAX_LOCAL_STEPS:
            raise FedsimError(
                f"asypfl: client {k}'s E_k = pi_k E = {pi} * {self.E} local steps is over "
                f"{MAX_LOCAL_STEPS}, the most one round can run (pi_k = DeltaT^c/(DeltaT^g p^k "
                f"pi_min) with DeltaT^c_k/(DeltaT^g_k p^k) = {self._ratio[k]:.6g} and pi_min "
                f"= {float(np.min(self._ratio)):.6g}: the clients' time ratios differ too much)")
        self.pi[k] = pi
        return E_k

    def apply(self, w: np.ndarray, k: int, omega_new: np.ndarray,
              omega_read: np.ndarray) -> np.ndarray:
        """Eq. (4) for an upload of client k computed from ``omega_read``
        (:func:`asypfl_apply` on one contribution)."""
        asypfl_apply(w.reshape(1, -1), self._client[k], omega_read.reshape(1, -1),
                     omega_new.reshape(1, -1), 1, self._stale, 0, self.p, self._cnt)
        return w


class AsyPFLState:
    """AsyPFL server state: the global model ``w`` and the clients' time statistics."""

    __slots__ = ("w", "stats")

    def __init__(self, w: np.ndarray, stats: AsyPFLServer) -> None:
        self.w, self.stats = w, stats


class AsyPFLServerRule:
    """Eq. (4) and Algorithm 1's ``E_k`` in the server-rule shape (:mod:`fedsim.servers.base`).

    ``apply(state, (upload,))``: ``upload.extra = (compute_time, local_steps, comm_time)``
    of the round; applies eq. (4), records the times and returns ``E_next`` (``E_k`` of the
    uploader's next round) in the diagnostics.
    """

    #: server state rows: the global model only
    s_rows = 1
    #: the compiled server step the replay runs
    compiled_apply = asypfl_apply

    def __init__(self, p: np.ndarray, E: int) -> None:
        self.p, self.E = p, E

    def init_state(self, S: np.ndarray, w0: np.ndarray) -> None:
        """Row 0 of the replay's server state: ``omega^0``."""
        S[0] = w0

    def params(self) -> np.ndarray:
        """``fp`` of :func:`asypfl_apply`: ``p^k`` for every client."""
        return np.array(self.p, dtype=np.float64)

    def replay_form(self) -> Any:
        """This rule in the replay's uniform shape (:class:`~fedsim.local.forms.
        ServerForm`): :func:`asypfl_apply`, one state row (``omega``), ``fp = p^k``."""
        from fedsim.local.forms import ServerForm

        return ServerForm(apply=asypfl_apply, s_rows=1, fp=self.params(),
                          init_state=self.init_state)

    def init(self, w0: np.ndarray) -> AsyPFLState:
        return AsyPFLState(np.array(w0, dtype=np.float64), AsyPFLServer(self.p, self.E))

    def apply(self, state: AsyPFLState, uploads) -> tuple[AsyPFLState, dict]:
        stats, E_next = state.stats, None
        for u in uploads:
            stats.apply(state.w, u.client, u.new, u.read)  # eq. (4)
            compute_time, steps, comm_time = u.extra
            stats.report(u.client, compute_time, steps, comm_time)
            E_next = stats.epochs(u.client)
        return state, {"fill": len(uploads), "E_next": E_next}
