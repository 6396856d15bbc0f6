"""Speed of the Moreau-envelope client rule ([P] Option C, ``fedsim.local.moreau``) in this
tree against another tree (e.g. a ``git worktree`` of bd440e6, before the rule compiled).

Each cell times ``MoreauRule.round`` (Q local steps, each an inner solve) of every client in
turn, CPU time (``time.process_time``), best of ``--repeat``, in a subprocess per tree
(``PYTHONPATH=<tree>``, this interpreter) after a warm-up round (compilation and data
loading excluded); the two trees alternate, so both see the same load.  Cells:

* ``softmax-gd``: softmax regression on scikit-learn digits (``kind = "softmax"``, 10
  clients, Dirichlet split a = 0.5, ridge 1e-3; d*C = 640), batch 32, Q = 5, ``lam = 2 L +
  1``, ``nu = 1e-6``, GD inner solver;
* ``quadratic-gd``: the quadratic of ``benchmarks/replicates.py`` (n = 100, d = 10, noise
  s.d. 0.1), batch 1, Q = 10, ``lam = 2 L + 1``, ``nu = 1e-8``;
* ``quadratic-exact``: the same with the closed-form inner solve;
* ``engine-quadratic`` / ``engine-softmax``: whole runs of FedAsync + Moreau (PersA-FL-ME,
  physical model; the scenarios ``fedasync_moreau_quad`` and ``fedasync_moreau_softmax`` of
  ``tests/rules/moreau_cases.py`` with 2000 / 200 server steps), ``--reps`` replicates:
  ``fedsim.engine.run_batch`` (table then replay, when the tree has it) else ``run`` per
  replicate; the figure is server steps per second.

Output, one line a cell::

    <cell> base_steps_per_s=<b> this_steps_per_s=<t> ratio=<t/b> max_rel_diff=<r>

``max_rel_diff`` compares the final iterates of the two trees (the quadratic's batch
gradient is summed in another order than NumPy's, so it differs by rounding there).

    $ python benchmarks/moreau_local.py --vs /tmp/moreau_base --repeat 3

Recorded figures (2026-11-25 20:34 UTC, shared 2-core VM, load average ~10, CPU time; the
base a ``git worktree`` of bd440e6; the same inner iteration counts in both trees)::

    softmax-gd      base_steps_per_s=5443  this_steps_per_s=12075  ratio=2.22  max_rel_diff=0.0e+00
    quadratic-gd    base_steps_per_s=19081 this_steps_per_s=451701 ratio=23.67 max_rel_diff=1.8e-16
    quadratic-exact base_steps_per_s=99508 this_steps_per_s=791428 ratio=7.95  max_rel_diff=1.2e-15
    engine-quadratic base_steps_per_s=12269 this_steps_per_s=151737 ratio=12.37 max_rel_diff=3.4e-16
    engine-softmax  base_steps_per_s=3023  this_steps_per_s=9563   ratio=3.16  max_rel_diff=0.0e+00

On softmax a Moreau step is ~48 inner GD iterations, each a batch gradient of the compiled
softmax oracle (the same function in both trees), so what is left is that oracle.
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

HERE = Path(__file__).resolve().parents[1]

CELLS = {
    "softmax-gd": ({"kind": "softmax", "n_clients": 10, "split": "dirichlet", "a": 0.5,
                    "reg": 1e-3, "seed": 0, "min_rows": 5}, "gd", 1e-6, 5, 32),
    "quadratic-gd": ({"kind": "quadratic", "n": 100, "dim": 10, "mu": 0.1, "L": 1.0,
                      "noise_sd": 0.1, "seed": 0}, "gd", 1e-8, 10, 1),
    "quadratic-exact": ({"kind": "quadratic", "n": 100, "dim": 10, "mu": 0.1, "L": 1.0,
                         "noise_sd": 0.1, "seed": 0}, "exact", 0.0, 10, 1),
}


ENGINE_CELLS = {"engine-quadratic": ("fedasync_moreau_quad", 2000),
                "engine-softmax": ("fedasync_moreau_softmax", 200)}


def measure_engine(cell: str, reps: int, repeat: int) -> dict:
    """Server steps per second of whole runs, and the last replicate's final model."""
    sys.path.insert(0, str(HERE / "tests" / "rules"))
    import moreau_cases as mc

    import fedsim.engine as eng
    from fedsim.config import Scenario

    name, steps = ENGINE_CELLS[cell]
    d = dict(mc.ENGINE_CASES[name], horizon={"steps": steps})
    sc = Scenario.from_dict(d)
    batch = getattr(eng, "run_batch", None)

    def go() -> list:
        if batch is not None:
            return batch(sc, list(range(reps)))
        return [eng.run(sc, r) for r in range(reps)]

    go()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        trs = go()
        best = min(best, time.process_time() - t0)
    return {"steps_per_s": sum(t.steps_done for t in trs) / best,
            "w": trs[-1].final_w.tolist(), "inner_iters": trs[-1].info["inner_iters"]}


def measure(cell: str, rounds: int, repeat: int) -> dict:
    """Steps per second of ``MoreauRule.round`` in the cell, and the last iterate."""
    if cell in ENGINE_CELLS:
        return measure_engine(cell, rounds, repeat)
    from fedsim.config import Scenario
    from fedsim.engine import problem_for
    from fedsim.local import MoreauRule

    spec, solver, nu, Q, batch = CELLS[cell]
    p = problem_for(Scenario.from_dict({"name": "b", "seed": 0, "problem": dict(spec),
                                        "algorithm": {"name": "fedasync"},
                                        "horizon": {"steps": 1}}))
    L = float(p.constants["L"].value)
    rule = MoreauRule(p, 0.05, Q, batch, 2.0 * L + 1.0, nu=nu, inner_max_iter=10_000,
                      solver=solver, L=L if solver == "gd" else None)
    w0 = np.zeros(p.dim)

    def go() -> np.ndarray:
        w = w0.copy()
        out = np.empty(p.dim)
        for r in range(rounds):
            i = r % p.n
            rule.round(i, w, out, np.random.default_rng(r))
            w, out = out, w
        return w

    go()  # warm-up: compilation, caches
    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        w = go()
        best = min(best, time.process_time() - t0)
    return {"steps_per_s": rounds * Q / best, "w": w.tolist(),
            "inner_iters": rule.inner_iters}


def run_in(tree: Path, cell: str, rounds: int, repeat: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    code = (f"import json, sys; sys.path.insert(0, {str(HERE / 'benchmarks')!r}); "
            f"import moreau_local as m; "
            f"print(json.dumps(m.measure({cell!r}, {rounds}, {repeat})))")
    res = subprocess.run([sys.executable, "-c", code], env=env, cwd=str(tree),
                         capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--vs", type=Path, required=True, help="the other tree (the baseline)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--reps", type=int, default=8, help="replicates of an engine cell")
    ap.add_argument("--cells", nargs="*", default=[*CELLS, *ENGINE_CELLS])
    a = ap.parse_args(argv)
    for cell in a.cells:
        rounds = a.rounds if cell != "softmax-gd" else max(a.rounds // 10, 4)
        if cell in ENGINE_CELLS:
            rounds = a.reps
        base = run_in(a.vs, cell, rounds, a.repeat)
        this = run_in(HERE, cell, rounds, a.repeat)
        wb, wt = np.array(base["w"]), np.array(this["w"])
        rel = float(np.max(np.abs(wb - wt)) / max(np.max(np.abs(wb)), 1e-300))
        print(f"{cell} base_steps_per_s={base['steps_per_s']:.0f} "
              f"this_steps_per_s={this['steps_per_s']:.0f} "
              f"ratio={this['steps_per_s'] / base['steps_per_s']:.2f} max_rel_diff={rel:.1e} "
              f"inner_iters={base['inner_iters']}/{this['inner_iters']}", flush=True)


if __name__ == "__main__":
    main()
