"""Write ``sync_reference.npz`` (the engine's Traces of ``tests/engine/sync_cases.CASES``)
and ``sync_reference_interpreted.npz`` (cases of ``INTERPRETED`` with
``fedsim.local.sgd._COMPILED = False``: every rule interpreted on the problem's own
oracles).

Run once, on the engine that computed synchronous rounds inside SimPy (main at bd440e6):
``python tests/engine/data/make_sync_reference.py``.  The replayed runner is tested
against these files; rerunning on the replay would test it against itself.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sync_cases import CASES, INTERPRETED, REFERENCE, save_reference, scenario  # noqa: E402

import fedsim.local.sgd as sgd_mod  # noqa: E402
from fedsim.engine import run  # noqa: E402


def main() -> None:
    traces = {}
    for name, (_d, reps) in CASES.items():
        sc = scenario(name)
        for r in reps:
            traces[(name, r)] = tr = run(sc, r)
            print(name, r, tr.steps_done, tr.diverged_step, sorted(tr.metrics)[:3])
    save_reference(traces)
    sgd_mod._COMPILED = False
    save_reference({(name, 0): run(scenario(name), 0) for name in INTERPRETED},
                   REFERENCE.with_name("sync_reference_interpreted.npz"))


if __name__ == "__main__":
    main()
