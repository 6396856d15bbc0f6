"""Synchronous FedAvg; Per-FedAvg (``client_rule = "maml"``) and pFedMe (``"moreau"``)
are the same server with another client rule (:class:`fedsim.servers.fedavg.FedAvgRule`);
section keys ``participation`` (r in (0, 1]), ``beta``.  Rounds are synchronous: the
trigger and the think time are not used (defaults only)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fedsim.algorithms import checks
from fedsim.algorithms.base import Algorithm, Section
from fedsim.algorithms.fedasync import PERSONAL_RULES
from fedsim.errors import check_number, require
from fedsim.servers.fedavg import FedAvgRule

__all__ = ["FEDAVG", "FedAvgSection"]


@dataclass(frozen=True)
class FedAvgSection(Section):
    """Participation r (r*n clients per round, rounded, at least 1) and server mixing."""

    participation: float = 1.0
    beta: float = 1.0

    def validate(self) -> None:
        p = check_number("algorithm.participation", self.participation, low=0.0, strict=True)
        require(p <= 1.0, "algorithm.participation", p, "must be <= 1")
        check_number("algorithm.beta", self.beta, low=0.0)


def _check(scenario: Any) -> None:
    checks.every_upload(scenario, "is not used by synchronous fedavg (leave the default)")
    for i in range(scenario.problem.n):
        th = scenario.delays.for_client(i)["think"]
        require(checks.is_zero(th), "delays.think", th.to_dict(),
                "is not used by synchronous fedavg (must be constant 0)")


FEDAVG = Algorithm(
    name="fedavg", client_rules=PERSONAL_RULES, runners={"physical": "sync"},
    server=lambda cfg, problem: FedAvgRule(float(cfg.get("beta"))),
    section=FedAvgSection, check=_check, doc=__doc__)
