"""``fedsim.run``: one simulated run from Python, as the ``fedsim run`` command does it."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from fedsim.config import Scenario, load
from fedsim.config.budget import check_budget
from fedsim.errors import ConfigError, check_integer
from fedsim.trace import Trace

__all__ = ["run", "MAX_REPLICATE"]


#: the largest replicate index (``fedsim run --replicate`` and ``fedsim.run(replicate=)``):
#: a spawn key is a 32-bit word for numpy's SeedSequence
MAX_REPLICATE = 2**32 - 1


def run(scenario: Scenario | Mapping[str, Any] | str | os.PathLike, *, replicate: int = 0,
        seed: int | None = None, progress: bool = False,
        overrides: Mapping[str, Any] | None = None) -> Trace:
    """Simulate ``scenario`` once and return its :class:`~fedsim.trace.Trace`.

    ``scenario`` is a :class:`~fedsim.config.Scenario`, a scenario dict (the TOML's shape,
    as :func:`fedsim.validation.families.engine_scenario` returns it) or the path of a
    scenario TOML file.
    ``replicate`` picks the independent replicate stream of the scenario's seed (replicate
    ``r`` of ``fedsim validate`` is this run); ``seed`` overrides the scenario's seed. The
    checks are ``fedsim run``'s, with its messages (:data:`MAX_REPLICATE`, the environment:
    :func:`fedsim.environment.check_environment`), and the scenario's memory estimate is
    checked against the budget (``FEDSIM_MEMORY_BUDGET``, default 4G) before anything is
    allocated. ``trace.to_pandas()`` gives one row per server step with every metric column.
    ``overrides`` changes values of the scenario first, ``{"algorithm.eta": 0.05,
    "problem.n": 20}`` (dotted keys of the scenario file, checked by its schema:
    :meth:`fedsim.config.Scenario.replace`).
    """
    if overrides is not None and not isinstance(overrides, Mapping):
        raise ConfigError(f"overrides must be a mapping of dotted keys to values, e.g. "
                          f"{{'algorithm.eta': 0.05}}, got {type(overrides).__name__}")
    from fedsim.environment import check_environment

    check_environment()
    if isinstance(scenario, str | os.PathLike):
        scenario = load(scenario)
    elif isinstance(scenario, Mapping):
        scenario = Scenario.from_dict(scenario)
    if not isinstance(scenario, Scenario):
        raise ConfigError(f"scenario must be a Scenario, a scenario dict or a TOML path, got "
                          f"{type(scenario).__name__}")
    if overrides:
        scenario = scenario.replace(overrides)
    check_integer("replicate", replicate, low=0, high=MAX_REPLICATE)
    if seed is not None:
        check_integer("seed", seed, low=0)
        scenario = replace(scenario, seed=seed)
    check_budget(scenario)
    from fedsim.engine import run as engine_run

    return engine_run(scenario, replicate, progress=progress)
