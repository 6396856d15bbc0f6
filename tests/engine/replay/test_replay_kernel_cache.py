"""The replay loop bound per combination of rules is found in numba's disk cache by a
fresh process (fedsim.jit.cache_closure)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

PROG = r"""
import numpy as np
from fedsim.engine.replay.kernel import replay_kernel
from fedsim.local.sgd import sgd_round
from fedsim.problems import QuadraticProblem
from fedsim.servers.fedasync import fedasync_apply
from fedsim.engine.replay.streams import client_states
p = QuadraticProblem([np.eye(2)] * 3, np.zeros((3, 2)), noise_cov=np.eye(2) * 0.01)
cv = p.compiled_view(1)
k = replay_kernel(sgd_round, cv.grad, cv.draw, fedasync_apply, cv.metrics)
hist = np.zeros((8, 2)); grid = np.empty((6, 1)); last = np.empty(1)
k(cv.data, cv.mdata, np.zeros(1, np.int64), hist, 0, np.array([0, 1, 2, 0, 1]),
  np.zeros(5, np.int64), client_states(1, [0], 3, "noise")[0], np.empty((2, 2)), 0.1, 2,
  1.0, 1, np.empty(2), np.empty(2), grid, last, 1e300)
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
