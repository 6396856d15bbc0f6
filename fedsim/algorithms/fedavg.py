"""Synchronous FedAvg; Per-FedAvg (``client_rule = "maml"``) and pFedMe (``"moreau"``)
are the same server with another client rule (:class:`fedsim.servers.fedavg.FedAvgRule`);
section keys ``participation`` (r in (0, 1]), ``server_mix`` (the server mixing weight,
``w <- w + server_mix (mean - w)``, default 1 = the plain average) and ``beta``.

``beta`` is Per-FedAvg's beta (Fallah et al. 2020, Algorithm 1): the client's OUTER local
step ``w <- w - beta grad~F_i(w)``, which is the MAML rule's ``eta``; so ``beta`` is
accepted only with ``client_rule = "maml" | "fomaml" | "hfmaml"`` and only when ``eta`` is
not also given (it then sets the local step).  Before issue 14 ``beta`` was fedavg's
server mixing weight; no example or validation scenario set it (``grep beta examples
validation/scenarios``: only fedasync's server step), and every other use of the old
meaning (with ``sgd``/``moreau``, or with ``eta`` given) is a ConfigError naming
``algorithm.server_mix``.  Rounds are synchronous: the trigger and the think time are not
used (defaults only)."""

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
    server_mix: float = 1.0
    beta: float | None = None

    def validate(self) -> None:
        p = check_number("algorithm.participation", self.participation, low=0.0, strict=True)
        require(p <= 1.0, "algorithm.participation", p, "must be <= 1")
        check_number("algorithm.server_mix", self.server_mix, low=0.0)
        if self.beta is not None:
            check_number("algorithm.beta", self.beta, low=0.0)


MAML_RULES = ("maml", "fomaml", "hfmaml")


def _check(scenario: Any) -> None:
    a = scenario.algorithm
    if a.beta is not None:
        require(a.client_rule in MAML_RULES, "algorithm.beta", a.beta,
                "is Per-FedAvg's outer local step (client_rule maml/fomaml/hfmaml only); "
                "fedavg's server mixing weight is now algorithm.server_mix")
        require(a.eta is None, "algorithm.beta", a.beta,
                f"is Per-FedAvg's outer local step, the same as algorithm.eta = {a.eta!r}: "
                "give one of them (the server mixing weight is now algorithm.server_mix)")
    checks.every_upload(scenario, "is not used by synchronous fedavg (leave the default)")
    for i in range(scenario.problem.n):
        th = scenario.delays.for_client(i)["think"]
        require(checks.is_zero(th), "delays.think", th.to_dict(),
                "is not used by synchronous fedavg (must be constant 0)")


FEDAVG = Algorithm(
    name="fedavg", client_rules=PERSONAL_RULES, runners={"physical": "sync"},
    synchronous=True,
    server=lambda cfg, problem: FedAvgRule(float(cfg.get("server_mix"))),
    section=FedAvgSection, check=_check, aliases={"eta": "beta"}, doc=__doc__)
