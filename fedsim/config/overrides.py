"""Scenario overrides: change a value of a scenario without editing its TOML file.

An override is a dotted key and a value, ``algorithm.eta = 0.05`` or ``problem.n = 20``.
The key names a field of the scenario file (``name``, ``seed``, ``problem.KEY``,
``algorithm.KEY``, ``algorithm.alpha.kind``, ``delays.compute``, ``trigger.rate``,
``horizon.steps``, ``record.metrics`` ...); a value that is itself a table replaces the whole
table (``delays.compute = {kind = "exponential", rate = 2.0}``).  The changed tree is checked
by the same schema as a file (:meth:`fedsim.config.Scenario.from_dict`), so an unknown key
or a bad value is a one-line :class:`~fedsim.errors.ConfigError` that names the dotted key.

* :func:`parse_assignment` -- ``"algorithm.eta=0.05"`` -> ``("algorithm.eta", 0.05)``: the
  value is read as a TOML value (``0.05``, ``20``, ``true``, ``"text"``, ``[1, 2]``,
  ``{kind = "constant", value = 0.1}``); a bare word that is not TOML (``fedbuff``) is a
  string;
* :func:`parse_assignments` -- several of them, a later one winning;
* :func:`apply_overrides` -- the scenario with the overrides applied
  (:meth:`fedsim.config.Scenario.replace` is this function).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping
from typing import Any

from fedsim.errors import ConfigError

__all__ = ["parse_assignment", "parse_assignments", "apply_overrides", "set_dotted"]

_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_-]*)*$")
_BARE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.+-]*$")


def _check_key(key: str) -> str:
    if not isinstance(key, str) or not _KEY.match(key):
        raise ConfigError(f"override key must be a dotted name such as algorithm.eta, got "
                          f"{key!r}")
    return key


def parse_assignment(text: str) -> tuple[str, Any]:
    """``"KEY=VALUE"`` -> ``(KEY, value)``, the value read as a TOML value (a bare word that
    is not one, such as ``fedbuff``, is the string itself)."""
    key, sep, raw = str(text).partition("=")
    key, raw = key.strip(), raw.strip()
    if not sep or not key:
        raise ConfigError(f"--set must be KEY=VALUE (e.g. algorithm.eta=0.05), got {text!r}")
    _check_key(key)
    if raw == "":
        raise ConfigError(f"--set {key}: the value is empty (give KEY=VALUE)")
    try:
        return key, tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError as exc:
        if _BARE.match(raw) and raw not in ("inf", "nan"):
            return key, raw
        raise ConfigError(f"--set {key}: {raw!r} is not a TOML value "
                          f"({str(exc).splitlines()[0]}); quote text as '\"...\"'") from None


def parse_assignments(texts: Iterable[str]) -> dict[str, Any]:
    """Several ``KEY=VALUE`` texts as one ``{key: value}`` (a later key wins)."""
    out: dict[str, Any] = {}
    for t in texts:
        k, v = parse_assignment(t)
        out[k] = v
    return out


def set_dotted(tree: dict[str, Any], key: str, value: Any) -> None:
    """Set ``tree[a][b][c] = value`` for ``key = "a.b.c"``, creating missing tables; a key
    that goes through a value which is not a table is a ConfigError naming it."""
    parts = _check_key(key).split(".")
    node = tree
    for i, part in enumerate(parts[:-1]):
        nxt = node.get(part)
        if nxt is None:
            nxt = node[part] = {}
        elif isinstance(nxt, list):
            raise ConfigError(f"{'.'.join(parts[:i + 1])} is a list of tables; override it "
                              f"whole (--set '{'.'.join(parts[:i + 1])}=[{{...}}]'), not "
                              f"{key}")
        elif not isinstance(nxt, dict):
            raise ConfigError(f"{key}: {'.'.join(parts[:i + 1])} is a value ({nxt!r}), not a "
                              "table")
        else:
            nxt = node[part] = dict(nxt)
        node = nxt
    node[parts[-1]] = value


def apply_overrides(scenario: Any, overrides: Mapping[str, Any]) -> Any:
    """``scenario`` with each dotted ``key -> value`` of ``overrides`` set, rebuilt (and so
    checked) by the scenario schema: ``Scenario.from_dict`` of the changed ``to_dict()``."""
    if not isinstance(overrides, Mapping):
        raise ConfigError(f"overrides must be a mapping of dotted keys to values, got "
                          f"{type(overrides).__name__}")
    if not overrides:
        return scenario
    tree = scenario.to_dict()
    for key, value in overrides.items():
        set_dotted(tree, key, value)
    return type(scenario).from_dict(tree)
