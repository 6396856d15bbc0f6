"""Option B of [P] Algorithm 2 (PersA-FL-MAML, lines 8-9; estimator [P] eq. (9)).

At each local step, three independent fresh batches D, D', D'' (drawn in that order from
the client's ``noise`` stream, THEORY_SPEC 2.1):

    ``g   = grad f_tilde_i(w - alpha grad f_tilde_i(w, D'), D)``
    ``dir = g - alpha grad^2 f_tilde_i(w, D'') g``                  (``"maml"``, exact HVP)
    ``dir = g``                                                     (``"fomaml"``, first order)
    ``dir = g - alpha [grad f_tilde_i(w + delta g, D'') - grad f_tilde_i(w - delta g, D'')]
            / (2 delta)``                                          (``"hfmaml"``)
    ``w  <- w - eta dir``

The Hessian-free difference follows Per-FedAvg (HF) (Fallah et al., eq. (119)), which
divides by ``2 delta``; [P]'s Appendix D (D1) prints ``/delta``, a typo (the quotient with
``delta`` is twice the Hessian-vector product).  FO-MAML draws only D and D'.

The three batch sizes may differ (Per-FedAvg, Fallah et al. 2020, Algorithm 1 and Sec. 5:
|D|, |D'|, |D''|): ``batch`` is |D|, ``batch_inner`` |D'| and ``batch_hess`` |D''|; both
default to ``batch``, which draws exactly as before.

On a problem with a fused kernel (``problem.fused_sgd``: softmax, binary logistic;
:mod:`fedsim.problems.fused_sgd`) the step draws D, D' and D'' with ONE
``rng.integers(0, m_i, size=|D| + |D'| + |D''|)`` (the indices, in that order, of the three
``sample_batch`` calls, and the same generator state after) and evaluates every
``batch_grad`` / ``batch_hvp`` with the kernel's bit-identical ``grad`` / ``hvp``; the
arithmetic between them is the expressions above, unchanged.
``fedsim.local.sgd._FUSED = False`` forces the per-call path (tests, benchmarks).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fedsim.errors import check_integer, check_number, require
from fedsim.local.base import StepRule
from fedsim.local.registry import ConfigRule
from fedsim.local.sgd import fused_kernel
from fedsim.problems.base import Problem

__all__ = ["MAMLRule"]


class MAMLRule(ConfigRule, StepRule):
    """[P] Option B local steps; ``variant`` is ``"maml"``, ``"fomaml"`` or ``"hfmaml"``."""

    DEFAULTS = {**ConfigRule.DEFAULTS, "hf_delta": 1e-3}

    @classmethod
    def check_config(cls, name: str, cfg: Any) -> None:
        """Q, eta, batch; ``alpha`` (the MAML inner step, required, >= 0); ``hf_delta``."""
        super().check_config(name, cfg)
        require(cfg.alpha is not None, "algorithm.alpha", None,
                f"(the MAML inner step) is required for client_rule {name!r}")
        check_number("algorithm.alpha", cfg.alpha, low=0.0)
        if cfg.hf_delta is not None:
            check_number("algorithm.hf_delta", cfg.hf_delta, low=0.0, strict=True)
        for key in ("batch_inner", "batch_hess"):  # |D'| and |D''| (default: batch)
            if getattr(cfg, key, None) is not None:
                check_integer(f"algorithm.{key}", getattr(cfg, key), low=1)

    @classmethod
    def from_config(cls, name: str, cfg: Any, problem: Problem) -> MAMLRule:
        """The rule of ``client_rule = name`` (``"maml"``, ``"fomaml"``, ``"hfmaml"``)."""
        g = cfg.get
        return cls(problem, g("eta"), g("Q"), g("batch"), float(cfg.alpha), name,
                   g("hf_delta"), batch_inner=getattr(cfg, "batch_inner", None),
                   batch_hess=getattr(cfg, "batch_hess", None))

    def __init__(self, problem: Problem, eta: float, Q: int, batch: int, alpha: float,
                 variant: str = "maml", hf_delta: float = 1e-3, *,
                 batch_inner: int | None = None, batch_hess: int | None = None) -> None:
        require(variant in ("maml", "fomaml", "hfmaml"), "algorithm.client_rule", variant,
                "must be 'maml', 'fomaml' or 'hfmaml'")
        require(math.isfinite(alpha) and alpha >= 0, "algorithm.alpha", alpha,
                "must be finite and >= 0")
        require(hf_delta > 0, "algorithm.hf_delta", hf_delta, "must be > 0")
        require(int(Q) == Q and Q >= 1, "algorithm.Q", Q, "must be an integer >= 1")
        self.problem = problem
        self.eta, self.Q, self.batch = float(eta), int(Q), int(batch)
        self.alpha, self.variant, self.hf_delta = float(alpha), variant, float(hf_delta)
        self.name = variant
        self.batch_inner = self.batch if batch_inner is None else int(batch_inner)
        self.batch_hess = self.batch if batch_hess is None else int(batch_hess)
        require(self.batch_inner >= 1 and self.batch_hess >= 1, "algorithm.batch_inner",
                (self.batch_inner, self.batch_hess), "batch_inner and batch_hess must be >= 1")
        self.fused = fused_kernel(problem, self.batch)

    def direction(self, i: int, w: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """The stochastic MAML gradient estimate at ``w`` ([P] eq. (9) or its variants)."""
        if self.fused is not None:
            return self._fused_direction(i, w, rng)
        p, a, b = self.problem, self.alpha, self.batch
        D = p.sample_batch(i, b, rng)
        D1 = p.sample_batch(i, self.batch_inner, rng)
        inner = w - a * p.batch_grad(i, w, D1)
        g = p.batch_grad(i, inner, D)
        if self.variant == "fomaml":
            return g
        D2 = p.sample_batch(i, self.batch_hess, rng)
        if self.variant == "maml":
            return g - a * p.batch_hvp(i, w, g, D2)
        dl = self.hf_delta
        hv = (p.batch_grad(i, w + dl * g, D2) - p.batch_grad(i, w - dl * g, D2)) / (2.0 * dl)
        return g - a * hv

    def _fused_direction(self, i: int, w: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """:meth:`direction` with one index draw per step and the kernel's ``grad``."""
        k, a, b, b1 = self.fused, self.alpha, self.batch, self.batch_inner
        first = self.variant == "fomaml"
        idx = rng.integers(0, k.m[i], size=b + b1 + (0 if first else self.batch_hess))
        D, D1, D2 = idx[:b], idx[b:b + b1], idx[b + b1:]
        inner = w - a * k.grad(i, w, D1)
        g = k.grad(i, inner, D)
        if first:
            return g
        if self.variant == "maml":
            return g - a * k.hvp(i, w, g, D2)
        dl = self.hf_delta
        hv = (k.grad(i, w + dl * g, D2) - k.grad(i, w - dl * g, D2)) / (2.0 * dl)
        return g - a * hv

    def step(self, i: int, w: np.ndarray, rng: np.random.Generator,
             eta: float | None = None) -> np.ndarray:
        """One local step in place."""
        eta = self.eta if eta is None else float(eta)
        w -= eta * self.direction(i, w, rng)
        return w
