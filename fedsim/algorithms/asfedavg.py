"""AS-FedAvg of [A]'s experiments: buffered average of uploaded models
(:class:`fedsim.servers.asfedavg.ASFedAvgServer`); keys ``buffer``, ``beta``."""

from __future__ import annotations

from fedsim.algorithms.base import Algorithm
from fedsim.errors import check_integer, check_number
from fedsim.servers.asfedavg import ASFedAvgServer

__all__ = ["ASFEDAVG"]


def _validate(cfg) -> None:
    if cfg.buffer is not None:
        check_integer("algorithm.buffer", cfg.buffer, low=1)
    if cfg.beta is not None:
        check_number("algorithm.beta", cfg.beta, low=0.0)


ASFEDAVG = Algorithm(
    name="asfedavg", client_rules=("upload",),
    runners={"physical": "physical", "expcycle": "physical"},
    server=lambda cfg, problem: ASFedAvgServer(problem.dim, float(cfg.get("beta"))),
    section={"buffer": 1, "beta": 1.0}, validate=_validate, doc=__doc__)
