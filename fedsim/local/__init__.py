"""Client update rules (pure NumPy, no SimPy): one module per algorithm.

* :mod:`fedsim.local.sgd`    -- [P] Option A (local SGD); also AREA's and AS-FedAvg's steps;
* :mod:`fedsim.local.maml`   -- [P] Option B (MAML, FO-MAML, HF-MAML);
* :mod:`fedsim.local.moreau` -- [P] Option C (Moreau envelope, inexact inner solve);
* :mod:`fedsim.local.area`   -- [A] Algorithm 2 (memory y_i, message x^M - y_i);
* :mod:`fedsim.local.asypfl` -- AsyPFL Algorithm 1 ClientUpdate (local model omega_k and
  persistent personal model beta_k; its ``round`` also takes ``beta``, ``tau`` and ``E``).

One shape (:mod:`fedsim.local.base`, optax style): ``init(w0) -> state`` and
``update(i, w_read, out, rng, state) -> (out, state)``.  Behind it every rule offers
``round(i, w0, out, rng, eta=None)`` (the Q steps of one round, written into ``out``) and
``step(i, w, rng, eta=None)`` (one step in place); for the same stream both give
bit-identical iterates.  MAML and Moreau share their ``round`` (:class:`StepRule`).
"""

from __future__ import annotations

from typing import Any

from fedsim.local.area import AreaClients
from fedsim.local.asypfl import AsyPFLRule
from fedsim.local.base import StepRule
from fedsim.local.maml import MAMLRule
from fedsim.local.moreau import MoreauRule
from fedsim.local.sgd import SGDRule

__all__ = ["StepRule", "SGDRule", "MAMLRule", "MoreauRule", "AreaClients", "AsyPFLRule",
           "make_client_rule"]


def make_client_rule(alg: Any, problem: Any):
    """The local rule of an :class:`fedsim.config.AlgorithmConfig` on ``problem``."""
    rule = alg.client_rule
    g = alg.get
    if rule in ("sgd", "upload"):
        return SGDRule(problem, g("eta"), g("Q"), g("batch"))
    if rule == "area":
        return SGDRule(problem, 0.0, g("M"), g("batch"))
    if rule in ("maml", "fomaml", "hfmaml"):
        return MAMLRule(problem, g("eta"), g("Q"), g("batch"), float(alg.alpha), rule,
                        g("hf_delta"), batch_inner=getattr(alg, "batch_inner", None),
                        batch_hess=getattr(alg, "batch_hess", None))
    if rule == "moreau":
        L = None
        if g("inner_solver") == "gd":
            L = float(problem.constants["L"].value)
        return MoreauRule(problem, g("eta"), g("Q"), g("batch"), g("lam"), g("nu"),
                          g("inner_max_iter"), g("inner_solver"), L)
    if rule == "asypfl":
        return AsyPFLRule(problem, g("eta"), g("delta"), g("gamma"), g("lam"), g("batch"))
    raise ValueError(rule)  # pragma: no cover - config validates client_rule
