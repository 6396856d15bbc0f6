"""Synchronous FedAvg; Per-FedAvg (``client_rule = "maml"``) and pFedMe (``"moreau"``)
are the same server with another client rule (:class:`fedsim.servers.fedavg.FedAvgRule`);
keys ``participation`` (r in (0, 1]), ``beta``."""

from __future__ import annotations

from fedsim.algorithms.base import Algorithm
from fedsim.algorithms.fedasync import PERSONAL_RULES
from fedsim.errors import check_number, require
from fedsim.servers.fedavg import FedAvgRule

__all__ = ["FEDAVG"]


def _validate(cfg) -> None:
    if cfg.participation is not None:
        p = check_number("algorithm.participation", cfg.participation, low=0.0, strict=True)
        require(p <= 1.0, "algorithm.participation", p, "must be <= 1")
    if cfg.beta is not None:
        check_number("algorithm.beta", cfg.beta, low=0.0)


FEDAVG = Algorithm(
    name="fedavg", client_rules=PERSONAL_RULES, runners={"physical": "sync"},
    server=lambda cfg, problem: FedAvgRule(float(cfg.get("beta"))),
    section={"participation": 1.0, "beta": 1.0}, validate=_validate, doc=__doc__)
