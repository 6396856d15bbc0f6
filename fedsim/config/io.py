"""TOML in and out: ``load``, ``loads``, ``dump``, ``dumps`` (``loads(dumps(s)) == s``)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from fedsim.config.scenario import Scenario
from fedsim.errors import ConfigError

__all__ = ["load", "loads", "dump", "dumps"]


def loads(text: str) -> Scenario:
    """Parse a scenario from TOML text."""
    try:
        d = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"invalid TOML: {exc}") from None
    return Scenario.from_dict(d)


def load(path: str | Path) -> Scenario:
    """Read a scenario TOML file."""
    return loads(Path(path).read_text())


def dumps(scenario: Scenario) -> str:
    """The scenario as TOML text (``loads(dumps(s)) == s``)."""
    import tomli_w

    return tomli_w.dumps(scenario.to_dict())


def dump(scenario: Scenario, path: str | Path) -> None:
    """Write the scenario as a TOML file."""
    Path(path).write_text(dumps(scenario))
