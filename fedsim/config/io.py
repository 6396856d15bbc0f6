"""TOML in and out: ``load``, ``loads``, ``dump``, ``dumps`` (``loads(dumps(s)) == s``)."""

from __future__ import annotations

import tomllib
from pathlib import Path

from fedsim.config.scenario import Scenario
from fedsim.errors import ConfigError

__all__ = ["load", "loads", "dump", "dumps", "MAX_SCENARIO_BYTES"]


def loads(text: str) -> Scenario:
    """Parse a scenario from TOML text."""
    try:
        d = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"invalid TOML: {str(exc).splitlines()[0]}") from None
    except RecursionError:
        raise ConfigError("invalid TOML: nested too deeply (a scenario has a few levels of "
                          "tables)") from None
    return Scenario.from_dict(d)


#: the largest scenario file read (a scenario is a few kB; a bigger file is not one)
MAX_SCENARIO_BYTES = 1 << 20


def load(path: str | Path) -> Scenario:
    """Read a scenario TOML file (UTF-8; any other bytes are a ConfigError).

    Only a regular file of at most :data:`MAX_SCENARIO_BYTES` is read: a device
    (``/dev/zero``), a FIFO or a socket is refused before it is opened, so nothing blocks
    or fills the memory."""
    import os
    import stat

    p = Path(path)
    try:
        st = os.stat(p)
        if stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError(f"scenario must be a regular TOML file, got scenario={str(p)!r} "
                              "(a device, FIFO or socket)")
        if st.st_size > MAX_SCENARIO_BYTES:
            raise ConfigError(f"scenario must be a TOML file of at most {MAX_SCENARIO_BYTES} "
                              f"bytes, got scenario={str(p)!r} ({st.st_size} bytes)")
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
