"""The Python doors of issue 34 item 1: ``fedsim.run(path, overrides=...)`` and
``Scenario.replace``, checked by the scenario schema with errors naming the key, before
anything is simulated."""

from __future__ import annotations

from pathlib import Path

import pytest

import fedsim
from fedsim.errors import ConfigError

EX = Path(__file__).parents[2] / "examples" / "fedasync_quadratic.toml"


@pytest.mark.parametrize("overrides, needle", [
    ([("algorithm.eta", 0.05)], "overrides must be a mapping"),
    ({"algorithm.etaa": 0.05}, "algorithm.etaa is not a known key"),
])
def test_run_overrides_refused_in_one_line(overrides, needle):
    with pytest.raises(ConfigError) as e:
        fedsim.run(EX, overrides=overrides)
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_replace_is_the_file_with_the_values_changed():
    sc = fedsim.load(EX)
    new = sc.replace({"algorithm.eta": 0.05, "problem.n": 20}, seed=3)
    assert (new.algorithm.eta, new.problem.n, new.seed) == (0.05, 20, 3)
    assert new.replace({}) == new and sc.algorithm.eta != 0.05     # a copy, sc unchanged
    with pytest.raises(ConfigError, match="seeed is not a known key"):
        sc.replace(seeed=1)
