"""The client-rule registry: name -> rule class + its ``[algorithm]`` keys.

One registration line per rule (:mod:`fedsim.local`)::

    register_client_rule("sgd", SGDRule, ("Q", "eta", "batch"))

The class provides three class methods that read a flat ``[algorithm]`` config
(:class:`fedsim.config.AlgorithmConfig`, duck-typed: ``cfg.get(key)`` and attributes):
``check_config(name, cfg)`` validates its keys (``ConfigError`` naming ``algorithm.<key>``),
``default(name, key, cfg)`` gives a key's documented default, and
``from_config(name, cfg, problem)`` builds the rule (``init``/``update`` shape,
:mod:`fedsim.local.base`).  One class may serve several names (MAML's three variants).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fedsim.errors import ConfigError, check_integer, check_number, require

__all__ = ["ClientRuleSpec", "register_client_rule", "unregister_client_rule",
           "get_client_rule", "client_rules", "ConfigRule", "check_step_keys"]


@dataclass(frozen=True)
class ClientRuleSpec:
    """One registered client rule: its name, class and ``[algorithm]`` keys."""

    name: str
    cls: type
    keys: tuple[str, ...]

    def check(self, cfg: Any) -> None:
        self.cls.check_config(self.name, cfg)

    def default(self, key: str, cfg: Any) -> Any:
        return self.cls.default(self.name, key, cfg)

    def build(self, cfg: Any, problem: Any) -> Any:
        return self.cls.from_config(self.name, cfg, problem)


_RULES: dict[str, ClientRuleSpec] = {}


def register_client_rule(name: str, cls: type, keys: tuple[str, ...], *,
                         replace: bool = False) -> ClientRuleSpec:
    """Register ``cls`` under ``name`` with its ``[algorithm]`` keys; returns the spec."""
    require(isinstance(name, str) and name.isidentifier(), "client_rule", name,
            "must be an identifier")
    require(replace or name not in _RULES, "client_rule", name, "is already registered")
    for m in ("check_config", "default", "from_config"):
        require(callable(getattr(cls, m, None)), "client_rule", name,
                f"needs a class method {m} (fedsim.local.registry)")
    spec = ClientRuleSpec(name, cls, tuple(keys))
    _RULES[name] = spec
    return spec


def unregister_client_rule(name: str) -> None:
    """Remove ``name`` (tests that register a toy rule)."""
    _RULES.pop(name, None)


def get_client_rule(name: str) -> ClientRuleSpec:
    """The registered rule ``name`` (``ConfigError`` naming the known ones)."""
    spec = _RULES.get(name) if isinstance(name, str) else None
    if spec is None:
        raise ConfigError(f"algorithm.client_rule must be one of {list(_RULES)}, "
                          f"got algorithm.client_rule={name!r}")
    return spec


def client_rules() -> tuple[str, ...]:
    """Registered names, in registration order."""
    return tuple(_RULES)


_STEP_DEFAULTS: Mapping[str, Any] = {"Q": 1, "eta": 0.01, "batch": 1}


def check_step_keys(cfg: Any) -> None:
    """``Q`` (integer >= 1), ``eta`` (>= 0), ``batch`` (integer >= 1), when set."""
    if cfg.Q is not None:
        check_integer("algorithm.Q", cfg.Q, low=1)
    if cfg.eta is not None:
        check_number("algorithm.eta", cfg.eta, low=0.0)
    if cfg.batch is not None:
        check_integer("algorithm.batch", cfg.batch, low=1)


class ConfigRule:
    """Mix-in: the config class methods of a rule with the Option A keys ``Q``, ``eta``,
    ``batch`` (defaults 1, 0.01, 1); rules with more keys extend ``DEFAULTS`` and
    ``check_config``."""

    DEFAULTS: Mapping[str, Any] = _STEP_DEFAULTS

    @classmethod
    def check_config(cls, name: str, cfg: Any) -> None:
        check_step_keys(cfg)

    @classmethod
    def default(cls, name: str, key: str, cfg: Any) -> Any:
        return cls.DEFAULTS.get(key)

    @classmethod
    def from_config(cls, name: str, cfg: Any, problem: Any) -> Any:  # pragma: no cover
        raise NotImplementedError
