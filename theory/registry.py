"""The theorem registry: every bound ``fedsim`` knows, by name (public and extensible).

A theorem is one :class:`Theorem` entry: its name (the ``fedsim bounds`` sub-command), its
paper label, the bound function (keyword arguments only, returning a
:class:`fedsim.theory.result.BoundResult`), its hypotheses and the statuses it can return.
Nothing about validation is registered here: the theorems' suite grids are validation's own
tables (``fedsim.validation.scenarios.GRIDS``, ``fedsim.validation.suites.register_grid``)
and a plug-in's suite rows are ``fedsim.suite_rows`` entry points, both read when a suite
runs.  Theory never imports validation.

Built-in theorems are the modules of :data:`BUILTIN_MODULES` (PEPit style: one module per
theorem, each calling :func:`register_theorem` once).  A separately installed package adds a
theorem through the entry-point group ``fedsim.theorems``::

    # setup.cfg of the plug-in
    [options.entry_points]
    fedsim.theorems =
        my_theorem = my_package.my_theorem:THEOREM

The entry point may name a :class:`Theorem` (registered as is) or a callable of no argument
(called; it registers what it wants).  ``fedsim bounds --list`` shows every theorem, and each
one's options are read from its function's signature (:mod:`fedsim.theory.cli`).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fedsim.theory.result import BoundResult, Hypothesis, Status

from fedsim.errors import ConfigError, require
from fedsim.plugins import checked_theorem_function, load_group

__all__ = ["Theorem", "ENTRY_POINT_GROUP", "BUILTIN_MODULES", "register_theorem",
           "get_theorem", "theorems", "load_plugins", "unregister"]

#: the entry-point group through which installed packages add theorems
ENTRY_POINT_GROUP = "fedsim.theorems"

#: the built-in theorem modules, in the order ``theorems()`` lists them (and the suites run)
BUILTIN_MODULES = (
    "fedsim.theory.persafl.theorem1",
    "fedsim.theory.persafl.theorem2",
    "fedsim.theory.persafl.theorem3",
    "fedsim.theory.area.theorem7",
    "fedsim.theory.area.theorem8",
    "fedsim.theory.perfedavg.theorem4_5",
    "fedsim.theory.asypfl.theorem1",
    "fedsim.theory.asypfl.theorem2",
)


@dataclass
class Theorem:
    """One registered theorem.

    ``name``: the ``fedsim bounds`` sub-command (``"theorem1"``); ``label``: the paper label
    (``"[P] PersA-FL Theorem 1"``); ``paper``: the reference; ``function``: the bound
    (keyword arguments, returns a BoundResult); ``hypotheses``: hypothesis name -> statement;
    ``statuses``: the statuses the function can return; ``horizon``: the argument that holds
    the horizon(s) of a curve (``"T"`` or ``"K"``); ``help``: option help texts by argument
    name.
    """

    name: str
    function: Callable[..., BoundResult]
    label: str
    paper: str = ""
    hypotheses: Mapping[str, str] = field(default_factory=dict)
    statuses: tuple[Status, ...] = ()
    horizon: str = "T"
    help: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        require(isinstance(self.name, str) and self.name.isidentifier(), "name", self.name,
                "must be an identifier")
        require(callable(self.function), "function", self.function, "must be callable")
        require(isinstance(self.label, str) and bool(self.label), "label", self.label,
                "must be a non-empty string")

    @property
    def module(self) -> str:
        """The module that defines the bound function."""
        return getattr(self.function, "__module__", "") or ""

    @property
    def statement(self) -> str:
        """The theorem module's docstring (statement and equation numbers), else the function's."""
        mod = importlib.import_module(self.module) if self.module else None
        return inspect.getdoc(mod) or inspect.getdoc(self.function) or ""

    def hypothesis_list(self) -> list[Hypothesis]:
        """The statement's hypotheses, each ``holds=None`` (checked only on evaluation)."""
        return [Hypothesis(name, None, text) for name, text in self.hypotheses.items()]

    def __call__(self, **kwargs: Any) -> BoundResult:
        return self.function(**kwargs)


_REGISTRY: dict[str, Theorem] = {}
_state = {"builtins": False, "plugins": False}


def register_theorem(theorem: Theorem | None = None, /, *, replace: bool = False,
                     **fields: Any) -> Theorem:
    """Register ``theorem`` (or ``Theorem(**fields)``) under its name; returns it.

    A name already taken raises :class:`ConfigError` unless ``replace=True``.
    """
    th = theorem if theorem is not None else Theorem(**fields)
    require(isinstance(th, Theorem), "theorem", th, "must be a theory.registry.Theorem")
    if th.name in _REGISTRY and not replace and _REGISTRY[th.name].function is not th.function:
        raise ConfigError(f"theorem {th.name!r} is already registered "
                          f"(by {_REGISTRY[th.name].module}), got name={th.name!r}")
    _REGISTRY[th.name] = th
    return th


def unregister(name: str) -> None:
    """Remove a theorem (tests and plug-in development)."""
    _REGISTRY.pop(name, None)


def _load_builtins() -> None:
    if not _state["builtins"]:
        _state["builtins"] = True
        for mod in BUILTIN_MODULES:
            importlib.import_module(mod)


def _accept(name: str, obj: Any, *, force: bool = False) -> None:
    """Register one ``fedsim.theorems`` entry point's object (ConfigError if of no known kind)."""
    before = dict(_REGISTRY)
    if isinstance(obj, Theorem):
        register_theorem(obj, replace=force)
    elif callable(obj):
        obj()
    else:
        raise ConfigError(f"entry point {name} must name a Theorem or a callable, "
                          f"got {type(obj).__name__}")
    for key, th in list(_REGISTRY.items()):  # a plug-in's results are checked on every call
        if before.get(key) is not th:
            _REGISTRY[key] = dataclasses.replace(
                th, function=checked_theorem_function(th.name, th.function))


def load_plugins(*, force: bool = False) -> list[str]:
    """Load the ``fedsim.theorems`` entry points (once, or again with ``force``).

    Returns the names of the entry points loaded.  An entry point that fails to load (or
    names neither a Theorem nor a callable) is skipped with one line on stderr naming it
    (:func:`fedsim.plugins.load_group`): every other command keeps working.
    """
    if _state["plugins"] and not force:
        return []
    _state["plugins"] = True
    _load_builtins()
    return load_group(ENTRY_POINT_GROUP, lambda n, o: _accept(n, o, force=force))


def theorems() -> list[Theorem]:
    """Every registered theorem: the built-ins in :data:`BUILTIN_MODULES` order, then the rest
    in registration order (plug-ins are loaded on the first call)."""
    load_plugins()
    builtin = {m: i for i, m in enumerate(BUILTIN_MODULES)}
    entries = list(_REGISTRY.values())
    return sorted(entries, key=lambda t: builtin.get(t.module, len(builtin)))


def get_theorem(name: str) -> Theorem:
    """The theorem registered as ``name`` (ConfigError listing the known names otherwise)."""
    if name not in _REGISTRY:
        load_plugins()
    if name not in _REGISTRY:
        raise ConfigError(f"theorem must be one of {sorted(_REGISTRY)}, got theorem={name!r}")
    return _REGISTRY[name]
