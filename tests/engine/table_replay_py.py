"""A plain Python replay of an event table through the rules (a test oracle for the
AREA and window table writers, until the compiled kernel replays them): the server state
of every version is kept, each contribution's round reads the version of its ``c_read``,
and :class:`fedsim.engine.steplog.StepLog` makes the Trace exactly as the engine does."""

from __future__ import annotations

import numpy as np

from fedsim.algorithms import get_algorithm
from fedsim.engine.area import step_schedule
from fedsim.engine.setup import initial_model, inner_counters, make_recorder
from fedsim.engine.steplog import StepLog
from fedsim.local import make_client_rule
from fedsim.local.area import AreaClientRule
from fedsim.local.sgd import SGDRule
from fedsim.rng import Streams
from fedsim.servers.area import AreaRule
from fedsim.servers.base import Upload

__all__ = ["replay_area_py", "replay_window_py"]


def _log(scenario, problem, table, w0):
    rec = make_recorder(scenario, problem)
    return rec, StepLog(rec, table["steps_done"], w0, False)


def _finish(rec, log, table, w, info):
    t = log.t
    stop_time = table["time"][t - 1] if log.diverged is not None else table["sim_time"]
    keep = table["concurrency_time"] <= stop_time
    rec.conc_t = table["concurrency_time"][keep].tolist()
    rec.conc_b = table["concurrency_busy"][keep].tolist()
    rec.info.update(info)
    return log.finish(w, stop_time, table["staleness_bound"])


def replay_area_py(scenario, problem, table, replicate, *, invariant=False):
    """AREA's Trace from its table (:func:`fedsim.local.area.area_client` and
    :func:`fedsim.servers.area.area_server`); ``invariant`` adds ``invariant_max``."""
    a = scenario.algorithm
    n, d = problem.n, problem.dim
    sgd = SGDRule(problem, 0.0, a.get("M"), a.get("batch"))
    cr = AreaClientRule(sgd=sgd, steps=step_schedule(scenario, problem),
                        iterate=a.model == "iterate_model")
    sr = AreaRule(n)
    w0 = initial_model(problem, scenario)
    S = np.empty((sr.s_rows, d))
    sr.init_state(S, w0)
    C = np.empty((n, cr.c_rows, d))
    for i in range(n):
        cr.init_state(C[i], w0)
    fpc, fps = cr.params(), sr.params()
    cnt = np.zeros(4, dtype=np.int64)
    streams = Streams(scenario.seed, replicate)
    noise = [streams.client(i, "noise") for i in range(n)]
    blk = np.empty(cr.M * cr.k)
    hist = [S.copy()]
    rec, log = _log(scenario, problem, table, w0)
    ptr, cc, cread = table["ptr"], table["c_client"], table["c_read"]
    news, reads = np.empty((n, d)), np.empty((n, d))
    inv = 0.0
    for t in range(1, table["steps_done"] + 1):
        lo, hi = int(ptr[t - 1]), int(ptr[t])
        for p in range(lo, hi):
            i = int(cc[p])
            read = hist[int(cread[p])][0]
            reads[p - lo] = read
            cr.run(i, C[i], read, int(cread[p]), cr.draw_round(noise[i], i, blk), fpc,
                   news[p - lo], cnt)
            rec.client_updates[i] += 1
        fill = sr.compiled_apply(S, cc[lo:hi], reads, news, hi - lo, table["c_stale"][lo:hi],
                                 int(table["kind"][t - 1]), fps, cnt)
        assert fill == table["buffer_fill"][t - 1]
        hist.append(S.copy())
        if invariant:
            inv = max(inv, float(np.max(np.abs(S[0] + S[1] - C[:, 1].mean(axis=0)))))
        if log.log(table["time"][t - 1], int(table["kind"][t - 1]),
                   int(table["client"][t - 1]), int(table["staleness_steps"][t - 1]),
                   float(table["staleness_time"][t - 1]), fill, S[0]):
            break
    info = {"k": log.t}
    if invariant:
        info["invariant_max"] = inv
    return _finish(rec, log, table, S[0].copy(), info)


def replay_window_py(scenario, problem, table, replicate):
    """The window model's Trace from its table, with the algorithm's client rule object
    and FedAsync's server rule (their Python entry points)."""
    a = scenario.algorithm
    n, d = problem.n, problem.dim
    rule = make_client_rule(a, problem)
    server = get_algorithm(a.name).server(a, problem)
    w0 = initial_model(problem, scenario)
    w = server.init(w0)
    hist = [np.array(w, dtype=np.float64)]
    streams = Streams(scenario.seed, replicate)
    noise = [streams.client(i, "noise") for i in range(n)]
    rec, log = _log(scenario, problem, table, w0)
    out = np.empty(d)
    for t in range(1, table["steps_done"] + 1):
        p = int(table["ptr"][t - 1])
        i, read = int(table["c_client"][p]), hist[int(table["c_read"][p])]
        rule.round(i, read, out, noise[i])
        rec.client_updates[i] += 1
        w, _ = server.apply(w, (Upload(i, read, out, int(table["c_stale"][p])),))
        hist.append(np.array(w, dtype=np.float64))
        if log.log(table["time"][t - 1], int(table["kind"][t - 1]), i,
                   int(table["staleness_steps"][t - 1]),
                   float(table["staleness_time"][t - 1]), 1, w):
            break

    info = dict(table["info"])
    info.update(inner_counters(rule))
    return _finish(rec, log, table, w, info)
