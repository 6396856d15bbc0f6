"""fedsim.config: TOML round trips, unknown keys, bad values, inconsistent choices."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedsim import config
from fedsim.config import Scenario
from fedsim.engine import run
from fedsim.errors import ConfigError

EXAMPLES = sorted((Path(__file__).parents[2] / "examples").glob("*.toml"))
PROBLEM = {"kind": "quadratic", "n": 3, "dim": 2, "mu": 0.5, "L": 1.0, "seed": 0}


def sc(**over) -> Scenario:
    d = {"problem": dict(PROBLEM), "horizon": {"steps": 10}}
    d.update(over)
    return Scenario.from_dict(d)


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_examples_round_trip(path, tmp_path):
    s = config.load(path)
    assert config.loads(config.dumps(s)) == s
    out = tmp_path / "s.toml"
    config.dump(s, out)
    assert config.load(out) == s
    assert Scenario.from_dict(s.to_dict()) == s


def test_defaults_and_get():
    s = sc()
    assert s.algorithm.name == "fedasync" and s.algorithm.model == "physical"
    assert s.algorithm.client_rule == "sgd"
    assert s.algorithm.get("Q") == 1 and s.algorithm.get("beta") == 1.0
    assert s.delays.compute.to_dict() == {"kind": "exponential", "rate": 1.0}
    assert s.delays.download.to_dict() == {"kind": "constant", "value": 0.0}
    assert math.isinf(s.horizon.time)
    a = sc(algorithm={"name": "area", "alpha": {"kind": "constant", "value": 0.1}}).algorithm
    assert a.model == "algorithm" and a.client_rule == "area"
    w = sc(algorithm={"name": "fedasync", "model": "window", "tau": 3}).algorithm
    assert w.get("delay_pmf") == (0.0, 0.0, 0.0, 1.0)


@pytest.mark.parametrize("bad, field", [
    ({"bogus": 1}, "bogus"),
    ({"algorithm": {"name": "fedasync", "gamma": 1}}, "algorithm.gamma"),
    ({"delays": {"compute": {"kind": "exponential", "rate": 1.0}, "speed": 2}}, "delays.speed"),
    ({"trigger": {"kind": "poisson", "rate": 1.0, "x": 1}}, "trigger.x"),
    ({"horizon": {"steps": 5, "until": 3}}, "horizon.until"),
    ({"record": {"metric": ["grad_sq"]}}, "record.metric"),
])
def test_unknown_keys_name_the_field(bad, field):
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
        sc(**bad)


def test_unknown_problem_key():
    with pytest.raises(ConfigError, match=r"problem\.colour"):
        Scenario.from_dict({"problem": {**PROBLEM, "colour": "red"}})


@pytest.mark.parametrize("bad, msg", [
    ({"delays": {"compute": {"kind": "exponential", "rate": -1.0}}},
     r"delays\.compute\.rate must be > 0"),
    ({"algorithm": {"name": "fedbuff", "buffer": 0}}, r"algorithm\.buffer must be an integer >= 1"),
    ({"algorithm": {"name": "fedasync", "eta": -0.1}}, r"algorithm\.eta must be >= 0"),
    ({"algorithm": {"name": "fedasync", "Q": 0}}, r"algorithm\.Q"),
    ({"algorithm": {"name": "fedasync", "lam": 3.0}}, r"algorithm\.lam is not used"),
    ({"algorithm": {"name": "fedasync", "client_rule": "moreau"}}, r"algorithm\.lam is required"),
    ({"algorithm": {"name": "fedasync", "client_rule": "maml"}}, r"algorithm\.alpha"),
    ({"algorithm": {"name": "fedasync", "client_rule": "area"}}, r"algorithm\.client_rule"),
    ({"algorithm": {"name": "fedsgd"}}, r"algorithm\.name"),
    ({"algorithm": {"name": "fedavg", "model": "window"}}, r"algorithm\.model"),
    ({"algorithm": {"name": "fedavg", "participation": 1.5}}, r"algorithm\.participation"),
    ({"algorithm": {"name": "area"}}, r"algorithm\.alpha is required"),
    ({"algorithm": {"name": "area", "alpha": {"kind": "constant", "value": 0.0}}},
     r"algorithm\.alpha\.value must be > 0"),
    ({"algorithm": {"name": "fedasync", "model": "window"}}, r"algorithm\.tau is required"),
    ({"algorithm": {"name": "fedasync", "model": "window", "tau": 1, "delay_pmf": [0.5, 0.6]}},
     r"delay_pmf must sum to 1"),
    ({"algorithm": {"name": "fedasync", "model": "window", "tau": 1, "delay_pmf": [1.0]}},
     r"delay_pmf must have tau\+1"),
    ({"trigger": {"kind": "every_k", "count": 2}}, r"trigger\.kind must be 'every_upload'"),
    ({"trigger": {"kind": "poisson"}}, r"trigger\.rate must be a number"),
    ({"trigger": {"kind": "period", "period": 1.0, "rate": 2.0}}, r"trigger\.rate is not used"),
    ({"horizon": {"time": math.inf}}, r"horizon needs a finite"),
    ({"horizon": {"steps": 0}}, r"horizon\.steps"),
    ({"record": {"metrics": ["loss"]}}, r"record\.metrics"),
    ({"record": {"every": 0}}, r"record\.every"),
    ({"seed": -1}, r"seed must be a non-negative integer"),
    ({"delays": {"compute_per": "minute"}}, r"delays\.compute_per"),
    ({"delays": {"override": [{"clients": [7], "compute": {"kind": "constant", "value": 1}}]}},
     r"delays\.override\[0\]\.clients"),
])
def test_bad_values_raise(bad, msg):
    with pytest.raises(ConfigError, match=msg):
        sc(**bad)


@pytest.mark.parametrize("bad, msg", [
    ({"algorithm": {"name": "fedbuff", "buffer": 3}, "trigger": {"kind": "every_k", "count": 2}},
     r"trigger\.count must equal algorithm\.buffer"),
    ({"algorithm": {"name": "fedbuff", "buffer": 3}, "trigger": {"kind": "every_upload"}},
     r"trigger\.kind must be 'every_k'"),
    ({"algorithm": {"name": "fedasync", "model": "expcycle"},
      "delays": {"download": {"kind": "exponential", "rate": 1.0}}},
     r"delays\.download must be constant 0"),
    ({"algorithm": {"name": "fedasync", "model": "expcycle"},
      "delays": {"compute": {"kind": "uniform", "low": 0.0, "high": 1.0}}},
     r"delays\.compute must be exponential"),
    ({"algorithm": {"name": "area", "model": "iterate_model",
                    "alpha": {"kind": "constant", "value": 0.1}}},
     r"trigger\.kind must be 'poisson'"),
    ({"algorithm": {"name": "area", "alpha": {"kind": "theorem7"}},
      "trigger": {"kind": "poisson", "rate": 1.0}}, r"needs model='iterate_model'"),
    ({"algorithm": {"name": "area", "alpha": {"kind": "constant", "value": 0.1}},
      "delays": {"read_at": "arrival"}}, r"delays\.read_at must be 'request'"),
    ({"algorithm": {"name": "fedavg"},
      "delays": {"think": {"kind": "constant", "value": 1.0}}},
     r"delays\.think is not used by synchronous fedavg"),
])
def test_inconsistent_choices_raise(bad, msg):
    with pytest.raises(ConfigError, match=msg):
        sc(**bad)


def test_initial_model_w0():
    import numpy as np

    from fedsim.engine import initial_model, problem_for

    s = sc(algorithm={"name": "fedasync", "w0": [1.0, -2.0]})
    assert s.algorithm.w0 == (1.0, -2.0)
    assert config.loads(config.dumps(s)) == s
    np.testing.assert_array_equal(initial_model(problem_for(s), s), [1.0, -2.0])
    t = run(sc(algorithm={"name": "area", "w0": 3.0, "alpha": {"kind": "constant", "value": 0.1}},
               trigger={"kind": "poisson", "rate": 1.0}, record={"metrics": ["dist_sq"]}))
    p = problem_for(s)
    assert t.metrics["dist_sq"][0] == float(np.sum((3.0 - p.x_star) ** 2))
    with pytest.raises(ConfigError, match=r"algorithm\.w0 must have dim = 2"):
        run(sc(algorithm={"name": "fedasync", "w0": [1.0]}))
    with pytest.raises(ConfigError, match=r"algorithm\.w0\[1\] must be finite"):
        sc(algorithm={"name": "fedasync", "w0": [1.0, math.inf]})


def test_fedbuff_default_trigger_follows_buffer():
    s = sc(algorithm={"name": "fedbuff", "buffer": 4})
    assert s.trigger.kind == "every_k" and s.trigger.count == 4


def test_me_lam_below_L_is_a_config_error_at_run():
    s = sc(algorithm={"name": "fedasync", "client_rule": "moreau", "lam": 0.5})
    with pytest.raises(ConfigError, match=r"algorithm\.lam must be > L"):
        run(s)


def test_bad_toml_is_config_error():
    with pytest.raises(ConfigError, match="invalid TOML"):
        config.loads("name = [unclosed")


@settings(max_examples=40, deadline=None)
@given(name=st.sampled_from(["fedasync", "fedbuff", "asfedavg", "fedavg"]),
       Q=st.integers(1, 20), eta=st.floats(0.0, 1.0), beta=st.floats(0.0, 2.0),
       rate=st.floats(0.01, 100.0), steps=st.integers(1, 10**6),
       every=st.integers(1, 50), seed=st.integers(0, 2**31))
def test_round_trip_property(name, Q, eta, beta, rate, steps, every, seed):
    alg: dict = {"name": name, "Q": Q, "eta": eta}
    if name in ("fedasync", "asfedavg"):
        alg["beta"] = beta
    elif name == "fedavg":  # issue 14: fedavg's server mixing weight is server_mix
        alg["server_mix"] = beta
    else:
        alg["server_lr"] = beta
    s = sc(algorithm=alg, seed=seed, horizon={"steps": steps, "time": rate * 10},
           delays={"compute": {"kind": "exponential", "rate": rate},
                   "upload": {"kind": "uniform", "low": 0.0, "high": rate}},
           record={"every": every, "metrics": ["grad_sq", "f_gap"]})
    assert config.loads(config.dumps(s)) == s


def test_an_algorithms_mode_declarations_name_its_own_modes():
    """``mode_keys`` / ``timeless_modes`` name modes of ``runners``; config reads them (the
    window's keys are accepted only in that mode) instead of comparing model names."""
    import dataclasses

    from fedsim.algorithms import get_algorithm

    fa = get_algorithm("fedasync")
    assert fa.mode_keys == {"window": ("tau", "delay_pmf")} and fa.timeless_modes == ("window",)
    assert get_algorithm("fedavg").synchronous and not fa.synchronous
    with pytest.raises(ConfigError, match=r"fedasync\.mode_keys"):
        dataclasses.replace(fa, mode_keys={"nowhere": ("tau",)})
    with pytest.raises(ConfigError, match=r"fedasync\.timeless_modes"):
        dataclasses.replace(fa, timeless_modes=("nowhere",))
    with pytest.raises(ConfigError, match="tau"):
        sc(algorithm={"name": "fedasync", "model": "physical", "tau": 2})
    with pytest.raises(ConfigError, match=r"algorithm\.tau is required"):
        sc(algorithm={"name": "fedasync", "model": "window"}, horizon={"steps": 5})
