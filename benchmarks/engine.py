"""Engine speed: server updates per second for FedAsync, Option A, on quadratics.

Grid ``n in {10, 100, 1000}``, ``d in {2, 10, 100}``, ``Q in {1, 10}`` (``--quick``: the
``n=100, d=10`` rows).  Each cell times today's path, event table then replay, on a
physical FedAsync scenario (exponential download/compute/upload delays, isotropic gradient
noise, ``grad_sq`` recorded at every step):

* ``setup`` -- the problem built (``fedsim.engine.problem_for``; the engine caches it per
  problem table, so this is what a first run pays);
* ``timeline`` -- the event table written (``fedsim.engine.dispatch.write_tables``);
* ``replay`` -- the rules applied along it (``fedsim.engine.replay.driver.replay_table``);

the three in sequence in one process, ``engine`` = their sum (what ``fedsim.engine.run``
does, less its argument checks).  The **floor** is a bare compiled loop doing the same
arithmetic per update with no table and no trace: the uploader drawn uniformly, Q local
SGD steps from the current model (each ``d`` standard normals from the client's own
``noise`` stream, drawn from its PCG64 state row as the replay draws them,
:mod:`fedsim.rng.streams`; ``g = A_i (w - b_i) + s_i z``), ``w -= beta (w - w_Q)`` and the
``grad_sq`` metric ``||Abar w - m||^2``.  One line per cell::

    n=<n> d=<d> Q=<Q> updates_per_s=<u> floor_ratio=<r> setup_share=<a> \
timeline_share=<b> replay_share=<c> replay_vs_floor=<v>

``updates_per_s`` = steps / engine time; ``floor_ratio`` = engine time / floor time (both
per update, both measured in this run); the three shares are each phase's fraction of the
engine time (non-negative and summing to 1 by construction: the phases partition one
run); ``replay_vs_floor`` = replay time / floor time, how far the replay alone is from the
bare arithmetic.  Times are CPU seconds of this process (best of ``--repeat`` interleaved
runs, each after a warm-up run: compiling excluded); simulation results never depend on
them.  ``--memory`` also reports the bytes per client of the SimPy timeline writer's
state (tracemalloc, n=1000, d=10), where this tree still has one.

Figures recorded before this version (a NumPy floor against the SimPy-era engine) are in
the git history of this file; they no longer describe the engine.
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc

import numpy as np

from fedsim import config
from fedsim.engine import initial_model, problem_for
from fedsim.engine.dispatch import write_tables
from fedsim.engine.replay.driver import replay_table
from fedsim.jit import jit
from fedsim.rng.streams import client_states, stream

# CPU time of this process: on a shared machine it is far less noisy than wall-clock time
# (time spent descheduled does not count).
_clock = time.process_time
#: a cell's engine run lasts about this many CPU seconds
TARGET_S = 0.6


def scenario(n: int, d: int, Q: int, steps: int) -> config.Scenario:
    """The benchmark scenario of one cell."""
    return config.Scenario.from_dict({
        "name": f"bench-n{n}-d{d}-Q{Q}", "seed": 1,
        "problem": {"kind": "quadratic", "n": n, "dim": d, "mu": 0.1, "L": 1.0,
                    "heterogeneity": 1.0, "noise_sd": 0.1, "shared_hessian": True, "seed": 0},
        "algorithm": {"name": "fedasync", "client_rule": "sgd", "Q": Q,
                      "eta": 0.5 / (n * Q), "beta": 1.0},
        "delays": {"download": {"kind": "exponential", "rate": 10.0},
                   "compute": {"kind": "exponential", "rate": 1.0},
                   "upload": {"kind": "exponential", "rate": 10.0}},
        "horizon": {"steps": steps},
        "record": {"every": 1, "metrics": ["grad_sq"]},
    })


@jit
def _floor_loop(who, states, A, b, scale, eta, Q, beta, Abar, m, w, wl, g, out):
    """The floor's updates (module docstring); ``out[t]`` the metric after update ``t``."""
    d = w.shape[0]
    for t in range(who.shape[0]):
        i = who[t]
        gen = stream(states, i)
        for a in range(d):
            wl[a] = w[a]
        for _ in range(Q):
            for a in range(d):
                s = 0.0
                for j in range(d):
                    s += A[i, a, j] * (wl[j] - b[i, j])
                g[a] = s + scale[i] * gen.standard_normal()
            for a in range(d):
                wl[a] -= eta * g[a]
        for a in range(d):
            w[a] -= beta * (w[a] - wl[a])
        s2 = 0.0
        for a in range(d):
            s = -m[a]
            for j in range(d):
                s += Abar[a, j] * w[j]
            s2 += s * s
        out[t] = s2
    return 0


def floor(sc: config.Scenario) -> float:
    """CPU seconds of the bare compiled loop of ``sc.horizon.steps`` updates."""
    p = problem_for(sc)
    a = sc.algorithm
    n, d, T = p.n, p.dim, int(sc.horizon.steps)
    who = np.random.default_rng(7).integers(0, n, size=T)
    states = client_states(sc.seed, [0], n, "noise")[0]
    scale = np.sqrt(np.diagonal(np.asarray(p.C_stack), axis1=1, axis2=2)[:, 0]
                    / int(a.get("batch")))
    w = initial_model(p)
    args = (who, states, np.ascontiguousarray(p.A_stack), np.ascontiguousarray(p.b_stack),
            scale, float(a.get("eta")), int(a.get("Q")), float(a.get("beta")),
            np.ascontiguousarray(p.Abar), np.ascontiguousarray(p.m), w, np.empty(d),
            np.empty(d), np.empty(T))
    t0 = _clock()
    _floor_loop(*args)
    return _clock() - t0


def engine(sc: config.Scenario) -> tuple[float, float, float]:
    """CPU seconds of ``(setup, timeline, replay)`` of one run of ``sc`` (module
    docstring); the problem is built afresh (the engine's cache is bypassed)."""
    from fedsim.config.problem import build_problem

    t0 = _clock()
    problem = build_problem(sc.problem)
    t1 = _clock()
    written = write_tables(sc, problem, [0])
    t2 = _clock()
    tr, = replay_table(sc, written.tables, written.client_rule, written.server_rule,
                       replicates=[0], problem=problem, extra_info=written.extra_info,
                       keep_personal=written.keep_personal)
    t3 = _clock()
    assert tr.steps_done == sc.horizon.steps and not tr.diverged
    return t1 - t0, t2 - t1, t3 - t2


def cell(n: int, d: int, Q: int, repeat: int) -> dict[str, float]:
    """The figures of one cell (module docstring)."""
    probe = scenario(n, d, Q, 2000)
    engine(probe)
    floor(probe)  # warm-up, as for the engine
    per = sum(engine(probe)) / 2000
    steps = int(min(max(TARGET_S / per, 5000, 20 * n), 400000))
    sc = scenario(n, d, Q, steps)
    runs, fs = [], []
    for _ in range(repeat):  # interleaved, so drifts in machine load hit both alike
        runs.append(engine(sc))
        fs.append(floor(sc))
    setup, tl, rp = min(runs, key=sum)
    e, f = setup + tl + rp, min(fs)
    return {"updates_per_s": steps / e, "floor_ratio": e / f, "setup_share": setup / e,
            "timeline_share": tl / e, "replay_share": rp / e, "replay_vs_floor": rp / f}


def memory_per_client(n: int = 1000, d: int = 10) -> float:
    """Bytes of engine state per client (run setup: processes, streams, delay blocks)."""
    from fedsim.algorithms import get_algorithm
    from fedsim.engine.models.physical.simpy_writer import AsyncRun
    from fedsim.rng import Streams

    sc = scenario(n, d, 10, 10)
    p = problem_for(sc)
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    r = AsyncRun(sc, p, Streams(1, 0), False, get_algorithm(sc.algorithm.name))
    r.start()  # every client has read the model, computed its round and holds a delay block
    r.env.run(until=r.env.peek() + 1e-12)
    used = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    return used / n


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="only the n=100, d=10 rows")
    ap.add_argument("--repeat", type=int, default=5, help="best of this many runs (default 5)")
    ap.add_argument("--memory", action="store_true", help="also report engine bytes per client")
    args = ap.parse_args(argv)
    ns, ds = ([100], [10]) if args.quick else ([10, 100, 1000], [2, 10, 100])
    for n in ns:
        for d in ds:
            for Q in (1, 10):
                c = cell(n, d, Q, args.repeat)
                print(f"n={n} d={d} Q={Q} updates_per_s={c['updates_per_s']:.0f} "
                      + " ".join(f"{k}={v:.2f}" for k, v in c.items()
                                 if k != "updates_per_s"), flush=True)
    if args.memory:
        print(f"engine_bytes_per_client={memory_per_client():.0f} (n=1000, d=10)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
