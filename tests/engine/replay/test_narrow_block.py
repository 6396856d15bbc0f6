"""A narrow delay block (every think time Constant: no think column) writes the very
timeline of the full-width block: the same uploads, reads and times, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from fedsim.config import Scenario
from fedsim.engine.models.physical.event_loop import (
    advance_loop,
    block_width,
    delay_params,
    start_loop,
    think_start,
)
from fedsim.rng.delays import DelayPlan
from fedsim.rng.streams import client_states


def scenario(think: float, read_at: str) -> Scenario:
    return Scenario.from_dict({
        "name": "narrow", "seed": 3,
        "problem": {"kind": "quadratic", "n": 40, "dim": 2, "mu": 0.1, "L": 1.0,
                    "heterogeneity": 1.0, "noise": "additive", "noise_sd": 0.1, "seed": 0},
        "algorithm": {"name": "fedasync", "model": "physical", "client_rule": "sgd", "Q": 2,
                      "eta": 0.01, "batch": 1, "beta": 1.0},
        "delays": {"download": {"kind": "exponential", "rate": 10.0},
                   "compute": {"kind": "exponential", "rate": 1.0},
                   "upload": {"kind": "constant", "value": 0.05},
                   "think": {"kind": "constant", "value": think},
                   "compute_per": "step", "read_at": read_at},
        "trigger": {"kind": "every_upload"}, "horizon": {"steps": 3000},
    })


def timeline(sc: Scenario, width: int, thnext: np.ndarray, k: int = 3000) -> tuple:
    plan = DelayPlan(sc)
    kconst, kval = delay_params(plan)
    n, q, B = sc.problem.n, plan.q, plan.B
    states = client_states(sc.seed, [0], n, "delays")[0]
    st = np.zeros(3, np.int64)
    ht, he, hc = np.empty(n), np.empty(n, np.int64), np.empty(n, np.int64)
    blk = np.empty((n, width))
    omega, jn, kind, gate, rnd = (np.zeros(n, np.int64) for _ in range(5))
    jn[:] = B
    tread = np.zeros(n)
    arrival = sc.delays.read_at == "arrival"
    start_loop(arrival, st, ht, he, hc, blk, omega, tread, thnext, jn, kind, kconst, kval,
               states, q, B)
    up_t, up_r = np.empty(k), np.empty(k)
    up_c, up_o, up_n = (np.empty(k, np.int64) for _ in range(3))
    m = 2 * k + n + 1
    b_t = np.empty(m)
    b_d, b_g, b_b = (np.empty(m, np.int64) for _ in range(3))
    nu, nb = advance_loop(k, np.inf, arrival, st, ht, he, hc, blk, omega, tread, thnext, jn,
                          kind, gate, rnd, kconst, kval, states, q, B, up_t, up_c, up_o, up_r,
                          up_n, b_t, b_d, b_g, b_b)
    return (up_t[:nu], up_c[:nu], up_o[:nu], up_r[:nu], b_t[:nb], b_d[:nb], b_g[:nb],
            b_b[:nb], states)


@pytest.mark.parametrize("think", [0.0, 0.3])
@pytest.mark.parametrize("read_at", ["arrival", "request"])
def test_narrow_block_is_the_wide_blocks_timeline(think: float, read_at: str) -> None:
    sc = scenario(think, read_at)
    plan = DelayPlan(sc)
    kconst, kval = delay_params(plan)
    q, B = plan.q, plan.B
    assert block_width(kconst, q, B) == B * (q + 2)
    narrow = timeline(sc, B * (q + 2), think_start(kconst, kval))
    wide = timeline(sc, B * (q + 3), np.zeros(sc.problem.n))
    assert narrow[0].size == 3000 and (narrow[4].size > 0) == (think > 0)
    for a, b in zip(narrow, wide, strict=True):
        assert a.tobytes() == b.tobytes()
