"""Picky SGD (Cohen et al. 2021) as Koloskova et al. 2022 §4.4 describe its test: the server
applies a one-step SGD upload iff ``||w - w_read|| <= threshold``
(:class:`fedsim.servers.picky.PickyRule`).

Section: ``beta`` (>= 0, default 1), ``threshold`` (required in practice: the default
``inf`` never drops, which is plain asynchronous SGD).  Client rule ``sgd`` with ``Q = 1``;
execution model ``physical``; trigger ``every_upload``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fedsim.algorithms.async_sgd import one_sgd_step
from fedsim.algorithms.base import Algorithm, Section
from fedsim.errors import check_number
from fedsim.servers.picky import PickyRule

__all__ = ["PICKY_SGD", "PickySection"]


@dataclass(frozen=True)
class PickySection(Section):
    """``beta`` and ``threshold`` of :class:`PickyRule`."""

    beta: float = 1.0
    threshold: float = math.inf

    def validate(self) -> None:
        check_number("algorithm.beta", self.beta, low=0.0)
        check_number("algorithm.threshold", self.threshold, low=0.0, allow_inf=True)


PICKY_SGD = Algorithm(
    name="picky_sgd", client_rules=("sgd",), runners={"physical": "physical"},
    server=lambda cfg, problem: PickyRule(beta=float(cfg.get("beta")),
                                          threshold=float(cfg.get("threshold"))),
    section=PickySection, check=lambda s: one_sgd_step(s, "picky_sgd"),
    step_per_upload=True, doc=__doc__)
