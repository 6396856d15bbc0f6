"""FedAsync's server mixing (Xie, Koyejo & Gupta 2019) with local SGD clients: one upload
is one server step, ``x <- (1 - alpha_t) x + alpha_t x_new``, ``alpha_t = alpha s(t - tau)``
(:class:`fedsim.servers.fedasync_xie.XieMixRule`).  The clients run fedsim's local SGD
(``client_rule = "sgd"``, Option A, the default), or Xie's regularised local problem
``f_i + (rho/2) ||x - x_read||^2`` (``client_rule = "xie_prox"`` with ``rho > 0``:
:mod:`fedsim.local.xie_prox`, the authors' code's ``--rho``, which is ``eta * rho``;
``docs/theory/xie-2019.md``).  ``rho = 0`` is local SGD, bit for bit.  fedsim's
``fedasync`` stays PersA-FL's Option A.

Section: ``alpha`` (in [0, 1], default 0.6), ``staleness`` (``constant``, ``polynomial``,
``hinge``), ``a`` (>= 0, default 0.5), ``b`` (>= 0, default 4), ``rho`` (>= 0, default 0;
``rho > 0`` needs ``client_rule = "xie_prox"``).  Execution model ``physical``; trigger
``every_upload``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fedsim.algorithms import checks
from fedsim.algorithms.base import Algorithm, Section
from fedsim.errors import check_number, require
from fedsim.servers.fedasync_xie import STALENESS, XieMixRule

__all__ = ["FEDASYNC_XIE", "XieSection"]


@dataclass(frozen=True)
class XieSection(Section):
    """``alpha``, ``staleness``, ``a``, ``b`` of :class:`XieMixRule`; ``rho`` of the
    ``xie_prox`` client rule."""

    alpha: float = 0.6
    staleness: str = "constant"
    a: float = 0.5
    b: float = 4.0
    rho: float = 0.0

    def validate(self) -> None:
        check_number("algorithm.alpha", self.alpha, low=0.0, high=1.0)
        require(self.staleness in STALENESS, "algorithm.staleness", self.staleness,
                f"must be one of {list(STALENESS)}")
        check_number("algorithm.a", self.a, low=0.0)
        check_number("algorithm.b", self.b, low=0.0)
        check_number("algorithm.rho", self.rho, low=0.0)


def _check(scenario: Any) -> None:
    """Each upload is one server step; ``rho > 0`` is the ``xie_prox`` client's."""
    checks.every_upload(scenario, "must be 'every_upload' for fedasync_xie (each upload is "
                        "one server step)")
    alg = scenario.algorithm
    if alg.get("rho") > 0:
        require(alg.client_rule == "xie_prox", "algorithm.client_rule", alg.client_rule,
                "must be 'xie_prox' when algorithm.rho > 0 (Xie's regularised local step)")


FEDASYNC_XIE = Algorithm(
    name="fedasync_xie", client_rules=("sgd", "xie_prox"), runners={"physical": "physical"},
    server=lambda cfg, problem: XieMixRule(alpha=float(cfg.get("alpha")),
                                           staleness=str(cfg.get("staleness")),
                                           a=float(cfg.get("a")), b=float(cfg.get("b"))),
    section=XieSection,
    check=_check,
    step_per_upload=True, doc=__doc__)
