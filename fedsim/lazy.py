"""Lazy public names for a package ``__init__`` (PEP 562 module ``__getattr__``).

A package lists its public names as ``name -> (module, attribute)``; each is imported on
first use, so ``import fedsim.theory`` stays cheap and imports neither the engine nor SimPy.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, names: Mapping[str, tuple[str, str]],
                 namespace: dict[str, Any]) -> tuple[Callable[[str], Any],
                                                     Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` for the lazy ``names``; a loaded
    name is cached in ``namespace`` (the package's ``globals()``)."""

    def getattr_(name: str) -> Any:
        if name in names:
            module, attr = names[name]
            value = getattr(importlib.import_module(module), attr)
            namespace[name] = value
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def dir_() -> list[str]:
        return sorted({*namespace, *names})

    return getattr_, dir_
