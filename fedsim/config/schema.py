"""The ``[algorithm]`` tables, the trigger and problem kinds, and the key check.

Algorithm names, execution models, client rules per algorithm and server keys are views of
the algorithm registry (:mod:`fedsim.algorithms`); the client rules' keys are here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fedsim.errors import require

__all__ = ["ALGORITHMS", "CLIENT_RULES", "MODELS", "TRIGGERS", "PROBLEM_KINDS", "check_keys"]


class _RegistryView(Mapping):
    """A read-only view of the algorithm registry (:mod:`fedsim.algorithms`)."""

    def __init__(self, fn) -> None:
        self._fn = fn

    def __getitem__(self, name: str):
        from fedsim.algorithms import algorithms, get_algorithm

        if name not in algorithms():
            raise KeyError(name)
        return self._fn(get_algorithm(name))

    def __iter__(self):
        from fedsim.algorithms import algorithms

        return iter(algorithms())

    def __len__(self) -> int:
        from fedsim.algorithms import algorithms

        return len(algorithms())


ALGORITHMS = _RegistryView(lambda a: a)  # name -> fedsim.algorithms.Algorithm
CLIENT_RULES = ("sgd", "maml", "fomaml", "hfmaml", "moreau", "area", "upload", "asypfl")
MODELS = _RegistryView(lambda a: a.models)
_RULES_FOR = _RegistryView(lambda a: a.client_rules)
_SERVER_KEYS = _RegistryView(lambda a: tuple(a.section))
_RULE_KEYS: dict[str, tuple[str, ...]] = {
    "sgd": ("Q", "eta", "batch"),
    "upload": ("Q", "eta", "batch"),
    "maml": ("Q", "eta", "batch", "alpha", "batch_inner", "batch_hess"),
    "fomaml": ("Q", "eta", "batch", "alpha", "batch_inner"),
    "hfmaml": ("Q", "eta", "batch", "alpha", "hf_delta", "batch_inner", "batch_hess"),
    "moreau": ("Q", "eta", "batch", "lam", "nu", "inner_max_iter", "inner_solver"),
    "area": ("batch",),
    "asypfl": ("E", "eta", "delta", "gamma", "lam", "batch"),
}
_MODEL_KEYS: dict[str, tuple[str, ...]] = {"window": ("tau", "delay_pmf")}
TRIGGERS = ("every_upload", "every_k", "poisson", "period")
PROBLEM_KINDS = ("quadratic", "logistic", "digits", "norm", "softmax")
def check_keys(section: str, d: Mapping[str, Any], allowed: tuple[str, ...] | set[str],
                why: str = "") -> None:
    require(isinstance(d, Mapping), section, d, "must be a table")
    for k in d:
        require(k in allowed, f"{section}.{k}" if section else k, d[k],
                why or f"is not a known key (allowed: {', '.join(sorted(allowed))})")
