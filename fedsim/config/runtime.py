"""``[delays]``, ``[trigger]``, ``[horizon]``, ``[record]``."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from fedsim.config.schema import TRIGGERS, check_keys
from fedsim.errors import check_integer, check_number, require
from fedsim.rng.delays import DELAY_KINDS

__all__ = ["ClientDelays", "DelaysConfig", "TriggerConfig", "HorizonConfig", "RecordConfig",
           "DELAY_KINDS"]


def _delay(field_name: str, d: Any):
    from fedsim.delays import Delay, Normal

    if not isinstance(d, Delay):
        d = Delay.from_dict(d, field_name)
    if isinstance(d, Normal):
        # decision (issue 14): refuse a parent mean below the truncation point -- the
        # delays actually drawn would have another mean (e.g. mean=-1, sd=0.5 draws delays
        # of mean 0.078), which a user writing `mean` does not expect.
        require(d.loc >= d.low, f"{field_name}.mean", d.loc,
                f"must be >= low = {d.low:g} (a normal truncated to [{d.low:g}, {d.high:g}] "
                f"with this parent mean has real mean {d.mean:.6g}; give the parent mean "
                "inside the interval)")
    return d


def _default_delay(kind: str):
    from fedsim.delays import Constant, Exponential

    return Exponential(rate=1.0) if kind == "compute" else Constant(value=0.0)




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
        for k in DELAY_KINDS:
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
        for k in DELAY_KINDS:
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
        out = {k: getattr(self, k) for k in DELAY_KINDS}
        for ov in self.override:
            if i in ov.clients:
                for k in DELAY_KINDS:
                    if getattr(ov, k) is not None:
                        out[k] = getattr(ov, k)
        return out

    def groups(self, n: int) -> list[tuple[dict[str, Any], np.ndarray]]:
        """Clients ``0..n-1`` grouped by their four delay models: ``[(models, clients)]``
        with ``models`` what :meth:`for_client` gives each of ``clients`` (an increasing
        int64 array), groups in order of their first client.  O(n) array work plus one
        :meth:`for_client` per overridden client (the rest share the defaults)."""
        n = int(n)
        touched = sorted({i for ov in self.override for i in ov.clients if 0 <= i < n})
        keys: dict[tuple[int, ...], int] = {}
        models: list[dict[str, Any]] = []
        label = np.zeros(n, dtype=np.int64)
        base = {k: getattr(self, k) for k in DELAY_KINDS}
        keys[tuple(id(base[k]) for k in DELAY_KINDS)] = 0
        models.append(base)
        for i in touched:
            m = self.for_client(i)
            key = tuple(id(m[k]) for k in DELAY_KINDS)
            g = keys.get(key)
            if g is None:
                g = keys[key] = len(models)
                models.append(m)
            label[i] = g
        out = [(models[g], np.flatnonzero(label == g)) for g in range(len(models))]
        out = [(m, c) for m, c in out if c.size]
        out.sort(key=lambda mc: int(mc[1][0]))
        return out

    def by_client(self, n: int) -> list[dict[str, Any]]:
        """``[for_client(i) for i in range(n)]``, clients of one group sharing one dict
        (read it, do not change it)."""
        gs = self.groups(n)
        if len(gs) == 1:
            return [gs[0][0]] * int(n)
        out: list[dict[str, Any]] = [{}] * int(n)
        for m, cl in gs:
            for i in cl.tolist():
                out[i] = m
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DelaysConfig:
        check_keys("delays", d, (*DELAY_KINDS, "compute_per", "read_at", "override"))
        kw: dict[str, Any] = {k: v for k, v in d.items() if k != "override"}
        ovs = []
        raw = d.get("override", [])
        require(isinstance(raw, (list, tuple)), "delays.override", raw,
                "must be an array of tables [[delays.override]]")
        for j, o in enumerate(raw):
            f = f"delays.override[{j}]"
            check_keys(f, o, ("clients", *DELAY_KINDS))
            cl = o.get("clients")
            require(isinstance(cl, (list, tuple)) and len(cl) > 0
                    and all(isinstance(c, int) and not isinstance(c, bool) and c >= 0
                            for c in cl), f"{f}.clients", cl,
                    "must be a non-empty list of client indices >= 0")
            ovs.append(ClientDelays(clients=tuple(cl), **{
                k: _delay(f"{f}.{k}", o[k]) for k in DELAY_KINDS if k in o}))
        kw["override"] = tuple(ovs)
        return cls(**kw)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {k: getattr(self, k).to_dict() for k in DELAY_KINDS}
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
            check_integer("trigger.count", self.count, low=1)
        elif need is not None:
            check_number(f"trigger.{need}", getattr(self, need), low=0.0, strict=True)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TriggerConfig:
        check_keys("trigger", d, ("kind", "count", "rate", "period"))
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
            check_integer("horizon.steps", self.steps, low=1)
        t = check_number("horizon.time", self.time, low=0.0, strict=True, allow_inf=True)
        object.__setattr__(self, "time", t)
        require(self.steps is not None or math.isfinite(t), "horizon", self.to_dict(),
                "needs a finite `steps` or a finite `time`")

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> HorizonConfig:
        check_keys("horizon", d, ("steps", "time"))
        require("steps" in d or "time" in d, "horizon", dict(d),
                "needs `steps` or `time` (or both)")
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

        check_integer("record.every", self.every, low=1)
        require(isinstance(self.metrics, (list, tuple)), "record.metrics", self.metrics,
                "must be a list of metric names")
        for m in self.metrics:
            require(m in METRICS, "record.metrics", m, f"must be one of {list(METRICS)}")
        require(len(set(self.metrics)) == len(self.metrics), "record.metrics",
                list(self.metrics), "must not repeat a name")
        object.__setattr__(self, "metrics", tuple(self.metrics))
        if self.maml_alpha is not None:
            check_number("record.maml_alpha", self.maml_alpha, low=0.0)
        if self.me_lam is not None:
            check_number("record.me_lam", self.me_lam, low=0.0, strict=True)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RecordConfig:
        check_keys("record", d, ("every", "metrics", "maml_alpha", "me_lam"))
        return cls(**dict(d))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"every": self.every, "metrics": list(self.metrics)}
        if self.maml_alpha is not None:
            out["maml_alpha"] = self.maml_alpha
        if self.me_lam is not None:
            out["me_lam"] = self.me_lam
        return out
