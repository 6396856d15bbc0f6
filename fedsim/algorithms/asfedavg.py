"""AS-FedAvg of [A]'s experiments: buffered average of uploaded models
(:class:`fedsim.servers.asfedavg.ASFedAvgServer`); section keys ``buffer``, ``beta``
(server mixing); the buffered rules of FedBuff."""

from __future__ import annotations

from dataclasses import dataclass

from fedsim.algorithms import checks
from fedsim.algorithms.base import Algorithm, Section
from fedsim.algorithms.fedbuff import check_buffered
from fedsim.errors import check_integer, check_number
from fedsim.servers.asfedavg import ASFedAvgServer

__all__ = ["ASFEDAVG", "ASFedAvgSection"]


@dataclass(frozen=True)
class ASFedAvgSection(Section):
    """Buffer size Delta and the server mixing weight."""

    buffer: int = 1
    beta: float = 1.0

    def validate(self) -> None:
        check_integer("algorithm.buffer", self.buffer, low=1)
        check_number("algorithm.beta", self.beta, low=0.0)


ASFEDAVG = Algorithm(
    name="asfedavg", client_rules=("upload",),
    runners={"physical": "physical", "expcycle": "physical"},
    server=lambda cfg, problem: ASFedAvgServer(problem.dim, float(cfg.get("beta"))),
    section=ASFedAvgSection, check=check_buffered,
    default_trigger=checks.buffer_trigger_default, doc=__doc__)
