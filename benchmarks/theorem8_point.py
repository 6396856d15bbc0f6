"""One Monte-Carlo point of [A] Theorem 8's norm family, as ``fedsim search`` measures it.

The point: ``theorem8-norm`` at n=30, M=10, K=122, centre spread 0.5 (search's default
interval width: ``replicates = 4000``, ``fedsim.validation.search``), measured by the
family's ``mc`` (``fedsim.validation.families.norm_mc``: the replay's records of
``fedsim.engine.run_batch(..., output="records")``).  The first call (compilation or cache
load) is timed apart; then ``--reps`` calls with seeds 1, 2, ... print their wall and CPU
seconds, and the smallest wall time is the figure (issue 19's target: at most 0.5 s after
compile on a quiet core).  Each run prints the load average first::

    loadavg=... point=theorem8-norm n=30 M=10 K=122 R=4000
    first_s=...
    wall_s=... cpu_s=... value=... se=...
    min_wall_s=... min_cpu_s=...
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from fedsim.validation.families import get_family  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--R", type=int, default=4000)
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args(argv)
    fam = get_family("theorem8-norm")
    inst = fam.build({"n": a.n, "M": 10, "K": 122, "centre_spread": 0.5})
    with open("/proc/loadavg") as f:
        print(f"loadavg={f.read().split()[0]} point=theorem8-norm n={a.n} M=10 K=122 "
              f"R={a.R}", flush=True)
    t0 = time.perf_counter()
    inst.mc(a.R, 0)
    print(f"first_s={time.perf_counter() - t0:.3f}", flush=True)
    walls, cpus = [], []
    for seed in range(1, a.reps + 1):
        t0, c0 = time.perf_counter(), time.process_time()
        m = inst.mc(a.R, seed)
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
        print(f"wall_s={walls[-1]:.3f} cpu_s={cpus[-1]:.3f} value={m.value:.6g} "
              f"se={m.se:.3g}", flush=True)
    print(f"min_wall_s={min(walls):.3f} min_cpu_s={min(cpus):.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
