"""FedAsync / PersA-FL ([P] Algorithms 1-2): one upload is one server step,
``w <- w - beta Delta`` (:class:`fedsim.servers.fedasync.FedAsyncRule`).

Client rules: Option A (``sgd``), B (``maml``, ``fomaml``, ``hfmaml``: PersA-FL-MAML), C
(``moreau``: PersA-FL-ME).  Execution models: ``physical`` (the callback hot path),
``window`` (THEORY_SPEC 10.2(a), keys ``tau``, ``delay_pmf``), ``expcycle`` (10.2(b)).
"""

from __future__ import annotations

from fedsim.algorithms.base import Algorithm
from fedsim.errors import check_number
from fedsim.servers.fedasync import FedAsyncRule

__all__ = ["FEDASYNC"]

PERSONAL_RULES = ("sgd", "maml", "fomaml", "hfmaml", "moreau")


def _validate(cfg) -> None:
    if cfg.beta is not None:
        check_number("algorithm.beta", cfg.beta, low=0.0)


FEDASYNC = Algorithm(
    name="fedasync", client_rules=PERSONAL_RULES,
    runners={"physical": "fedasync_fast", "window": "window", "expcycle": "fedasync_fast"},
    server=lambda cfg, problem: FedAsyncRule(problem.dim, float(cfg.get("beta"))),
    section={"beta": 1.0}, validate=_validate, step_per_upload=True, doc=__doc__)
