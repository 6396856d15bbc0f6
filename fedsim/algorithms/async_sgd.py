"""Asynchronous SGD with delay-adaptive steps (Koloskova, Stich & Jaggi 2022, Algorithm 1
with eq. (11); the ``konstmish/asynchronous_sgd`` rule): one upload is one server step,
``w <- w - beta f(tau) (w_read - w_new)`` (:class:`fedsim.servers.delay_adaptive.
DelayAdaptiveRule`), the client one SGD step (``client_rule = "sgd"``, ``Q = 1``).

Section: ``beta`` (>= 0, default 1), ``tau_C`` (the concurrency of Definition 1, an integer
>= 1; with every client always busy it is the number of clients ``n``), ``step_rule``
(``koloskova``, ``koloskova_drop``, ``mishchenko``), ``schedule`` (the staleness file of
model ``recorded``).  Execution models: ``physical``; ``recorded`` (a per-step staleness
file replayed, :mod:`fedsim.engine.models.recorded`); ``uniform_assign`` (Koloskova's Algorithm 2
with concurrency ``tau_C``, :mod:`fedsim.engine.models.uniform_assign`).  The trigger is
``every_upload``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fedsim.algorithms import checks
from fedsim.algorithms.base import Algorithm, Section
from fedsim.errors import check_integer, check_number, require
from fedsim.servers.delay_adaptive import RULES, DelayAdaptiveRule

__all__ = ["ASYNC_SGD", "AsyncSGDSection", "one_sgd_step"]


@dataclass(frozen=True)
class AsyncSGDSection(Section):
    """``beta``, ``tau_C``, ``step_rule`` of :class:`DelayAdaptiveRule`."""

    beta: float = 1.0
    tau_C: int = 1
    step_rule: str = "koloskova"
    schedule: str = ""

    def validate(self) -> None:
        check_number("algorithm.beta", self.beta, low=0.0)
        check_integer("algorithm.tau_C", self.tau_C, low=1)
        require(self.step_rule in RULES, "algorithm.step_rule", self.step_rule,
                f"must be one of {list(RULES)}")


def one_sgd_step(scenario: Any, name: str) -> None:
    """Every upload is one server step and the client takes one SGD step (Q = 1)."""
    checks.every_upload(scenario, f"must be 'every_upload' for {name} (each upload is one "
                        "server step)")
    q = scenario.algorithm.get("Q")
    require(q == 1, "algorithm.Q", q, f"must be 1 for {name} (one stochastic gradient per "
            "upload: Koloskova et al. Algorithm 1 line 4)")


ASYNC_SGD = Algorithm(
    name="async_sgd", client_rules=("sgd",),
    runners={"physical": "physical", "recorded": "recorded",
             "uniform_assign": "uniform_assign"},
    server=lambda cfg, problem: DelayAdaptiveRule(beta=float(cfg.get("beta")),
                                                  tau_c=int(cfg.get("tau_C")),
                                                  rule=str(cfg.get("step_rule"))),
    section=AsyncSGDSection, check=lambda s: one_sgd_step(s, "async_sgd"),
    step_per_upload=True, doc=__doc__)
