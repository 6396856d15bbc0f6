"""The ``[algorithm]`` tables, the trigger and problem kinds, and the key check.

Algorithm names and execution models are views of the algorithm registry
(:mod:`fedsim.algorithms`), client rules (with their keys) of the client-rule registry
(:mod:`fedsim.local.registry`); the execution models' keys are here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fedsim.errors import require
from fedsim.problems.registry import BUILTIN_KINDS

__all__ = ["ALGORITHMS", "CLIENT_RULES", "MODELS", "TRIGGERS", "PROBLEM_KINDS", "check_keys"]


class _RegistryView(Mapping):
    """A read-only view of a registry (``names()`` and ``get(name)``, imported lazily)."""

    def __init__(self, module: str, names: str, get: str, fn=lambda x: x) -> None:
        self._where = (module, names, get)
        self._fn = fn

    def _reg(self):
        import importlib

        module, names, get = self._where
        m = importlib.import_module(module)
        return getattr(m, names), getattr(m, get)

    def __getitem__(self, name: str):
        names, get = self._reg()
        if name not in names():
            raise KeyError(name)
        return self._fn(get(name))

    def __iter__(self):
        return iter(self._reg()[0]())

    def __len__(self) -> int:
        return len(self._reg()[0]())


# name -> fedsim.algorithms.Algorithm
ALGORITHMS = _RegistryView("fedsim.algorithms", "algorithms", "get_algorithm")
# name -> fedsim.local.ClientRuleSpec (class + keys)
CLIENT_RULES = _RegistryView("fedsim.local", "client_rules", "get_client_rule")
MODELS = _RegistryView("fedsim.algorithms", "algorithms", "get_algorithm", lambda a: a.models)
TRIGGERS = ("every_upload", "every_k", "poisson", "period")
#: the built-in problem kinds (a plug-in adds others: fedsim.problems.registry)
PROBLEM_KINDS = BUILTIN_KINDS
def check_keys(section: str, d: Mapping[str, Any], allowed: tuple[str, ...] | set[str],
                why: str = "") -> None:
    require(isinstance(d, Mapping), section, d, "must be a table")
    for k in d:
        require(k in allowed, f"{section}.{k}" if section else k, d[k],
                why or f"is not a known key (allowed: {', '.join(sorted(allowed))})")
