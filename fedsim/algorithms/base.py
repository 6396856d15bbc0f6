"""What an algorithm declares, and the public registry.

An :class:`Algorithm` names: its client rules (the first is the default), its execution
models and the engine runner of each (the first is the default), its server-rule factory
(``server(algorithm_config, problem) -> rule`` with ``init``/``apply``,
:mod:`fedsim.servers.base`), its ``[algorithm]`` keys with their defaults (its config
section), and whether every upload is its own server step.  :func:`register_algorithm`
adds one; :func:`get_algorithm` and :func:`algorithms` read the registry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fedsim.errors import ConfigError, require

__all__ = ["Algorithm", "register_algorithm", "unregister_algorithm", "get_algorithm",
           "algorithms"]


@dataclass(frozen=True)
class Algorithm:
    """One algorithm's declaration (module docstring).

    ``section``: ``[algorithm]`` key -> default of the server side (``None``: no default);
    ``validate``: checks the section's values (``validate(cfg)`` raises ``ConfigError``).
    """

    name: str
    client_rules: tuple[str, ...]
    runners: Mapping[str, str]
    server: Callable[[Any, Any], Any]
    section: Mapping[str, Any] = field(default_factory=dict)
    validate: Callable[[Any], None] | None = None
    step_per_upload: bool = False
    doc: str = ""

    def __post_init__(self) -> None:
        require(isinstance(self.name, str) and self.name.isidentifier(), "algorithm.name",
                self.name, "must be an identifier")
        require(len(self.client_rules) >= 1, f"{self.name}.client_rules",
                self.client_rules, "must name at least one client rule")
        require(len(self.runners) >= 1, f"{self.name}.runners", dict(self.runners),
                "must name at least one execution model")
        object.__setattr__(self, "runners", dict(self.runners))
        object.__setattr__(self, "section", dict(self.section))

    @property
    def models(self) -> tuple[str, ...]:
        """The execution models (the first is the default)."""
        return tuple(self.runners)


_REGISTRY: dict[str, Algorithm] = {}


def register_algorithm(alg: Algorithm, *, replace: bool = False) -> Algorithm:
    """Add ``alg`` to the registry (``replace`` to redefine a name); returns it."""
    require(isinstance(alg, Algorithm), "algorithm", alg, "must be a fedsim Algorithm")
    require(replace or alg.name not in _REGISTRY, "algorithm.name", alg.name,
            "is already registered")
    _REGISTRY[alg.name] = alg
    return alg


def unregister_algorithm(name: str) -> None:
    """Remove ``name`` from the registry (tests that register a toy algorithm)."""
    _REGISTRY.pop(name, None)


def get_algorithm(name: str) -> Algorithm:
    """The registered algorithm ``name`` (``ConfigError`` naming the known ones)."""
    alg = _REGISTRY.get(name)
    if alg is None:
        raise ConfigError(f"algorithm.name must be one of {list(_REGISTRY)}, "
                          f"got algorithm.name={name!r}")
    return alg


def algorithms() -> tuple[str, ...]:
    """Registered names, in registration order."""
    return tuple(_REGISTRY)
