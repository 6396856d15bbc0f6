"""Issue 9: each algorithm's config section is a frozen dataclass validating itself; the
cross-field rules are the algorithm's ``check`` hook; client rules come from a registry;
AREA clients have the init/update shape."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fedsim.algorithms import (
    Algorithm,
    Section,
    get_algorithm,
    register_algorithm,
    unregister_algorithm,
)
from fedsim.algorithms.area import AreaSection, StepSchedule
from fedsim.algorithms.fedbuff import FedBuffSection
from fedsim.config import Scenario
from fedsim.errors import ConfigError, check_number
from fedsim.local import (
    AreaClients,
    SGDRule,
    client_rules,
    get_client_rule,
    register_client_rule,
    unregister_client_rule,
)
from fedsim.problems import QuadraticProblem
from fedsim.servers import FedAsyncRule

PROBLEM = {"kind": "quadratic", "n": 3, "dim": 2, "mu": 0.5, "L": 1.0, "seed": 1}


def test_sections_are_frozen_dataclasses_with_defaults():
    s = FedBuffSection()
    assert (s.buffer, s.server_lr, s.staleness_weight, s.staleness_exponent) == (
        1, 1.0, "none", 0.5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.buffer = 2
    with pytest.raises(ConfigError, match=r"algorithm\.buffer"):
        FedBuffSection(buffer=0)
    with pytest.raises(ConfigError, match=r"algorithm\.alpha"):
        AreaSection(M=2)
    assert AreaSection(alpha=StepSchedule("constant", 0.1)).M == 1
    for name in ("fedasync", "fedbuff", "area", "fedavg", "asfedavg", "asypfl"):
        assert issubclass(get_algorithm(name).section, Section)


def test_config_holds_the_validated_section():
    sc = Scenario.from_dict({"problem": PROBLEM, "horizon": {"steps": 5},
                             "algorithm": {"name": "fedbuff", "buffer": 2}})
    assert isinstance(sc.algorithm.section, FedBuffSection)
    assert sc.algorithm.section.buffer == 2 and sc.algorithm.get("server_lr") == 1.0
    assert sc.trigger.kind == "every_k" and sc.trigger.count == 2  # default_trigger hook


def test_check_hook_is_the_algorithms_own():
    with pytest.raises(ConfigError, match=r"trigger\.kind"):
        Scenario.from_dict({"problem": PROBLEM, "algorithm": {"name": "fedasync"},
                            "horizon": {"steps": 5},
                            "trigger": {"kind": "every_k", "count": 2}})
    with pytest.raises(ConfigError, match=r"delays\.read_at"):
        Scenario.from_dict({"problem": PROBLEM, "horizon": {"steps": 5},
                            "algorithm": {"name": "area", "alpha": {"kind": "constant",
                                                                    "value": 0.1}},
                            "delays": {"read_at": "arrival"}})


def test_client_rule_registry_names_class_and_keys():
    assert client_rules() == ("sgd", "maml", "fomaml", "hfmaml", "moreau", "area", "upload",
                              "asypfl", "xie_prox")
    assert get_client_rule("hfmaml").keys == ("Q", "eta", "batch", "alpha", "hf_delta",
                                              "batch_inner", "batch_hess")
    with pytest.raises(ConfigError, match=r"algorithm\.client_rule"):
        get_client_rule("nope")


class HalfSGD(SGDRule):
    """Toy client rule: SGD with half the step."""

    @classmethod
    def from_config(cls, name, cfg, problem):
        return cls(problem, 0.5 * cfg.get("eta"), cfg.get("Q"), cfg.get("batch"))


@dataclasses.dataclass(frozen=True)
class ToySection(Section):
    """A section with a key no built-in algorithm has."""

    mix: float = 0.5

    def validate(self) -> None:
        check_number("algorithm.mix", self.mix, low=0.0)


def test_toy_algorithm_with_its_own_key_and_rule_via_public_api():
    register_client_rule("halfsgd", HalfSGD, ("Q", "eta", "batch"))
    register_algorithm(Algorithm(
        name="toy_mix", client_rules=("halfsgd",), runners={"physical": "physical"},
        server=lambda cfg, problem: FedAsyncRule(problem.dim, float(cfg.get("mix"))),
        section=ToySection))
    try:
        sc = Scenario.from_dict({"problem": PROBLEM, "horizon": {"steps": 20},
                                 "algorithm": {"name": "toy_mix", "mix": 0.25, "eta": 0.1}})
        assert sc.algorithm.get("mix") == 0.25 and sc.algorithm.mix == 0.25
        assert sc.algorithm.to_dict()["mix"] == 0.25
        from fedsim.engine import run

        assert run(sc).steps_done == 20
        with pytest.raises(ConfigError, match=r"algorithm\.mix"):
            Scenario.from_dict({"problem": PROBLEM, "algorithm": {"name": "toy_mix",
                                                                  "mix": -1.0}})
        with pytest.raises(ConfigError, match=r"algorithm\.mix"):
            Scenario.from_dict({"problem": PROBLEM, "algorithm": {"name": "fedasync",
                                                                  "mix": 0.2}})
    finally:
        unregister_algorithm("toy_mix")
        unregister_client_rule("halfsgd")


@pytest.mark.parametrize("model", ["algorithm", "iterate_model"])
def test_area_clients_compiled_update_equals_the_interpreted_one(model):
    """The compiled event (problem with a compiled view) and ``area_update.py_func`` with the
    SGD rule's own round (the path of problems without one) give the same bits."""
    from fedsim.local.area import area_update

    q = QuadraticProblem.random(3, 2, mu=0.5, L=1.0, seed=2, noise_sd=0.3)
    sgd = SGDRule(q, 0.0, 2, 1)
    a = AreaClients(np.zeros(2), 3, sgd)
    assert a.cv is not None and a.cv.draws == 2  # compiled, with noise
    st = a.init(np.zeros(2))
    s2 = a.init(np.zeros(2))
    r1, r2 = np.random.default_rng(5), np.random.default_rng(5)
    out, ref, g = np.empty(2), np.empty(2), np.empty(2)

    def rule_round(grad, view, i, w_read, o, rng, eta, Q, g_):
        sgd.round(i, w_read, o, rng, eta=eta, Q=Q)
        return 0

    for i, x_s in [(0, np.ones(2)), (1, np.array([2.0, -1.0])), (0, np.zeros(2))]:
        out, st = a.update(i, x_s, out, r1, st, 0.1, model)
        area_update.py_func(rule_round, None, None, i, x_s, s2.s[0, i], s2.s[1, i], ref, r2,
                            0.1, 2, g,
                            model == "iterate_model")
        np.testing.assert_array_equal(out, ref)
        np.testing.assert_array_equal(st.s, s2.s)
    assert np.any(st.x != 0.0) and np.array_equal(st.y[2], np.zeros(2))
