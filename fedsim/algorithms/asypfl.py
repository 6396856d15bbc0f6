"""AsyPFL (Ma, Lu, Li, Cui 2022, Algorithm 1): eq. (4) and adaptive local epochs
``E_k = pi_k E`` (:class:`fedsim.servers.asypfl.AsyPFLServerRule`); its client rule
``asypfl`` holds the keys ``E``, ``eta``, ``delta``, ``gamma``, ``lam``, ``batch`` (no
server keys: an empty section).  Cross-field rules (:func:`_check`): one upload per server
step; one compute delay per local step; ``pi_k`` finite."""

from __future__ import annotations

from typing import Any

from fedsim.algorithms import checks
from fedsim.algorithms.base import Algorithm, Section
from fedsim.errors import require
from fedsim.servers.asypfl import AsyPFLServerRule, client_weights

__all__ = ["ASYPFL"]


def _check(scenario: Any) -> None:
    """AsyPFL (fedsim.engine.models.asypfl): one upload per server step (eq. (4)); one compute
    delay per local step (DeltaT^g); pi_k = DeltaT^c/(DeltaT^g p^k pi_min) finite."""
    dl = scenario.delays
    checks.every_upload(scenario, "must be 'every_upload' for asypfl (each upload is one "
                        "server step, eq. (4))")
    require(dl.compute_per == "step", "delays.compute_per", dl.compute_per,
            "must be 'step' for asypfl (DeltaT^g is the time of one local update and "
            "E_k = pi_k E varies)")
    silent = []
    for i in range(scenario.problem.n):
        dd = dl.for_client(i)
        require(not checks.is_zero(dd["compute"]), "delays.compute", dd["compute"].to_dict(),
                f"must not be constant 0 for asypfl (client {i}: pi_k divides by "
                "DeltaT^g)")
        silent.append(checks.is_zero(dd["download"]) and checks.is_zero(dd["upload"]))
    require(all(silent) or not any(silent), "delays",
            {"zero_communication_clients": [i for i, s in enumerate(silent) if s]},
            "must make download and upload constant 0 for every client or for none "
            "with asypfl (pi_min = 0 would make pi_k = DeltaT^c/(DeltaT^g p^k pi_min) "
            "infinite)")


ASYPFL = Algorithm(
    name="asypfl", client_rules=("asypfl",), runners={"physical": "asypfl"},
    server=lambda cfg, problem: AsyPFLServerRule(client_weights(problem), int(cfg.get("E"))),
    section=Section, check=_check, step_per_upload=True, doc=__doc__)
