"""``Scenario``: the whole tree, its cross-field rules (``_check_consistency``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from fedsim.config.algorithm import AlgorithmConfig, StepSchedule
from fedsim.config.problem import ProblemConfig
from fedsim.config.runtime import (
    DelaysConfig,
    HorizonConfig,
    RecordConfig,
    TriggerConfig,
)
from fedsim.config.schema import check_keys
from fedsim.errors import require

__all__ = ["Scenario"]


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
        require(isinstance(self.seed, int) and not isinstance(self.seed, bool) and self.seed >= 0,
                "seed", self.seed,
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
        """AsyPFL (fedsim.engine.asypfl): one upload per server step (eq. (4)); one compute
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
        check_keys("", d, _SECTIONS)
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
