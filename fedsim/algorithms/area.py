"""AREA ([A] Algorithms 1-2): server aggregator ``u_s`` with global counter k
(:class:`fedsim.servers.area.AreaRule`); keys ``M`` (local steps), ``alpha`` (the step
schedule table: constant, ``c_over_k_plus_d`` or ``theorem7``).  Execution models
``algorithm`` and ``iterate_model`` (THEORY_SPEC 2.2)."""

from __future__ import annotations

from fedsim.algorithms.base import Algorithm
from fedsim.errors import check_integer
from fedsim.servers.area import AreaRule

__all__ = ["AREA"]


def _validate(cfg) -> None:
    if cfg.M is not None:
        check_integer("algorithm.M", cfg.M, low=1)


AREA = Algorithm(
    name="area", client_rules=("area",),
    runners={"algorithm": "area", "iterate_model": "area"},
    server=lambda cfg, problem: AreaRule(problem.n),
    section={"M": 1, "alpha": None}, validate=_validate, doc=__doc__)
