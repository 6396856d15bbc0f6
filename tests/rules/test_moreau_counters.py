"""Option C's inner counters count the solves of the rounds the server consumed
(fedsim.local.moreau, "Counters"), on hand-built FedBuff runs whose time horizon ends with
a partly full buffer: an upload still in the buffer is in ``client_updates`` but its
round's solves are not counted."""

from __future__ import annotations

import pytest

from fedsim.config import Scenario
from fedsim.engine import run

Q = 2


def _scenario(t_end: float) -> Scenario:
    """Two clients, no download/upload time, constant compute 1.0 (client 0) and 1.4
    (client 1) per round: uploads at 1, 2, 3, 4, ... and 1.4, 2.8, 4.2, ...; FedBuff
    aggregates every 3 uploads.  Two inner GD iterations cannot reach nu = 1e-12, so every
    solve runs 2 iterations and fails."""
    return Scenario.from_dict({
        "name": "moreau-tail", "seed": 1,
        "problem": {"kind": "quadratic", "n": 2, "dim": 3, "mu": 0.5, "L": 1.0,
                    "heterogeneity": 1.0, "noise": "additive", "noise_sd": 0.1, "seed": 0},
        "algorithm": {"name": "fedbuff", "client_rule": "moreau", "lam": 4.0, "Q": Q,
                      "eta": 0.05, "buffer": 3, "inner_max_iter": 2, "nu": 1e-12},
        "delays": {"compute": {"kind": "constant", "value": 1.0}, "compute_per": "round",
                   "override": [{"clients": [1],
                                 "compute": {"kind": "constant", "value": 1.4}}]},
        "trigger": {"kind": "every_k", "count": 3},
        "horizon": {"time": t_end}, "record": {"metrics": ["grad_sq"]}})


@pytest.mark.parametrize("t_end, times, updates, consumed", [
    # 1.0, 1.4, 2.0 -> step 1 at 2.0; 2.8, 3.0 wait in the buffer at t = 3.2
    (3.2, [0.0, 2.0], [3, 2], 3),
    # ... 2.8, 3.0, 4.0 -> step 2 at 4.0; 4.2 waits at t = 4.5
    (4.5, [0.0, 2.0, 4.0], [4, 3], 6),
])
def test_counters_count_the_consumed_rounds_only(t_end, times, updates, consumed):
    tr = run(_scenario(t_end))
    assert tr.time.tolist() == times
    assert tr.client_updates.tolist() == updates  # every upload, consumed or not
    assert int(tr.buffer_fill.sum()) == consumed < sum(updates)
    assert (tr.info["inner_solves"], tr.info["inner_iters"], tr.info["inner_failures"]) == (
        Q * consumed, 2 * Q * consumed, Q * consumed)
