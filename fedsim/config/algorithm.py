"""``[algorithm]``: the flat table (its TOML spelling) and the key routing.

Every key belongs to one owner: the registered algorithm's config section (a frozen
:class:`~fedsim.algorithms.Section` dataclass in ``fedsim/algorithms/<name>.py`` that
validates itself), the client rule (:mod:`fedsim.local.registry`: name -> class + keys),
or the execution model (``window``: ``tau``, ``delay_pmf``).  This module only routes keys
to their owner and fills defaults; it never branches on an algorithm's name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from fedsim.algorithms.area import StepSchedule
from fedsim.config.schema import (
    ALGORITHMS,
    CLIENT_RULES,
    check_keys,
)
from fedsim.errors import check_integer, check_number, require

__all__ = ["AlgorithmConfig", "StepSchedule"]

_NOT_KEYS = ("name", "model", "client_rule", "w0", "options", "section")


@dataclass(frozen=True)
class AlgorithmConfig:
    """Algorithm, execution model, client rule and their hyper-parameters (None = default).

    ``options``: keys of a plug-in algorithm's section that are not fields here (pairs);
    ``section``: the validated section instance of the algorithm (built here).
    """

    name: str = "fedasync"
    model: str | None = None
    client_rule: str | None = None
    Q: int | None = None
    eta: float | None = None
    batch: int | None = None
    beta: float | None = None
    server_mix: float | None = None
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
    options: tuple[tuple[str, Any], ...] = ()
    section: Any = field(default=None, init=False, compare=False, repr=False)

    def __getattr__(self, key: str) -> Any:
        # a plug-in section's key (not a field): its value or None
        opts = self.__dict__.get("options", ())
        if key.startswith("_") or "options" not in self.__dict__:
            raise AttributeError(key)
        for k, v in opts:
            if k == key:
                return v
        spec = ALGORITHMS.get(self.__dict__.get("name"))
        if spec is not None and key in spec.section.keys():
            return None
        raise AttributeError(key)

    def __post_init__(self) -> None:
        f = "algorithm"
        require(isinstance(self.name, str) and self.name in ALGORITHMS, f"{f}.name",
                self.name, f"must be one of {list(ALGORITHMS)}")
        spec = ALGORITHMS[self.name]
        model = self.model if self.model is not None else spec.models[0]
        require(model in spec.models, f"{f}.model", model,
                f"must be one of {list(spec.models)} for {self.name}")
        rule = self.client_rule if self.client_rule is not None else spec.client_rules[0]
        require(isinstance(rule, str) and rule in CLIENT_RULES, f"{f}.client_rule", rule,
                f"must be one of {list(CLIENT_RULES)}")
        require(rule in spec.client_rules, f"{f}.client_rule", rule,
                f"must be one of {list(spec.client_rules)} for {self.name}")
        object.__setattr__(self, "model", model)
        object.__setattr__(self, "client_rule", rule)
        rule_spec = CLIENT_RULES[rule]
        section_keys = spec.section.keys()
        allowed = set(rule_spec.keys) | set(section_keys) | set(spec.mode_keys.get(model, ()))
        for fl in fields(self):
            if fl.name in _NOT_KEYS:
                continue
            v = getattr(self, fl.name)
            require(v is None or fl.name in allowed, f"{f}.{fl.name}", v,
                    f"is not used by name={self.name!r}, client_rule={rule!r}, "
                    f"model={model!r}")
        require(isinstance(self.options, tuple), f"{f}.options", self.options,
                "must be a tuple of (key, value) pairs")
        for k, v in self.options:
            require(k in section_keys and k not in self.__dataclass_fields__, f"{f}.{k}", v,
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
        given = {k: getattr(self, k) for k in section_keys}
        object.__setattr__(self, "section",
                           spec.section(**{k: v for k, v in given.items() if v is not None}))
        rule_spec.check(self)
        if self.tau is not None:
            check_integer(f"{f}.tau", self.tau, low=0)
        if self.delay_pmf is not None:
            pmf = tuple(self.delay_pmf)
            for k, x in enumerate(pmf):
                check_number(f"{f}.delay_pmf[{k}]", x, low=0.0)
            object.__setattr__(self, "delay_pmf", tuple(float(x) for x in pmf))

    # -- resolved values -------------------------------------------------------------
    def get(self, key: str) -> Any:
        """The value of ``key`` with its documented default filled in (the section's,
        then the client rule's, then the execution model's)."""
        v = getattr(self, key, None)
        if v is not None:
            return v
        if key in self.section.keys():
            return getattr(self.section, key)
        rule = CLIENT_RULES[self.client_rule]
        alias = ALGORITHMS[self.name].aliases.get(key)
        if alias is not None and key in rule.keys and getattr(self, alias, None) is not None:
            return getattr(self, alias)
        if key in rule.keys:
            return rule.default(key, self)
        if key == "delay_pmf" and self.tau is not None:
            return tuple([0.0] * self.tau + [1.0])
        for other in CLIENT_RULES.values():  # a key of no owner here: its usual default
            if key in other.keys:
                return other.default(key, self)
        return None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> AlgorithmConfig:
        fixed = {f.name for f in fields(cls)} - {"options", "section"}
        require(isinstance(d, Mapping), "algorithm", d, "must be a table")
        spec = ALGORITHMS.get(d.get("name")) if isinstance(d.get("name"), str) else None
        section_keys = set(spec.section.keys()) if spec is not None else set()
        check_keys("algorithm", d, fixed | section_keys)
        kw = dict(d)
        require("name" in kw, "algorithm.name", None, f"is required (one of {list(ALGORITHMS)})")
        if spec is not None:
            for k in section_keys & set(kw):
                kw[k] = spec.section.parse(k, kw[k])
        if "delay_pmf" in kw:
            require(isinstance(kw["delay_pmf"], (list, tuple)), "algorithm.delay_pmf",
                    kw["delay_pmf"], "must be a list of probabilities")
            kw["delay_pmf"] = tuple(kw["delay_pmf"])
        extra = tuple((k, kw.pop(k)) for k in sorted(set(kw) - fixed))
        if extra:
            kw["options"] = extra
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for fl in fields(self):
            if fl.name in ("options", "section"):
                continue
            v = getattr(self, fl.name)
            if v is None:
                continue
            if isinstance(v, StepSchedule):
                v = v.to_dict()
            elif isinstance(v, tuple):
                v = list(v)
            out[fl.name] = v
        for k, v in self.options:
            out[k] = v
        return out
