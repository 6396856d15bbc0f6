"""The algorithm registry, the dispatch table and the server-rule shape."""

from __future__ import annotations

import numpy as np
import pytest

from fedsim.algorithms import (
    Algorithm,
    algorithms,
    get_algorithm,
    register_algorithm,
    unregister_algorithm,
)
from fedsim.config import Scenario
from fedsim.engine import run
from fedsim.engine.models import get_model, model_of, models
from fedsim.errors import ConfigError
from fedsim.servers import FedAsyncRule, FedBuffServer, Upload, fedasync_apply
from fedsim.trace import KINDS


def _scenario(name: str, **alg) -> Scenario:
    return Scenario.from_dict({
        "seed": 3,
        "problem": {"kind": "quadratic", "n": 3, "dim": 2, "mu": 0.5, "L": 1.0, "seed": 1},
        "algorithm": {"name": name, "Q": 2, "eta": 0.1, **alg},
        "horizon": {"steps": 30},
    })


def test_every_builtin_algorithm_is_registered_with_known_models():
    assert algorithms()[:6] == ("fedasync", "fedbuff", "area", "fedavg", "asfedavg", "asypfl")
    for name in algorithms():
        for key in get_algorithm(name).runners.values():
            assert key in models()


def test_the_registry_picks_the_model_by_execution_mode():
    assert model_of(_scenario("fedasync")) is get_model("physical")
    assert model_of(_scenario("fedasync", model="window", tau=2)) is get_model("window")
    assert model_of(_scenario("fedavg")) is get_model("sync")
    assert model_of(_scenario("fedbuff")) is get_model("physical")


def test_unknown_algorithm_is_a_config_error():
    with pytest.raises(ConfigError, match="algorithm.name"):
        get_algorithm("nope")
    with pytest.raises(ConfigError, match="already registered"):
        register_algorithm(get_algorithm("fedasync"))


class HalfStep(FedAsyncRule):
    """Toy server rule: FedAsync with half the step (buffered path, count trigger)."""

    def apply(self, state, uploads):
        for u in uploads:
            fedasync_apply(state, u.read, u.new, 0.5 * self.beta)
        return state, {"fill": len(uploads)}


def test_toy_algorithm_registered_through_the_public_api_runs_end_to_end():
    toy = Algorithm(name="toy_halfstep", client_rules=("sgd",),
                    runners={"physical": "physical"},
                    server=lambda cfg, problem: HalfStep(problem.dim, float(cfg.get("beta"))),
                    section={"beta": 1.0})
    register_algorithm(toy)
    try:
        assert "toy_halfstep" in algorithms()
        sc = _scenario("toy_halfstep", beta=0.8)
        tr = run(sc)
        assert tr.steps_done == 30 and not tr.diverged
        assert {str(k) for k in tr.kind[1:]} <= {"aggregate", str(KINDS.index("aggregate"))}
        with pytest.raises(ConfigError, match="not used"):
            _scenario("toy_halfstep", buffer=2)
    finally:
        unregister_algorithm("toy_halfstep")
    assert "toy_halfstep" not in algorithms()
    with pytest.raises(ConfigError, match="algorithm.name"):
        _scenario("toy_halfstep")


def test_server_rules_share_one_shape():
    w = np.array([1.0, 2.0])
    rule = FedAsyncRule(2, beta=0.5)
    state = rule.init(w)
    state, diag = rule.apply(state, [Upload(0, np.array([1.0, 2.0]), np.array([0.5, 3.0]))])
    np.testing.assert_array_equal(state, [0.75, 2.5])
    assert diag == {"fill": 1}
    fb = FedBuffServer(2, server_lr=2.0, weight="inverse_sqrt")
    s = fb.init(np.zeros(2))
    s, diag = fb.apply(s, [Upload(0, np.array([1.0, 0.0]), np.zeros(2), 0),
                           Upload(1, np.array([0.0, 2.0]), np.zeros(2), 3)])
    np.testing.assert_allclose(s, [-1.0, -1.0])
    assert diag["fill"] == 2


@pytest.mark.parametrize("name, bad, field", [
    ("fedbuff", {"buffer": 0}, "algorithm.buffer"),
    ("fedbuff", {"buffer": 2.0}, "algorithm.buffer"),
    ("fedbuff", {"server_lr": -1.0}, "algorithm.server_lr"),
    ("fedbuff", {"staleness_weight": "exp"}, "algorithm.staleness_weight"),
    ("fedavg", {"participation": 1.5}, "algorithm.participation"),
    ("fedasync", {"beta": True}, "algorithm.beta"),
    ("asfedavg", {"beta": -0.1}, "algorithm.beta"),
])
def test_each_section_validates_its_fields(name, bad, field):
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
        Scenario.from_dict({"problem": {"kind": "quadratic", "n": 2, "dim": 2, "mu": 0.5,
                                        "L": 1.0}, "algorithm": {"name": name, **bad}})


def test_old_flat_spelling_still_works_and_round_trips():
    from fedsim.config import dumps, loads

    sc = _scenario("fedbuff", buffer=2, server_lr=0.5, staleness_weight="polynomial")
    assert sc.algorithm.get("buffer") == 2 and sc.algorithm.get("staleness_exponent") == 0.5
    assert sc.trigger.kind == "every_k" and sc.trigger.count == 2
    assert loads(dumps(sc)) == sc


def test_theorem7_schedule_matches_theory_bit_for_bit():
    theory_area = pytest.importorskip("fedsim.theory.area")
    from fedsim.servers.area import theorem7_step_sizes

    for L, mu, M, p_min in [(1.0, 0.1, 1, 0.2), (3.0, 0.5, 4, 0.05), (2.0, 2.0, 7, 1.0)]:
        s = theorem7_step_sizes(L, mu, M, p_min)
        for k in (0, 1, 5, 1000, 123456):
            assert s(k) == float(theory_area.step_size(k, L=L, mu=mu, M=M, p_min=p_min))


def test_client_rules_share_init_update_and_update_is_round():
    from fedsim.engine import problem_for
    from fedsim.local import MAMLRule, MoreauRule, SGDRule

    p = problem_for(_scenario("fedasync"))
    w0 = np.array([0.3, -0.2])
    for rule in (SGDRule(p, 0.1, 3), MAMLRule(p, 0.1, 3, 1, 0.05),
                 MoreauRule(p, 0.1, 3, 1, 5.0, L=1.0)):
        state = rule.init(w0)
        a, _ = rule.update(1, w0, np.empty(2), np.random.default_rng(4), state)
        b = rule.round(1, w0, np.empty(2), np.random.default_rng(4))
        assert np.array_equal(a, b)
