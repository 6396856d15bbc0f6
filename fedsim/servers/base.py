"""The one shape of a server rule (FedJAX style) and what a client hands the server.

A server rule is an object with two methods:

* ``init(w0) -> state``: the server state before any upload (for FedAsync, FedBuff,
  AS-FedAvg and FedAvg the global model itself; AREA and AsyPFL keep more, see their
  modules);
* ``apply(state, uploads) -> (state, diagnostics)``: one server step consuming the
  uploads received since the previous step (a sequence of :class:`Upload`; AREA's
  aggregation step consumes none).  ``diagnostics`` is a small dict (``fill``: uploads
  consumed; rule specific extras).  Updates may happen in place for speed; the returned
  state is the one to use next.

The engine holds the uploads between steps (a buffer for the count and timer triggers)
and never looks inside a rule: it only calls ``init``/``apply`` and reads
:func:`model_of` for metrics.
"""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np

__all__ = ["Upload", "ServerRule", "model_of"]


class Upload:
    """One client upload: ``client``; ``read``, the server model it computed from;
    ``new``, its model after the local round (or, for AREA, its message ``m_i``);
    ``staleness``, server steps applied between the read and the arrival; ``extra``: rule
    specific measurements (AsyPFL's round times)."""

    __slots__ = ("client", "read", "new", "staleness", "extra")

    def __init__(self, client: int, read: np.ndarray | None, new: np.ndarray,
                 staleness: int = 0, extra: Any = None) -> None:
        self.client, self.read, self.new = client, read, new
        self.staleness, self.extra = staleness, extra


class ServerRule(Protocol):
    """``init(w0) -> state``; ``apply(state, uploads) -> (state, diagnostics)``."""

    def init(self, w0: np.ndarray) -> Any: ...

    def apply(self, state: Any, uploads: Any) -> tuple[Any, dict[str, Any]]: ...


def model_of(state: Any) -> np.ndarray:
    """The global model held by a server state (the state itself, or its ``w``)."""
    return state if isinstance(state, np.ndarray) else state.w
