"""FedBuff (Nguyen et al. 2022): buffered asynchronous aggregation with staleness weights
(:class:`fedsim.servers.fedbuff.FedBuffServer`); section keys ``buffer``, ``server_lr``,
``staleness_weight``, ``staleness_exponent``.  A buffer Delta > 1 implies the trigger
``every_k`` with count Delta (or a timer); ``expcycle`` needs an exponential cycle."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fedsim.algorithms import checks
from fedsim.algorithms.base import Algorithm, Section
from fedsim.algorithms.fedasync import PERSONAL_RULES
from fedsim.errors import check_choice, check_integer, check_number
from fedsim.servers.fedbuff import FedBuffServer

__all__ = ["FEDBUFF", "FedBuffSection", "STALENESS_WEIGHTS", "check_buffered"]

STALENESS_WEIGHTS = ("none", "inverse_sqrt", "polynomial")


@dataclass(frozen=True)
class FedBuffSection(Section):
    """Buffer size Delta, server learning rate, staleness weight and its exponent."""

    buffer: int = 1
    server_lr: float = 1.0
    staleness_weight: str = "none"
    staleness_exponent: float = 0.5

    def validate(self) -> None:
        check_integer("algorithm.buffer", self.buffer, low=1)
        check_number("algorithm.server_lr", self.server_lr, low=0.0)
        check_choice("algorithm.staleness_weight", self.staleness_weight, STALENESS_WEIGHTS)
        check_number("algorithm.staleness_exponent", self.staleness_exponent, low=0.0)


def check_buffered(scenario: Any) -> None:
    """The buffered algorithms' rules (FedBuff, AS-FedAvg)."""
    checks.buffered_trigger(scenario)
    if scenario.algorithm.model == "expcycle":
        checks.exp_cycle(scenario)


FEDBUFF = Algorithm(
    name="fedbuff", client_rules=PERSONAL_RULES,
    runners={"physical": "physical", "expcycle": "physical"},
    server=lambda cfg, problem: FedBuffServer(problem.dim, cfg.get("server_lr"),
                                              cfg.get("staleness_weight"),
                                              cfg.get("staleness_exponent")),
    section=FedBuffSection, check=check_buffered,
    default_trigger=checks.buffer_trigger_default, doc=__doc__)
