"""The delay-model contract and its dictionary form (the Ciw-style base of fedsim.delays).

Every model is a frozen dataclass deriving from :class:`Delay` with vectorised
``sample(rng, size)``, analytic ``mean``/``variance``, the support ``lower``/``upper``
and ``to_dict()``/``Delay.from_dict(d)``.  Parameters are validated when the object is
built: :meth:`Delay.__post_init__` runs the model's ``_validate`` on the fields named by
its ``_signature``, and :meth:`Delay.from_dict` first checks the kind and the keys.

``KINDS`` maps each ``kind`` name to its model class.  A subclass that sets ``kind`` in its
own body registers itself there when it is defined, so this module needs none of the models
(they import it); ``fedsim.delays`` imports every built-in model, hence ``KINDS`` is complete
as soon as any part of the package is imported.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from fedsim.errors import require

__all__ = ["Delay", "KINDS", "REQUIRED", "as_output"]

#: ``kind`` name -> model class, filled by :meth:`Delay.__init_subclass__`; read by
#: :meth:`Delay.from_dict`
KINDS: dict[str, type[Delay]] = {}

#: marks a keyword without default in a model's ``_signature``
REQUIRED = object()


def as_output(x: Any, size: int | tuple[int, ...] | None) -> float | np.ndarray:
    """Scalar float when ``size`` is None, else a float64 array."""
    if size is None:
        return float(x)
    return np.asarray(x, dtype=np.float64)


@dataclass(frozen=True)
class Delay(ABC):
    """Abstract base of every delay model (a non-negative random duration)."""

    kind: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Register a subclass that names its own ``kind`` in :data:`KINDS`."""
        super().__init_subclass__(**kwargs)
        kind = cls.__dict__.get("kind")
        if not kind:
            return
        known = KINDS.get(kind)
        if known is not None and known.__qualname__ != cls.__qualname__:
            raise TypeError(f"delay kind {kind!r} is already registered by "
                            f"{known.__module__}.{known.__qualname__}")
        KINDS[kind] = cls

    @abstractmethod
    def sample(self, rng: np.random.Generator,
               size: int | tuple[int, ...] | None = None) -> float | np.ndarray:
        """Draw ``size`` delays (a float when ``size`` is None)."""

    @property
    @abstractmethod
    def mean(self) -> float:
        """Analytic mean of the delay."""

    @property
    @abstractmethod
    def variance(self) -> float:
        """Analytic variance of the delay."""

    @property
    @abstractmethod
    def lower(self) -> float:
        """Smallest possible value (the infimum of the support)."""

    @property
    @abstractmethod
    def upper(self) -> float:
        """Largest possible value (the supremum of the support; ``inf`` if unbounded)."""

    @abstractmethod
    def _params(self) -> dict[str, Any]:
        """The constructor keywords of this model."""

    @classmethod
    @abstractmethod
    def _validate(cls, p: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
        """Check keyword values (field names prefixed by ``prefix``); return them normalised."""

    def __post_init__(self) -> None:
        """Validate the fields named by ``_signature`` at construction and store them
        normalised (models whose fields differ from their keywords override this)."""
        fields = {k: getattr(self, k) for k in self._signature()}
        for k, v in self._validate(fields).items():
            object.__setattr__(self, k, v)

    def to_dict(self) -> dict[str, Any]:
        """``{"kind": ..., <parameters>}``; ``Delay.from_dict(d.to_dict()) == d``."""
        return {"kind": self.kind, **self._params()}

    @staticmethod
    def from_dict(d: Mapping[str, Any], field_name: str = "") -> Delay:
        """Build a delay from ``{"kind": "exponential", "rate": 2.0}``-style dicts.

        ``field_name`` (e.g. ``"delays.upload"``) prefixes the names in error
        messages: ``delays.upload.rate must be > 0, got delays.upload.rate=-1.0``.
        Unknown kinds, unknown keys and missing keys raise ConfigError.
        """
        prefix = f"{field_name}." if field_name else ""
        require(isinstance(d, Mapping), field_name or "delay", d,
                "must be a table/dict with a 'kind' key")
        require("kind" in d, f"{prefix}kind", None,
                f"is required (one of {sorted(KINDS)})")
        kind = d["kind"]
        require(isinstance(kind, str) and kind in KINDS, f"{prefix}kind", kind,
                f"must be one of {sorted(KINDS)}")
        cls = KINDS[kind]
        allowed = cls._keys()
        params = {k: v for k, v in d.items() if k != "kind"}
        for key in params:
            require(key in allowed, f"{prefix}{key}", params[key],
                    f"is not a parameter of a {kind} delay (allowed: {', '.join(allowed)})")
        for key in cls._required():
            require(key in params, f"{prefix}{key}", None,
                    f"is required for a {kind} delay")
        cls._validate(params, prefix)
        return cls(**params)

    @classmethod
    def _keys(cls) -> tuple[str, ...]:
        return tuple(cls._signature())

    @classmethod
    def _required(cls) -> tuple[str, ...]:
        return tuple(k for k, default in cls._signature().items() if default is REQUIRED)

    @classmethod
    def _signature(cls) -> dict[str, Any]:
        raise NotImplementedError
