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
        raise ConfigError(f"invalid TOML: {str(exc).splitlines()[0]}") from None
    return Scenario.from_dict(d)


def load(path: str | Path) -> Scenario:
    """Read a scenario TOML file (UTF-8; any other bytes are a ConfigError)."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except IsADirectoryError:
        raise ConfigError(f"scenario must be a TOML file, got scenario={str(p)!r} "
                          "(a directory)") from None
    except FileNotFoundError:
        raise ConfigError(f"scenario must be an existing TOML file, got "
                          f"scenario={str(p)!r}") from None
    except OSError as exc:
        raise ConfigError(f"scenario must be a readable TOML file, got scenario={str(p)!r} "
                          f"({exc.strerror})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"scenario must be UTF-8 text (TOML), got scenario={str(p)!r} "
                          f"with byte {raw[exc.start]:#04x} at offset {exc.start}") from None
    return loads(text)


def dumps(scenario: Scenario) -> str:
    """The scenario as TOML text (``loads(dumps(s)) == s``)."""
    import tomli_w

    return tomli_w.dumps(scenario.to_dict())


def dump(scenario: Scenario, path: str | Path) -> None:
    """Write the scenario as a TOML file."""
    Path(path).write_text(dumps(scenario))
