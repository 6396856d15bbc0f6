"""``[algorithm]``: the flat table (its TOML spelling), AREA's step schedule.

Server keys are validated by the registered algorithm's section (``Algorithm.validate``,
:mod:`fedsim.algorithms`), client-rule keys here, execution-model keys (window) here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from fedsim.config.schema import (
    _MODEL_KEYS,
    _RULE_KEYS,
    _RULES_FOR,
    _SERVER_KEYS,
    ALGORITHMS,
    CLIENT_RULES,
    MODELS,
    check_keys,
)
from fedsim.errors import check_integer, check_number, require

__all__ = ["AlgorithmConfig", "StepSchedule"]


@dataclass(frozen=True)
class StepSchedule:
    """AREA's client step alpha_k: constant, ``c/(k+d)``, or [A] Thm 7's (H7.4)."""

    kind: str = "constant"
    value: float | None = None
    c: float | None = None
    d: float | None = None

    def __post_init__(self) -> None:
        f = "algorithm.alpha"
        require(self.kind in ("constant", "c_over_k_plus_d", "theorem7"), f"{f}.kind",
                self.kind, "must be one of ['constant', 'c_over_k_plus_d', 'theorem7']")
        if self.kind == "constant":
            check_number(f"{f}.value", self.value, low=0.0, strict=True)
            require(self.c is None and self.d is None, f"{f}.c", self.c,
                    "is not used by a constant schedule")
        elif self.kind == "c_over_k_plus_d":
            check_number(f"{f}.c", self.c, low=0.0, strict=True)
            check_number(f"{f}.d", self.d, low=0.0, strict=True)
            require(self.value is None, f"{f}.value", self.value,
                    "is not used by a c_over_k_plus_d schedule")
        else:
            require(self.value is None and self.c is None and self.d is None, f"{f}",
                    self.to_dict(), "takes no parameters when kind = 'theorem7'")

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> StepSchedule:
        check_keys("algorithm.alpha", d, ("kind", "value", "c", "d"))
        require("kind" in d, "algorithm.alpha.kind", None, "is required")
        return cls(**dict(d))

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in (("kind", self.kind), ("value", self.value), ("c", self.c),
                                  ("d", self.d)) if v is not None}


@dataclass(frozen=True)
class AlgorithmConfig:
    """Algorithm, execution model, client rule and their hyper-parameters (None = default)."""

    name: str = "fedasync"
    model: str | None = None
    client_rule: str | None = None
    Q: int | None = None
    eta: float | None = None
    batch: int | None = None
    beta: float | None = None
    alpha: float | StepSchedule | None = None
    hf_delta: float | None = None
    batch_inner: int | None = None
    batch_hess: int | None = None
    lam: float | None = None
    nu: float | None = None
    inner_max_iter: int | None = None
    inner_solver: str | None = None
    buffer: int | None = None
    server_lr: float | None = None
    staleness_weight: str | None = None
    staleness_exponent: float | None = None
    participation: float | None = None
    M: int | None = None
    tau: int | None = None
    delay_pmf: tuple[float, ...] | None = None
    w0: float | tuple[float, ...] | None = None
    E: int | None = None
    delta: float | None = None
    gamma: float | None = None

    def __post_init__(self) -> None:  # noqa: C901 - one validation table
        f = "algorithm"
        require(isinstance(self.name, str) and self.name in ALGORITHMS, f"{f}.name",
                self.name, f"must be one of {list(ALGORITHMS)}")
        model = self.model if self.model is not None else MODELS[self.name][0]
        require(model in MODELS[self.name], f"{f}.model", model,
                f"must be one of {list(MODELS[self.name])} for {self.name}")
        rule = self.client_rule if self.client_rule is not None else _RULES_FOR[self.name][0]
        require(rule in CLIENT_RULES, f"{f}.client_rule", rule,
                f"must be one of {list(CLIENT_RULES)}")
        require(rule in _RULES_FOR[self.name], f"{f}.client_rule", rule,
                f"must be one of {list(_RULES_FOR[self.name])} for {self.name}")
        object.__setattr__(self, "model", model)
        object.__setattr__(self, "client_rule", rule)
        allowed = set(_RULE_KEYS[rule]) | set(_SERVER_KEYS[self.name]) | set(
            _MODEL_KEYS.get(model, ()))
        for fl in fields(self):
            if fl.name in ("name", "model", "client_rule", "w0"):
                continue
            v = getattr(self, fl.name)
            require(v is None or fl.name in allowed, f"{f}.{fl.name}", v,
                    f"is not used by name={self.name!r}, client_rule={rule!r}, "
                    f"model={model!r}")
        if self.w0 is not None:
            if isinstance(self.w0, (list, tuple)):
                require(len(self.w0) > 0, f"{f}.w0", list(self.w0), "must not be empty")
                for k, x in enumerate(self.w0):
                    check_number(f"{f}.w0[{k}]", x)
                object.__setattr__(self, "w0", tuple(float(x) for x in self.w0))
            else:
                check_number(f"{f}.w0", self.w0)
        if self.Q is not None:
            check_integer(f"{f}.Q", self.Q, low=1)
        if self.eta is not None:
            check_number(f"{f}.eta", self.eta, low=0.0)
        if self.batch is not None:
            check_integer(f"{f}.batch", self.batch, low=1)
        for key in ("batch_inner", "batch_hess"):  # MAML's D' and D'' (default: batch)
            if getattr(self, key) is not None:
                check_integer(f"{f}.{key}", getattr(self, key), low=1)
        spec = ALGORITHMS[self.name]
        if spec.validate is not None:
            spec.validate(self)
        if self.name == "area":
            require(isinstance(self.alpha, StepSchedule), f"{f}.alpha", self.alpha,
                    "is required for area: a table such as {kind='constant', value=0.1}")
        elif rule in ("maml", "fomaml", "hfmaml"):
            require(self.alpha is not None, f"{f}.alpha", None,
                    f"(the MAML inner step) is required for client_rule {rule!r}")
            check_number(f"{f}.alpha", self.alpha, low=0.0)
        if self.hf_delta is not None:
            check_number(f"{f}.hf_delta", self.hf_delta, low=0.0, strict=True)
        if rule == "asypfl":
            require(self.lam is not None, f"{f}.lam", None,
                    "(the elastic weight lambda) is required for asypfl (0 = purely local)")
            check_number(f"{f}.lam", self.lam, low=0.0)
            if self.E is not None:
                check_integer(f"{f}.E", self.E, low=1)
            if self.delta is not None:
                check_number(f"{f}.delta", self.delta, low=0.0)
            if self.gamma is not None:
                check_number(f"{f}.gamma", self.gamma, low=0.0)
        if rule == "moreau":
            require(self.lam is not None, f"{f}.lam", None, "is required for client_rule moreau")
            check_number(f"{f}.lam", self.lam, low=0.0, strict=True)
            solver = self.inner_solver or "gd"
            require(solver in ("gd", "exact"), f"{f}.inner_solver", solver,
                    "must be 'gd' or 'exact'")
            if self.nu is not None:
                check_number(f"{f}.nu", self.nu, low=0.0)
            if solver == "gd":
                require(self.nu is None or self.nu > 0, f"{f}.nu", self.nu,
                        "must be > 0 with inner_solver='gd' (use inner_solver='exact' for nu=0)")
            else:
                require(self.nu is None or self.nu == 0, f"{f}.nu", self.nu,
                        "must be 0 (or omitted) with inner_solver='exact'")
            if self.inner_max_iter is not None:
                check_integer(f"{f}.inner_max_iter", self.inner_max_iter, low=1)
        if model == "window":
            require(self.tau is not None, f"{f}.tau", None, "is required for model='window'")
            check_integer(f"{f}.tau", self.tau, low=0)
            if self.delay_pmf is not None:
                pmf = tuple(self.delay_pmf)
                require(len(pmf) == self.tau + 1, f"{f}.delay_pmf", list(pmf),
                        f"must have tau+1 = {self.tau + 1} entries")
                for k, x in enumerate(pmf):
                    check_number(f"{f}.delay_pmf[{k}]", x, low=0.0)
                require(abs(sum(pmf) - 1.0) <= 1e-9, f"{f}.delay_pmf", list(pmf),
                        "must sum to 1")
                object.__setattr__(self, "delay_pmf", tuple(float(x) for x in pmf))

    # -- resolved values -------------------------------------------------------------
    def get(self, key: str) -> Any:
        """The value of ``key`` with its documented default filled in."""
        v = getattr(self, key)
        if v is not None:
            return v
        section = ALGORITHMS[self.name].section
        if key in section:
            return section[key]
        defaults = {"Q": 1, "eta": 0.01, "batch": 1, "beta": 1.0, "hf_delta": 1e-3,
                    "nu": (1e-8 if (self.inner_solver or "gd") == "gd" else 0.0),
                    "inner_max_iter": 1000, "inner_solver": "gd", "E": 1, "delta": 0.01,
                    "gamma": 0.0}
        if key == "delay_pmf" and self.tau is not None:
            return tuple([0.0] * self.tau + [1.0])
        return defaults.get(key)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> AlgorithmConfig:
        names = {f.name for f in fields(cls)}
        check_keys("algorithm", d, names)
        kw = dict(d)
        require("name" in kw, "algorithm.name", None, f"is required (one of {list(ALGORITHMS)})")
        if isinstance(kw.get("alpha"), Mapping):
            kw["alpha"] = StepSchedule.from_dict(kw["alpha"])
        if "delay_pmf" in kw:
            require(isinstance(kw["delay_pmf"], (list, tuple)), "algorithm.delay_pmf",
                    kw["delay_pmf"], "must be a list of probabilities")
            kw["delay_pmf"] = tuple(kw["delay_pmf"])
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for fl in fields(self):
            v = getattr(self, fl.name)
            if v is None:
                continue
            if isinstance(v, StepSchedule):
                v = v.to_dict()
            elif isinstance(v, tuple):
                v = list(v)
            out[fl.name] = v
        return out
