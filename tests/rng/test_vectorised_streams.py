"""Streams, delay models and delay draws built for all clients at once equal the per-client
loop bit for bit (issue 29), at n = 10^4 and, as a property, for any override pattern."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fedsim.config import Scenario
from fedsim.config.runtime import DELAY_KINDS, ClientDelays, DelaysConfig
from fedsim.delays import Constant, Uniform
from fedsim.engine.staleness import cycle_support, physical_staleness_bound
from fedsim.rng import Streams
from fedsim.rng.delays import DelayPlan
from fedsim.rng.streams import client_states, numpy_state

N = 10_000


def scenario(n: int, delays: dict) -> Scenario:
    return Scenario.from_dict({
        "name": "vec", "seed": 3,
        "problem": {"kind": "quadratic", "n": n, "dim": 2, "mu": 0.1, "L": 1.0,
                    "noise_sd": 0.1, "shared_hessian": True, "seed": 0},
        "algorithm": {"name": "fedasync", "client_rule": "sgd", "Q": 2, "eta": 0.01},
        "delays": delays, "horizon": {"steps": 10}})


DELAYS = {"download": {"kind": "exponential", "rate": 10.0},
          "compute": {"kind": "exponential", "rate": 1.0},
          "override": [{"clients": [0, 17, 9_999], "compute": {"kind": "exponential",
                                                               "rate": 3.0}},
                       {"clients": [17, 4_000], "upload": {"kind": "constant",
                                                           "value": 0.25}}]}


def test_client_states_are_the_loop_streams_at_ten_thousand() -> None:
    rows = client_states(11, [0, 5], N, "noise")
    for k, r in enumerate((0, 5)):
        s = Streams(11, r)
        for i in range(0, N, 7):
            assert numpy_state(rows[k, i]) == s.client(i, "noise").bit_generator.state


def test_delay_plan_is_the_loop_at_ten_thousand() -> None:
    sc = scenario(N, DELAYS)
    dc = sc.delays
    loop = [dc.for_client(i) for i in range(N)]
    assert dc.by_client(N) == loop
    plan = DelayPlan(sc)
    assert plan.models == [[m[k] for k in DELAY_KINDS] for m in loop]
    const = np.array([[isinstance(m[k], Constant) for k in DELAY_KINDS] for m in loop])
    value = np.array([[float(m[k].value) if isinstance(m[k], Constant) else 1.0 / m[k].rate
                       for k in DELAY_KINDS] for m in loop])
    c, v = plan.params()
    assert np.array_equal(c, const) and v.tobytes() == value.tobytes()
    assert plan.vector
    kind_of = {0: 0, 1: 1, 1 + plan.q: 2, 2 + plan.q: 3}  # first column -> kind
    for a_, _b, _c, _off, scale in plan.rand:
        assert scale.tobytes() == value[:, kind_of[a_]].tobytes()
    for a_, _b, val in plan.const:
        assert val.tobytes() == value[:, kind_of[a_]].tobytes()


def _staleness_loop(dc: DelaysConfig, n: int, q: int, count: int | None) -> float:
    cm = np.array([cycle_support(dc.for_client(i), q, dc.read_at)[0] for i in range(n)])
    wi = np.array([cycle_support(dc.for_client(i), q, dc.read_at)[1] for i in range(n)])
    if np.any(cm <= 0) or not np.all(np.isfinite(wi)) or count is None:
        return math.inf
    f = np.floor(wi[:, None] / cm[None, :] * (1.0 + 1e-9)) + 1.0
    np.fill_diagonal(f, 0.0)
    return float(np.max(np.ceil(f.sum(axis=1) / count)))


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 40),
       overrides=st.lists(st.tuples(st.lists(st.integers(0, 45), min_size=1, max_size=6),
                                    st.sampled_from(["download", "compute", "upload",
                                                     "think"]),
                                    st.floats(0.1, 3.0)), max_size=4),
       count=st.sampled_from([None, 1, 3]))
def test_groups_and_staleness_equal_the_loop(n, overrides, count) -> None:
    dc = DelaysConfig(download=Uniform(low=0.1, high=0.5), compute=Uniform(low=0.5, high=1.0),
                      upload=Constant(value=0.2), think=Constant(value=0.0),
                      override=tuple(
                          ClientDelays(clients=tuple(cl), **{k: Uniform(low=v, high=2 * v)})
                          for cl, k, v in overrides))
    loop = [dc.for_client(i) for i in range(n)]
    assert dc.by_client(n) == loop
    seen = np.zeros(n, dtype=int)
    for models, clients in dc.groups(n):
        seen[clients] += 1
        for i in clients.tolist():
            assert loop[i] == models
    assert np.all(seen == 1)
    for q in (1, 2):
        assert physical_staleness_bound(dc, n, q, q > 1, count) == \
            _staleness_loop(dc, n, q, count)


def test_exponential_plan_draws_equal_each_clients_stream() -> None:
    sc = scenario(50, {"download": {"kind": "exponential", "rate": 10.0},
                       "compute": {"kind": "exponential", "rate": 1.0},
                       "override": [{"clients": [3], "compute": {"kind": "exponential",
                                                                 "rate": 2.0}}]})
    plan = DelayPlan(sc, q=1)
    bgs = [Streams(3, 0).client(i, "delays") for i in range(50)]
    out = plan.draw(bgs, np.arange(50), 2)
    for i in range(50):
        g = Streams(3, 0).client(i, "delays")
        m = sc.delays.for_client(i)
        for blk in range(2):
            z = g.standard_exponential(plan.per_block)
            B = plan.B
            rows = out[i, blk * B:(blk + 1) * B]
            assert rows[:, 0].tobytes() == (z[:B] * (1.0 / m["download"].rate)).tobytes()
            assert rows[:, 1].tobytes() == (z[B:2 * B] * (1.0 / m["compute"].rate)).tobytes()
