"""Local-SGD speed on softmax digits: the fused kernel against the generic per-step path.

Two measurements, each timing both paths in this process, alternating (generic, fused,
generic, fused, ...), CPU time (``time.process_time``), best of ``--repeat``:

* **kernel**: ``SGDRule.round`` of the AREA Table 4 analogue's client work ([A] Sec. 5;
  :func:`fedsim.validation.paper.area.tables_experiment` with ``M = 50``): softmax regression on
  scikit-learn digits split IID over n = 64 clients with an intercept (d*C = 65*10 = 650),
  M = 50 local steps of batch 32, clients taken in turn; ``--rounds`` rounds per timing.
  Prints local steps per second of each path and their ratio, after checking that both
  paths give the same iterate bit for bit (``np.array_equal``).
* **personalised rules**: the same comparison for ``round`` of FO-MAML, HF-MAML, MAML
  (Option B) and Moreau/GD (Option C) on the [PF] Table 1 analogue's problem
  (``validation/paper/perfedavg.py``: digits, n = 50, 3 classes per client, Q = 10;
  |D| = |D'| = 40, |D''| = 20 for HF; Moreau batch 16, lam = 2L, nu = 1e-3, at most 50
  inner iterations); ``--rounds // 4`` rounds per timing.
* **arms** (skipped with ``--quick``): the five arms of
  ``tables_experiment(50, ns=(64,), splits=("iid",), rate_kinds=("normal",), grid=(2.0,))``
  (AREA, FedBuff, AS-FedAvg, S-FedAvg, FedAsync), replicate 0, each run once per path
  through :func:`fedsim.validation.paper.worker.run_arm` (the paper suite's worker: engine run,
  held-out metrics, curves); prints the CPU seconds per arm and path, their ratio, and
  checks that both paths return the same curves and final values.

The generic path is forced with the private switch ``fedsim.local.sgd._FUSED = False``
(read when a rule is built).  Output lines::

    kernel generic_steps_per_s=<g> fused_steps_per_s=<f> ratio=<f/g> us_per_step=<g_us>/<f_us>
    local <rule> generic_steps_per_s=<g> fused_steps_per_s=<f> ratio=<f/g> us_per_step=...
    arm <family> generic_s=<g> fused_s=<f> ratio=<g/f> updates=<client uploads>
    arms total generic_s=<g> fused_s=<f> ratio=<g/f>

Recorded figures (2026-11-23 22:58 UTC, shared 2-core VM, load average ~5 from other jobs,
CPU time; ``python benchmarks/softmax_local.py --repeat 5 --rounds 200``; every equality
check passed)::

    kernel generic_steps_per_s=29098 fused_steps_per_s=79291 ratio=2.72 us_per_step=34.4/12.6
    local fomaml  ratio=1.74 us_per_step=70.9/40.7
    local hfmaml  ratio=1.86 us_per_step=133.5/71.8
    local maml    ratio=1.80 us_per_step=114.8/63.8
    local moreau  ratio=1.61 us_per_step=199.7/124.1
    arm area      generic_s=3.13 fused_s=1.18 ratio=2.64 updates=1371
    arm fedbuff   generic_s=2.94 fused_s=1.11 ratio=2.64 updates=1371
    arm asfedavg  generic_s=2.80 fused_s=1.03 ratio=2.73 updates=1371
    arm sfedavg   generic_s=0.08 fused_s=0.04 ratio=1.99 updates=35
    arm fedasync  generic_s=2.76 fused_s=1.06 ratio=2.62 updates=1371
    arms total    generic_s=11.71 fused_s=4.42 ratio=2.65

Where the fused step's ~12.6 us go (timeit, (32, 10) logits): 13 NumPy calls of ~0.4-2 us
each -- the two row reductions of the softmax (``maximum``/``add`` over 10 columns, ~2 us
each), the two ``dot`` (~1.2 us each), the broadcast subtract/divide, ``exp``, the one-hot
subtraction and five vector operations of the update.  Going further needs fewer calls,
i.e. compiled code, whose ``exp`` and summation order would not reproduce NumPy's bits.

Timings move with the load of the shared machine; simulation results never depend on them.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import fedsim.local.sgd as sgd_mod
from fedsim.local.sgd import SGDRule

_clock = time.process_time


def _set_fused(on: bool) -> None:
    sgd_mod._FUSED = on


def _kernel_time(problem, fused: bool, rounds: int, M: int, batch: int, eta: float
                 ) -> tuple[float, np.ndarray]:
    """CPU seconds of ``rounds`` rounds of ``M`` steps (clients in turn) and the last iterate."""
    _set_fused(fused)
    try:
        rule = SGDRule(problem, eta, M, batch)
    finally:
        _set_fused(True)
    assert (rule.fused is not None) == fused
    rng = np.random.Generator(np.random.PCG64(12345))
    w = np.zeros(problem.dim)
    out = np.empty(problem.dim)
    t0 = _clock()
    for r in range(rounds):
        rule.round(r % problem.n, w, out, rng)
        w, out = out, w
    return _clock() - t0, w


def kernel(repeat: int, rounds: int) -> None:
    from fedsim.validation.paper.area import _digits

    from fedsim.config import ProblemConfig, build_problem

    problem = build_problem(ProblemConfig.from_dict(_digits(64, "iid")))
    M, batch = 50, 32
    eta = 2.0 / problem.constants["L"].value
    best = {False: np.inf, True: np.inf}
    finals = {}
    for _ in range(repeat):
        for fused in (False, True):
            t, w = _kernel_time(problem, fused, rounds, M, batch, eta)
            best[fused] = min(best[fused], t)
            finals[fused] = w
    assert np.array_equal(finals[False], finals[True]), "fused and generic iterates differ"
    steps = rounds * M
    g, f = steps / best[False], steps / best[True]
    print(f"kernel generic_steps_per_s={g:.0f} fused_steps_per_s={f:.0f} ratio={f / g:.2f} "
          f"us_per_step={1e6 / g:.1f}/{1e6 / f:.1f} (n=64, dim={problem.dim}, M={M}, "
          f"batch={batch}, rounds={rounds}, best of {repeat})", flush=True)


def personalised(repeat: int, rounds: int) -> None:
    """Option B/C steps on the [PF] Table 1 analogue's problem (validation/paper/perfedavg.py:
    digits, n = 50, 3 classes per client; |D| = |D'| = 40, |D''| = 20; Moreau lam = 2L)."""
    from fedsim.config import ProblemConfig, build_problem
    from fedsim.local.maml import MAMLRule
    from fedsim.local.moreau import MoreauRule

    problem = build_problem(ProblemConfig.from_dict({
        "kind": "softmax", "n_clients": 50, "split": "classes", "classes_per_client": 3,
        "test_fraction": 0.2, "reg": 1e-3, "seed": 0, "min_rows": 5}))
    L = float(problem.constants["L"].value)
    Q = 10
    makers = {
        "fomaml": lambda: MAMLRule(problem, 1.0 / L, Q, 40, 1.0 / L, "fomaml",
                                   batch_inner=40),
        "hfmaml": lambda: MAMLRule(problem, 1.0 / L, Q, 40, 1.0 / L, "hfmaml", 1e-3,
                                   batch_inner=40, batch_hess=20),
        "maml": lambda: MAMLRule(problem, 1.0 / L, Q, 40, 1.0 / L, "maml"),
        "moreau": lambda: MoreauRule(problem, 1.0 / L, Q, 16, 2.0 * L, 1e-3, 50, "gd", L),
    }
    for name, make in makers.items():
        best = {False: np.inf, True: np.inf}
        finals = {}
        for _ in range(repeat):
            for fused in (False, True):
                _set_fused(fused)
                try:
                    rule = make()
                finally:
                    _set_fused(True)
                assert (rule.fused is not None) == fused
                rng = np.random.Generator(np.random.PCG64(7))
                w, out = np.zeros(problem.dim), np.empty(problem.dim)
                t0 = _clock()
                for r in range(rounds):
                    rule.round(r % problem.n, w, out, rng)
                    w, out = out, w
                best[fused] = min(best[fused], _clock() - t0)
                finals[fused] = w
        assert np.array_equal(finals[False], finals[True]), f"{name}: paths differ"
        steps = rounds * Q
        g, f = steps / best[False], steps / best[True]
        print(f"local {name} generic_steps_per_s={g:.0f} fused_steps_per_s={f:.0f} "
              f"ratio={f / g:.2f} us_per_step={1e6 / g:.1f}/{1e6 / f:.1f}", flush=True)


def arms(repeat: int) -> None:
    from fedsim.validation.paper.area import tables_experiment
    from fedsim.validation.paper.worker import run_arm

    exp = tables_experiment(50, ns=(64,), splits=("iid",), rate_kinds=("normal",),
                            grid=(2.0,))
    tot = {False: 0.0, True: 0.0}
    for arm in exp.settings[0].arms:
        payload = {"scenario": arm.scenario, "replicate": 0, "grid": exp.grid.tolist(),
                   "metrics": list(exp.metrics), "targets": dict(exp.targets)}
        best = {False: np.inf, True: np.inf}
        res = {}
        for _ in range(repeat):
            for fused in (False, True):
                _set_fused(fused)
                try:
                    t0 = _clock()
                    res[fused] = run_arm(payload)
                    best[fused] = min(best[fused], _clock() - t0)
                finally:
                    _set_fused(True)
        a, b = res[False], res[True]
        same = (a["final"].keys() == b["final"].keys()
                and all(np.array_equal(a["final"][k], b["final"][k], equal_nan=True)
                        for k in a["final"])
                and all(np.array_equal(a["curves"][k], b["curves"][k], equal_nan=True)
                        for k in a["curves"]))
        assert same, f"{arm.key}: fused and generic results differ"
        tot[False] += best[False]
        tot[True] += best[True]
        print(f"arm {arm.family} generic_s={best[False]:.2f} fused_s={best[True]:.2f} "
              f"ratio={best[False] / best[True]:.2f} updates={b['updates']}", flush=True)
    print(f"arms total generic_s={tot[False]:.2f} fused_s={tot[True]:.2f} "
          f"ratio={tot[False] / tot[True]:.2f}", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="the kernel only, no arm runs")
    ap.add_argument("--repeat", type=int, default=5, help="kernel: best of this many (5)")
    ap.add_argument("--rounds", type=int, default=200, help="kernel: rounds per timing (200)")
    ap.add_argument("--arm-repeat", type=int, default=1, help="arms: best of this many (1)")
    args = ap.parse_args(argv)
    kernel(args.repeat, args.rounds)
    personalised(args.repeat, max(1, args.rounds // 4))
    if not args.quick:
        arms(args.arm_repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
