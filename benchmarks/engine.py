"""Engine speed: server updates per second for FedAsync, Option A, on quadratics.

Grid ``n in {10, 100, 1000}``, ``d in {2, 10, 100}``, ``Q in {1, 10}`` (``--quick``: the
``n=100, d=10`` rows).  Each cell times

* the **engine**: ``fedsim.engine.run`` on a physical FedAsync scenario (exponential
  download/compute/upload delays, isotropic gradient noise, ``grad_sq`` recorded at every
  step), and
* the **floor**: a bare NumPy loop doing the same arithmetic per update with no events and
  no trace -- the same ``SGDRule.round`` from the current model (Q local steps, noise
  drawn per round; the engine also runs it on the live model at the read, without a
  snapshot copy), ``Delta = w0 - wQ``, ``w -= beta Delta``, the divergence check and the
  ``grad_sq`` metric -- with the uploader drawn uniformly at random.

and prints one line per cell (format)::

    n=<n> d=<d> Q=<Q> updates_per_s=<engine updates/s> floor_ratio=<r> simpy_share=<s>

``floor_ratio`` = engine time / floor time per update; ``simpy_share`` = ``1 - 1/ratio``,
the fraction of the engine's time per update spent outside the update arithmetic (SimPy
event handling plus trace bookkeeping).  Both are steady-state figures: the engine's
per-run setup (clients, 2n seeded streams) is timed with a one-step run and subtracted,
as the floor's setup is not timed.  ``--memory`` also reports the engine's state per
client (tracemalloc, n=1000, d=10).

Recorded reference figures (2026-11-21 05:46-05:49 UTC, shared 2-core VM, load average
~0.9-1.0 from other jobs, CPU time, ``--repeat 5``; run to run the ratios move by about
+-0.05-0.1 on this machine).  "before" is commit d794cd8 (its engine and its floor),
"after" this version (engine and floor share the faster kernel), run back to back with
the same harness; ``floor_us`` = floor time per update::

    cell              before: ups  ratio floor_us   after: ups  ratio floor_us
    n=10 d=2 Q=1          69448  1.28    11.2      108770  1.40     6.6
    n=10 d=2 Q=10         39509  1.13    22.4       54865  1.15    15.8
    n=10 d=10 Q=1         67052  1.28    11.7      110810  1.38     6.5
    n=10 d=10 Q=10        36923  1.13    24.0       49193  1.15    17.7
    n=10 d=100 Q=1        49748  1.17    17.2       79021  1.23    10.3
    n=10 d=100 Q=10       19552  1.11    46.1       23248  1.07    40.2
    n=100 d=2 Q=1         68695  1.25    11.6      106458  1.45     6.5
    n=100 d=2 Q=10        38715  1.15    22.5       53336  1.19    15.8
    n=100 d=10 Q=1        65590  1.29    11.8      107811  1.36     6.8
    n=100 d=10 Q=10       34413  1.18    24.6       48694  1.17    17.6
    n=100 d=100 Q=1       45504  1.32    16.6       75975  1.29    10.2
    n=100 d=100 Q=10      18705  1.09    49.0       22993  1.07    40.6
    n=1000 d=2 Q=1        60638  1.41    11.7      100838  1.40     7.1
    n=1000 d=2 Q=10       35479  1.23    22.9       51097  1.21    16.2
    n=1000 d=10 Q=1       51162  1.57    12.4       97740  1.42     7.2
    n=1000 d=10 Q=10      32206  1.21    25.7       46428  1.18    18.3
    n=1000 d=100 Q=1      36973  1.57    17.2       68156  1.25    11.7
    n=1000 d=100 Q=10     17961  1.13    49.3       22106  1.09    41.5
    engine_bytes_per_client  5156 before, 2399 after (n=1000, d=10)

At n=100, d=10 that is engine 15.2 -> 9.3 us per update at Q=1 (floor 11.8 -> 6.8 us) and
29.1 -> 20.5 us at Q=10 (floor 24.6 -> 17.5 us): the floor got faster with the engine
(``ndarray.dot`` instead of ``np.dot``, 0-d scalars, no broadcasting at Q=1, no snapshot
copy), so the ratios moved less than the throughput, while the engine's own cost per
update fell from ~3.4-4.5 us to ~2.5-3 us: SimPy's event loop and heap ~0.8-1 us, the
delay block refill ~0.4 us (3 ``sample`` calls per 16 rounds), the step log and the
client's bookkeeping ~1 us.  Against the issue's targets on this machine: Q=10
engine/floor <= 1.15 is borderline (1.08-1.19 run to run at n=100, d=10; 1.17 above);
Q=1 <= 1.3 is not met (1.33-1.45: ~2.5 us on a 6.8 us floor); >= 60,000 updates/s at
Q=10 is not reachable honestly here -- the floor alone (10 local steps of two NumPy
calls, ~0.8 us each, plus 100 normals, the update and the metric) is ~17-18 us, i.e.
< 60,000/s before any event.  Per client (~2.4 KB): the two PCG64 bit generators with
their locks (~800 B), the noise stream's ``Generator`` (~230 B), the delay block
(~460 B), the client's event object (~280 B), the kernel's ``c_i`` (~180 B), the
pending heap entry (~100 B), the pending update (80 B).

Measured and not kept: noise drawn 8 rounds ahead per client (Q=1, d=10: 1.66 -> 1.38 us
per round, for ~750 B more per client); a per-client tiled ``c_i`` to avoid the
broadcast add at Q > 1 (~1.1 us per round, for ``Q d`` doubles per client); a callback
specialised for request reads without think time (no measurable gain); one
``np.concatenate`` per delay block (slower); preallocated NumPy trace columns
(``col[k] = v`` ~107 ns against ``array.append`` ~48 ns); disabling the garbage collector
during a run (no change); wrapping the noise bit generator per round (-230 B per client,
+0.19 us per update).

Times are the CPU time of this process on one core (best of ``--repeat`` interleaved
runs); simulation results never depend on them.
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc

import numpy as np

from fedsim import config
from fedsim.engine import initial_model, problem_for, run
from fedsim.local.sgd import SGDRule
from fedsim.trace import metric_functions

TARGET_S = 0.6
# CPU time of this process: on a shared machine it is far less noisy than wall-clock time
# (time spent descheduled does not count).
_clock = time.process_time


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


def floor(sc: config.Scenario) -> float:
    """Seconds for the bare NumPy loop of ``sc.horizon.steps`` updates."""
    p = problem_for(sc)
    a = sc.algorithm
    rule = SGDRule(p, a.get("eta"), a.get("Q"), a.get("batch"))
    n, d, T = p.n, p.dim, sc.horizon.steps
    rngs = [np.random.default_rng(1000 + i) for i in range(n)]
    who = np.random.default_rng(7).integers(0, n, size=T).tolist()
    (_, grad_sq), = metric_functions(p, ["grad_sq"], None, None)
    w = initial_model(p)
    out, delta = np.empty(d), np.empty(d)
    vals = []
    app = vals.append
    beta = 1.0
    rnd, subtract, multiply, wdot = rule.round, np.subtract, np.multiply, w.dot
    t0 = _clock()
    for i in who:
        rnd(i, w, out, rngs[i])
        subtract(w, out, delta)
        if beta != 1.0:
            multiply(delta, beta, delta)
        subtract(w, delta, w)
        if not wdot(w) <= 1e300:
            break
        app(grad_sq(w))
    return _clock() - t0


def engine(sc: config.Scenario) -> float:
    """Seconds for ``fedsim.engine.run`` (problem already built and cached)."""
    t0 = _clock()
    tr = run(sc)
    dt = _clock() - t0
    assert tr.steps_done == sc.horizon.steps and not tr.diverged
    return dt


def cell(n: int, d: int, Q: int, repeat: int) -> tuple[float, float, float]:
    """``(updates_per_s, floor_ratio, simpy_share)`` of one cell.

    Steady state: the engine's per-run setup (n client processes, 2n seeded streams) is
    timed separately with a one-step run and subtracted, as the floor's setup is not timed.
    """
    probe = scenario(n, d, Q, 2000)
    engine(probe)
    floor(probe)  # warm-up, as for the engine
    per = engine(probe) / 2000
    steps = int(min(max(TARGET_S / per, 5000, 20 * n), 400000))
    sc = scenario(n, d, Q, steps)
    one = scenario(n, d, Q, 1)
    es, fs, ss = [], [], []
    for _ in range(repeat):  # interleaved, so drifts in machine load hit both alike
        ss.append(engine(one))
        es.append(engine(sc))
        fs.append(floor(sc))
    e, f = max(min(es) - min(ss), 1e-9), min(fs)
    ratio = e / f
    return steps / e, ratio, 1.0 - 1.0 / ratio


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
                ups, ratio, share = cell(n, d, Q, args.repeat)
                print(f"n={n} d={d} Q={Q} updates_per_s={ups:.0f} floor_ratio={ratio:.2f} "
                      f"simpy_share={share:.2f}", flush=True)
    if args.memory:
        print(f"engine_bytes_per_client={memory_per_client():.0f} (n=1000, d=10)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
