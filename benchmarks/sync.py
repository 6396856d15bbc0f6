"""Synchronous rounds: updates/s of ``fedsim.engine.run_batch`` here against a baseline tree.

Two cells (issue 19): the Per-FedAvg Table 1 arm of the paper suite (softmax regression on
digits, n = 50, [PF]'s split, r = 0.2, tau = 10, |D| = |D'| = 40, |D''| = 20, HF-MAML,
``pers_acc_maml``/``test_acc``/``f_gap`` every 2 rounds, ``validation/paper/perfedavg.py``)
and FedAvg on a quadratic (n = 100, d = 10, Q = 10, r = 0.2, ``grad_sq`` every round).
Each cell runs ``R`` replicates of ``--rounds`` rounds through ``run_batch`` in a child
process per tree -- this checkout, and ``--base`` (a ``git worktree`` of 1b26223 by
default, imported first on ``PYTHONPATH``) -- after one warm-up call in that child (compile
time excluded), alternating the trees ``--repeat`` times; the figure of a tree is its best
repeat.  One line per cell and tree::

    cell=perfedavg_table1 tree=here rounds_per_s=... client_updates_per_s=... vs_base=...

``client_updates_per_s`` counts local rounds (``m`` per server round).  Wall-clock figures
on a shared machine are noisy: compare the ratios of one run.  The load average is printed
first.

Recorded (``--rounds 50 -R 8 --repeat 2``, 2 cores shared, load 6-11): against 1b26223,
the Per-FedAvg arm 3.2-4.0x and the quadratic 5.7-6.2x with the table -> replay path (the
SimPy-computing engine of bd440e6: 2.8x and 1.3x); against bd440e6 itself (``--base``
its tree) 1.5x and 3.1x.  The Per-FedAvg arm's time is mostly its held-out
``pers_acc_maml`` evaluation every 2 rounds and the kernel; the quadratic's mostly the
round-by-round table writer.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

HERE = Path(__file__).resolve().parents[1]


def cells(rounds: int) -> dict[str, dict]:
    """The scenario dicts of the two cells (``Scenario.from_dict``)."""
    problem = {"kind": "softmax", "n_clients": 50, "split": "perfedavg", "test_fraction": 0.2,
               "reg": 1e-3, "seed": 0, "min_rows": 5}
    exp = {"compute": {"kind": "exponential", "rate": 1.0},
           "download": {"kind": "exponential", "rate": 10.0},
           "upload": {"kind": "exponential", "rate": 10.0}}
    L = 5.0  # a fixed step scale (the suite uses 1/L of the problem; speed does not depend)
    pf = {"name": "bench-pf-table1", "seed": 1, "problem": problem,
          "algorithm": {"name": "fedavg", "client_rule": "hfmaml", "Q": 10, "eta": 1.0 / L,
                        "batch": 40, "participation": 0.2, "alpha": 1.0 / L,
                        "batch_inner": 40, "batch_hess": 20, "hf_delta": 1e-3},
          "delays": exp, "horizon": {"steps": rounds},
          "record": {"every": 2, "metrics": ["pers_acc_maml", "test_acc", "f_gap"],
                     "maml_alpha": 1.0 / L}}
    quad = {"name": "bench-fedavg-quad", "seed": 1,
            "problem": {"kind": "quadratic", "n": 100, "dim": 10, "mu": 0.1, "L": 1.0,
                        "heterogeneity": 1.0, "noise_sd": 0.1, "shared_hessian": True,
                        "seed": 0},
            "algorithm": {"name": "fedavg", "client_rule": "sgd", "Q": 10, "eta": 0.05,
                          "participation": 0.2},
            "delays": exp, "horizon": {"steps": rounds * 10}, "record": {"metrics": ["grad_sq"]}}
    return {"perfedavg_table1": pf, "fedavg_quadratic": quad}


def child(cell: str, rounds: int, R: int) -> None:
    """In the child process: time ``run_batch`` on ``R`` replicates, print JSON."""
    from fedsim.config import Scenario
    from fedsim.engine import run_batch

    sc = Scenario.from_dict(cells(rounds)[cell])
    run_batch(sc, [R + 7])  # warm-up: compiles, builds the problem
    t0 = time.perf_counter()
    traces = run_batch(sc, list(range(R)))
    wall = time.perf_counter() - t0
    steps = sum(int(t.steps_done) for t in traces)
    updates = sum(int(t.client_updates.sum()) for t in traces)
    print(json.dumps({"wall": wall, "steps": steps, "updates": updates}))


def measure(tree: Path | None, cell: str, rounds: int, R: int) -> dict:
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = str(tree) + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, __file__, "--child", cell, "--rounds", str(rounds),
                          "-R", str(R)], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", default="/tmp/work/base", help="baseline tree (1b26223)")
    ap.add_argument("--rounds", type=int, default=50)
    ap.add_argument("-R", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--cells", default="perfedavg_table1,fedavg_quadratic")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(a.child, a.rounds, a.R)
        return
    print(f"load_average={os.getloadavg()[0]:.2f} rounds={a.rounds} R={a.R}", flush=True)
    for cell in a.cells.split(","):
        best: dict[str, dict] = {}
        for _ in range(a.repeat):
            for name, tree in (("base", Path(a.base)), ("here", None)):
                m = measure(tree, cell, a.rounds, a.R)
                if name not in best or m["wall"] < best[name]["wall"]:
                    best[name] = m
        for name in ("base", "here"):
            m = best[name]
            rps, ups = m["steps"] / m["wall"], m["updates"] / m["wall"]
            ratio = (best["base"]["wall"] / m["wall"]) * (m["steps"] / best["base"]["steps"])
            print(f"cell={cell} tree={name} rounds_per_s={rps:.1f} "
                  f"client_updates_per_s={ups:.1f} vs_base={ratio:.2f}", flush=True)


if __name__ == "__main__":
    main()
