"""The stochastic oracles of a problem whose oracle is exact (sigma = 0).

A deterministic problem draws nothing: a batch is ``None`` and its gradient is the gradient
(``grad``), for every batch size.  :class:`NormProblem` (:mod:`fedsim.problems.nonsmooth`) and
the worst-case package's Gram interpolant (:mod:`fedsim.worstcase.interpolant_problem`) are
such problems; both take these two oracles from :class:`DeterministicProblem`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fedsim.problems.base import Problem

__all__ = ["DeterministicProblem"]


class DeterministicProblem(Problem):
    """A :class:`~fedsim.problems.base.Problem` with an exact oracle: :meth:`sample_batch`
    draws nothing and :meth:`batch_grad` is :meth:`grad` (module doc).  Subclasses implement
    the other oracles."""

    def sample_batch(self, i: int, size: int, rng: np.random.Generator) -> Any:
        """No randomness: the oracle is exact. Returns None and draws nothing."""
        return None

    def batch_grad(self, i: int, w: np.ndarray, batch: Any) -> np.ndarray:
        """``grad(i, w)``: the batch is ``None``."""
        return self.grad(i, w)
