"""The problem plug-in door (``fedsim.problems.registry``, ``docs/PLUGINS.md`` section 10):
a toy problem kind registered from this file, and nothing else touched, runs through
``fedsim.run`` and ``run_batch`` with iterates computed by hand; a broken or lying plug-in is
refused in one line naming it."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
from plugin_site import fake_distribution

import fedsim
from fedsim.errors import ConfigError
from fedsim.plugins import PluginError
from fedsim.problems.deterministic import DeterministicProblem
from fedsim.problems.registry import (
    ProblemKind,
    get_problem_kind,
    problem_kinds,
    register_problem_kind,
    unregister_problem_kind,
)


class Parabola(DeterministicProblem):
    """``f_i(x) = a/2 ||x - c||^2`` on every client: exact minimum ``c``, gradient
    ``a (x - c)``."""

    def __init__(self, n: int, a: float, c: float, dim: int) -> None:
        self.n, self.dim, self.a = n, dim, a
        self.x_star = np.full(dim, float(c))
        self.f_star = 0.0

    def loss(self, i: int, w: np.ndarray) -> float:
        return 0.5 * self.a * float((w - self.x_star) @ (w - self.x_star))

    def grad(self, i: int, w: np.ndarray) -> np.ndarray:
        return self.a * (np.asarray(w, dtype=np.float64) - self.x_star)

    def hess(self, i: int, w: np.ndarray) -> np.ndarray:
        return self.a * np.eye(self.dim)

    def batch_hvp(self, i: int, w: np.ndarray, v: np.ndarray, batch: Any) -> np.ndarray:
        return self.a * np.asarray(v, dtype=np.float64)

    def theta_hat(self, i: int, w: np.ndarray, lam: float) -> np.ndarray:
        return (self.a * self.x_star + lam * np.asarray(w)) / (self.a + lam)


def parabola(*, n: int, a: float, c: float = 0.0, dim: int = 1) -> Parabola:
    """The toy kind's builder: its keyword arguments are the ``[problem]`` keys."""
    if not a > 0:
        raise ConfigError(f"problem.a must be > 0, got problem.a={a!r}")
    return Parabola(n, float(a), float(c), int(dim))


def scenario(problem: dict, steps: int = 5) -> dict:
    """One client of synchronous FedAvg with one local SGD step: plain gradient descent
    ``x_{k+1} = x_k - eta grad f(x_k)``."""
    return {"name": "toy", "seed": 0, "problem": problem,
            "algorithm": {"name": "fedavg", "client_rule": "sgd", "Q": 1, "eta": 0.25,
                          "batch": 1, "w0": 3.0},
            "horizon": {"steps": steps},
            "record": {"every": 1, "metrics": ["dist_sq", "f_gap", "grad_sq"]}}


@pytest.fixture
def toy():
    kind = register_problem_kind(ProblemKind(name="toy_parabola", builder=parabola,
                                             doc="a/2 ||x - c||^2 on every client"))
    yield kind
    unregister_problem_kind("toy_parabola")


def test_a_registered_kind_runs_through_fedsim_run(toy):
    from fedsim.engine import run_batch

    prob = {"kind": "toy_parabola", "n": 1, "a": 2.0, "c": 1.0}
    assert "toy_parabola" in problem_kinds()
    trace = fedsim.run(scenario(prob))
    # by hand: x_k - c = (1 - eta a)^k (x_0 - c) = 0.5^k * 2
    k = np.arange(6)
    want = (0.5 ** k * 2.0) ** 2
    np.testing.assert_allclose(trace.metrics["dist_sq"], want, rtol=0, atol=1e-15)
    np.testing.assert_allclose(trace.metrics["f_gap"], want, rtol=0, atol=1e-15)
    np.testing.assert_allclose(trace.metrics["grad_sq"], 4.0 * want, rtol=0, atol=1e-14)
    batch = run_batch(fedsim.Scenario.from_dict(scenario(prob)), [0, 1])
    assert batch[0].equals(trace)
    # sigma = 0: replicate 1 draws other delays, the same iterates
    np.testing.assert_array_equal(batch[1].metrics["dist_sq"], trace.metrics["dist_sq"])


def test_the_config_checks_a_plugin_table_against_its_builder(toy):
    with pytest.raises(ConfigError, match=r"problem\.zeta is not a known key"):
        fedsim.Scenario.from_dict(scenario({"kind": "toy_parabola", "n": 1, "a": 2.0,
                                            "zeta": 1}))
    with pytest.raises(ConfigError, match=r"problem\.a is required"):
        fedsim.Scenario.from_dict(scenario({"kind": "toy_parabola", "n": 1}))
    with pytest.raises(ConfigError, match=r"problem\.a"):      # the annotation: a float
        fedsim.Scenario.from_dict(scenario({"kind": "toy_parabola", "n": 1, "a": "two"}))
    with pytest.raises(ConfigError, match=r"^problem: problem\.a must be > 0"):
        fedsim.run(scenario({"kind": "toy_parabola", "n": 1, "a": -1.0}))
    with pytest.raises(ConfigError, match=r"problem\.n must be"):
        fedsim.Scenario.from_dict(scenario({"kind": "toy_parabola", "n": 0, "a": 1.0}))


def test_unknown_and_builtin_names_are_refused(toy):
    with pytest.raises(ConfigError, match=r"problem\.kind must be one of \['quadratic'.*"
                                          r"'toy_parabola'.*got problem\.kind='nope'"):
        fedsim.Scenario.from_dict(scenario({"kind": "nope", "n": 1}))
    with pytest.raises(ConfigError, match="built-in kind"):
        ProblemKind(name="quadratic", builder=parabola)
    with pytest.raises(ConfigError, match="lower case"):
        ProblemKind(name="Bad Name", builder=parabola)
    with pytest.raises(ConfigError, match="already registered"):
        register_problem_kind(ProblemKind(name="toy_parabola", builder=parabola))
    with pytest.raises(ConfigError, match="must be a fedsim.problems.registry.ProblemKind"):
        register_problem_kind(parabola)  # type: ignore[arg-type]


@pytest.mark.parametrize("builder, message", [
    (lambda *, n: 1 / 0, r"plug-in problem kind 'toy_liar' \(.*\) failed: ZeroDivisionError"),
    (lambda *, n: 42, r"built int, not a fedsim\.problems\.base\.Problem; refused"),
    (lambda *, n: Parabola(n, 1.0, 0.0, 0), r"dim = 0 is not an integer >= 1; refused"),
    (lambda *, n: sys.exit(3), r"failed: SystemExit\(3\) \(it called sys\.exit\)"),
])
def test_a_lying_builder_is_one_line_naming_it(builder, message):
    register_problem_kind(ProblemKind(name="toy_liar", builder=builder))
    try:
        with pytest.raises(PluginError, match=message) as err:
            fedsim.run(scenario({"kind": "toy_liar", "n": 1}))
        assert "\n" not in str(err.value)
        bad = ProblemKind(name="toy_liar", builder=parabola, clients=lambda p: 0)
        register_problem_kind(bad, replace=True)
        with pytest.raises(PluginError, match=r"counted 0 clients"):
            fedsim.Scenario.from_dict(scenario({"kind": "toy_liar", "n": 1, "a": 1.0}))
    finally:
        unregister_problem_kind("toy_liar")
    with pytest.raises(ConfigError, match="must be one of"):
        get_problem_kind("toy_liar")


def test_a_broken_entry_point_is_one_line_and_the_rest_works(tmp_path):
    """A dist-info naming a module that raises and an object of the wrong kind under
    ``fedsim.problems``: ``fedsim run`` on a scenario of an unknown kind says so in one line
    per broken plug-in plus the refusal (exit 2, no traceback); ``--help`` never reads the
    group."""
    site = fake_distribution(
        tmp_path / "site", "broken-problem-plugin",
        "[fedsim.problems]\nbad_kind = broken_problem_plugin:KIND\n"
        "wrong_kind = broken_problem_plugin_ok:NOT_A_KIND\n",
        {"broken_problem_plugin": "raise ImportError('deliberately broken')\n",
         "broken_problem_plugin_ok": "NOT_A_KIND = 42\n"})
    toml = tmp_path / "bad.toml"
    toml.write_text('[problem]\nkind = "bad_kind"\nn = 1\n[algorithm]\nname = "fedavg"\n'
                    '[horizon]\nsteps = 2\n')
    env = {**os.environ, "PYTHONPATH": str(site)}
    r = subprocess.run([sys.executable, "-m", "fedsim.cli", "run", str(toml)], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=120)
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert any("'bad_kind' (fedsim.problems = broken_problem_plugin:KIND)" in x
               and "ImportError: deliberately broken" in x for x in lines), r.stderr
    assert any("'wrong_kind'" in x and "must name a ProblemKind" in x for x in lines), r.stderr
    assert any("problem.kind must be one of" in x and "gram_interpolant" in x
               for x in lines), r.stderr
    assert len(lines) == 3, r.stderr


def test_a_problem_without_a_constants_table_is_one_line_in_bounds(toy):
    """``fedsim bounds --scenario`` reads the problem's constants: a plug-in's table that
    raises is a one-line refusal, not a traceback."""
    from fedsim.validation.scenario_constants import scenario_constants

    sc = fedsim.Scenario.from_dict(scenario({"kind": "toy_parabola", "n": 1, "a": 2.0}))
    with pytest.raises(ConfigError, match=r"the toy_parabola problem has no constants table "
                                          r"\(NotImplementedError: Parabola must implement"):
        scenario_constants(sc, "theorem1")
