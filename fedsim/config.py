"""Scenarios: a frozen dataclass tree that round-trips to TOML (docs/INTERNALS.md section 2).

Schema (every table optional except ``[problem]``; unknown keys, bad values and
inconsistent choices raise :class:`~fedsim.errors.ConfigError` naming the dotted field)::

    name = "fedasync-quadratic"       # free text
    seed = 1                          # run seed (fedsim.rng.Streams(seed, replicate))

    [problem]                         # the objective; its own `seed` (independent of the run)
    kind = "quadratic"                # "quadratic" | "logistic" | "digits" | "norm"
    # quadratic: QuadraticProblem.random(n, dim, mu, L, heterogeneity, noise_sd, noise,
    #            shared_hessian, seed); logistic: LogisticProblem.synthetic(n_clients, dim,
    #            samples_per_client, heterogeneity, label_noise, seed, nu_reg, anchors,
    #            anchor_scale); digits: LogisticProblem.digits(n_clients, nu_reg, ...);
    # norm: NormProblem(B, n, dim)  (keys are the builder's keyword arguments)

    [algorithm]
    name = "fedasync"                 # "fedasync" | "fedbuff" | "area" | "fedavg" | "asfedavg"
                                      # | "asypfl"
    model = "physical"                # fedasync: "physical" | "window" | "expcycle";
                                      # fedbuff, asfedavg: "physical" | "expcycle";
                                      # fedavg, asypfl: "physical";
                                      # area: "algorithm" | "iterate_model"
    client_rule = "sgd"               # "sgd" (Option A) | "maml" | "fomaml" | "hfmaml"
                                      # (Option B) | "moreau" (Option C) | "area" | "upload"
                                      # | "asypfl" (asypfl only)
    Q = 10                            # local steps ([P]); AREA uses M
    eta = 0.01                        # local step ([P])
    batch = 1                         # batch size b
    beta = 1.0                        # fedasync server step; fedavg/asfedavg server mixing
    # maml/fomaml/hfmaml: alpha (MAML inner step), hf_delta (hfmaml finite difference)
    # moreau: lam, nu, inner_max_iter, inner_solver = "gd" | "exact"
    # fedbuff: buffer (Delta >= 1), server_lr, staleness_weight = "none" | "inverse_sqrt"
    #          | "polynomial", staleness_exponent;   asfedavg: buffer, beta
    # fedavg: participation (r in (0, 1]; r*n clients per round, rounded, at least 1)
    # area: M, alpha = {kind="constant", value=0.1} | {kind="c_over_k_plus_d", c=, d=}
    #       | {kind="theorem7"}  (the [A] Thm 7 schedule from the problem's L, mu and p_min)
    # window: tau, delay_pmf = [pi_0, ..., pi_tau]  (default: point mass at tau)
    # asypfl (Algorithm 1 of Ma et al. 2022; fedsim.engine_asypfl): E (local epochs, default
    #        1; E_k = pi_k E), eta (local step, 0.01), delta (personal step, 0.01), gamma
    #        (decay, 0), lam (elastic weight, required, >= 0), batch; needs trigger
    #        every_upload, delays.compute_per = "step", a compute delay that is not
    #        constant 0, and constant-0 download+upload for every client or for none
    # any algorithm: w0 = initial model w^0 (x_{s,0} for AREA): a list of dim numbers, or one
    #                number for every coordinate (default 0)

    [delays]                          # defaults below; per-client overrides in [[delays.override]]
    download = {kind = "constant", value = 0.0}
    compute = {kind = "exponential", rate = 1.0}
    upload = {kind = "constant", value = 0.0}
    think = {kind = "constant", value = 0.0}
    compute_per = "round"             # or "step" (one compute delay per local step)
    read_at = "request"               # model read when the download is requested ("request",
                                      # the server sends its current model) or when it
                                      # completes ("arrival", THEORY_SPEC 10.2(c))
    # [[delays.override]]  clients = [0, 1]  compute = {kind = "exponential", rate = 5.0}

    [trigger]                         # aggregation trigger
    kind = "every_upload"             # | "every_k" (count) | "poisson" (rate) | "period" (period)

    [horizon]
    steps = 1000                      # T server steps (K global iterations for AREA)
    time = inf                        # simulated-time horizon; at least one must be finite

    [record]
    every = 1
    metrics = ["grad_sq", "dist_sq", "f_gap"]   # also grad_maml_sq, grad_me_sq, ergodic_f_gap
    # maml_alpha, me_lam: for grad_maml_sq / grad_me_sq when the client rule does not fix them

Per-FedAvg and pFedMe are synchronous FedAvg with ``client_rule = "maml"`` / ``"moreau"``.
"""

from __future__ import annotations

import inspect
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from fedsim.errors import ConfigError, require

__all__ = [
    "Scenario", "ProblemConfig", "AlgorithmConfig", "StepSchedule", "DelaysConfig",
    "ClientDelays", "TriggerConfig", "HorizonConfig", "RecordConfig",
    "load", "loads", "dump", "dumps", "build_problem",
    "ALGORITHMS", "CLIENT_RULES", "MODELS",
]



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
    "maml": ("Q", "eta", "batch", "alpha"),
    "fomaml": ("Q", "eta", "batch", "alpha"),
    "hfmaml": ("Q", "eta", "batch", "alpha", "hf_delta"),
    "moreau": ("Q", "eta", "batch", "lam", "nu", "inner_max_iter", "inner_solver"),
    "area": ("batch",),
    "asypfl": ("E", "eta", "delta", "gamma", "lam", "batch"),
}
_MODEL_KEYS: dict[str, tuple[str, ...]] = {"window": ("tau", "delay_pmf")}
TRIGGERS = ("every_upload", "every_k", "poisson", "period")
PROBLEM_KINDS = ("quadratic", "logistic", "digits", "norm")


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_num(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _num(field_name: str, x: Any, *, low: float | None = None, strict: bool = False,
         allow_inf: bool = False) -> float:
    require(_is_num(x), field_name, x, "must be a number")
    v = float(x)
    require(not math.isnan(v), field_name, x, "must not be NaN")
    require(allow_inf or math.isfinite(v), field_name, x, "must be finite")
    if low is not None:
        if strict:
            require(v > low, field_name, x, f"must be > {low:g}")
        else:
            require(v >= low, field_name, x, f"must be >= {low:g}")
    return v


def _int(field_name: str, x: Any, low: int) -> int:
    require(_is_int(x) and x >= low, field_name, x, f"must be an integer >= {low}")
    return int(x)


def _check_keys(section: str, d: Mapping[str, Any], allowed: tuple[str, ...] | set[str],
                why: str = "") -> None:
    require(isinstance(d, Mapping), section, d, "must be a table")
    for k in d:
        require(k in allowed, f"{section}.{k}" if section else k, d[k],
                why or f"is not a known key (allowed: {', '.join(sorted(allowed))})")


# ------------------------------------------------------------------------------------------
# problem
# ------------------------------------------------------------------------------------------
def _builder(kind: str):
    if kind == "quadratic":
        from fedsim.problems.quadratic import QuadraticProblem
        return QuadraticProblem.random
    if kind == "logistic":
        from fedsim.problems.logistic import LogisticProblem
        return LogisticProblem.synthetic
    if kind == "digits":
        from fedsim.problems.logistic import LogisticProblem
        return LogisticProblem.digits
    from fedsim.problems.nonsmooth import NormProblem
    return NormProblem


@dataclass(frozen=True)
class ProblemConfig:
    """``kind`` plus the builder's keyword arguments (validated against its signature)."""

    kind: str = "quadratic"
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        require(self.kind in PROBLEM_KINDS, "problem.kind", self.kind,
                f"must be one of {list(PROBLEM_KINDS)}")
        sig = inspect.signature(_builder(self.kind))
        params = [p for p in sig.parameters.values() if p.name not in ("self", "cls")]
        names = {p.name for p in params if p.kind is not inspect.Parameter.VAR_KEYWORD}
        varkw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
        if not varkw:
            _check_keys("problem", self.params, names | {"kind"})
        for p in params:
            if (p.default is inspect.Parameter.empty and p.kind not in
                    (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)):
                require(p.name in self.params, f"problem.{p.name}", None,
                        f"is required for a {self.kind} problem")
        for k, v in self.params.items():
            if isinstance(v, float):
                require(not math.isnan(v), f"problem.{k}", v, "must not be NaN")
        object.__setattr__(self, "params", dict(self.params))

    @property
    def n(self) -> int:
        """Number of clients."""
        if self.kind in ("logistic", "digits"):
            return int(self.params["n_clients"])
        if self.kind == "norm":
            return int(self.params.get("n", 2))
        return int(self.params["n"])

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ProblemConfig:
        require(isinstance(d, Mapping), "problem", d, "must be a table")
        require("kind" in d, "problem.kind", None, f"is required (one of {list(PROBLEM_KINDS)})")
        return cls(kind=d["kind"], params={k: v for k, v in d.items() if k != "kind"})

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, **self.params}


def build_problem(cfg: ProblemConfig):
    """Build the objective deterministically from ``cfg`` (its own ``seed``)."""
    try:
        return _builder(cfg.kind)(**cfg.params)
    except ConfigError as exc:
        raise ConfigError(f"problem: {exc}") from None
    except TypeError as exc:
        raise ConfigError(f"problem: {exc}") from None


# ------------------------------------------------------------------------------------------
# algorithm
# ------------------------------------------------------------------------------------------
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
            _num(f"{f}.value", self.value, low=0.0, strict=True)
            require(self.c is None and self.d is None, f"{f}.c", self.c,
                    "is not used by a constant schedule")
        elif self.kind == "c_over_k_plus_d":
            _num(f"{f}.c", self.c, low=0.0, strict=True)
            _num(f"{f}.d", self.d, low=0.0, strict=True)
            require(self.value is None, f"{f}.value", self.value,
                    "is not used by a c_over_k_plus_d schedule")
        else:
            require(self.value is None and self.c is None and self.d is None, f"{f}",
                    self.to_dict(), "takes no parameters when kind = 'theorem7'")

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> StepSchedule:
        _check_keys("algorithm.alpha", d, ("kind", "value", "c", "d"))
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
                    _num(f"{f}.w0[{k}]", x)
                object.__setattr__(self, "w0", tuple(float(x) for x in self.w0))
            else:
                _num(f"{f}.w0", self.w0)
        if self.Q is not None:
            _int(f"{f}.Q", self.Q, 1)
        if self.eta is not None:
            _num(f"{f}.eta", self.eta, low=0.0)
        if self.batch is not None:
            _int(f"{f}.batch", self.batch, 1)
        spec = ALGORITHMS[self.name]
        if spec.validate is not None:
            spec.validate(self)
        if self.name == "area":
            require(isinstance(self.alpha, StepSchedule), f"{f}.alpha", self.alpha,
                    "is required for area: a table such as {kind='constant', value=0.1}")
        elif rule in ("maml", "fomaml", "hfmaml"):
            require(self.alpha is not None, f"{f}.alpha", None,
                    f"(the MAML inner step) is required for client_rule {rule!r}")
            _num(f"{f}.alpha", self.alpha, low=0.0)
        if self.hf_delta is not None:
            _num(f"{f}.hf_delta", self.hf_delta, low=0.0, strict=True)
        if rule == "asypfl":
            require(self.lam is not None, f"{f}.lam", None,
                    "(the elastic weight lambda) is required for asypfl (0 = purely local)")
            _num(f"{f}.lam", self.lam, low=0.0)
            if self.E is not None:
                _int(f"{f}.E", self.E, 1)
            if self.delta is not None:
                _num(f"{f}.delta", self.delta, low=0.0)
            if self.gamma is not None:
                _num(f"{f}.gamma", self.gamma, low=0.0)
        if rule == "moreau":
            require(self.lam is not None, f"{f}.lam", None, "is required for client_rule moreau")
            _num(f"{f}.lam", self.lam, low=0.0, strict=True)
            solver = self.inner_solver or "gd"
            require(solver in ("gd", "exact"), f"{f}.inner_solver", solver,
                    "must be 'gd' or 'exact'")
            if self.nu is not None:
                _num(f"{f}.nu", self.nu, low=0.0)
            if solver == "gd":
                require(self.nu is None or self.nu > 0, f"{f}.nu", self.nu,
                        "must be > 0 with inner_solver='gd' (use inner_solver='exact' for nu=0)")
            else:
                require(self.nu is None or self.nu == 0, f"{f}.nu", self.nu,
                        "must be 0 (or omitted) with inner_solver='exact'")
            if self.inner_max_iter is not None:
                _int(f"{f}.inner_max_iter", self.inner_max_iter, 1)
        if model == "window":
            require(self.tau is not None, f"{f}.tau", None, "is required for model='window'")
            _int(f"{f}.tau", self.tau, 0)
            if self.delay_pmf is not None:
                pmf = tuple(self.delay_pmf)
                require(len(pmf) == self.tau + 1, f"{f}.delay_pmf", list(pmf),
                        f"must have tau+1 = {self.tau + 1} entries")
                for k, x in enumerate(pmf):
                    _num(f"{f}.delay_pmf[{k}]", x, low=0.0)
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
        _check_keys("algorithm", d, names)
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


# ------------------------------------------------------------------------------------------
# delays, trigger, horizon, record
# ------------------------------------------------------------------------------------------
def _delay(field_name: str, d: Any):
    from fedsim.delays import Delay

    if isinstance(d, Delay):
        return d
    return Delay.from_dict(d, field_name)


def _default_delay(kind: str):
    from fedsim.delays import Constant, Exponential

    return Exponential(rate=1.0) if kind == "compute" else Constant(value=0.0)


_DELAY_KINDS = ("download", "compute", "upload", "think")


@dataclass(frozen=True)
class ClientDelays:
    """Per-client override of some delay models (``clients`` lists the indices)."""

    clients: tuple[int, ...]
    download: Any = None
    compute: Any = None
    upload: Any = None
    think: Any = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"clients": list(self.clients)}
        for k in _DELAY_KINDS:
            v = getattr(self, k)
            if v is not None:
                out[k] = v.to_dict()
        return out


@dataclass(frozen=True)
class DelaysConfig:
    """Delay models of every client (``fedsim.delays``) and per-client overrides."""

    download: Any = None
    compute: Any = None
    upload: Any = None
    think: Any = None
    compute_per: str = "round"
    read_at: str = "request"
    override: tuple[ClientDelays, ...] = ()

    def __post_init__(self) -> None:
        for k in _DELAY_KINDS:
            v = getattr(self, k)
            object.__setattr__(self, k, _default_delay(k) if v is None else
                               _delay(f"delays.{k}", v))
        require(self.compute_per in ("round", "step"), "delays.compute_per", self.compute_per,
                "must be 'round' or 'step'")
        require(self.read_at in ("request", "arrival"), "delays.read_at", self.read_at,
                "must be 'request' or 'arrival'")
        object.__setattr__(self, "override", tuple(self.override))

    def for_client(self, i: int) -> dict[str, Any]:
        """The four delay models of client ``i`` (later overrides win)."""
        out = {k: getattr(self, k) for k in _DELAY_KINDS}
        for ov in self.override:
            if i in ov.clients:
                for k in _DELAY_KINDS:
                    if getattr(ov, k) is not None:
                        out[k] = getattr(ov, k)
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DelaysConfig:
        _check_keys("delays", d, (*_DELAY_KINDS, "compute_per", "read_at", "override"))
        kw: dict[str, Any] = {k: v for k, v in d.items() if k != "override"}
        ovs = []
        raw = d.get("override", [])
        require(isinstance(raw, (list, tuple)), "delays.override", raw,
                "must be an array of tables [[delays.override]]")
        for j, o in enumerate(raw):
            f = f"delays.override[{j}]"
            _check_keys(f, o, ("clients", *_DELAY_KINDS))
            cl = o.get("clients")
            require(isinstance(cl, (list, tuple)) and len(cl) > 0
                    and all(_is_int(c) and c >= 0 for c in cl), f"{f}.clients", cl,
                    "must be a non-empty list of client indices >= 0")
            ovs.append(ClientDelays(clients=tuple(cl), **{
                k: _delay(f"{f}.{k}", o[k]) for k in _DELAY_KINDS if k in o}))
        kw["override"] = tuple(ovs)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {k: getattr(self, k).to_dict() for k in _DELAY_KINDS}
        out["compute_per"] = self.compute_per
        out["read_at"] = self.read_at
        if self.override:
            out["override"] = [o.to_dict() for o in self.override]
        return out


@dataclass(frozen=True)
class TriggerConfig:
    """Aggregation trigger: every upload, every ``count`` uploads, Poisson(rate), period."""

    kind: str = "every_upload"
    count: int | None = None
    rate: float | None = None
    period: float | None = None

    def __post_init__(self) -> None:
        require(self.kind in TRIGGERS, "trigger.kind", self.kind,
                f"must be one of {list(TRIGGERS)}")
        need = {"every_upload": None, "every_k": "count", "poisson": "rate",
                "period": "period"}[self.kind]
        for k in ("count", "rate", "period"):
            v = getattr(self, k)
            if k != need:
                require(v is None, f"trigger.{k}", v, f"is not used by trigger kind {self.kind!r}")
        if need == "count":
            _int("trigger.count", self.count, 1)
        elif need is not None:
            _num(f"trigger.{need}", getattr(self, need), low=0.0, strict=True)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TriggerConfig:
        _check_keys("trigger", d, ("kind", "count", "rate", "period"))
        return cls(**dict(d))

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in (("kind", self.kind), ("count", self.count),
                                  ("rate", self.rate), ("period", self.period)) if v is not None}


@dataclass(frozen=True)
class HorizonConfig:
    """Stop after ``steps`` server steps (AREA: global iterations) or at simulated ``time``."""

    steps: int | None = None
    time: float = math.inf

    def __post_init__(self) -> None:
        if self.steps is not None:
            _int("horizon.steps", self.steps, 1)
        t = _num("horizon.time", self.time, low=0.0, strict=True, allow_inf=True)
        object.__setattr__(self, "time", t)
        require(self.steps is not None or math.isfinite(t), "horizon", self.to_dict(),
                "needs a finite `steps` or a finite `time`")

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> HorizonConfig:
        _check_keys("horizon", d, ("steps", "time"))
        return cls(**dict(d))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"time": self.time}
        if self.steps is not None:
            out["steps"] = self.steps
        return out


@dataclass(frozen=True)
class RecordConfig:
    """What to record: metrics every ``every`` steps (always step 0 and the last)."""

    every: int = 1
    metrics: tuple[str, ...] = ("grad_sq",)
    maml_alpha: float | None = None
    me_lam: float | None = None

    def __post_init__(self) -> None:
        from fedsim.trace import METRICS

        _int("record.every", self.every, 1)
        require(isinstance(self.metrics, (list, tuple)), "record.metrics", self.metrics,
                "must be a list of metric names")
        for m in self.metrics:
            require(m in METRICS, "record.metrics", m, f"must be one of {list(METRICS)}")
        require(len(set(self.metrics)) == len(self.metrics), "record.metrics",
                list(self.metrics), "must not repeat a name")
        object.__setattr__(self, "metrics", tuple(self.metrics))
        if self.maml_alpha is not None:
            _num("record.maml_alpha", self.maml_alpha, low=0.0)
        if self.me_lam is not None:
            _num("record.me_lam", self.me_lam, low=0.0, strict=True)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RecordConfig:
        _check_keys("record", d, ("every", "metrics", "maml_alpha", "me_lam"))
        return cls(**dict(d))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"every": self.every, "metrics": list(self.metrics)}
        if self.maml_alpha is not None:
            out["maml_alpha"] = self.maml_alpha
        if self.me_lam is not None:
            out["me_lam"] = self.me_lam
        return out


# ------------------------------------------------------------------------------------------
# scenario
# ------------------------------------------------------------------------------------------
_SECTIONS = ("name", "seed", "problem", "algorithm", "delays", "trigger", "horizon", "record")


@dataclass(frozen=True)
class Scenario:
    """One simulated scenario (docs/INTERNALS.md section 2)."""

    problem: ProblemConfig
    algorithm: AlgorithmConfig = field(default_factory=AlgorithmConfig)
    delays: DelaysConfig = field(default_factory=DelaysConfig)
    trigger: TriggerConfig = field(default_factory=TriggerConfig)
    horizon: HorizonConfig = field(default_factory=lambda: HorizonConfig(steps=100))
    record: RecordConfig = field(default_factory=RecordConfig)
    seed: int = 0
    name: str = "scenario"

    def __post_init__(self) -> None:
        require(_is_int(self.seed) and self.seed >= 0, "seed", self.seed,
                "must be a non-negative integer")
        require(isinstance(self.name, str), "name", self.name, "must be a string")
        self._check_consistency()

    def _check_consistency(self) -> None:  # noqa: C901 - one table of cross-field rules
        a, dl, tr = self.algorithm, self.delays, self.trigger
        n = self.problem.n
        for j, ov in enumerate(dl.override):
            for c in ov.clients:
                require(c < n, f"delays.override[{j}].clients", c,
                        f"must be a client index < n = {n}")
        if a.name == "fedasync":
            require(tr.kind == "every_upload", "trigger.kind", tr.kind,
                    "must be 'every_upload' for fedasync (each upload is one server step)")
        if a.name == "asypfl":
            self._check_asypfl()
        if a.name in ("fedbuff", "asfedavg"):
            buf = a.get("buffer")
            if tr.kind == "every_upload":
                require(buf == 1, "trigger.kind", tr.kind,
                        f"must be 'every_k' with count = algorithm.buffer = {buf} "
                        "(or a timer) when buffer > 1")
            elif tr.kind == "every_k":
                require(tr.count == buf, "trigger.count", tr.count,
                        f"must equal algorithm.buffer = {buf}")
        if a.name == "fedavg":
            require(tr.kind == "every_upload", "trigger.kind", tr.kind,
                    "is not used by synchronous fedavg (leave the default)")
            from fedsim.delays import Constant

            for i in range(n):
                th = dl.for_client(i)["think"]
                require(isinstance(th, Constant) and th.value == 0.0, "delays.think",
                        th.to_dict(), "is not used by synchronous fedavg (must be constant 0)")
        if a.name == "area":
            require(dl.read_at == "request", "delays.read_at", dl.read_at,
                    "must be 'request' for area (the server's reply carries x_s)")
        if a.model in ("expcycle", "iterate_model"):
            self._check_exp_cycle()
        if a.model == "iterate_model":
            require(tr.kind == "poisson", "trigger.kind", tr.kind,
                    "must be 'poisson' for area model='iterate_model' (i.i.d. events, "
                    "[A] Example 3)")
        if a.model == "window":
            require(self.horizon.steps is not None, "horizon.steps", None,
                    "is required for model='window' (time is the step index)")
        if isinstance(a.alpha, StepSchedule) and a.alpha.kind == "theorem7":
            require(a.model == "iterate_model", "algorithm.alpha.kind", "theorem7",
                    "needs model='iterate_model' (p_min comes from the Poisson rates)")

    def _check_asypfl(self) -> None:
        """AsyPFL (fedsim.engine_asypfl): one upload per server step (eq. (4)); one compute
        delay per local step (DeltaT^g); pi_k = DeltaT^c/(DeltaT^g p^k pi_min) finite."""
        from fedsim.delays import Constant

        dl, tr = self.delays, self.trigger
        require(tr.kind == "every_upload", "trigger.kind", tr.kind,
                "must be 'every_upload' for asypfl (each upload is one server step, eq. (4))")
        require(dl.compute_per == "step", "delays.compute_per", dl.compute_per,
                "must be 'step' for asypfl (DeltaT^g is the time of one local update and "
                "E_k = pi_k E varies)")

        def zero(v: Any) -> bool:
            return isinstance(v, Constant) and v.value == 0.0

        silent = []
        for i in range(self.problem.n):
            dd = dl.for_client(i)
            require(not zero(dd["compute"]), "delays.compute", dd["compute"].to_dict(),
                    f"must not be constant 0 for asypfl (client {i}: pi_k divides by "
                    "DeltaT^g)")
            silent.append(zero(dd["download"]) and zero(dd["upload"]))
        require(all(silent) or not any(silent), "delays",
                {"zero_communication_clients": [i for i, s in enumerate(silent) if s]},
                "must make download and upload constant 0 for every client or for none "
                "with asypfl (pi_min = 0 would make pi_k = DeltaT^c/(DeltaT^g p^k pi_min) "
                "infinite)")

    def _check_exp_cycle(self) -> None:
        from fedsim.delays import Constant, Exponential

        dl = self.delays
        m = self.algorithm.model
        require(dl.compute_per == "round", "delays.compute_per", dl.compute_per,
                f"must be 'round' for model={m!r} (the whole cycle is one Exp(rate_i))")
        for i in range(self.problem.n):
            dd = dl.for_client(i)
            for k in ("download", "upload", "think"):
                v = dd[k]
                require(isinstance(v, Constant) and v.value == 0.0, f"delays.{k}", v.to_dict(),
                        f"must be constant 0 for model={m!r} (zero communication delay)")
            require(isinstance(dd["compute"], Exponential), "delays.compute",
                    dd["compute"].to_dict(), f"must be exponential for model={m!r}")

    @property
    def n(self) -> int:
        return self.problem.n

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Scenario:
        _check_keys("", d, _SECTIONS)
        require("problem" in d, "problem", None, "is required")
        kw: dict[str, Any] = {"problem": ProblemConfig.from_dict(d["problem"])}
        if "algorithm" in d:
            kw["algorithm"] = AlgorithmConfig.from_dict(d["algorithm"])
        if "delays" in d:
            kw["delays"] = DelaysConfig.from_dict(d["delays"])
        if "trigger" in d:
            kw["trigger"] = TriggerConfig.from_dict(d["trigger"])
        elif "algorithm" in d and kw["algorithm"].name in ("fedbuff", "asfedavg") and \
                kw["algorithm"].get("buffer") > 1:
            kw["trigger"] = TriggerConfig(kind="every_k", count=kw["algorithm"].get("buffer"))
        if "horizon" in d:
            kw["horizon"] = HorizonConfig.from_dict(d["horizon"])
        if "record" in d:
            kw["record"] = RecordConfig.from_dict(d["record"])
        if "seed" in d:
            kw["seed"] = d["seed"]
        if "name" in d:
            kw["name"] = d["name"]
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "seed": self.seed, "problem": self.problem.to_dict(),
                "algorithm": self.algorithm.to_dict(), "delays": self.delays.to_dict(),
                "trigger": self.trigger.to_dict(), "horizon": self.horizon.to_dict(),
                "record": self.record.to_dict()}

    def with_seed(self, seed: int) -> Scenario:
        """A copy with another run seed."""
        return replace(self, seed=seed)


def loads(text: str) -> Scenario:
    """Parse a scenario from TOML text."""
    try:
        d = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"invalid TOML: {exc}") from None
    return Scenario.from_dict(d)


def load(path: str | Path) -> Scenario:
    """Read a scenario TOML file."""
    return loads(Path(path).read_text())


def dumps(scenario: Scenario) -> str:
    """The scenario as TOML text (``loads(dumps(s)) == s``)."""
    import tomli_w

    return tomli_w.dumps(scenario.to_dict())


def dump(scenario: Scenario, path: str | Path) -> None:
    """Write the scenario as a TOML file."""
    Path(path).write_text(dumps(scenario))
