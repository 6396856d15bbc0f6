"""``Scenario``: the whole tree; its cross-field rules are the registered algorithm's
``check(scenario)`` hook (plus the override indices here).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from fedsim.config.algorithm import AlgorithmConfig
from fedsim.config.problem import ProblemConfig
from fedsim.config.runtime import (
    DelaysConfig,
    HorizonConfig,
    RecordConfig,
    TriggerConfig,
)
from fedsim.config.schema import ALGORITHMS, check_keys
from fedsim.errors import ConfigError, require

__all__ = ["Scenario"]


#: the type of each section field
_PARTS = {"problem": ProblemConfig, "algorithm": AlgorithmConfig, "delays": DelaysConfig,
          "trigger": TriggerConfig, "horizon": HorizonConfig, "record": RecordConfig}
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
        for name, kind in _PARTS.items():  # Scenario(problem="quadratic"): one line
            value = getattr(self, name)
            require(isinstance(value, kind), name, value,
                    f"must be a {kind.__name__} (a dict goes through Scenario.from_dict)")
        require(isinstance(self.seed, int) and not isinstance(self.seed, bool) and self.seed >= 0,
                "seed", self.seed,
                "must be a non-negative integer")
        require(isinstance(self.name, str), "name", self.name, "must be a string")
        self._check_consistency()
        from fedsim.config.budget import check_budget

        check_budget(self)

    def _check_consistency(self) -> None:
        """Cross-field rules: the client indices of the overrides here; every rule that
        depends on the algorithm is its own ``check(scenario)`` hook
        (``fedsim/algorithms/<name>.py``)."""
        n = self.problem.n
        for j, ov in enumerate(self.delays.override):
            for c in ov.clients:
                require(c < n, f"delays.override[{j}].clients", c,
                        f"must be a client index < n = {n}")
        spec = ALGORITHMS[self.algorithm.name]
        if spec.check is not None:
            spec.check(self)
        self._check_time_advances(spec)

    def _check_time_advances(self, spec: Any) -> None:
        """A run with a time horizon and no step horizon must let simulated time advance:
        a client whose download, compute, upload and think delays are all 0 with
        probability 1 (upper end of every support 0) makes an asynchronous run loop at time
        0 forever; a synchronous run loops when every client does.  Refused with the reason
        (the window model counts time in steps and has no delays)."""
        if (self.horizon.steps is not None
                or self.algorithm.get("model") in getattr(spec, "timeless_modes", ())):
            return
        zero = [all(float(d.upper) == 0.0 for d in self.delays.for_client(i).values())
                for i in range(self.n)]
        sync = bool(getattr(spec, "synchronous", False))
        stuck = all(zero) if sync else any(zero)
        if stuck:
            who = "every client" if all(zero) else f"client {zero.index(True)}"
            raise ConfigError(
                f"horizon.time = {self.horizon.time:g} cannot be reached: the delays of {who} "
                "are all 0 (download, compute, upload and think), so simulated time never "
                "advances; give positive delays or a horizon.steps")

    @property
    def n(self) -> int:
        return self.problem.n

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Scenario:
        check_keys("", d, _SECTIONS)
        require("problem" in d, "problem", None, "is required")
        kw: dict[str, Any] = {"problem": ProblemConfig.from_dict(d["problem"])}
        if "algorithm" in d:
            kw["algorithm"] = AlgorithmConfig.from_dict(d["algorithm"])
        if "delays" in d:
            kw["delays"] = DelaysConfig.from_dict(d["delays"])
        if "trigger" in d:
            kw["trigger"] = TriggerConfig.from_dict(d["trigger"])
        elif "algorithm" in d:
            spec = ALGORITHMS[kw["algorithm"].name]
            implied = spec.default_trigger(kw["algorithm"]) if spec.default_trigger else None
            if implied is not None:
                kw["trigger"] = TriggerConfig(**implied)
        require("horizon" in d, "horizon", None,
                "is required: give [horizon] steps = T and/or time = t (a scenario file "
                "without it used to run 100 steps silently)")
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

    def replace(self, changes: Mapping[str, Any] | None = None, /, **fields: Any) -> Scenario:
        """A copy with some values changed, checked by the same schema as a scenario file.

        ``changes`` maps dotted keys to values (``{"algorithm.eta": 0.05, "problem.n": 20}``);
        keyword arguments are top-level keys (``seed=3``, ``name="b"``, or a whole table:
        ``horizon={"steps": 50}``).  A table value replaces the table.  An unknown key or a
        bad value raises a ConfigError naming the dotted key
        (:mod:`fedsim.config.overrides`)."""
        from fedsim.config.overrides import apply_overrides

        return apply_overrides(self, {**(changes or {}), **fields})

    def with_seed(self, seed: int) -> Scenario:
        """A copy with another run seed."""
        return replace(self, seed=seed)
