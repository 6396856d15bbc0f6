"""The Gram representation of a performance-estimation problem (Drori & Teboulle 2014;
Taylor, Hendrickx & Glineur 2017, section 3).

Every vector the method forms is a linear combination of the basis vectors
``b_0 = x_0 - x_*`` and the gradients it evaluates (plus ``grad f_i(x_*)`` for clients with
heterogeneity at ``x_*``); :class:`Lin` is such a combination (``x_*`` is the origin).
:class:`Points` registers each oracle call ``grad(client, x)`` as an interpolation point of
client ``i``'s function -- its coordinates, its gradient (a new basis vector) and its value
(a new scalar variable) -- so that ``u^T G v`` with ``G`` the Gram matrix of the basis gives
every inner product.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Lin", "Point", "Points"]


class Lin:
    """A linear combination ``sum_j c_j b_j`` of basis vectors (a sparse dict)."""

    __slots__ = ("c",)

    def __init__(self, c: dict[int, float] | None = None) -> None:
        self.c = {} if c is None else {k: v for k, v in c.items() if v != 0.0}

    def __add__(self, other: Lin) -> Lin:
        c = dict(self.c)
        for k, v in other.c.items():
            c[k] = c.get(k, 0.0) + v
        return Lin(c)

    def __sub__(self, other: Lin) -> Lin:
        return self + (-1.0) * other

    def __rmul__(self, a: float) -> Lin:
        return Lin({k: float(a) * v for k, v in self.c.items()})

    __mul__ = __rmul__

    def key(self) -> tuple[tuple[int, float], ...]:
        """A hashable form: the same combination, the same key."""
        return tuple(sorted(self.c.items()))

    def dense(self, m: int) -> np.ndarray:
        """The coefficient vector in ``R^m``."""
        v = np.zeros(m)
        for k, a in self.c.items():
            v[k] = a
        return v


@dataclass
class Point:
    """An interpolation point of one client's function: coordinates ``x``, gradient ``g``,
    value index ``f`` into the value variables (``-1``: the value 0 at ``x_*``)."""

    x: Lin
    g: Lin
    f: int


@dataclass
class Points:
    """The basis and the points of each function.  ``functions`` is the number of distinct
    functions (1: every client shares f; n: one per client, with ``grad f_i(x_*)`` basis
    vectors for ``i < n - 1`` and ``grad f_{n-1}(x_*) = -sum``, so that ``x_*`` minimises
    ``f = (1/n) sum f_i``; ``f_i(x_*) = 0`` without loss of generality).  ``star = False``:
    no point at ``x_*`` (then ``b_0`` is ``x_0`` itself)."""

    functions: int = 1
    star: bool = True
    size: int = 1  # b_0 = x_0 - x_*
    n_values: int = 0
    per_function: list[list[Point]] = field(default_factory=list)
    _index: dict[tuple[int, tuple], int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.star:  # no stationary point (the nonconvex class, PEPit's example)
            self.per_function = [[] for _ in range(self.functions)]
            return
        star = []
        for _ in range(self.functions - 1):
            star.append(Lin({self.new_basis(): 1.0}))
        if self.functions > 1:
            last = Lin()
            for s in star:
                last = last - s
            star.append(last)
        else:
            star.append(Lin())
        self.per_function = [[Point(x=Lin(), g=g, f=-1)] for g in star]

    @property
    def x0(self) -> Lin:
        """``x_0 - x_*``."""
        return Lin({0: 1.0})

    def new_basis(self) -> int:
        self.size += 1
        return self.size - 1

    def function_of(self, client: int) -> int:
        """The function client ``client`` holds."""
        return client if self.functions > 1 else 0

    def point(self, client: int, x: Lin) -> Point:
        """The point of ``client``'s function at ``x`` (registered on first use)."""
        fi = self.function_of(client)
        k = (fi, x.key())
        if k not in self._index:
            p = Point(x=x, g=Lin({self.new_basis(): 1.0}), f=self.n_values)
            self.n_values += 1
            self._index[k] = len(self.per_function[fi])
            self.per_function[fi].append(p)
        return self.per_function[fi][self._index[k]]

    def grad(self, client: int, x: Lin) -> Lin:
        """The oracle: ``grad f_client(x)`` as a basis vector."""
        return self.point(client, x).g

    def mean_grad(self, x: Lin) -> Lin:
        """``grad f(x) = (1/n) sum_i grad f_i(x)``."""
        total = Lin()
        for fi in range(self.functions):
            total = total + self.point(fi, x).g
        return (1.0 / self.functions) * total

    def mean_value(self, x: Lin) -> tuple[np.ndarray, int]:
        """``f(x) - f_*`` as ``(weights, indices)`` over the value variables."""
        idx = [self.point(fi, x).f for fi in range(self.functions)]
        return np.full(len(idx), 1.0 / self.functions), np.array(idx)
