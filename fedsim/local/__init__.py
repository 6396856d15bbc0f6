"""Client update rules (pure NumPy, no SimPy): one module per algorithm, one registry.

* :mod:`fedsim.local.sgd`    -- [P] Option A (local SGD); also AREA's and AS-FedAvg's steps;
* :mod:`fedsim.local.maml`   -- [P] Option B (MAML, FO-MAML, HF-MAML);
* :mod:`fedsim.local.moreau` -- [P] Option C (Moreau envelope, inexact inner solve; the inner
  problem and its solvers in :mod:`fedsim.local.moreau_inner`);
* :mod:`fedsim.local.area`   -- [A] Algorithm 2 (memory y_i, message x^M - y_i);
* :mod:`fedsim.local.asypfl` -- AsyPFL Algorithm 1 ClientUpdate (local model omega_k and
  persistent personal model beta_k; its ``round`` also takes ``beta``, ``tau`` and ``E``);
* :mod:`fedsim.local.xie_prox` -- FedAsync's regularised local step (Xie et al. 2019, the
  authors' code's ``--rho``).

One shape (:mod:`fedsim.local.base`, optax style): ``init(w0) -> state`` and
``update(i, w_read, out, rng, state) -> (out, state)``.  Behind it every rule offers
``round(i, w0, out, rng, eta=None)`` (the Q steps of one round, written into ``out``) and
``step(i, w, rng, eta=None)`` (one step in place); for the same stream both give
bit-identical iterates.  MAML and Moreau share their ``round`` (:class:`StepRule`).

The registry (:mod:`fedsim.local.registry`): one line per rule below, name -> class + its
``[algorithm]`` keys.  To add a rule: give its class the three config class methods
(:class:`~fedsim.local.registry.ConfigRule`) and add one ``register_client_rule`` line.
"""

from __future__ import annotations

from typing import Any

from fedsim.local.area import AreaClients
from fedsim.local.asypfl import AsyPFLRule
from fedsim.local.base import StepRule
from fedsim.local.maml import MAMLRule
from fedsim.local.moreau import MoreauRule
from fedsim.local.registry import (
    ClientRuleSpec,
    client_rules,
    get_client_rule,
    register_client_rule,
    unregister_client_rule,
)
from fedsim.local.sgd import SGDRule
from fedsim.local.xie_prox import XieProxRule

__all__ = ["StepRule", "SGDRule", "MAMLRule", "MoreauRule", "AreaClients", "AsyPFLRule",
           "XieProxRule",
           "make_client_rule", "ClientRuleSpec", "register_client_rule",
           "unregister_client_rule", "get_client_rule", "client_rules"]

register_client_rule("sgd", SGDRule, ("Q", "eta", "batch"))
register_client_rule("maml", MAMLRule, ("Q", "eta", "batch", "alpha", "batch_inner", "batch_hess"))
register_client_rule("fomaml", MAMLRule, ("Q", "eta", "batch", "alpha", "batch_inner"))
register_client_rule("hfmaml", MAMLRule, ("Q", "eta", "batch", "alpha", "hf_delta",
                                            "batch_inner", "batch_hess"))
register_client_rule("moreau", MoreauRule, ("Q", "eta", "batch", "lam", "nu", "inner_max_iter",
                                            "inner_solver"))
register_client_rule("area", AreaClients, ("batch",))
register_client_rule("upload", SGDRule, ("Q", "eta", "batch"))
register_client_rule("asypfl", AsyPFLRule, ("E", "eta", "delta", "gamma", "lam", "batch"))
register_client_rule("xie_prox", XieProxRule, ("Q", "eta", "batch"))


def make_client_rule(alg: Any, problem: Any):
    """The local rule of an :class:`fedsim.config.AlgorithmConfig` on ``problem``."""
    return get_client_rule(alg.client_rule).build(alg, problem)
