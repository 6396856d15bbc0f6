"""The one shape of a client rule (optax style) and the round every step rule shares.

A client rule has ``init(w0) -> state`` (the client's own state between rounds: ``None``
for the stateless rules of [P] Options A-C; AsyPFL keeps a personal model) and
``update(i, w_read, out, rng, state) -> (out, state)``: one round of local steps from the
model read from the server, its result written into ``out``.  The kernels behind it are
``round(i, w0, out, rng, eta=None, Q=None)`` (Q steps) and ``step(i, w, rng, eta=None)``
(one step in place, used by the per-step reference engine); for the same stream both give
bit-identical iterates.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["StepRule"]


class StepRule:
    """A rule defined by its ``step``: ``round`` runs Q of them from ``w0`` into ``out``
    (MAML and Moreau rules; SGD has its own faster round)."""

    Q: int

    def step(self, i: int, w: np.ndarray, rng: np.random.Generator,
             eta: float | None = None) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def round(self, i: int, w0: np.ndarray, out: np.ndarray, rng: np.random.Generator,
              eta: float | None = None, Q: int | None = None) -> np.ndarray:
        """Q local steps from ``w0`` into ``out``."""
        if out is not w0:
            np.copyto(out, w0)
        for _ in range(self.Q if Q is None else Q):
            self.step(i, out, rng, eta)
        return out

    def init(self, w0: np.ndarray) -> Any:
        """Client state between rounds (none for a step rule)."""
        return None

    def update(self, i: int, w_read: np.ndarray, out: np.ndarray, rng: np.random.Generator,
               state: Any = None) -> tuple[np.ndarray, Any]:
        """One round from the model read (the optax-style ``update``)."""
        return self.round(i, w_read, out, rng), state
