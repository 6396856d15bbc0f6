"""The replay loop bound per combination of rules is found in numba's disk cache by a
fresh process (fedsim.jit.cache_closure)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

PROG = r"""
from numba.core import event
compiled = []
class L(event.Listener):
    def on_start(self, ev):
        pass
    def on_end(self, ev):
        compiled.append(ev.data["dispatcher"].py_func.__qualname__)
event.register("numba:compile", L())
from fedsim.config import Scenario
from fedsim.engine import run_batch
from fedsim.engine.replay.kernel import built_kernels
sc = Scenario.from_dict({
    "name": "cache", "seed": 1,
    "problem": {"kind": "quadratic", "n": 3, "dim": 2, "mu": 0.5, "L": 1.0,
                "heterogeneity": 0.5, "noise": "additive", "noise_sd": 0.1, "seed": 0},
    "algorithm": {"name": "fedasync", "model": "window", "Q": 2, "eta": 0.1, "beta": 1.0,
                  "tau": 1, "client_rule": "sgd", "batch": 1},
    "horizon": {"steps": 5}, "record": {"every": 1, "metrics": ["grad_sq"]}})
run_batch(sc, [0])
loops = set(built_kernels())
assert len(loops) == 1, loops
print(sum(name in loops for name in compiled))
"""


def _run(env: dict) -> int:
    out = subprocess.run([sys.executable, "-c", PROG], env=env, capture_output=True, text=True,
                         check=True, timeout=600)
    return int(out.stdout.split()[-1])


@pytest.mark.slow
def test_a_fresh_process_loads_the_bound_kernel_from_the_cache(tmp_path):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    assert _run(env) == 1  # compiled and saved
    assert _run(env) == 0  # loaded: no compile of the loop


PROG_TWO = r"""
import sys
sys.path.insert(0, sys.argv[1])
from test_physical_table import scenario
from fedsim.engine import run_batch
for name in ("asfedavg-period", "fedasync-diverges"):
    for tr in run_batch(scenario(name), [0, 3]):
        print(name, tr.diverged_step, repr(tr.final_w.tolist()))
"""


@pytest.mark.slow
def test_two_cached_group_loops_in_one_process_keep_their_own_rules(tmp_path):
    """Two rule combinations' loops loaded from the disk cache into one process: each
    runs its own rules (their names differ by what they bind, so numba's link-once
    names never give one the other's code), so the second process prints what the
    compiling one printed."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    here = os.path.join(os.path.dirname(__file__), "..")
    outs = [subprocess.run([sys.executable, "-c", PROG_TWO, here], env=env,
                           capture_output=True, text=True, check=True, timeout=900).stdout
            for _ in range(2)]
    assert outs[0] == outs[1] and outs[0].count("\n") == 4
