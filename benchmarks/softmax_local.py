"""Local-step speed on the row-sampled problems: compiled views against the interpreted path,
and the per-replicate engine against an older tree.

Three measurements, CPU time (``time.process_time``), best of ``--repeat``:

* **kernel**: ``SGDRule.round`` of the AREA Table 4 analogue's client work ([A] Sec. 5;
  :func:`fedsim.validation.paper.area.tables_experiment` with ``M = 50``): softmax regression
  on scikit-learn digits split IID over n = 64 clients with an intercept (d*C = 65*10 =
  650), M = 50 local steps of batch 32, clients taken in turn; ``--rounds`` rounds per
  timing, the compiled rule (:func:`fedsim.local.sgd.sgd_round` on the problem's compiled
  view, :mod:`fedsim.problems.softmax_view`) and the interpreted one (``sgd_round.py_func``
  with ``sample_batch``/``batch_grad``, forced by the private switch
  ``fedsim.local.sgd._COMPILED = False``) alternating in this process.  Checks that both give
  the same iterate bit for bit.
* **personalised rules**: the same for ``round`` of FO-MAML, HF-MAML and MAML (Option B) on
  the [PF] Table 1 analogue's problem (``validation/paper/perfedavg.py``: digits, n = 50,
  3 classes per client, Q = 10; |D| = |D'| = 40, |D''| = 20 for HF); ``--rounds // 4``
  rounds per timing.
* **engine** (``--vs TREE``): today's per-replicate engine (``fedsim.engine.run``, SimPy)
  in this tree against the same entry points in another tree (e.g. a ``git worktree`` of
  1b26223), each in its own subprocess (``PYTHONPATH=<tree>``, this interpreter), the two
  trees alternating, after a warm-up run in the same subprocess (compilation and data
  loading excluded): the logistic cell of ``benchmarks/replicates.py`` (FedAsync, n = 100
  clients x 32 rows, d = 64, Q = 10, batch 8; ``--steps`` server steps, ``--reps``
  replicates) and the five arms of the Table 4 analogue
  ``tables_experiment(50, ns=(64,), splits=("iid",), rate_kinds=("normal",), grid=(2.0,))``
  (AREA, FedBuff, AS-FedAvg, S-FedAvg, FedAsync; replicate 0 through the paper suite's
  worker ``run_arm``).  The two trees' results agree to rounding, not bit for bit (the
  older tree sums a batch gradient in BLAS order); the line prints the largest relative
  difference of the final figures.

Output lines::

    kernel interpreted_steps_per_s=<i> compiled_steps_per_s=<c> ratio=<c/i> us_per_step=...
    local <rule> interpreted_steps_per_s=<i> compiled_steps_per_s=<c> ratio=<c/i> ...
    engine <job> base_s=<b> this_s=<t> ratio=<b/t> max_rel_diff=<r>

Recorded figures (2026-11-25 ~17:00-17:28 UTC, shared 2-core VM with 4 other agents, CPU
time; every equality check passed)::

    $ python benchmarks/softmax_local.py --repeat 2 --rounds 40        # loadavg 2.91
    kernel interpreted_steps_per_s=7423 compiled_steps_per_s=180995 ratio=24.38 (us 134.7/5.5)
    local fomaml ... ratio=10.44 us_per_step=152.1/14.6
    local hfmaml ... ratio=7.66 us_per_step=178.9/23.4
    local maml   ... ratio=6.50 us_per_step=169.5/26.1
    $ python benchmarks/softmax_local.py --vs /tmp/work/base --repeat 2   # 1b26223; loadavg 5.34
    engine logistic base_s=0.30 this_s=0.16 ratio=1.84 max_rel_diff=2.1e-13
    engine arm-area base_s=2.40 this_s=0.95 ratio=2.54 max_rel_diff=1.0e-15
    engine arm-fedbuff base_s=1.53 this_s=0.58 ratio=2.62 max_rel_diff=1.1e-16
    engine arm-asfedavg base_s=1.58 this_s=0.66 ratio=2.41 max_rel_diff=2.1e-16
    engine arm-sfedavg base_s=0.05 this_s=0.02 ratio=2.00 max_rel_diff=6.0e-16
    engine arm-fedasync base_s=3.03 this_s=1.12 ratio=2.71 max_rel_diff=7.6e-14

(The interpreted path runs ``sgd_round.py_func``, a Python loop over the 650 coordinates per
step, so the kernel ratio is not the old fused kernel's: that one took ~12.6 us a step at
load ~5.)  In an arm, what is left besides the ~5 us steps is mostly the held-out metrics
recorded at every aggregation (``test_acc``/``test_loss``/``f_gap``).  Timings move with the
load of the shared machine; simulation results never depend on them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import fedsim.local.sgd as sgd_mod
from fedsim.local.sgd import SGDRule

_clock = time.process_time
HERE = Path(__file__).resolve().parents[1]


def _set_compiled(on: bool) -> None:
    sgd_mod._COMPILED = on


def _make(make, compiled: bool):
    _set_compiled(compiled)
    try:
        rule = make()
    finally:
        _set_compiled(True)
    fast = rule.fast if isinstance(rule, SGDRule) else rule.cv is not None
    assert fast == compiled
    return rule


def _rounds(rule, problem, rounds: int, seed: int) -> tuple[float, np.ndarray]:
    rng = np.random.Generator(np.random.PCG64(seed))
    w, out = np.zeros(problem.dim), np.empty(problem.dim)
    t0 = _clock()
    for r in range(rounds):
        rule.round(r % problem.n, w, out, rng)
        w, out = out, w
    return _clock() - t0, w


def _compare(name: str, problem, make, rounds: int, repeat: int, steps: int,
             seed: int) -> None:
    best = {False: np.inf, True: np.inf}
    finals = {}
    rules = {c: _make(make, c) for c in (False, True)}
    _rounds(rules[True], problem, 1, seed)  # compile outside the timing
    for _ in range(repeat):
        for c in (False, True):
            t, w = _rounds(rules[c], problem, rounds, seed)
            best[c] = min(best[c], t)
            finals[c] = w
    assert np.array_equal(finals[False], finals[True]), f"{name}: the paths differ"
    n = rounds * steps
    i, c = n / best[False], n / best[True]
    print(f"{name} interpreted_steps_per_s={i:.0f} compiled_steps_per_s={c:.0f} "
          f"ratio={c / i:.2f} us_per_step={1e6 / i:.1f}/{1e6 / c:.1f}", flush=True)


def kernel(repeat: int, rounds: int) -> None:
    from fedsim.validation.paper.area import _digits

    from fedsim.config import ProblemConfig, build_problem

    problem = build_problem(ProblemConfig.from_dict(_digits(64, "iid")))
    M, batch = 50, 32
    eta = 2.0 / problem.constants["L"].value
    _compare("kernel", problem, lambda: SGDRule(problem, eta, M, batch), rounds, repeat, M,
             12345)


def personalised(repeat: int, rounds: int) -> None:
    """Option B steps on the [PF] Table 1 analogue's problem (validation/paper/perfedavg.py:
    digits, n = 50, 3 classes per client; |D| = |D'| = 40, |D''| = 20)."""
    from fedsim.config import ProblemConfig, build_problem
    from fedsim.local.maml import MAMLRule

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
    }
    for name, make in makers.items():
        _compare(f"local {name}", problem, make, rounds, repeat, Q, 7)


# ---- the per-replicate engine against another tree ------------------------------------------
#: run in a subprocess with PYTHONPATH=<tree>; only entry points both trees have
_CHILD = r"""
import json, sys, time
import numpy as np
job = json.loads(sys.argv[1])
if job["kind"] == "scenario":
    from fedsim.config import Scenario
    from fedsim.engine import run
    warm = dict(job["scenario"], horizon={"steps": 50})
    run(Scenario.from_dict(warm), 0)
    sc = Scenario.from_dict(job["scenario"])
    t0 = time.process_time()
    res = [run(sc, r) for r in range(job["reps"])]
    cpu = time.process_time() - t0
    final = [float(x) for r in res for x in r.final_w]
else:
    if job["root_layout"]:
        from validation.paper.area import tables_experiment
        from validation.paper.worker import run_arm
    else:
        from fedsim.validation.paper.area import tables_experiment
        from fedsim.validation.paper.worker import run_arm
    exp = tables_experiment(50, ns=(64,), splits=("iid",), rate_kinds=("normal",),
                            grid=(2.0,))
    arms = {a.family: a for a in exp.settings[0].arms}
    def payload(arm):
        return {"scenario": arm.scenario, "replicate": 0, "grid": exp.grid.tolist(),
                "metrics": list(exp.metrics), "targets": dict(exp.targets)}
    run_arm(payload(arms["sfedavg"]))  # warm-up: data, compilation
    t0 = time.process_time()
    out = run_arm(payload(arms[job["family"]]))
    cpu = time.process_time() - t0
    final = [float(np.ravel(v)[-1]) for k, v in sorted(out["final"].items())]
print(json.dumps({"cpu": cpu, "final": final}))
"""


def _child(tree: Path, job: dict) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree), OPENBLAS_NUM_THREADS="1")
    job = dict(job, root_layout="fedsim.validation" not in (tree / "setup.cfg").read_text())
    out = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(job)], env=env,
                         capture_output=True, text=True, check=True, cwd=str(tree))
    return json.loads(out.stdout.strip().splitlines()[-1])


def engine(base: Path, repeat: int, steps: int, reps: int, quick: bool) -> None:
    here = HERE
    sys.path.insert(0, str(here / "benchmarks"))
    from replicates import logistic_scenario

    jobs = {"logistic": {"kind": "scenario", "scenario": logistic_scenario(steps).to_dict(),
                         "reps": reps}}
    if not quick:
        for fam in ("area", "fedbuff", "asfedavg", "sfedavg", "fedasync"):
            jobs[f"arm-{fam}"] = {"kind": "arm", "family": fam}
    tot = {"base": 0.0, "this": 0.0}
    for name, job in jobs.items():
        best = {"base": np.inf, "this": np.inf}
        finals = {}
        for _ in range(repeat):
            for key, tree in (("base", base), ("this", here)):
                res = _child(tree, job)
                best[key] = min(best[key], res["cpu"])
                finals[key] = np.array(res["final"])
        a, b = finals["base"], finals["this"]
        den = np.maximum(np.abs(a), np.abs(b))
        rel = float(np.max(np.where(den > 0, np.abs(a - b) / np.where(den > 0, den, 1), 0)))
        tot["base"] += best["base"]
        tot["this"] += best["this"]
        print(f"engine {name} base_s={best['base']:.2f} this_s={best['this']:.2f} "
              f"ratio={best['base'] / best['this']:.2f} max_rel_diff={rel:.1e}", flush=True)
    if len(jobs) > 1:
        arms = [k for k in jobs if k.startswith("arm-")]
        print(f"engine arms: {len(arms)} arms, see the lines above; all jobs base_s="
              f"{tot['base']:.2f} this_s={tot['this']:.2f}", flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="no arm runs in --vs")
    ap.add_argument("--repeat", type=int, default=5, help="best of this many (5)")
    ap.add_argument("--rounds", type=int, default=200, help="kernel: rounds per timing (200)")
    ap.add_argument("--vs", type=Path, default=None,
                    help="another fedsim tree: time the per-replicate engine in both")
    ap.add_argument("--steps", type=int, default=3000, help="--vs logistic: server steps")
    ap.add_argument("--reps", type=int, default=2, help="--vs logistic: replicates")
    args = ap.parse_args(argv)
    with open("/proc/loadavg") as f:
        print(f"loadavg={f.read().split()[0]}", flush=True)
    if args.vs is not None:
        engine(args.vs, args.repeat, args.steps, args.reps, args.quick)
        return 0
    kernel(args.repeat, args.rounds)
    personalised(args.repeat, max(1, args.rounds // 4))
    return 0


if __name__ == "__main__":
    sys.exit(main())
