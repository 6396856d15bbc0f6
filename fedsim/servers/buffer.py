"""The buffered average FedBuff and AS-FedAvg share (one home for their ``apply``).

Both servers add each upload's message to an accumulator ``acc`` (in arrival order,
starting from 0) and, when the trigger fires, take ``mean = acc / fill`` and mix it into
the model by a rule of their own, then empty the buffer.  The step is written once,
compiled: :func:`buffered_apply_for` ``(message, mix)`` binds a rule's ``message(out,
read, new, tau, fp)`` (what one upload adds; :mod:`fedsim.servers.fedbuff`,
:mod:`fedsim.servers.asfedavg`) and ``mix(w, mean, fp)`` and returns the step in the
replay's uniform shape ``apply(S, clients, reads, news, k, stale, kind, fp, cnt) -> fill``
(:mod:`fedsim.engine.replay.kernel`; ``S`` rows: 0 the model, 1 the accumulator, 2 the
message scratch).  :class:`BufferedAverage` is the server-rule shape
(:mod:`fedsim.servers.base`): ``apply(state, uploads)`` stacks the uploads and calls the
same compiled step.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import numpy as np

from fedsim.jit import jit
from fedsim.local.forms import ServerForm, tag_closure
from fedsim.servers.base import Upload

__all__ = ["BufferedAverage", "buffered_apply_for", "S_ROWS"]

#: server state rows of a buffered rule: the model, the accumulator, a message scratch
S_ROWS = 3


def _buffered_src(message: Any, mix: Any) -> Any:
    def buffered_apply(S, clients, reads, news, k, stale, kind, fp, cnt):
        if k == 0:
            return 0
        w, acc, msg = S[0], S[1], S[2]
        d = w.shape[0]
        for m in range(d):
            acc[m] = 0.0
        for c in range(k):
            message(msg, reads[c], news[c], stale[c], fp)
            for m in range(d):
                acc[m] = acc[m] + msg[m]
        kf = float(k)
        for m in range(d):
            acc[m] = acc[m] / kf
        mix(w, acc, fp)
        return k
    return buffered_apply


@functools.cache
def buffered_apply_for(message: Any, mix: Any) -> Any:
    """The buffered server step for ``message``/``mix`` (module docstring): ``acc = 0 +
    msg_1 + ... + msg_k`` in arrival order, ``mean = acc / k``, ``mix(w, mean)``; returns
    ``k`` (0: nothing buffered, nothing changes)."""
    return jit(cache=False, inline=True)(tag_closure(_buffered_src(message, mix), message, mix))


class BufferedAverage:
    """The server-rule shape of a buffered rule: subclasses set :attr:`step` (the compiled
    :func:`buffered_apply_for` of their :attr:`message` and mix) and :meth:`params`
    (their ``fp``).  ``add_upload``/``flush`` keep uploads between steps (tests and callers that
    buffer themselves); ``apply(state, uploads)`` is one step."""

    step: Any
    message: Any

    def __init__(self, dim: int) -> None:
        self.dim = int(dim)
        self._S = np.zeros((S_ROWS, self.dim))
        self._pending: list[tuple[np.ndarray, np.ndarray, int]] = []

    def params(self) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def fill(self) -> int:
        """Uploads in the buffer."""
        return len(self._pending)

    @property
    def acc(self) -> np.ndarray:
        """The sum of the buffered messages (0 when empty), in arrival order."""
        out, msg = np.zeros(self.dim), np.empty(self.dim)
        fp = self.params()
        for read, new, tau in self._pending:
            self.message(msg, read, new, tau, fp)
            out += msg
        return out

    def add_upload(self, read: np.ndarray, new: np.ndarray, tau: int = 0) -> None:
        """Buffer one upload (copies of its read and new models, its staleness)."""
        self._pending.append((np.array(read, dtype=np.float64),
                              np.array(new, dtype=np.float64), int(tau)))

    def flush(self, w: np.ndarray) -> int:
        """In place: one server step from the buffered uploads; empties the buffer; returns
        the fill."""
        k = self.fill
        self._run(w, [p[0] for p in self._pending], [p[1] for p in self._pending],
                  [p[2] for p in self._pending], [0] * k)
        self._pending.clear()
        return k

    def _run(self, w: np.ndarray, reads_in: list, news_in: list, taus: list,
             who: list) -> int:
        k, d = len(news_in), self.dim
        reads, news = np.zeros((max(k, 1), d)), np.zeros((max(k, 1), d))
        stale = np.zeros(max(k, 1), dtype=np.int64)
        clients = np.zeros(max(k, 1), dtype=np.int32)
        for c in range(k):
            if reads_in[c] is not None:
                reads[c] = reads_in[c]
            news[c] = news_in[c]
            stale[c] = taus[c]
            clients[c] = who[c]
        S = self._S
        S[0] = w
        fill = self.step(S, clients, reads, news, k, stale, 0, self.params(),
                         np.zeros(1, dtype=np.int64))
        w[:] = S[0]
        return int(fill)

    # the server-rule shape (fedsim.servers.base)
    def init(self, w0: np.ndarray) -> np.ndarray:
        return np.array(w0, dtype=np.float64)

    def apply(self, state: np.ndarray, uploads: Sequence[Upload]) -> tuple[np.ndarray,
                                                                            dict[str, Any]]:
        """Add the uploads in order and mix their mean into ``state`` (in place)."""
        fill = self._run(state, [u.read for u in uploads], [u.new for u in uploads],
                         [u.staleness for u in uploads], [u.client for u in uploads])
        return state, {"fill": fill}

    def replay_form(self) -> ServerForm:
        """This rule in the replay's uniform shape (:data:`S_ROWS` rows)."""
        return ServerForm(apply=self.step, s_rows=S_ROWS, fp=self.params())
