"""The execution-model registry: what a model's home declares, and the table of them.

An execution model is a way of turning a scenario's replicate into an event table
(:class:`~fedsim.engine.replay.table.EventTable`, REPLAY_SPEC section 1) without any model
arithmetic; the one replay (:mod:`fedsim.engine.replay.driver`) then applies the rules.
Its home (``fedsim/engine/models/<model>``) holds its SimPy reference writer, its fast
writer(s) and the rule choosing between them, and declares one :class:`ExecutionModel`;
``fedsim/engine/models/__init__.py`` registers it with one line.  An algorithm names a
model per execution mode (``Algorithm.runners``: mode -> model key); :func:`model_of`
reads both registries, so nothing compares a model's or an algorithm's name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from fedsim.errors import ConfigError, require

__all__ = ["ExecutionModel", "Staleness", "register_model", "unregister_model", "get_model",
           "model_of", "models"]


@dataclass(frozen=True)
class Staleness:
    """A model's provable staleness bound for a scenario: ``bound`` (server steps;
    ``math.inf``: none), ``why`` (where it comes from, or why there is none) and ``facts``
    (assumption label -> ``(holds, reason)`` the construction settles, e.g. a uniform
    delay law)."""

    bound: float
    why: str
    facts: Mapping[str, tuple[bool, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class ExecutionModel:
    """One execution model's declaration.

    ``key``: the name algorithms use for it (``Algorithm.runners`` values);
    ``write(scenario, problem, replicates)``: the replicates' tables, a list of
    :class:`~fedsim.engine.replay.table.EventTable` (one per replicate) or a
    :class:`~fedsim.engine.replay.driver.TableSet` (the tables with the rules, grouped
    columns or per-Trace extras their replay takes) -- the writer the home's own rule
    chooses, the same for ``run`` and ``run_batch``; ``memory(scenario, d)``: the bytes the
    model adds to :func:`fedsim.config.budget.estimate_bytes` (by part), ``None``: none;
    ``diagnostics(scenario, problem, table, replicate, steps)``: facts a diagnostic run
    adds to a Trace's ``info`` (``fedsim.engine.run_batch(..., diagnostics=True)``);
    ``staleness(scenario)``: the provable bound on the staleness (server steps between a
    client's read and its update) of every table the model writes for ``scenario``, as a
    :class:`Staleness` (``math.inf`` when the delays give none), ``None``: the model
    declares none; ``rounds``: how a client's rounds follow its delays, ``"async"`` (each
    client starts its next round when its last ends), ``"sync"`` (the chosen clients
    start together when the server round starts) or ``None`` (the model has no per-client
    phases in simulated time); ``phases(scenario, problem, replicate)``: the replicate's
    per-client phases as the home's reference writer records them with its table
    (:class:`~fedsim.engine.models.phases.Phases`, read through
    :func:`fedsim.engine.timeline_phases`; what :func:`fedsim.plot.client_timeline`
    draws), ``None``: the home records none.
    """

    key: str
    write: Callable[[Any, Any, Sequence[int]], Any]
    memory: Callable[[Any, float], Mapping[str, float]] | None = None
    diagnostics: Callable[..., Mapping[str, Any]] | None = None
    staleness: Callable[[Any], Staleness] | None = None
    rounds: str | None = None
    phases: Callable[[Any, Any, int], Any] | None = None
    doc: str = ""

    def __post_init__(self) -> None:
        require(isinstance(self.key, str) and self.key.isidentifier(), "model.key", self.key,
                "must be an identifier")
        require(callable(self.write), f"{self.key}.write", self.write, "must be callable")
        require(self.rounds in (None, "async", "sync"), f"{self.key}.rounds", self.rounds,
                "must be 'async', 'sync' or None")
        require(self.phases is None or (callable(self.phases) and self.rounds is not None),
                f"{self.key}.phases", self.phases,
                "must be callable, in a model that declares its rounds")


_REGISTRY: dict[str, ExecutionModel] = {}


def register_model(model: ExecutionModel, *, replace: bool = False) -> ExecutionModel:
    """Add ``model`` to the registry (``replace`` to redefine a key); returns it."""
    require(isinstance(model, ExecutionModel), "model", model,
            "must be a fedsim.engine.models.ExecutionModel")
    require(replace or model.key not in _REGISTRY, "model.key", model.key,
            "is already registered")
    _REGISTRY[model.key] = model
    return model


def unregister_model(key: str) -> None:
    """Remove ``key`` from the registry (tests that register a toy model)."""
    _REGISTRY.pop(key, None)


def get_model(key: str) -> ExecutionModel:
    """The registered model ``key`` (``ConfigError`` naming the known ones)."""
    model = _REGISTRY.get(key) if isinstance(key, str) else None
    if model is None:
        raise ConfigError(f"execution model must be one of {sorted(_REGISTRY)}, "
                          f"got {key!r}")
    return model


def models() -> dict[str, ExecutionModel]:
    """A copy of the registry (key -> model)."""
    return dict(_REGISTRY)


def model_of(scenario: Any) -> ExecutionModel:
    """The execution model ``scenario`` runs on: its algorithm's ``runners`` entry for
    ``algorithm.model`` (:mod:`fedsim.algorithms`), then :func:`get_model`."""
    from fedsim.algorithms import get_algorithm

    a = scenario.algorithm
    key = get_algorithm(a.name).runners[a.model]
    require(key in _REGISTRY, "algorithm.model", a.model,
            f"needs execution model {key!r}, which is not one of {sorted(_REGISTRY)}")
    return _REGISTRY[key]
