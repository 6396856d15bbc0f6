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
  block layout of :class:`fedsim.rng.delays.DelaySampler` assumes a fixed number of
  compute draws per round, which ``E_k = pi_k E`` is not, hence
  :class:`~fedsim.rng.delays.RoundDelays`;
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
(:func:`fedsim.engine.replay.driver.replay_table`) then runs, per
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

import math
from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

from fedsim.config import Scenario
from fedsim.config.budget import memory_budget
from fedsim.engine.models.base import ExecutionModel
from fedsim.engine.models.phases import PhaseLog, Phases, record
from fedsim.engine.replay.driver import TableSet
from fedsim.engine.replay.table import EventTable
from fedsim.engine.setup import RunSetup
from fedsim.errors import FedsimError, require
from fedsim.rng import Streams
from fedsim.rng.delays import RoundDelays
from fedsim.trace import KINDS

__all__ = ["MODEL", "asypfl_tables", "asypfl_table", "asypfl_phases", "time_statistics",
           "personal_gap", "round_step_bytes", "RoundDelays"]

K_UPLOAD = KINDS.index("upload")


def asypfl_tables(scenario: Scenario, problem, replicates: Sequence[int], *,
                  spec: Any = None) -> TableSet:
    """AsyPFL's table writer (its one writer, SimPy):
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
        table, round_times = asypfl_table(scenario, problem, Streams(scenario.seed, int(r)),
                                          spec)
        tables.append(table)
        times.append(round_times)
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


def round_step_bytes(d: int, batch: int) -> int:
    """Bytes one local step of a round holds at once, an upper estimate: its compute delay
    in the writer (a float64 draw, a tuple slot, a Python float: 40 bytes) and its draws in
    the replay (at most ``max(d, batch)`` normals or batch indices, 8 bytes each)."""
    return 40 + 8 * max(int(d), int(batch))


def asypfl_table(scenario: Scenario, problem, streams: Streams,
                 spec: Any = None, phases: PhaseLog | None = None
                 ) -> tuple[EventTable, np.ndarray]:
    """AsyPFL's timeline for one replicate: its
    :class:`~fedsim.engine.replay.table.EventTable` (REPLAY_SPEC section 1) and its
    ``round_times``.  The SimPy processes of the module docstring with no algebra (no client
    or server rule call, no metric, no model), logged by a
    :class:`~fedsim.engine.steplog.TableLog` (:class:`~fedsim.engine.setup.RunSetup` with
    ``table=True``).  One server step per upload, with one contribution: ``c_read = r_k``
    (the decay index too), ``c_steps = E_k``, ``c_stale = t - 1 - r_k``.  ``E_k``, ``pi``,
    ``dTg``, ``dTc`` and ``local_steps`` depend on the simulated times only, so they are
    the server's time statistics (:class:`~fedsim.servers.asypfl.AsyPFLServer.report` /
    ``epochs``) kept here and put in ``info``; ``round_times`` (uploads x 2: compute time,
    download + upload time) lets :func:`time_statistics` recompute them up to a divergence.
    The run goes to its horizon (a divergence is the replay's to find; ``u_client`` /
    ``u_before`` and the busy events let the table truncate itself there).  ``phases``, if
    given, records each round's times, its upload's arrival (with ``r_k``) and think
    pause."""
    if spec is None:
        from fedsim.algorithms import get_algorithm
        spec = get_algorithm(scenario.algorithm.name)
    a = scenario.algorithm
    require(a.client_rule == "asypfl", "algorithm.client_rule", a.client_rule,
            "must be 'asypfl' for asypfl_table")
    require(scenario.delays.compute_per == "step", "delays.compute_per",
            scenario.delays.compute_per,
            "must be 'step' for asypfl (DeltaT^g is the time of one local update)")
    run = RunSetup(scenario, problem, streams, False, table=True)
    env, log, n = run.env, run.log, run.n
    stats = spec.server(a, problem).init(np.zeros(run.d)).stats  # time statistics only
    samplers = [RoundDelays(scenario.delays.for_client(i), streams.client(i, "delays"))
                for i in range(n)]
    arrival = scenario.delays.read_at == "arrival"
    E_next = [stats.E] * n
    local_steps = np.zeros(n, dtype=np.int64)
    round_times: list[tuple[float, float]] = []
    step_bytes = round_step_bytes(run.d, int(a.batch or 0))  # batch None: full gradients
    budget = memory_budget()

    def client(i: int):
        sampler = samplers[i]
        mark = None if phases is None else partial(phases.begin, i)
        while True:
            E_i = E_next[i]
            if E_i * step_bytes > budget:
                raise FedsimError(
                    f"asypfl: client {i}'s next round E_k = pi_k E = {E_i} local steps needs "
                    f"about {E_i * step_bytes / 2**30:.3g} GiB (its compute delays and the "
                    f"replay's draws), over the memory budget of {budget / 2**30:.3g} GiB "
                    "(pi_k grows with the clients' communication/compute time ratios; "
                    "fedsim run --memory-budget SIZE, or FEDSIM_MEMORY_BUDGET)")
            download, compute, upload, think = sampler.next_round(E_i)
            got = yield from run.read_and_upload(download, compute, upload, arrival, None,
                                                 None, mark)
            if got is None:
                return
            r, t_read, t = got
            ct, cm = math.fsum(compute), download + upload
            stats.report(i, ct, E_i, cm)
            round_times.append((ct, cm))
            E_next[i] = stats.epochs(i)
            local_steps[i] += E_i
            stale = log.t - r
            log.upload(i)
            if phases is not None:
                phases.arrive(i, r)
            log.contribute(i, r, E_i, stale)
            if log.step(t, K_UPLOAD, i, stale, t - t_read, 1):
                return
            if think != 0.0:
                if phases is not None:
                    phases.think(i, think)
                yield from run.think_pause(t, think)
                if log.stopped:
                    return

    for i in range(n):
        env.process(client(i))
    run.run_until_done()
    info = {"pi": stats.pi.copy(), "E_k": np.asarray(E_next, dtype=np.int64),
            "dTg": stats.dTg, "dTc": stats.dTc, "p": stats.p.copy(),
            "local_steps": local_steps}
    return (log.table(n=n, sim_time=env.now, every=int(scenario.record.every),
                      staleness_bound=math.inf, info=info),
            np.asarray(round_times, dtype=np.float64).reshape(-1, 2))


def asypfl_phases(scenario: Scenario, problem, replicate: int) -> Phases:
    """The replicate's per-client phases, recorded by :func:`asypfl_table` (the model's one
    writer) with its table."""
    streams = Streams(scenario.seed, replicate)
    return record(lambda log: asypfl_table(scenario, problem, streams, phases=log)[0],
                  problem.n)


MODEL = ExecutionModel(key="asypfl", write=asypfl_tables, rounds="async",
                       phases=asypfl_phases, doc=__doc__)
