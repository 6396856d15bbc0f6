"""The replay loop bound per combination of rules is found in numba's disk cache by a
fresh process (fedsim.jit.cache_closure)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

PROG = r"""
import numpy as np
from fedsim.engine.replay.kernel import table_kernel
from fedsim.local.forms import view_draw_round
from fedsim.local.sgd import sgd_update_for
from fedsim.problems import QuadraticProblem
from fedsim.servers.fedasync import fedasync_step
from fedsim.rng.streams import client_states
p = QuadraticProblem([np.eye(2)] * 3, np.zeros((3, 2)), noise_cov=np.eye(2) * 0.01)
cv = p.compiled_view(1)
k = table_kernel(view_draw_round(cv.draw), sgd_update_for(cv.grad), fedasync_step)
T = 5
i8, i4 = np.int64, np.int32
hist = np.zeros((8, 1, 2)); snap = np.empty((T + 2, 2))
k(cv.data, 0, T, np.arange(T + 1, dtype=i8), np.ones(T, np.int8),
  np.array([0, 1, 2, 0, 1], i4), np.zeros(T, i8), np.full(T, 2, i4), np.zeros(T, i8),
  hist, np.zeros((3, 1, 2)), client_states(1, [0], 3, "noise")[0], np.empty((2, 2)),
  np.zeros(1, i4), np.zeros((1, 2)), np.zeros((1, 2)), np.zeros(1, i8), np.array([0.1]),
  np.array([1.0]), np.zeros(1, i8), np.zeros(1, i8), np.arange(T + 1, dtype=i8),
  np.ones(1, i8), snap, False, np.zeros(1), np.empty((1, 1)), -1, np.empty((1, 1, 1)),
  1e300, np.zeros(T, i8))
print(sum(k.stats.cache_hits.values()), sum(k.stats.cache_misses.values()))
"""


def _run(env: dict) -> tuple[int, int]:
    out = subprocess.run([sys.executable, "-c", PROG], env=env, capture_output=True, text=True,
                         check=True, timeout=600)
    hits, misses = out.stdout.split()[-2:]
    return int(hits), int(misses)


@pytest.mark.slow
def test_a_fresh_process_loads_the_bound_kernel_from_the_cache(tmp_path):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    assert _run(env) == (0, 1)  # compiled and saved
    assert _run(env) == (1, 0)  # loaded


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
    """Two rule combinations' outer loops loaded from the disk cache into one process: each
    calls its own per-replicate loop (their names differ by what they bind), so the
    second process prints what the compiling one printed."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    here = os.path.join(os.path.dirname(__file__), "..")
    outs = [subprocess.run([sys.executable, "-c", PROG_TWO, here], env=env,
                           capture_output=True, text=True, check=True, timeout=900).stdout
            for _ in range(2)]
    assert outs[0] == outs[1] and outs[0].count("\n") == 4
