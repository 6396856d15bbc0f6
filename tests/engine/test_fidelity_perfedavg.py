"""Issue 14 item 7 (Per-FedAvg): beta is the client's outer local step (Fallah et al. 2020,
Algorithm 1, w <- w - beta (I - alpha A) grad f(w - alpha grad f(w))), the server mixing
weight is ``server_mix``; hand-computed synchronous rounds with the exact (noise-free)
quadratic gradients."""

from __future__ import annotations

import numpy as np
import pytest

from fedsim.config import Scenario
from fedsim.engine import run
from fedsim.errors import ConfigError
from fedsim.problems import QuadraticProblem


def _sc(**alg):
    return Scenario.from_dict({
        "seed": 2,
        "problem": {"kind": "quadratic", "n": 2, "dim": 2, "mu": 0.5, "L": 1.0,
                    "noise_sd": 0.0, "seed": 4},
        "algorithm": {"name": "fedavg", "client_rule": "maml", "alpha": 0.1, "Q": 1, **alg},
        "horizon": {"steps": 2}})


def _hand(beta: float, mix: float, alpha: float = 0.1, rounds: int = 2) -> np.ndarray:
    q = QuadraticProblem.random(2, 2, mu=0.5, L=1.0, noise_sd=0.0, seed=4)
    A, b = q.A_stack, q.b_stack
    w = np.zeros(2)
    for _ in range(rounds):
        local = []
        for i in range(2):
            g = A[i] @ (w - b[i])                       # grad f_i(w)
            g2 = A[i] @ ((w - alpha * g) - b[i])        # grad f_i(w - alpha grad f_i(w))
            local.append(w - beta * (np.eye(2) - alpha * A[i]) @ g2)
        w = w + mix * (np.mean(local, axis=0) - w)
    return w


def test_gradient_formula_matches_the_problem():
    q = QuadraticProblem.random(2, 2, mu=0.5, L=1.0, noise_sd=0.0, seed=4)
    w = np.array([0.3, -0.2])
    np.testing.assert_allclose(q.grad(0, w), q.A_stack[0] @ (w - q.b_stack[0]))


@pytest.mark.parametrize("alg, beta, mix", [
    ({"beta": 0.3}, 0.3, 1.0),                       # Per-FedAvg's beta = outer step
    ({"eta": 0.3}, 0.3, 1.0),                        # the same through eta
    ({"beta": 0.3, "server_mix": 0.5}, 0.3, 0.5),    # engine with server mixing != 1
])
def test_sync_maml_rounds_by_hand(alg, beta, mix):
    tr = run(_sc(**alg))
    np.testing.assert_allclose(tr.final_w, _hand(beta, mix), rtol=1e-12, atol=1e-14)


def test_old_server_mixing_beta_is_a_migration_error():
    with pytest.raises(ConfigError, match="server_mix"):
        _sc(beta=0.3, eta=0.1)
    with pytest.raises(ConfigError, match="server_mix"):
        Scenario.from_dict({"problem": {"kind": "quadratic", "n": 2, "dim": 2, "mu": 0.5,
                                        "L": 1.0}, "horizon": {"steps": 2},
                            "algorithm": {"name": "fedavg", "beta": 0.5}})
