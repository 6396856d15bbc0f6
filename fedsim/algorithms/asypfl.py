"""AsyPFL (Ma, Lu, Li, Cui 2022, Algorithm 1): eq. (4) and adaptive local epochs
``E_k = pi_k E`` (:class:`fedsim.servers.asypfl.AsyPFLServerRule`); its client rule
``asypfl`` holds the keys ``E``, ``eta``, ``delta``, ``gamma``, ``lam``, ``batch``."""

from __future__ import annotations

from fedsim.algorithms.base import Algorithm
from fedsim.servers.asypfl import AsyPFLServerRule, client_weights

__all__ = ["ASYPFL"]

ASYPFL = Algorithm(
    name="asypfl", client_rules=("asypfl",), runners={"physical": "asypfl"},
    server=lambda cfg, problem: AsyPFLServerRule(client_weights(problem), int(cfg.get("E"))),
    section={}, step_per_upload=True, doc=__doc__)
