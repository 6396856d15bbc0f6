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
  block layout of :class:`fedsim.engine.delay_blocks.DelaySampler` assumes a fixed number of
  compute draws per round, which ``E_k = pi_k E`` is not, hence
  :class:`~fedsim.engine.delay_blocks.RoundDelays`;
* the upload arrives at ``((t_read + dl) + c_1 + ... + c_{E_k}) + ul`` (one SimPy event per
  round; nothing the client reads changes in between: its snapshot, its own personal model
  and its own ``noise`` stream);
* the server adds the round's times to client k's running averages ``DeltaT^g_k`` (compute
  time per local step) and ``DeltaT^c_k`` (download + upload time per round) -- measured
  by the server on receipt, in simulated time -- and sets ``E_k = pi_k E`` for k's next
  round (:class:`fedsim.servers.asypfl.AsyPFLServer`); client k then downloads the new
  model (after its think time).

The SimPy processes compute no model (:func:`asypfl_table`): ``E_k`` depends on simulated
times only, so the timeline is an event table with one server step (kind ``"upload"``)
per upload and one contribution (``c_read = r_k``, ``c_steps = E_k``).  The replay
(:func:`run_asypfl`, :func:`fedsim.engine.replay.driver.replay_table`) then runs, per
upload in step order, the ``E_k`` local steps of Algorithm 1
(:func:`fedsim.local.asypfl.asypfl_update`, client k's ``noise`` stream) and eq. (4)
(``omega <- omega + p^k (omega_k - omega^{r_k})``,
:func:`fedsim.servers.asypfl.asypfl_apply`).

Trace columns as in docs/INTERNALS.md section 4: ``staleness_steps = t - 1 - r_k``,
``staleness_time`` = upload time minus read time, ``buffer_fill = 1``, the busy fraction
(think times), and the recorded metrics of the *global* model.  ``staleness_bound`` is
``inf`` (``E_k`` is adaptive, so the cycle-length argument of ``physical_staleness_bound``
does not apply).  ``info`` holds ``pi`` and ``E_k`` (last values per client), ``dTg``,
``dTc``, ``p``, ``local_steps`` (per client; time only, from the table, recomputed up to
the divergence step for a diverged run: :func:`time_statistics`), ``beta`` (the final
personal models, n x d) and, when the problem exposes ``f_i_star``, the personalized loss
gap ``personal_gap`` = ``mean_k (f_k(beta_k) - f_k*)`` at the steps ``personal_gap_steps``
(the metric steps; n loss evaluations each, an extra metric kept in ``info``).  The record
metrics ``pers_acc_beta`` / ``pers_loss_beta`` (and their ``val_`` twins) are the mean over
clients of ``beta_k`` on client k's own held-out rows, at the metric steps, after the
step's local steps (the replay's snapshots of the clients' state row 0; docs/INTERNALS.md
section 4).  The global metrics measure ``problem.f = (1/n) sum_k f_k``; AsyPFL's eq. (2)
weights clients by ``p^k = m_k / m``, which is the same objective only for equal sample
counts (quadratics; logistic problems with equal ``m_k``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from fedsim.config import Scenario
from fedsim.engine.delay_blocks import RoundDelays
from fedsim.engine.replay.driver import TableSet, replay_table
from fedsim.engine.replay.table import EventTable
from fedsim.engine.setup import RunSetup
from fedsim.errors import FedsimError, require
from fedsim.rng import Streams
from fedsim.trace import KINDS, Trace

__all__ = ["run_asypfl", "asypfl_tables", "asypfl_table", "time_statistics", "personal_gap",
           "RoundDelays"]

K_UPLOAD = KINDS.index("upload")


def asypfl_tables(scenario: Scenario, problem, replicates: Sequence[int], *,
                  progress: bool = False, spec: Any = None) -> TableSet:
    """AsyPFL's table writer (:data:`fedsim.engine.dispatch.TABLE_WRITERS` ``"asypfl"``):
    one timeline per replicate (:func:`asypfl_table`) and what the replay adds to each
    Trace's ``info`` -- the final personal models ``beta`` and, when the problem has
    ``f_i_star``, ``personal_gap`` at the recorded steps (:func:`personal_gap`); after a
    divergence the time statistics as the run stopped (:func:`time_statistics`, from the
    replicate's per-round times).  The rules are the scenario's
    (:func:`fedsim.local.asypfl.asypfl_update`, :func:`fedsim.servers.asypfl.asypfl_apply`)."""
    if spec is None:
        from fedsim.algorithms import get_algorithm
        spec = get_algorithm(scenario.algorithm.name)
    tables, times = [], []
    for r in replicates:
        cols = asypfl_table(scenario, problem, Streams(scenario.seed, int(r)), progress, spec)
        times.append(cols.pop("round_times"))
        tables.append(EventTable(**cols))
    server = spec.server(scenario.algorithm, problem)
    try:
        f_star = getattr(problem, "f_i_star", None)
    except FedsimError:  # a problem whose client minima cannot be computed: no extra metric
        f_star = None
    f_star = None if f_star is None else np.asarray(f_star, dtype=np.float64)

    def extra(k: int, res) -> dict[str, Any]:
        out: dict[str, Any] = {"beta": res.client_state[:, 0].copy()}
        if res.diverged_step is not None:  # the time statistics as the run stopped
            tb = tables[k]
            out.update(time_statistics(server, tb.c_client, tb.c_steps, times[k],
                                       res.diverged_step))
        if f_star is not None:
            out["personal_gap_steps"] = np.asarray(res.metric_steps, dtype=np.int64)
            out["personal_gap"] = personal_gap(problem, f_star, res.personal)
        return out

    return TableSet(tables=tables, extra_info=extra, keep_personal=f_star is not None)


def run_asypfl(scenario: Scenario, problem, streams: Streams, progress: bool,
               spec: Any = None) -> Trace:
    """Simulate AsyPFL once (module docstring): the timeline and the replay's extras
    (:func:`asypfl_tables`), then the rules replayed along it
    (:func:`fedsim.engine.replay.driver.replay_table`), ``streams`` a
    :class:`fedsim.rng.Streams` of ``scenario.seed``."""
    require(streams.seed == scenario.seed, "streams.seed", streams.seed,
            f"must be the scenario's seed {scenario.seed}")
    ts = asypfl_tables(scenario, problem, [streams.replicate], progress=progress, spec=spec)
    return replay_table(scenario, ts.tables, replicates=[streams.replicate], problem=problem,
                        extra_info=ts.extra_info, keep_personal=ts.keep_personal,
                        progress=progress)[0]


def time_statistics(server: Any, clients: np.ndarray, steps: np.ndarray, times: np.ndarray,
                    upto: int | None = None) -> dict[str, np.ndarray]:
    """``info``'s time-only facts after the first ``upto`` uploads (default all): the
    server's statistics (:class:`~fedsim.servers.asypfl.AsyPFLServer` ``report``/``epochs``)
    fed, in order, upload ``j``'s client, local steps and ``times[j] = (compute time,
    download + upload time)``; ``E_k`` is each client's next ``E_k``.  The table writer
    runs the same statistics as the uploads arrive (it needs ``E_k`` for the next round)."""
    stats = server.init(np.zeros(1)).stats
    n = stats.p.size
    E_next = np.full(n, stats.E, dtype=np.int64)
    local_steps = np.zeros(n, dtype=np.int64)
    for j in range(clients.size if upto is None else int(upto)):
        i = int(clients[j])
        stats.report(i, float(times[j, 0]), int(steps[j]), float(times[j, 1]))
        E_next[i] = stats.epochs(i)
        local_steps[i] += int(steps[j])
    return {"pi": stats.pi.copy(), "E_k": E_next, "dTg": stats.dTg, "dTc": stats.dTc,
            "p": stats.p.copy(), "local_steps": local_steps}


def personal_gap(problem, f_star: np.ndarray, betas: np.ndarray) -> np.ndarray:
    """``mean_k (f_k(beta_k) - f_k*)`` for each recorded set of personal models ``betas``
    ``(records, n, d)`` (NaN/inf where a model diverged)."""
    n = problem.n
    with np.errstate(all="ignore"):
        return np.array([float(np.mean([problem.loss(k, b[k]) - float(f_star[k])
                                        for k in range(n)])) for b in betas],
                        dtype=np.float64)


def asypfl_table(scenario: Scenario, problem, streams: Streams, progress: bool = False,
                 spec: Any = None) -> dict[str, Any]:
    """AsyPFL's timeline for one replicate, as the keyword arguments of an
    :class:`~fedsim.engine.replay.table.EventTable` (REPLAY_SPEC section 1): the SimPy
    processes of the module docstring with no algebra (no client or server rule call, no
    metric, no model).  One server step per upload, with one contribution: ``c_read = r_k``
    (the decay index too), ``c_steps = E_k``, ``c_stale = t - 1 - r_k``.  ``E_k``, ``pi``,
    ``dTg``, ``dTc`` and ``local_steps`` depend on the simulated times only, so they are
    the server's time statistics (:class:`~fedsim.servers.asypfl.AsyPFLServer.report` /
    ``epochs``) kept here and put in ``info``; the models are the replay's.  The run goes to
    its horizon (a divergence is the replay's to find; ``u_client``/``u_before`` and the
    busy events let the table truncate itself there)."""
    if spec is None:
        from fedsim.algorithms import get_algorithm
        spec = get_algorithm(scenario.algorithm.name)
    a = scenario.algorithm
    require(a.client_rule == "asypfl", "algorithm.client_rule", a.client_rule,
            "must be 'asypfl' for asypfl_table")
    require(scenario.delays.compute_per == "step", "delays.compute_per",
            scenario.delays.compute_per,
            "must be 'step' for asypfl (DeltaT^g is the time of one local update)")
    bare = dataclasses.replace(scenario,
                               record=dataclasses.replace(scenario.record, metrics=()))
    run = RunSetup(bare, problem, streams, progress)
    env, log, n, d = run.env, run.log, run.n, run.d
    stats = spec.server(a, problem).init(np.zeros(d)).stats  # time statistics only
    samplers = [RoundDelays(scenario.delays.for_client(i), streams.client(i, "delays"))
                for i in range(n)]
    arrival = scenario.delays.read_at == "arrival"
    zero = np.zeros(d)  # the step log's model: the timeline has none (never diverges)
    snap = np.zeros(d)
    E_next = [stats.E] * n
    counts = np.zeros(n, dtype=np.int64)
    local_steps = np.zeros(n, dtype=np.int64)
    c_read: list[int] = []
    c_steps: list[int] = []
    round_times: list[tuple[float, float]] = []
    b_time: list[float] = []
    b_delta: list[int] = []
    b_gate: list[int] = []
    b_before: list[int] = []
    run.rec.busy(0.0, 1.0)

    def client(i: int):
        sampler = samplers[i]
        while True:
            E_i = E_next[i]
            download, compute, upload, think = sampler.next_round(E_i)
            got = yield from run.read_and_upload(download, compute, upload, arrival, zero,
                                                 snap)
            if got is None:
                return
            r, t_read, t = got
            ct, cm = math.fsum(compute), download + upload
            stats.report(i, ct, E_i, cm)
            round_times.append((ct, cm))
            E_next[i] = stats.epochs(i)
            counts[i] += 1
            local_steps[i] += E_i
            c_read.append(r)
            c_steps.append(E_i)
            stopped = log.log(t, K_UPLOAD, i, log.t - r, t - t_read, 1, zero)
            if stopped:
                return
            if think != 0.0:
                gate = log.t
                b_time.append(t)
                b_delta.append(1)
                b_gate.append(gate)
                b_before.append(gate)
                yield from run.think_pause(t, think)
                b_time.append(t + think)
                b_delta.append(-1)
                b_gate.append(gate)
                b_before.append(log.t)
                if log.stopped:
                    return

    for i in range(n):
        env.process(client(i))
    run.run_until_done()
    tr = log.finish(zero, env.now, math.inf)
    T = tr.steps_done
    clients = tr.client[1:].astype(np.int32)
    return dict(
        time=tr.time[1:], kind=tr.kind_code[1:], client=clients,
        staleness_steps=tr.staleness_steps[1:], staleness_time=tr.staleness_time[1:],
        buffer_fill=tr.buffer_fill[1:], ptr=np.arange(T + 1, dtype=np.int64),
        c_client=clients, c_read=np.asarray(c_read, dtype=np.int64),
        c_steps=np.asarray(c_steps, dtype=np.int32), c_stale=tr.staleness_steps[1:],
        sim_time=tr.sim_time, steps_done=T, client_updates=counts,
        concurrency_time=tr.concurrency_time, concurrency_busy=tr.concurrency_busy,
        metric_steps=tr.metric_steps, staleness_bound=math.inf,
        u_client=clients, u_before=np.arange(T, dtype=np.int64),
        b_time=np.asarray(b_time, dtype=np.float64), b_delta=np.asarray(b_delta, np.int64),
        b_gate=np.asarray(b_gate, np.int64), b_before=np.asarray(b_before, np.int64),
        info={"pi": stats.pi.copy(), "E_k": np.asarray(E_next, dtype=np.int64),
              "dTg": stats.dTg, "dTc": stats.dTc, "p": stats.p.copy(),
              "local_steps": local_steps},
        round_times=np.asarray(round_times, dtype=np.float64).reshape(-1, 2))
