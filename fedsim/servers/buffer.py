"""The buffered average FedBuff and AS-FedAvg share (one home for their ``apply``).

Both servers add each upload's message to an accumulator ``acc`` (in arrival order,
starting from 0) and, when the trigger fires, take ``mean = acc / fill`` and mix it into
the model by a rule of their own (:meth:`BufferedAverage.mix`), then empty the buffer.
``add``/``flush`` are the kernels; ``apply(state, uploads)`` is the server-rule shape
(:mod:`fedsim.servers.base`): it adds the uploads in order and flushes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from fedsim.servers.base import Upload

__all__ = ["BufferedAverage"]


class BufferedAverage:
    """Accumulator ``acc``, ``fill`` and the flush; subclasses define :meth:`message`
    (what an upload adds) and :meth:`mix` (how the mean enters ``w``)."""

    def __init__(self, dim: int) -> None:
        self.acc = np.zeros(dim)
        self.fill = 0
        self._tmp = np.empty(dim)
        self._msg = np.empty(dim)

    def mix(self, w: np.ndarray, mean: np.ndarray) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def message(self, u: Upload) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def add_message(self, msg: np.ndarray) -> None:
        """``acc += msg``; one more upload in the buffer."""
        np.add(self.acc, msg, out=self.acc)
        self.fill += 1

    def flush(self, w: np.ndarray) -> int:
        """In place: mix ``acc / fill`` into ``w``; empties the buffer; returns the fill."""
        k = self.fill
        if k == 0:
            return 0
        np.divide(self.acc, float(k), out=self._tmp)
        self.mix(w, self._tmp)
        self.acc.fill(0.0)
        self.fill = 0
        return k

    # the server-rule shape (fedsim.servers.base)
    def init(self, w0: np.ndarray) -> np.ndarray:
        return np.array(w0, dtype=np.float64)

    def apply(self, state: np.ndarray, uploads: Sequence[Upload]) -> tuple[np.ndarray,
                                                                            dict[str, Any]]:
        for u in uploads:
            self.add_message(self.message(u))
        return state, {"fill": self.flush(state)}
