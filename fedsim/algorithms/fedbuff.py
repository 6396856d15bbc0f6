"""FedBuff (Nguyen et al. 2022): buffered asynchronous aggregation with staleness weights
(:class:`fedsim.servers.fedbuff.FedBuffServer`); keys ``buffer``, ``server_lr``,
``staleness_weight``, ``staleness_exponent``."""

from __future__ import annotations

from fedsim.algorithms.base import Algorithm
from fedsim.algorithms.fedasync import PERSONAL_RULES
from fedsim.errors import check_choice, check_integer, check_number
from fedsim.servers.fedbuff import FedBuffServer

__all__ = ["FEDBUFF", "STALENESS_WEIGHTS"]

STALENESS_WEIGHTS = ("none", "inverse_sqrt", "polynomial")


def _validate(cfg) -> None:
    if cfg.buffer is not None:
        check_integer("algorithm.buffer", cfg.buffer, low=1)
    if cfg.server_lr is not None:
        check_number("algorithm.server_lr", cfg.server_lr, low=0.0)
    if cfg.staleness_weight is not None:
        check_choice("algorithm.staleness_weight", cfg.staleness_weight, STALENESS_WEIGHTS)
    if cfg.staleness_exponent is not None:
        check_number("algorithm.staleness_exponent", cfg.staleness_exponent, low=0.0)


FEDBUFF = Algorithm(
    name="fedbuff", client_rules=PERSONAL_RULES,
    runners={"physical": "physical", "expcycle": "physical"},
    server=lambda cfg, problem: FedBuffServer(problem.dim, cfg.get("server_lr"),
                                              cfg.get("staleness_weight"),
                                              cfg.get("staleness_exponent")),
    section={"buffer": 1, "server_lr": 1.0, "staleness_weight": "none",
             "staleness_exponent": 0.5},
    validate=_validate, doc=__doc__)
