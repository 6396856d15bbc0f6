"""``[problem]``: the objective's kind and its builder's keyword arguments.

The kind is a built-in one (:data:`fedsim.config.schema.PROBLEM_KINDS`, built here) or one
registered through the problem plug-in door (:mod:`fedsim.problems.registry`, its builder
checked by :mod:`fedsim.plugins`); both are validated the same way, against the builder's
signature and annotations.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fedsim.config.schema import PROBLEM_KINDS, check_keys
from fedsim.errors import ConfigError, check_integer, check_number, require
from fedsim.problems.registry import get_problem_kind, problem_kinds

__all__ = ["ProblemConfig", "build_problem"]


def _builder(kind: str):
    """The builder of ``kind``: a built-in one, else the registered kind's (a plug-in,
    :mod:`fedsim.problems.registry`; ConfigError listing the known kinds)."""
    if kind not in PROBLEM_KINDS:
        return get_problem_kind(kind).builder
    if kind == "quadratic":
        from fedsim.problems.quadratic import QuadraticProblem
        return QuadraticProblem.random
    if kind == "logistic":
        from fedsim.problems.logistic import LogisticProblem
        return LogisticProblem.synthetic
    if kind == "digits":
        from fedsim.problems.logistic import LogisticProblem
        return LogisticProblem.digits
    if kind == "softmax":
        from fedsim.problems.softmax import SoftmaxProblem
        return SoftmaxProblem.digits
    from fedsim.problems.nonsmooth import NormProblem
    return NormProblem


def _check_type(field_name: str, value: Any, annotation: Any) -> None:
    """The value has the builder's annotated type (``int``, ``float``, ``bool``, ``str``)."""
    ann = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
    if ann == "int":
        check_integer(field_name, value)
    elif ann == "float":
        check_number(field_name, value, allow_inf=True)
    elif ann == "bool":
        require(isinstance(value, bool), field_name, value, "must be true or false")
    elif ann == "str":
        require(isinstance(value, str), field_name, value, "must be a string")
    elif ann == "str | None":
        require(value is None or isinstance(value, str), field_name, value,
                "must be a string")


@dataclass(frozen=True)
class ProblemConfig:
    """``kind`` plus the builder's keyword arguments (validated against its signature)."""

    kind: str = "quadratic"
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        sig = inspect.signature(_builder(self.kind))
        params = [p for p in sig.parameters.values() if p.name not in ("self", "cls")]
        names = {p.name for p in params if p.kind is not inspect.Parameter.VAR_KEYWORD}
        varkw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
        if not varkw:
            check_keys("problem", self.params, names | {"kind"})
        for p in params:
            if (p.default is inspect.Parameter.empty and p.kind not in
                    (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)):
                require(p.name in self.params, f"problem.{p.name}", None,
                        f"is required for a {self.kind} problem")
        for k, v in self.params.items():
            if isinstance(v, float):
                require(not math.isnan(v), f"problem.{k}", v, "must not be NaN")
        # types before any conversion (issue 14): the builder's annotations
        for p in params:
            if p.name in self.params:
                _check_type(f"problem.{p.name}", self.params[p.name], p.annotation)
        object.__setattr__(self, "params", dict(self.params))

    @property
    def n(self) -> int:
        """Number of clients."""
        if self.kind in ("logistic", "digits", "softmax"):
            return int(self.params["n_clients"])
        if self.kind == "norm":
            return int(self.params.get("n", 2))
        if self.kind == "quadratic":
            return int(self.params["n"])
        return get_problem_kind(self.kind).clients_of(self.params)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ProblemConfig:
        require(isinstance(d, Mapping), "problem", d, "must be a table")
        require("kind" in d, "problem.kind", None, f"is required (one of {list(problem_kinds())})")
        require(isinstance(d["kind"], str), "problem.kind", d["kind"],
                f"must be one of {list(problem_kinds())}")
        return cls(kind=d["kind"], params={k: v for k, v in d.items() if k != "kind"})

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, **self.params}


def build_problem(cfg: ProblemConfig):
    """Build the objective deterministically from ``cfg`` (its own ``seed``)."""
    try:
        return _builder(cfg.kind)(**cfg.params)
    except ConfigError as exc:
        raise ConfigError(f"problem: {exc}") from None
    except (TypeError, ValueError, OverflowError) as exc:
        raise ConfigError(f"problem: {exc}") from None
