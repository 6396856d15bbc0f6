"""FedAsync / PersA-FL ([P] Algorithms 1-2): one upload is one server step,
``w <- w - beta Delta`` (:class:`fedsim.servers.fedasync.FedAsyncRule`).

Client rules: Option A (``sgd``), B (``maml``, ``fomaml``, ``hfmaml``: PersA-FL-MAML), C
(``moreau``: PersA-FL-ME).  Execution models: ``physical`` (the callback hot path),
``window`` (THEORY_SPEC 10.2(a), keys ``tau``, ``delay_pmf``), ``expcycle`` (10.2(b)).
Section: ``beta`` (server step, >= 0, default 1).  Cross-field rules: the trigger is
``every_upload``; ``window`` needs ``horizon.steps``; ``expcycle`` an exponential cycle.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fedsim.algorithms import checks
from fedsim.algorithms.base import Algorithm, Section
from fedsim.errors import check_number
from fedsim.servers.fedasync import FedAsyncRule

__all__ = ["FEDASYNC", "FedAsyncSection", "PERSONAL_RULES"]

PERSONAL_RULES = ("sgd", "maml", "fomaml", "hfmaml", "moreau")


@dataclass(frozen=True)
class FedAsyncSection(Section):
    """``beta``: the server step of ``w <- w - beta Delta`` ([P] Algorithm 1)."""

    beta: float = 1.0

    def validate(self) -> None:
        check_number("algorithm.beta", self.beta, low=0.0)


def _check(scenario: Any) -> None:
    checks.every_upload(scenario, "must be 'every_upload' for fedasync (each upload is one "
                        "server step)")
    if scenario.algorithm.model == "expcycle":
        checks.exp_cycle(scenario)
    if scenario.algorithm.model == "window":
        checks.window_config(scenario)
        checks.window_horizon(scenario)


FEDASYNC = Algorithm(
    name="fedasync", client_rules=PERSONAL_RULES,
    runners={"physical": "physical", "window": "window", "expcycle": "physical"},
    server=lambda cfg, problem: FedAsyncRule(problem.dim, float(cfg.get("beta"))),
    section=FedAsyncSection, check=_check, step_per_upload=True,
    mode_keys={"window": ("tau", "delay_pmf")}, timeless_modes=("window",), doc=__doc__)
