"""AsyPFL (Ma, Lu, Li, Cui 2022, Algorithm 1; /work/shared/papers/asypfl.md) on the
asynchronous physical model: every client is a SimPy process with its own delays.

Algorithm 1's per-round subset ``S^tau`` is not drawn: every client runs continuously and
the asynchrony comes from the clients' own delays (the physical model of docs/INTERNALS.md
section 3).  Client k loops *read the global model -> download -> E_k local steps ->
upload -> think*:

* the model ``omega^{r_k}`` is read when the download is requested (``delays.read_at =
  "request"``) or when it completes (``"arrival"``); ``r_k`` is the number of server steps
  applied before the read (Algorithm 1's ``r_k^tau = tau``, also the decay index, see
  :mod:`fedsim.local.asypfl`);
* the round draws, from the client's ``delays`` stream and in this order, one download
  delay, ``E_k`` compute delays (one per local step: ``delays.compute_per`` must be
  ``"step"``), one upload delay and one think time (constant models draw nothing).  The
  block layout of :class:`fedsim.engine_common.DelaySampler` assumes a fixed number of
  compute draws per round, which ``E_k = pi_k E`` is not, hence :class:`RoundDelays`;
* the upload arrives at ``((t_read + dl) + c_1 + ... + c_{E_k}) + ul`` (one SimPy event per
  round; nothing the client reads changes in between: its snapshot, its own personal model
  and its own ``noise`` stream), and the ``E_k`` local steps
  (:class:`fedsim.local.asypfl.AsyPFLRule`) run then;
* the server applies eq. (4) (``omega <- omega + p^k (omega_k - omega^{r_k})``, one server
  step, kind ``"upload"``), adds the round's times to client k's running averages
  ``DeltaT^g_k`` (compute time per local step) and ``DeltaT^c_k`` (download + upload time
  per round) -- measured by the server on receipt, in simulated time -- and sets
  ``E_k = pi_k E`` for k's next round (:class:`fedsim.servers.asypfl.AsyPFLServer`);
  client k then downloads the new model (after its think time).

Trace columns as in docs/INTERNALS.md section 4: ``staleness_steps = t - 1 - r_k``,
``staleness_time`` = upload time minus read time, ``buffer_fill = 1``, the busy fraction
(think times), and the recorded metrics of the *global* model.  ``staleness_bound`` is
``inf`` (``E_k`` is adaptive, so the cycle-length argument of ``physical_staleness_bound``
does not apply).  ``info`` holds ``pi`` and ``E_k`` (last values per client), ``dTg``,
``dTc``, ``p``, ``local_steps`` (per client), ``beta`` (the final personal models, n x d)
and, when the problem exposes ``f_i_star``, the personalized loss gap ``personal_gap`` =
``mean_k (f_k(beta_k) - f_k*)`` at the steps ``personal_gap_steps`` (the metric steps:
step 0, every ``record.every`` steps, the last; n loss evaluations each, an extra metric
kept in ``info`` because ``record.metrics`` names only global-model metrics).  The global
metrics measure ``problem.f = (1/n) sum_k
f_k``; AsyPFL's eq. (2) weights clients by ``p^k = m_k / m``, which is the same objective
only for equal sample counts (quadratics; logistic problems with equal ``m_k``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import simpy

from fedsim.engine_common import StepLog, at, think_pause, urgent_at
from fedsim.errors import FedsimError, require
from fedsim.local import make_client_rule
from fedsim.local.asypfl import AsyPFLRule
from fedsim.servers.asypfl import AsyPFLServer, client_weights
from fedsim.trace import KINDS, Trace

__all__ = ["run_asypfl", "RoundDelays"]

K_UPLOAD = KINDS.index("upload")


class RoundDelays:
    """One client's delays, one round at a time with a variable number of compute draws.

    :meth:`next_round` draws ``(download, (compute_1, ..., compute_E), upload, think)`` from
    the client's ``delays`` stream in that order; constant models consume nothing.
    """

    __slots__ = ("rng", "dl", "cp", "ul", "th")

    def __init__(self, models: dict[str, Any], rng: np.random.Generator) -> None:
        self.rng = rng
        self.dl, self.cp = models["download"], models["compute"]
        self.ul, self.th = models["upload"], models["think"]

    def next_round(self, steps: int) -> tuple[float, tuple[float, ...], float, float]:
        rng = self.rng
        dl = float(self.dl.sample(rng))
        cp = tuple(float(c) for c in np.asarray(self.cp.sample(rng, size=int(steps))))
        ul = float(self.ul.sample(rng))
        th = float(self.th.sample(rng))
        return dl, cp, ul, th


def run_asypfl(scenario, problem, streams, progress: bool) -> Trace:
    """Simulate AsyPFL once (module docstring); ``streams`` is a :class:`fedsim.rng.Streams`."""
    from fedsim.engine import initial_model, make_recorder

    a = scenario.algorithm
    require(a.name == "asypfl", "algorithm.name", a.name, "must be 'asypfl' for run_asypfl")
    require(scenario.delays.compute_per == "step", "delays.compute_per",
            scenario.delays.compute_per,
            "must be 'step' for asypfl (DeltaT^g is the time of one local update)")
    n, d = problem.n, problem.dim
    env = simpy.Environment()
    done = env.event()

    def stop() -> None:
        if not done.triggered:
            done.succeed()

    rule: AsyPFLRule = make_client_rule(a, problem)
    w = initial_model(problem, scenario)
    beta = np.tile(w, (n, 1))  # beta_k^0 = omega^0 (fedsim.local.asypfl)
    server = AsyPFLServer(client_weights(problem), int(a.get("E")))
    rec = make_recorder(scenario, problem)
    log = StepLog(rec, scenario.horizon.steps, w, progress, stop)
    samplers = [RoundDelays(scenario.delays.for_client(i), streams.client(i, "delays"))
                for i in range(n)]
    noise = [streams.client(i, "noise") for i in range(n)]
    arrival = scenario.delays.read_at == "arrival"
    snaps = np.zeros((n, d))
    out = np.empty(d)
    E_next = [server.E] * n
    counts = np.zeros(n, dtype=np.int64)
    local_steps = np.zeros(n, dtype=np.int64)
    idle = [0]
    rec.busy(0.0, 1.0)

    try:
        f_star = getattr(problem, "f_i_star", None)
    except FedsimError:  # a problem whose client minima cannot be computed: no extra metric
        f_star = None
    pg_steps: list[int] = []
    pg_vals: list[float] = []

    def personal_gap() -> float:
        return float(np.mean([problem.loss(k, beta[k]) - float(f_star[k]) for k in range(n)]))

    def record_personal(t: int) -> None:
        if f_star is not None and (not pg_steps or pg_steps[-1] != t):
            pg_steps.append(t)
            pg_vals.append(personal_gap())

    if f_star is not None:
        f_star = np.asarray(f_star, dtype=np.float64)
        record_personal(0)

    def client(i: int):
        sampler, rng, snap = samplers[i], noise[i], snaps[i]
        while True:
            E_i = E_next[i]
            dl, comp, ul, th = sampler.next_round(E_i)
            t = env.now
            if arrival:
                t = t + dl
                yield at(env, t)
                if log.stopped:
                    return
            np.copyto(snap, w)
            r = log.t
            t_read = t
            if not arrival:
                t = t + dl
            for c in comp:
                t = t + c
            t = t + ul
            yield at(env, t)
            if log.stopped:
                return
            rule.round(i, snap, beta[i], out, rng, tau=r, E=E_i)
            server.apply(w, i, out, snap)  # eq. (4)
            counts[i] += 1
            local_steps[i] += E_i
            server.report(i, math.fsum(comp), E_i, dl + ul)
            E_next[i] = server.epochs(i)
            stopped = log.log(t, K_UPLOAD, i, log.t - r, t - t_read, 1, w)
            if rec.m_steps and rec.m_steps[-1] == log.t:
                record_personal(log.t)
            if stopped:
                return
            if th != 0.0:
                yield from think_pause(env, rec, idle, n, t, th)
                if log.stopped:
                    return

    for i in range(n):
        env.process(client(i))
    if math.isfinite(scenario.horizon.time):
        urgent_at(env, scenario.horizon.time).callbacks.append(lambda _ev: log.halt())
    env.run(until=done)
    if f_star is not None:
        with np.errstate(all="ignore"):
            record_personal(log.t)
    rec.client_updates[:] = counts
    rec.info.update({
        "pi": server.pi.copy(), "E_k": np.asarray(E_next, dtype=np.int64),
        "dTg": server.dTg, "dTc": server.dTc, "p": server.p.copy(),
        "local_steps": local_steps, "beta": beta.copy(),
    })
    if f_star is not None:
        rec.info["personal_gap_steps"] = np.asarray(pg_steps, dtype=np.int64)
        rec.info["personal_gap"] = np.asarray(pg_vals, dtype=np.float64)
    return log.finish(w, env.now, math.inf)
