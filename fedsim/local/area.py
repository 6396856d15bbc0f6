"""AREA client ([A] Algorithm 2) and its Appendix A iterate model.

Client i keeps a memory ``y_i`` (initially ``x_{s,0}``).  In **Algorithm 2**, each cycle it
receives ``x_s`` and the step ``alpha`` it was last sent, runs M local SGD steps
``x^m = x^{m-1} - alpha g_i(x^{m-1})`` (the :class:`~fedsim.local.sgd.SGDRule` kernel with
``eta = alpha``), sends ``m_i = x^M - y_i`` and sets ``y_i <- x^M``.

In the **Appendix A model** (eqs. (5)-(6), superscript M restored, THEORY_SPEC 2.2) the
client also holds its latest local model ``x_i`` (``x_{i,0} = x_{s,0}``).  At its event
k+1 it sends ``m_i = x_{i,k} - y_{i,k}``, sets ``y_i <- x_{i,k}`` and computes the next
local model ``x_i <- G^M_{i,alpha_k}[x_{s,k}]`` from the *current* server model with
``alpha_k`` (index k).  The two differ: the first message of Algorithm 2 carries a real
update while the model's is a no-op, and Algorithm 1 sends ``alpha_k`` at iteration k
(one index later than the model), E-A11 of THEORY_SPEC 8.

The event is written once, :func:`area_update`, on array state in the subset numba compiles
(:mod:`fedsim.jit`): the clients' state is one ``(2, n, d)`` array, local models ``x =
state[0]`` and memories ``y = state[1]``; the M local steps are
:func:`fedsim.local.sgd.sgd_round` (``client_round``) with the ``grad`` of the problem's
compiled view (:func:`fedsim.local.sgd.rule_view`, the view the SGD rule runs; the round's
randomness drawn in one call, :func:`fedsim.local.sgd.round_block`).  The SimPy engine
(:mod:`fedsim.engine.models.area`, through :meth:`AreaClients.update`: :func:`area_update_for`,
the event with the round and the oracle bound and inlined) and the replay
(:mod:`fedsim.engine.replay.kernel`) call the same function.  A problem without a compiled
view runs it interpreted (``area_update.py_func``) with the SGD rule's own round
(:meth:`fedsim.local.sgd.SGDRule.round`: the interpreted ``sgd_round``), the
step's randomness then being the client's generator itself.

The client-rule shape (:mod:`fedsim.local.base`, optax style): ``init(x0) -> state``
(:class:`AreaState`) and ``update(i, x_s, out, rng, state, alpha, model)`` -> ``(m_i,
state)``, one client event of either model.  The registered rule ``"area"`` (key
``batch``; M from the AREA section) builds the SGD kernel (:meth:`AreaClients.from_config`).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from fedsim.errors import check_integer, require
from fedsim.jit import Bound, cache_closure, jit
from fedsim.local.forms import ClientForm, tag_closure
from fedsim.local.registry import ConfigRule
from fedsim.local.sgd import RngSteps, SGDRule, problem_sample_grad, round_block, sgd_round

__all__ = ["AreaClients", "AreaState", "AreaClientRule", "StepSizes", "step_at", "area_update",
           "area_update_for", "area_client_for", "area_client_interpreted", "C_ROWS",
           "FP_ITERATE"]


@jit(inline=True)
def step_at(sp, k):
    """``alpha_k`` of the schedule ``sp`` (:attr:`StepSizes.sp`: ``[0, value, 0, 0]``
    constant, ``[1, 0, c, d]`` for ``c/(k + d)``)."""
    if sp[0] == 0.0:
        return sp[1]
    return sp[2] / (k + sp[3])


class StepSizes:
    """``alpha_k`` as a function of the global counter k (``kind``: constant | c_over_k_plus_d)."""

    def __init__(self, kind: str, value: float | None = None, c: float | None = None,
                 d: float | None = None) -> None:
        require(kind in ("constant", "c_over_k_plus_d"), "algorithm.alpha.kind", kind,
                "must be 'constant' or 'c_over_k_plus_d'")
        self.kind = kind
        if kind == "constant":
            require(value is not None and value > 0, "algorithm.alpha.value", value,
                    "must be > 0")
            self.value = float(value)
        else:
            require(c is not None and c > 0, "algorithm.alpha.c", c, "must be > 0")
            require(d is not None and d > 0, "algorithm.alpha.d", d, "must be > 0")
            self.c, self.d = float(c), float(d)
        #: the schedule as :func:`step_at` reads it (``[kind code, value, c, d]``)
        self.sp = (np.array([0.0, self.value, 0.0, 0.0]) if kind == "constant"
                   else np.array([1.0, 0.0, self.c, self.d]))

    def __call__(self, k: int) -> float:
        return float(step_at.py_func(self.sp, k))

    def table(self, K: int) -> np.ndarray:
        """``alpha_0, ..., alpha_{K-1}`` (float64), the values of :meth:`__call__`."""
        return np.array([self(k) for k in range(int(K))], dtype=np.float64)


@jit(cache=False, inline=True)
def area_update(client_round, grad, view, i, x_s, x, y, m, Z, alpha, M, g, iterate):
    """One event of client ``i`` on its local model ``x`` and memory ``y`` (rows of the
    clients' state, updated in place); the message ``m_i`` is written into ``m``.

    ``iterate`` ([A] Appendix A, eqs. (5)-(6)): ``m_i = x_i - y_i``, ``y_i <- x_i``, then
    ``x_i <- G^M_{i,alpha}[x_s]``.  Otherwise ([A] Algorithm 2): ``x_i <- G^M_{i,alpha}
    [x_s]`` (``x_s`` the model received), then ``m_i = x_i - y_i``, ``y_i <- x_i``.
    ``G^M`` is ``client_round(grad, view, i, x_s, x_i, Z, alpha, M, g)`` (M local SGD steps
    with step ``alpha`` and the round's randomness ``Z``).
    """
    if not iterate:
        client_round(grad, view, i, x_s, x, Z, alpha, M, g)
    for k in range(x.shape[0]):
        m[k] = x[k] - y[k]
        y[k] = x[k]
    if iterate:
        client_round(grad, view, i, x_s, x, Z, alpha, M, g)
    return 0


#: rows of a client's state in the replay's layout (:func:`area_client_for`): local model x_i,
#: memory y_i, and the round's gradient scratch
C_ROWS = 3
#: ``fp`` of :func:`area_client_for`: entries 0-3 the step schedule
#: (:attr:`fedsim.servers.area.StepSizes.sp`), entry 4 1.0 for the iterate model, 0.0
#: for Algorithm 2
FP_ITERATE = 4


@functools.cache
def area_update_for(grad: Any) -> Any:
    """:func:`area_update` with :func:`~fedsim.local.sgd.sgd_round` and the oracle ``grad``
    bound: ``update(view, i, x_s, x, y, m, Z, alpha, M, g, iterate)``, compiled once per
    oracle (both inlined) and cached on disk (:func:`fedsim.jit.cache_closure`), as
    :func:`fedsim.local.sgd.sgd_round_for`."""
    @jit
    def bound_update(view, i, x_s, x, y, m, Z, alpha, M, g, iterate):
        return area_update(sgd_round, grad, view, i, x_s, x, y, m, Z, alpha, M, g, iterate)

    return cache_closure(bound_update)


def _area_client_src(event: Any, round_fn: Any, grad: Any, step: Any) -> Any:
    """The replay's client rule on the functions it calls (compiled, or their ``py_func``:
    one source for both paths)."""

    def area_client(vdata, i, cst, read, tread, Z, nsteps, fp, out, cnt):
        """REPLAY_SPEC 2: :func:`area_update` of client ``i`` on its state ``cst`` (rows
        ``x_i``, ``y_i``, scratch; :data:`C_ROWS`) from the server model ``read`` of
        version ``tread``, with ``alpha_{tread}`` of the schedule in ``fp``
        (:func:`fedsim.servers.area.step_at`; Algorithm 1 replies ``x_s`` with ``alpha_k``
        at iteration k, the iterate model computes from ``x_{s,k}`` with ``alpha_k``) and
        ``nsteps = M`` local steps; the message ``m_i`` into ``out``."""
        event(round_fn, grad, vdata, i, read, cst[0], cst[1], out, Z, step(fp, tread), nsteps,
              cst[2], fp[FP_ITERATE] != 0.0)
        return 0

    return area_client


@functools.cache
def area_client_for(grad: Any) -> Any:
    """AREA's client rule in the replay's uniform shape ``update(vdata, i, cst, read, tread,
    Z, nsteps, fp, out, cnt)`` (REPLAY_SPEC 2), :func:`area_update` with
    :func:`~fedsim.local.sgd.sgd_round` and the oracle ``grad`` bound, compiled inline (as
    ``fedsim.local.sgd.sgd_update_for``)."""
    return jit(cache=False, inline=True)(
        tag_closure(_area_client_src(area_update, sgd_round, grad, step_at), grad))


def area_client_interpreted() -> Any:
    """The same rule interpreted: ``area_update.py_func`` with ``sgd_round.py_func``, the
    problem's Python oracle (:func:`~fedsim.local.sgd.problem_sample_grad`; ``vdata =
    (problem, batch)``, ``Z`` a :class:`~fedsim.local.sgd.RngSteps`)."""
    return _area_client_src(area_update.py_func, sgd_round.py_func, problem_sample_grad,
                            step_at.py_func)


class AreaState:
    """Local models ``x`` (n x d) and memories ``y`` (n x d) of the n AREA clients, held in
    one ``(2, n, d)`` array ``s`` (``x = s[0]``, ``y = s[1]``)."""

    def __init__(self, x0: np.ndarray, n: int) -> None:
        self.s = np.empty((2, n, np.asarray(x0).shape[0]))
        self.s[:] = np.asarray(x0, dtype=np.float64)

    @property
    def x(self) -> np.ndarray:
        return self.s[0]

    @property
    def y(self) -> np.ndarray:
        return self.s[1]


class AreaClients(ConfigRule):
    """The n AREA clients: kernel ``sgd`` (M steps) and their :class:`AreaState`."""

    DEFAULTS = {"batch": 1}

    @classmethod
    def check_config(cls, name: str, cfg: Any) -> None:
        if cfg.batch is not None:
            check_integer("algorithm.batch", cfg.batch, low=1)

    @classmethod
    def from_config(cls, name: str, cfg: Any, problem: Any) -> SGDRule:
        """The M-step SGD kernel (its step is the alpha the client last received)."""
        return SGDRule(problem, 0.0, cfg.get("M"), cfg.get("batch"))

    def __init__(self, x0: np.ndarray, n: int, sgd: SGDRule) -> None:
        self.sgd = sgd
        self.n = n
        self.M = int(sgd.Q)
        self.state = self.init(x0)
        d = self.state.s.shape[2]
        self.msg = np.empty(d)
        self.g = np.empty(d)
        cv = sgd.cv  # the SGD rule's compiled view (None: interpreted)
        self.cv = cv
        if cv is None:
            self.view = None
            self._update = None
        else:
            self.view = cv.data
            self._update = Bound(area_update_for(cv.grad), cv.data)
            self._blk = np.empty(self.M * cv.draws)

    @property
    def y(self) -> np.ndarray:
        return self.state.y

    @property
    def x(self) -> np.ndarray:
        return self.state.x

    def init(self, x0: np.ndarray) -> AreaState:
        """``y_i = x_i = x_{s,0}`` for every client."""
        return AreaState(x0, self.n)

    def update(self, i: int, x_s: np.ndarray, out: np.ndarray, rng: np.random.Generator,
               state: AreaState, alpha: float, model: str = "algorithm"
               ) -> tuple[np.ndarray, AreaState]:
        """One event of client i: Algorithm 2 (``model="algorithm"``: compute, then send)
        or the Appendix A model (``"iterate_model"``: send, then compute); ``m_i`` is
        written into ``out``.  Compiled :func:`area_update` when the problem has a compiled
        view (the round's ``M draws`` numbers drawn from ``rng`` in one call,
        :func:`~fedsim.local.sgd.round_block`: the numbers M per-step draws give), else the
        same function interpreted."""
        require(model in ("algorithm", "iterate_model"), "algorithm.model", model,
                "must be 'algorithm' or 'iterate_model' for AREA clients")
        iterate = model == "iterate_model"
        if self._update is None:
            area_update.py_func(self._rule_round, None, None, i, x_s, state.s[0, i],
                                state.s[1, i], out, rng, float(alpha), self.M, self.g, iterate)
        else:
            Z = round_block(self.cv, rng, i, self.M, self.cv.draws, self._blk)
            self._update(i, x_s, state.s[0, i], state.s[1, i], out, Z, float(alpha), self.M,
                         self.g, iterate)
        return out, state

    def _rule_round(self, grad, view, i, w_read, out, rng, eta, Q, g) -> int:
        """``client_round`` of the interpreted path: the SGD rule's own round."""
        self.sgd.round(i, w_read, out, rng, eta=eta, Q=Q)
        return 0

    def event(self, i: int, x_s: np.ndarray, alpha: float, rng: np.random.Generator,
              iterate: bool) -> np.ndarray:
        """:meth:`update` on the clients' own state; returns ``m_i`` (a reused buffer)."""
        self.update(i, x_s, self.msg, rng, self.state, alpha,
                    "iterate_model" if iterate else "algorithm")
        return self.msg

    def ybar(self) -> np.ndarray:
        """mean_i y_i."""
        return self.state.y.mean(axis=0)


class AreaClientRule:
    """AREA's client rule in the replay's shape (REPLAY_SPEC 2): :func:`area_client_for` on
    :data:`C_ROWS` state rows per client, the M-step SGD kernel ``sgd`` (its compiled view
    gives the oracle and the draws of a step), the step schedule ``steps`` and the model
    (``iterate``: [A] Appendix A; else Algorithm 2)."""

    c_rows = C_ROWS

    def __init__(self, *, sgd: SGDRule, steps: StepSizes, iterate: bool) -> None:
        self.sgd = sgd
        self.steps = steps
        self.iterate = bool(iterate)
        self.M = int(sgd.Q)
        self.cv = sgd.cv
        #: the numbers one local step draws (0 on the interpreted path, which draws from
        #: the client's generator itself)
        self.k = int(sgd.draws)
        self.update = (area_client_interpreted() if self.cv is None
                       else area_client_for(self.cv.grad))

    def init_state(self, cst: np.ndarray, w0: np.ndarray) -> None:
        """``x_{i,0} = y_{i,0} = x_{s,0}`` (scratch row zeroed)."""
        cst[0] = w0
        cst[1] = w0
        cst[2] = 0.0

    def params(self) -> np.ndarray:
        """``fp``: the schedule (:attr:`StepSizes.sp`), then the model flag (:data:`FP_ITERATE`)."""
        return np.append(self.steps.sp, 1.0 if self.iterate else 0.0)

    def draw_round(self, rng: np.random.Generator, i: int, blk: np.ndarray) -> Any:
        """The round's randomness: ``(M, k)`` from ``rng`` in one call on the compiled path
        (:func:`~fedsim.local.sgd.round_block`), the generator itself interpreted."""
        if self.cv is None:
            return RngSteps(rng)
        return round_block(self.cv, rng, i, self.M, self.k, blk)

    def run(self, i: int, cst: np.ndarray, read: np.ndarray, tread: int, Z: Any,
            fp: np.ndarray, out: np.ndarray, cnt: np.ndarray) -> None:
        """One event of client ``i``: :func:`area_client_for`'s compiled rule, or the same
        source interpreted (:func:`area_client_interpreted`)."""
        self.update(self.sgd.view, i, cst, read, tread, Z, self.M, fp, out, cnt)

    def replay_form(self) -> ClientForm:
        """This rule in the replay's uniform shape (:class:`fedsim.local.forms.ClientForm`):
        :func:`area_client_for` (or :func:`area_client_interpreted`), ``fp`` =
        :meth:`params`, :data:`C_ROWS` state rows set by :meth:`init_state`; the round's
        randomness as the SGD rule draws it (its form's ``draw_round``, ``k``, ``dtype``,
        ``vdata`` and ``make_z``)."""
        sf = self.sgd.replay_form()
        return ClientForm(update=self.update, draw_round=sf.draw_round, vdata=sf.vdata,
                          c_rows=C_ROWS, k=sf.k, dtype=sf.dtype, fp=self.params(),
                          compiled=sf.compiled, init_state=self.init_state, make_z=sf.make_z)
