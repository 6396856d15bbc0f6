"""Scenario overrides (fedsim.config.overrides): ``--set``, ``Scenario.replace`` and
``fedsim.run(overrides=...)`` go through the scenario schema; errors name the dotted key."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import fedsim
from fedsim import config
from fedsim.cli import main
from fedsim.config.overrides import parse_assignment, parse_assignments, set_dotted
from fedsim.errors import ConfigError

EX = Path(__file__).parents[2] / "examples"


def _sc():
    return config.load(EX / "fedasync_quadratic.toml")


def test_parse_assignment_reads_toml_values():
    assert parse_assignment("algorithm.eta=0.05") == ("algorithm.eta", 0.05)
    assert parse_assignment("problem.n = 20") == ("problem.n", 20)
    assert parse_assignment("algorithm.name=fedbuff") == ("algorithm.name", "fedbuff")
    assert parse_assignment('name="a b"') == ("name", "a b")
    assert parse_assignment("record.metrics=[\"grad_sq\"]") == ("record.metrics", ["grad_sq"])
    assert parse_assignment("delays.compute={kind=\"exponential\", rate=2.0}") == (
        "delays.compute", {"kind": "exponential", "rate": 2.0})
    assert parse_assignments(["seed=1", "seed=2"]) == {"seed": 2}


@pytest.mark.parametrize("text, needle", [
    ("algorithm.eta", "KEY=VALUE"), ("=3", "KEY=VALUE"), ("algorithm.eta=", "empty"),
    ("a..b=1", "dotted name"), ("record.metrics=[grad_sq]", "record.metrics"),
])
def test_parse_assignment_errors_are_one_line(text, needle):
    with pytest.raises(ConfigError) as e:
        parse_assignment(text)
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_replace_changes_and_rechecks():
    sc = _sc()
    s2 = sc.replace({"algorithm.eta": 0.05, "problem.n": 20}, seed=3)
    assert (s2.algorithm.eta, s2.problem.n, s2.seed) == (0.05, 20, 3)
    assert sc.algorithm.eta != 0.05          # the original is unchanged (frozen)
    assert sc.replace() == sc and sc.replace({}) == sc
    s3 = sc.replace(horizon={"steps": 7})
    assert s3.horizon.steps == 7


@pytest.mark.parametrize("changes, needle", [
    ({"algorithm.etaa": 1}, "algorithm.etaa"),
    ({"algorithm.eta": "x"}, "algorithm.eta"),
    ({"problem.n.x": 1}, "problem.n"),
    ({"problem.n": 1.5}, "problem.n"),
    ({"delays.compute": {"kind": "exponential", "rate": -1.0}}, "delays.compute.rate"),
])
def test_replace_errors_name_the_key(changes, needle):
    with pytest.raises(ConfigError) as e:
        _sc().replace(changes)
    assert needle in str(e.value) and "\n" not in str(e.value)


@given(st.floats(1e-4, 1.0), st.integers(1, 12))
def test_replace_equals_editing_the_file(eta, n):
    sc = _sc()
    d = sc.to_dict()
    set_dotted(d, "algorithm.eta", eta)
    d["problem"]["n"] = n
    assert sc.replace({"algorithm.eta": eta, "problem.n": n}) == config.Scenario.from_dict(d)
    assert config.loads(config.dumps(sc.replace({"algorithm.eta": eta}))).algorithm.eta == eta


def test_python_run_overrides_equal_replace():
    a = fedsim.run(EX / "fedasync_quadratic.toml", overrides={"horizon.steps": 20,
                                                              "algorithm.eta": 0.02})
    b = fedsim.run(_sc().replace({"horizon.steps": 20, "algorithm.eta": 0.02}))
    assert a.steps_done == 20
    for k in a.metrics:
        assert np.array_equal(a.metrics[k], b.metrics[k], equal_nan=True), k


def test_cli_set(tmp_path, capsys):
    out = tmp_path / "m.csv"
    rc = main(["run", str(EX / "fedasync_quadratic.toml"), "--set", "horizon.steps=15",
               "--set", "problem.n=5", "--no-progress", "--metrics-out", str(out)])
    assert rc == 0
    assert "steps=15" in capsys.readouterr().out
    rc = main(["run", str(EX / "fedasync_quadratic.toml"), "--set", "algorithm.etaa=1",
               "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "algorithm.etaa" in err
