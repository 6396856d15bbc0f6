"""What an algorithm declares, and the public registry.

An :class:`Algorithm` names: its client rules (the first is the default), its execution
models and the engine runner of each (the first is the default), its server-rule factory
(``server(algorithm_config, problem) -> rule`` with ``init``/``apply``,
:mod:`fedsim.servers.base`), its config section (a frozen :class:`Section` dataclass: the
``[algorithm]`` keys of its server side with their defaults, validated in
``__post_init__``), its cross-field rules on a whole scenario (``check(scenario)``), the
trigger it implies when ``[trigger]`` is omitted (``default_trigger(config)``), and whether
every upload is its own server step.  :func:`register_algorithm` adds one;
:func:`get_algorithm` and :func:`algorithms` read the registry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields, make_dataclass
from typing import Any

from fedsim.errors import ConfigError, require

__all__ = ["Algorithm", "Section", "register_algorithm", "unregister_algorithm",
           "get_algorithm", "algorithms"]


@dataclass(frozen=True)
class Section:
    """Base of an algorithm's config section: a frozen dataclass whose fields are its
    ``[algorithm]`` keys (flat TOML spelling) with their defaults (``None``: required or no
    default).  Subclasses validate in :meth:`validate` (called by ``__post_init__``) with
    the :mod:`fedsim.errors` validators, naming ``algorithm.<key>``."""

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Check the values (raise :class:`~fedsim.errors.ConfigError`)."""

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        """The section's ``[algorithm]`` keys."""
        return tuple(f.name for f in fields(cls))

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        """key -> default (``None`` when the key has none)."""
        return {f.name: (None if f.default is MISSING else f.default) for f in fields(cls)}

    @classmethod
    def parse(cls, key: str, value: Any) -> Any:
        """Convert one raw TOML value of this section (e.g. a table into a schedule)."""
        return value


def section_from_mapping(name: str, defaults: Mapping[str, Any]) -> type[Section]:
    """A :class:`Section` with the given keys and defaults and no extra validation (for an
    algorithm declared with a plain ``{key: default}`` table)."""
    return make_dataclass(f"{name}_section", [(k, Any, field(default=v))
                                              for k, v in defaults.items()],
                          bases=(Section,), frozen=True)


@dataclass(frozen=True)
class Algorithm:
    """One algorithm's declaration (module docstring).

    ``section``: a :class:`Section` subclass (or a ``{key: default}`` table, turned into
    one); ``check(scenario)``: the algorithm's cross-field rules on a whole scenario;
    ``default_trigger(config)``: the ``[trigger]`` table implied when it is omitted (or
    ``None`` for the default ``every_upload``); ``aliases``: a client-rule key -> this
    algorithm's section key that sets it when the client-rule key is not given (Per-FedAvg's
    ``beta`` is the MAML rule's ``eta``); ``mode_keys``: an execution mode -> the extra
    ``[algorithm]`` keys it accepts (FedAsync's ``window``: ``tau``, ``delay_pmf``);
    ``timeless_modes``: the modes whose time is the step index (no delays, so a time horizon
    need not advance); ``synchronous``: every round waits for all its chosen clients (a time
    horizon is stuck only when every client's delays are all 0).
    """

    name: str
    client_rules: tuple[str, ...]
    runners: Mapping[str, str]
    server: Callable[[Any, Any], Any]
    section: Any = Section
    check: Callable[[Any], None] | None = None
    default_trigger: Callable[[Any], Mapping[str, Any] | None] | None = None
    step_per_upload: bool = False
    aliases: Mapping[str, str] = field(default_factory=dict)
    mode_keys: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    timeless_modes: tuple[str, ...] = ()
    synchronous: bool = False
    doc: str = ""

    def __post_init__(self) -> None:
        require(isinstance(self.name, str) and self.name.isidentifier(), "algorithm.name",
                self.name, "must be an identifier")
        require(len(self.client_rules) >= 1, f"{self.name}.client_rules",
                self.client_rules, "must name at least one client rule")
        require(len(self.runners) >= 1, f"{self.name}.runners", dict(self.runners),
                "must name at least one execution model")
        object.__setattr__(self, "runners", dict(self.runners))
        for name, modes in (("mode_keys", tuple(self.mode_keys)),
                            ("timeless_modes", tuple(self.timeless_modes))):
            require(set(modes) <= set(self.runners), f"{self.name}.{name}", list(modes),
                    f"must name execution modes of {self.name} ({list(self.runners)})")
        object.__setattr__(self, "mode_keys", {k: tuple(v) for k, v in self.mode_keys.items()})
        object.__setattr__(self, "timeless_modes", tuple(self.timeless_modes))
        if isinstance(self.section, Mapping):
            object.__setattr__(self, "section", section_from_mapping(self.name, self.section))
        require(isinstance(self.section, type) and issubclass(self.section, Section),
                f"{self.name}.section", self.section,
                "must be a fedsim.algorithms.Section dataclass or a {key: default} table")

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
    alg = _REGISTRY.get(name) if isinstance(name, str) else None
    if alg is None:
        raise ConfigError(f"algorithm.name must be one of {list(_REGISTRY)}, "
                          f"got algorithm.name={name!r}")
    return alg


def algorithms() -> tuple[str, ...]:
    """Registered names, in registration order."""
    return tuple(_REGISTRY)
