"""fedsim's methods in first-order form with sigma = 0, written once for any oracle.

A method maps a :class:`~fedsim.worstcase.schedule.Schedule` and an oracle
``grad(client, x)`` to the server iterates ``x_0, ..., x_K``.  ``x`` is anything closed
under ``+``, ``-`` and multiplication by a float: a symbolic linear form in the PEP
(:mod:`fedsim.worstcase.gram`), a float for the 1-D quadratic recursion
(:mod:`fedsim.worstcase.witness`).  The rules are fedsim's own:

* local SGD ([P] Algorithm 1, Option A, with sigma = 0): ``y_0 = x_read``,
  ``y_{q+1} = y_q - eta grad f_i(y_q)`` for ``q < Q``; the upload is
  ``Delta = y_0 - y_Q``;
* FedAsync, PersA-FL's rule ([P] Algorithm 1 line 4, :mod:`fedsim.servers.fedasync`):
  ``x <- x - beta Delta`` for each upload of the step, in order;
* FedBuff (:mod:`fedsim.servers.fedbuff`): ``x <- x - server_lr (1/k) sum s(stale) Delta``
  over the step's ``k`` uploads;
* delayed gradient descent ``x_{k+1} = x_k - step grad f(x_{k - tau_k})``: FedAsync with
  ``Q = 1``, ``beta = 1``, ``eta = step``;
* asynchronous SGD with delay-adaptive steps (:mod:`fedsim.servers.delay_adaptive`, the
  ``async_sgd`` algorithm): ``x <- x - beta f(tau) eta grad f_i(x_read)`` with the factor
  ``f`` of the upload's delay ``tau`` -- Koloskova, Stich & Jaggi 2022 eq. (11) with §4.4's
  ``eta_t = eta / tau_t`` beyond ``tau_C`` (``koloskova``), or ``eta_t = 0`` there
  (``koloskova_drop``), or ``konstmish/asynchronous_sgd``'s ``lr M / max(M, delay)`` with
  ``M = tau_C`` (``mishchenko``).  The factor is the engine's own function
  (:func:`fedsim.servers.delay_adaptive.delay_factor`, run interpreted); it depends on the
  schedule only, so the method stays a fixed linear first-order method and its PEP is exact.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fedsim.errors import require
from fedsim.servers.delay_adaptive import RULES, delay_factor
from fedsim.servers.fedbuff import staleness_weight
from fedsim.worstcase.schedule import Schedule

__all__ = ["Method", "FedAsync", "FedBuff", "DelayAdaptive", "delayed_gd", "METHODS"]

Oracle = Callable[[int, Any], Any]


def _local_sgd(grad: Oracle, client: int, x: Any, eta: float, Q: int) -> Any:
    """``Delta = y_0 - y_Q`` of Q local gradient steps from ``y_0 = x`` (module doc)."""
    y = x
    delta = None
    for _ in range(Q):
        g = grad(client, y)
        y = y - eta * g
        delta = eta * g if delta is None else delta + eta * g
    return delta


@dataclass(frozen=True)
class FedAsync:
    """FedAsync with ``Q`` local gradient steps of size ``eta`` and server weight ``beta``."""

    eta: float
    Q: int = 1
    beta: float = 1.0
    name: str = "fedasync"

    def __post_init__(self) -> None:
        require(self.Q >= 1, "Q", self.Q, "must be >= 1")
        require(self.eta > 0, "eta", self.eta, "must be > 0")

    def iterates(self, schedule: Schedule, grad: Oracle, x0: Any,
                 history: list[Any] | None = None) -> list[Any]:
        """``[x_0, ..., x_K]`` along ``schedule``; with ``history`` the iterates start from
        that list instead of ``[x0]`` (reads index into it: the rate certificate's window)."""
        xs = [x0] if history is None else list(history)
        for contribs in schedule.steps:
            x = xs[-1]
            for c in contribs:
                q = self.Q if c.steps is None else c.steps
                x = x - self.beta * _local_sgd(grad, c.client, xs[c.read], self.eta, q)
            xs.append(x)
        return xs


@dataclass(frozen=True)
class FedBuff:
    """FedBuff: the step's uploads averaged with staleness weights ``weight``
    (:func:`fedsim.servers.fedbuff.staleness_weight`), times ``server_lr``."""

    eta: float
    Q: int = 1
    server_lr: float = 1.0
    weight: str = "none"
    exponent: float = 0.5
    name: str = "fedbuff"

    def __post_init__(self) -> None:
        require(self.Q >= 1, "Q", self.Q, "must be >= 1")
        staleness_weight(self.weight, 0, self.exponent)

    def iterates(self, schedule: Schedule, grad: Oracle, x0: Any,
                 history: list[Any] | None = None) -> list[Any]:
        """``[x_0, ..., x_K]`` along ``schedule`` (a step with no upload leaves x);
        ``history``: as :meth:`FedAsync.iterates`."""
        xs = [x0] if history is None else list(history)
        for contribs in schedule.steps:
            x = xs[-1]
            if contribs:
                total = None
                for c in contribs:
                    q = self.Q if c.steps is None else c.steps
                    s = staleness_weight(self.weight, c.stale, self.exponent)
                    d = s * _local_sgd(grad, c.client, xs[c.read], self.eta, q)
                    total = d if total is None else total + d
                x = x - (self.server_lr / len(contribs)) * total
            xs.append(x)
        return xs


@dataclass(frozen=True)
class DelayAdaptive:
    """Asynchronous SGD with the delay-adaptive step ``beta f(tau) eta`` (module doc):
    ``rule`` one of :data:`fedsim.servers.delay_adaptive.RULES`, ``tau_c`` its
    concurrency ``tau_C``; one local step (``Q = 1``, Koloskova et al. Algorithm 1 line 4)."""

    eta: float
    tau_c: int
    rule: str = "koloskova"
    beta: float = 1.0
    Q: int = 1
    name: str = "async_sgd"

    def __post_init__(self) -> None:
        require(self.rule in RULES, "step_rule", self.rule, f"must be one of {list(RULES)}")
        require(int(self.tau_c) >= 1, "tau_C", self.tau_c, "must be an integer >= 1")
        require(self.Q == 1, "Q", self.Q, "must be 1 (one SGD step per upload)")
        require(self.eta > 0, "eta", self.eta, "must be > 0")

    def factor(self, tau: int) -> float:
        """``f(tau)``: the engine's :func:`~fedsim.servers.delay_adaptive.delay_factor`."""
        return float(delay_factor.py_func(RULES.index(self.rule), int(tau),
                                          float(self.tau_c)))

    def iterates(self, schedule: Schedule, grad: Oracle, x0: Any,
                 history: list[Any] | None = None) -> list[Any]:
        """``[x_0, ..., x_K]`` along ``schedule`` (each upload with its own delay
        ``stale``); ``history``: as :meth:`FedAsync.iterates`."""
        xs = [x0] if history is None else list(history)
        for contribs in schedule.steps:
            x = xs[-1]
            for c in contribs:
                s = self.beta * self.factor(c.stale)
                if s != 0.0:
                    x = x - (s * self.eta) * grad(c.client, xs[c.read])
            xs.append(x)
        return xs


Method = FedAsync | FedBuff | DelayAdaptive


def delayed_gd(step: float) -> FedAsync:
    """Delayed gradient descent: FedAsync with ``Q = 1``, ``beta = 1``, ``eta = step``."""
    return FedAsync(eta=float(step), Q=1, beta=1.0, name="delayed_gd")


#: method name -> builder from keyword arguments
METHODS: dict[str, Callable[..., Any]] = {
    "delayed_gd": delayed_gd,
    "fedasync": FedAsync,
    "fedbuff": FedBuff,
    "async_sgd": DelayAdaptive,
}
