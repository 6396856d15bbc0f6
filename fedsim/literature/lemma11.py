"""Koloskova, Stich & Jaggi 2022, Lemma 11 (§5.4): the expected time for ``C`` gradients.

Statement (main text, ``docs/theory/koloskova-2022.md``): ``n`` clients with constant
compute times ``Delta_1 <= ... <= Delta_n``.  In expectation Algorithm 2 needs
``Delta_bar = (1/n) sum_i Delta_i`` time to compute ``C`` gradients, mini-batch SGD with batch
``C`` needs ``Delta_tilde = sum_i alpha_i Delta_i``, ``alpha_i = (i^C - (i-1)^C)/n^C``, and
``Delta_bar <= Delta_tilde``.  The text's example: 1000 clients, 900 at 10 s and 100 at
60 s, ``C = 10``: 15 s against 42.5 s.

``alpha_i`` is the probability that the largest of ``C`` indices drawn uniformly with
replacement is ``i``, so ``Delta_tilde`` is the expected slowest of ``C`` uniformly sampled
clients.  Both values are closed forms of the statement (no unread constant), returned with
status ``CERTIFIED_PAPER``.  Mode ``async_time``: the value is ``Delta_bar``, the
asynchronous time per ``C`` gradients the lemma states; mode ``minibatch_time``: the value
is ``Delta_tilde``, so that "measured asynchronous time <= value" is the lemma's conclusion
``Delta_bar <= Delta_tilde`` read on the simulated asynchronous time (asynchronous SGD no
slower than mini-batch SGD, §4.4's claim in Lemma 11's setting).
"""

from __future__ import annotations

import numpy as np

from fedsim.errors import check_number, require
from fedsim.theory.params import Vector
from fedsim.theory.registry import Theorem
from fedsim.theory.result import BoundResult, Hypothesis, Status

__all__ = ["lemma11", "alphas", "THEOREM"]

HYPOTHESES = {
    "constant_times": "each client's compute time is a constant Delta_i (Section 5.4)",
    "sorted": "Delta_1 <= ... <= Delta_n (w.l.o.g.)",
}


def alphas(n: int, C: int) -> np.ndarray:
    """``alpha_i = (i^C - (i-1)^C)/n^C``, ``i = 1..n``, computed as
    ``(i/n)^C - ((i-1)/n)^C`` (no overflow)."""
    i = np.arange(1, n + 1, dtype=np.float64)
    return (i / n) ** C - ((i - 1.0) / n) ** C


def lemma11(*, delta: Vector, C: int, mode: str = "async_time") -> BoundResult:
    """Lemma 11's ``Delta_bar`` (mode ``async_time``) or ``Delta_tilde`` (mode
    ``minibatch_time``) as the value; both in ``terms``."""
    d = np.asarray(delta, dtype=np.float64)
    require(d.ndim == 1 and d.size >= 1 and bool(np.all(np.isfinite(d) & (d > 0))), "delta",
            list(d), "must be a non-empty list of finite times > 0")
    C = int(check_number("C", C, low=1.0))
    require(mode in ("async_time", "minibatch_time"), "mode", mode,
            "must be async_time or minibatch_time")
    srt = bool(np.all(np.diff(d) >= 0))
    ds = np.sort(d)
    bar = float(ds.mean())
    tilde = float(alphas(ds.size, C) @ ds)
    hyps = [Hypothesis("constant_times", None, HYPOTHESES["constant_times"]),
            Hypothesis("sorted", srt, "sorted" if srt else "given unsorted (sorted here)")]
    return BoundResult(value=bar if mode == "async_time" else tilde,
                       status=Status.CERTIFIED_PAPER, hypotheses=hyps,
                       theorem="Koloskova et al. Lemma 11", mode=mode,
                       terms={"async_time": bar, "minibatch_time": tilde},
                       derived_constants={"speedup": tilde / bar})


THEOREM = Theorem(name="koloskova_lemma11", function=lemma11,
                  label="[K] Koloskova-Stich-Jaggi Lemma 11",
                  paper="Koloskova, Stich & Jaggi, NeurIPS 2022, Section 5.4",
                  hypotheses=HYPOTHESES, statuses=(Status.CERTIFIED_PAPER,), horizon="K",
                  help={"delta": "constant compute times Delta_i", "C": "batch size / "
                        "concurrency", "mode": "async_time | minibatch_time"})
