"""Problem kinds beyond the built-in ones: the door through which a package adds a
``[problem] kind`` (``docs/PLUGINS.md``, "A problem kind").

A kind is a :class:`ProblemKind`: its ``name`` (what a scenario's ``[problem] kind`` says),
its ``builder`` (the keyword arguments are the ``[problem]`` table's other keys, checked
against its signature and annotations by :class:`fedsim.config.ProblemConfig`; it returns a
:class:`fedsim.problems.base.Problem`) and how many clients a table makes (``clients``; by
default the table's ``n``).  Register one with :func:`register_problem_kind`, or from an
installed package through the ``fedsim.problems`` entry-point group (an object
``ProblemKind`` or a list of them), read the first time a scenario names a kind that is not
built in (:func:`get_problem_kind`): a run of a built-in kind never loads a plug-in.

Plug-ins are untrusted input (:mod:`fedsim.plugins`): a registered builder runs through
:func:`fedsim.plugins.checked_problem_builder` (an exception, or a result that is not a
``Problem`` with integer ``n >= 1`` and ``dim >= 1``, is a one-line
:class:`~fedsim.plugins.PluginError` naming the kind), a broken entry point is reported in
one line and skipped, and the built-in kinds (:data:`BUILTIN_KINDS`, built by
:mod:`fedsim.config.problem`) cannot be replaced.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from fedsim.errors import ConfigError, check_integer, require
from fedsim.plugins import checked_problem_builder, checked_problem_clients, load_group_once

__all__ = ["ProblemKind", "BUILTIN_KINDS", "ENTRY_POINT_GROUP", "register_problem_kind",
           "unregister_problem_kind", "get_problem_kind", "problem_kinds",
           "load_problem_plugins"]

#: the kinds fedsim builds itself (:mod:`fedsim.config.problem`), in listing order
BUILTIN_KINDS = ("quadratic", "logistic", "digits", "norm", "softmax")
#: the entry-point group through which installed packages add problem kinds
ENTRY_POINT_GROUP = "fedsim.problems"
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")

_KINDS: dict[str, ProblemKind] = {}


def _clients_n(params: Mapping[str, Any]) -> int:
    require("n" in params, "problem.n", None, "is required (the number of clients)")
    check_integer("problem.n", params["n"], low=1)
    return int(params["n"])


@dataclass(frozen=True, kw_only=True)
class ProblemKind:
    """A problem kind (module doc), keyword arguments: ``name`` (lower case, digits and
    ``_``, at most 64 characters, not a built-in kind), ``builder(**params) -> Problem``,
    ``doc`` (one line for listings), ``clients(params) -> int`` (default: ``params["n"]``)."""

    name: str
    builder: Callable[..., Any]
    doc: str = ""
    clients: Callable[[Mapping[str, Any]], int] | None = None

    def __post_init__(self) -> None:
        require(isinstance(self.name, str) and bool(_NAME.match(self.name)),
                "problem kind name", self.name,
                "must be lower case letters, digits and _ (a letter first, at most 64)")
        require(self.name not in BUILTIN_KINDS, "problem kind name", self.name,
                f"is a built-in kind ({', '.join(BUILTIN_KINDS)}) and cannot be replaced")
        require(callable(self.builder), f"problem kind {self.name!r} builder",
                type(self.builder).__name__, "must be callable")
        require(self.clients is None or callable(self.clients),
                f"problem kind {self.name!r} clients", type(self.clients).__name__,
                "must be callable or None")
        require(isinstance(self.doc, str), f"problem kind {self.name!r} doc", self.doc,
                "must be a string")

    def clients_of(self, params: Mapping[str, Any]) -> int:
        """The number of clients the ``[problem]`` table ``params`` makes."""
        return (self.clients or _clients_n)(params)


def register_problem_kind(kind: ProblemKind, *, replace: bool = False) -> ProblemKind:
    """Add ``kind`` (a registered name raises unless ``replace``); its builder and
    ``clients`` are wrapped by :mod:`fedsim.plugins`' checks.  Returns the kind
    registered."""
    from fedsim.problems.base import Problem

    require(isinstance(kind, ProblemKind), "problem kind", type(kind).__name__,
            "must be a fedsim.problems.registry.ProblemKind")
    if kind.name in _KINDS and not replace:
        raise ConfigError(f"problem kind {kind.name!r} is already registered, got "
                          f"name={kind.name!r}")
    checked = ProblemKind(name=kind.name, doc=kind.doc,
                          builder=checked_problem_builder(kind.name, kind.builder, Problem),
                          clients=checked_problem_clients(kind.name, kind.clients or _clients_n))
    _KINDS[kind.name] = checked
    return checked


def unregister_problem_kind(name: str) -> None:
    """Remove a registered kind (tests and plug-in development)."""
    _KINDS.pop(name, None)


def _accept(name: str, obj: object) -> None:
    items = obj if isinstance(obj, (list, tuple)) else [obj]
    require(bool(items) and all(isinstance(k, ProblemKind) for k in items),
            f"entry point {name}", type(obj).__name__,
            "must name a ProblemKind or a list of them")
    for k in items:
        register_problem_kind(k, replace=True)


def load_problem_plugins(*, force: bool = False) -> list[str]:
    """Load the ``fedsim.problems`` entry points (once, or again with ``force``); a broken
    one is reported in one line and skipped (:func:`fedsim.plugins.load_group`)."""
    return load_group_once(ENTRY_POINT_GROUP, _accept, force=force)


def problem_kinds() -> tuple[str, ...]:
    """Every kind a scenario may name: the built-in ones, then the registered ones (the
    entry points loaded)."""
    load_problem_plugins()
    return BUILTIN_KINDS + tuple(_KINDS)


def get_problem_kind(name: str) -> ProblemKind:
    """The registered kind ``name`` (the entry points are loaded first if it is not
    registered yet); a :class:`~fedsim.errors.ConfigError` listing the known kinds
    otherwise.  A built-in kind is not here: :mod:`fedsim.config.problem` builds it."""
    if name not in _KINDS:
        load_problem_plugins()
    require(isinstance(name, str) and name in _KINDS, "problem.kind", name,
            f"must be one of {list(BUILTIN_KINDS + tuple(_KINDS))}")
    return _KINDS[name]
