"""AsyPFL client (Ma, Lu, Li, Cui 2022, "Asynchronous Personalized Federated Learning with
Irregular Clients"; /work/shared/papers/asypfl.md), Algorithm 1 ``ClientUpdate(k, omega^tau,
E_k)`` and the local branch of eq. (3).

On a download of the global model ``omega^{r_k}`` (server step ``r_k``) client k sets
``omega_k <- omega^{r_k}`` (eq. (3), second branch) and runs ``E = E_k`` local steps; each
step, in the order of Algorithm 1::

    omega_k <- omega_k - eta   / (1 + gamma tau) * g_k(omega_k)                      (a)
    beta_k  <- beta_k  - delta / (1 + gamma tau) * ( g_k(beta_k)
                          + lam * diag(h(omega_k^new)) (beta_k - omega_k^new) )       (b)

Algorithm 1 writes (b) as ``beta_k^{tau+1} = beta_k^tau - delta/(1+gamma tau) (grad
F_k(beta_k^tau) + lambda (beta_k^tau - omega_k^{tau+1}) diag(h(omega_k^{tau+1})))``: the
stochastic gradient is taken at the *old* personal model, while the elastic term and its
Fisher weights use the *new* local model ``omega_k^{tau+1}`` of line (a).  A row vector times
a diagonal matrix is the elementwise product, computed as such.  The personal model
``beta_k`` is never reset: it persists on the client across rounds (``beta_k^0 = omega^0``,
Algorithm 1 "initialize ... omega^0, beta_k^0"; the paper does not give beta_k^0, this module
uses the initial global model).  With ``lam = 0`` line (b) is plain local SGD on ``F_k``
("When lambda = 0, the local objective aims at training purely local models", Section 3.1).

Choices where the paper is ambiguous (each stated with the words used):

* **Which tau the decay uses.**  Algorithm 1: "ClientUpdate(k, omega^tau, E_k): r_k^tau =
  tau, E = E_k. for e in {1, ..., E} do omega_k^{tau+1} = omega_k^tau - eta/(1+gamma tau)
  ...".  The loop variable ``e`` does not enter the step, and ``tau`` is the server loop's
  index ("for tau = 0, 1, ..., T do"), fixed at ``r_k^tau = tau`` when the model is sent.
  So every one of the ``E_k`` steps of a round uses ``tau = r_k``, the server step index of
  the downloaded model (in fedsim: the number of server steps applied before the read).
  (Eq. (3) and Theorem 2's ``eta_tau = 2/(mu(gamma + tau))`` index a per-step clock of the
  synchronous analysis; that reading is not the one implemented.)  ``gamma = 0`` removes
  the question.
* **One sample per step.**  Assumption 3: "xi_k^tau is a uniformly sampled data point from
  X_k at tau".  Both gradients of a step, ``g_k(omega_k)`` and ``g_k(beta_k)``, use the same
  batch ``xi_k^tau`` of size ``b`` (``problem.sample_batch`` once per step, then
  ``problem.batch_grad`` at the two points), drawn from the client's ``noise`` stream.
* **h = Fisher information = the Hessian of the loss.**  Section 3.1: "h(.) denotes the
  Fisher information matrix, which is the negative expected Hessian of the log-likelihood
  function".  fedsim's losses are negative log-likelihoods: logistic regression's
  per-sample Hessian ``s(z)s(-z) x x^T`` does not depend on the label (canonical link), so
  the observed and expected Hessians coincide and ``h_k(w) = grad^2 F_k(w) =
  problem.hess(k, w)`` (the ridge ``nu_reg I`` included, as the Gaussian prior's
  curvature); a quadratic is the Gaussian log-likelihood with precision ``A_k``, so
  ``h_k = A_k`` and ``diag(h_k) = diag(A_k)`` is constant (cached); softmax regression is
  the categorical log-likelihood (canonical link again), and its diagonal comes from
  ``problem.hess_diag`` in O(m d C) without the dense (dC x dC) Hessian.  The full client data
  (not the batch) is used, as the word "expected" says.

The rule is written once, :func:`asypfl_update`, in the subset of Python numba compiles,
in the client-rule signature of the replay (docs/INTERNALS.md section 3)::

    update(vdata, i, cst, read, tread, Z, nsteps, fp, out, cnt) -> 0

``vdata = (data, work)``: the problem's compiled view data and two work vectors of length
``d`` (:meth:`AsyPFLRule.data`; the oracles allocate nothing); ``cst`` is client i's state,
one row: ``beta_k`` (``c_rows = 1``), updated in place; ``read`` the downloaded
``omega^{r_k}``; ``tread = r_k`` (the decay's tau); ``Z`` the round's ``nsteps = E_k``
batches (row ``q`` is step ``q``'s ``xi``, used by both gradients); ``fp`` the parameters
(layout below); ``out`` receives the uploaded ``omega_k``; ``cnt`` is unused (no counters).
The oracles are bound by :func:`asypfl_update_for`: the view's ``grad`` and its
``hess_diag`` (``h = diag(grad^2 f_i(w))`` over client i's full data, e.g.
:func:`fedsim.problems.softmax_view.softmax_hess_diag`).  A problem without a compiled
view (or with ``fedsim.local.sgd._COMPILED`` off) runs the same function through
``asypfl_update.py_func`` with the interpreted oracles :func:`problem_batch_grad` /
:func:`problem_hess_diag` and ``Z`` the list of the round's ``sample_batch`` draws.

``fp`` layout (:meth:`AsyPFLRule.params`): ``[eta, delta, gamma, lam]``.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from fedsim.errors import check_integer, check_number, require
from fedsim.jit import Bound, cache_closure, jit
from fedsim.local.registry import ConfigRule, check_step_keys
from fedsim.local.sgd import round_block, rule_view
from fedsim.problems.base import Problem
from fedsim.problems.compiled import CompiledView

__all__ = ["AsyPFLRule", "decay", "asypfl_update", "asypfl_update_for", "asypfl_draw_round_for",
           "problem_batch_grad", "problem_hess_diag", "PARAMS"]

#: the layout of ``fp`` (:meth:`AsyPFLRule.params`)
PARAMS = ("eta", "delta", "gamma", "lam")


def decay(gamma: float, tau: int) -> float:
    """``1 / (1 + gamma tau)``, Algorithm 1's step decay (``tau = r_k``, module docstring)."""
    return 1.0 / (1.0 + gamma * tau)


@jit(cache=False, inline=True)
def asypfl_update(grad, hess_diag, vdata, i, cst, read, tread, Z, nsteps, fp, out, cnt):
    """Algorithm 1's ``ClientUpdate``: ``nsteps`` steps (a)-(b) from ``omega_k = read``
    (module docstring); ``out`` ends as ``omega_k^new``, ``cst[0]`` (``beta_k``) is updated
    in place.  Per step ``q``, with ``s = 1/(1 + gamma r_k)`` and ``xi = Z[q]``: ``g =
    g_k(omega_k, xi)``, ``omega_k <- omega_k - (eta s) g`` (a); ``g = g_k(beta_k, xi)``
    (``beta_k`` not yet changed), plus ``((beta_k - omega_k) h) lam`` with ``h =
    diag(h(omega_k))`` when ``lam != 0``; ``beta_k <- beta_k - (delta s) g`` (b)."""
    data, work = vdata
    eta, delta, gamma, lam = fp[0], fp[1], fp[2], fp[3]
    s = 1.0 / (1.0 + gamma * tread)
    es, ds = eta * s, delta * s
    beta = cst[0]
    g = work[0]
    h = work[1]
    d = out.shape[0]
    for k in range(d):
        out[k] = read[k]
    for q in range(nsteps):
        grad(data, i, out, Z[q], g)                    # g_k(omega_k^tau, xi)
        for k in range(d):
            out[k] = out[k] - es * g[k]                # (a): omega_k^{tau+1}
        grad(data, i, beta, Z[q], g)                   # g_k(beta_k^tau, xi), same batch
        if lam != 0.0:
            hess_diag(data, i, out, h)                 # diag(h(omega_k^{tau+1}))
            for k in range(d):
                g[k] = g[k] + ((beta[k] - out[k]) * h[k]) * lam
        for k in range(d):
            beta[k] = beta[k] - ds * g[k]              # (b): beta_k^{tau+1}
    return 0


@functools.cache
def asypfl_update_for(grad: Any, hess_diag: Any) -> Any:
    """:func:`asypfl_update` with the view's oracles ``grad`` and ``hess_diag`` bound:
    ``update(vdata, i, cst, read, tread, Z, nsteps, fp, out, cnt)``, compiled once per
    oracle pair (both inlined) and cached on disk (:func:`fedsim.jit.cache_closure`)."""
    @jit(inline=True)
    def bound_update(vdata, i, cst, read, tread, Z, nsteps, fp, out, cnt):
        return asypfl_update(grad, hess_diag, vdata, i, cst, read, tread, Z, nsteps, fp, out,
                             cnt)

    return cache_closure(bound_update)


@functools.cache
def asypfl_draw_round_for(draw: Any) -> Any:
    """``draw_round(vdata, i, gen, nsteps, Z)``: the view's one-step ``draw`` for each of
    the round's ``nsteps`` steps (row ``q`` of ``Z``) on ``vdata[0]`` (the view data inside
    the rule's ``(data, work)``); the numbers ``nsteps`` calls of ``sample_batch`` draw."""
    @jit(inline=True)
    def draw_round(vdata, i, gen, nsteps, Z):
        data = vdata[0]
        for q in range(nsteps):
            draw(data, i, gen, Z[q])
        return 0

    return cache_closure(draw_round)


def problem_batch_grad(view: tuple, i: int, w: np.ndarray, xi: Any, g: np.ndarray) -> int:
    """The interpreted ``grad`` oracle: ``view = (problem, batch)``; ``g =
    problem.batch_grad(i, w, xi)`` for the step's batch ``xi``."""
    g[:] = view[0].batch_grad(i, w, xi)
    return 0


def problem_hess_diag(view: tuple, i: int, w: np.ndarray, h: np.ndarray) -> int:
    """The interpreted ``hess_diag`` oracle: ``problem.hess_diag(i, w)`` when the problem
    has it, else the diagonal of ``problem.hess(i, w)``."""
    p = view[0]
    fn = getattr(p, "hess_diag", None)
    h[:] = fn(i, w) if fn is not None else np.diagonal(p.hess(i, w))
    return 0


def _interpreted_update(vdata, i, cst, read, tread, Z, nsteps, fp, out, cnt):
    """:func:`asypfl_update` interpreted with :func:`problem_batch_grad` /
    :func:`problem_hess_diag` (``vdata = ((problem, batch), work)``)."""
    return asypfl_update.py_func(problem_batch_grad, problem_hess_diag, vdata, i, cst, read,
                                 tread, Z, nsteps, fp, out, cnt)


def _interpreted_draw_round(vdata, i, gen, nsteps, Z):
    """Interpreted ``draw_round``: ``Z[q] = problem.sample_batch(i, batch, gen)`` for the
    round's ``nsteps`` steps (``Z`` a list)."""
    problem, batch = vdata[0]
    for q in range(nsteps):
        Z[q] = problem.sample_batch(i, batch, gen)
    return 0


def hess_diag_oracle(cv: CompiledView) -> Any:
    """The compiled ``hess_diag(data, i, w, h)`` that goes with a view's ``grad`` (the
    problems' ``*_view`` modules), or ``None``: the problem then runs interpreted."""
    from fedsim.problems.logistic_view import logistic_hess_diag, logistic_sample_grad
    from fedsim.problems.quadratic_view import quadratic_hess_diag, quadratic_sample_grad
    from fedsim.problems.softmax_view import softmax_hess_diag, softmax_sample_grad

    table = {quadratic_sample_grad: quadratic_hess_diag,
             logistic_sample_grad: logistic_hess_diag,
             softmax_sample_grad: softmax_hess_diag}
    return table.get(cv.grad)


class AsyPFLRule(ConfigRule):
    """AsyPFL local steps on ``(omega_k, beta_k)``: :func:`asypfl_update` (module docstring).

    ``eta`` / ``delta``: steps of the local (global-model) and personal models; ``gamma``:
    decay factor; ``lam``: elastic weight lambda; ``batch``: ``b``.  For the replay:
    ``c_rows = 1`` (``beta_k``), ``draws``/``dtype`` of a step's randomness, the compiled
    ``compiled_update``/``compiled_draw_round`` (``None`` on the interpreted path),
    :meth:`data`,
    :meth:`init_state` and :meth:`params`.
    """

    name = "asypfl"
    DEFAULTS = {"eta": 0.01, "batch": 1, "E": 1, "delta": 0.01, "gamma": 0.0}
    c_rows = 1

    @classmethod
    def check_config(cls, name: str, cfg: Any) -> None:
        """eta, batch; ``lam`` (required, >= 0); ``E`` (integer >= 1); ``delta``, ``gamma``
        (>= 0)."""
        check_step_keys(cfg)
        f = "algorithm"
        require(cfg.lam is not None, f"{f}.lam", None,
                "(the elastic weight lambda) is required for asypfl (0 = purely local)")
        check_number(f"{f}.lam", cfg.lam, low=0.0)
        if cfg.E is not None:
            check_integer(f"{f}.E", cfg.E, low=1)
        if cfg.delta is not None:
            check_number(f"{f}.delta", cfg.delta, low=0.0)
        if cfg.gamma is not None:
            check_number(f"{f}.gamma", cfg.gamma, low=0.0)

    @classmethod
    def from_config(cls, name: str, cfg: Any, problem: Problem) -> AsyPFLRule:
        """The rule of ``client_rule = "asypfl"``."""
        g = cfg.get
        return cls(problem, g("eta"), g("delta"), g("gamma"), g("lam"), g("batch"))

    def __init__(self, problem: Problem, eta: float, delta: float, gamma: float, lam: float,
                 batch: int = 1) -> None:
        for fname, v in (("eta", eta), ("delta", delta), ("gamma", gamma), ("lam", lam)):
            require(isinstance(v, (int, float, np.integer, np.floating))
                    and not isinstance(v, bool) and math.isfinite(v) and v >= 0,
                    f"algorithm.{fname}", v, "must be finite and >= 0")
        require(isinstance(batch, (int, np.integer)) and not isinstance(batch, bool)
                and batch >= 1, "algorithm.batch", batch, "must be an integer >= 1")
        self.problem = problem
        self.eta, self.delta = float(eta), float(delta)
        self.gamma, self.lam = float(gamma), float(lam)
        self.batch = int(batch)
        self.d = problem.dim
        cv = rule_view(problem, self.batch)
        hd = hess_diag_oracle(cv) if cv is not None else None
        self.cv = cv if hd is not None else None
        self.fast = self.cv is not None
        self.draws = cv.draws if self.fast else 0
        self.dtype = cv.dtype if self.fast else None
        #: the compiled client rule and round draw the replay runs (None: interpreted)
        self.compiled_update = asypfl_update_for(cv.grad, hd) if self.fast else None
        self.compiled_draw_round = asypfl_draw_round_for(cv.draw) if self.fast else None
        self.vdata = self.data()
        self._fp = self.params()
        self._cnt = np.zeros(0, dtype=np.int64)
        self._hd = Bound(hd, self.cv.data) if self.fast else None
        self._round = Bound(self.compiled_update, self.vdata) if self.fast else None
        self._blk = np.empty(0)

    def data(self) -> tuple:
        """``vdata`` of :func:`asypfl_update`: ``(view data, work)``, ``work`` two vectors of
        length ``d`` (the problem itself and the batch size on the interpreted path)."""
        view = self.cv.data if self.fast else (self.problem, self.batch)
        return view, np.empty((2, self.d))

    def params(self) -> np.ndarray:
        """``fp = [eta, delta, gamma, lam]`` (:data:`PARAMS`)."""
        return np.array([self.eta, self.delta, self.gamma, self.lam], dtype=np.float64)

    def replay_form(self) -> Any:
        """This rule in the replay's uniform shape (:class:`~fedsim.local.forms.
        ClientForm`): :func:`asypfl_update_for` with the view's ``grad``/``hess_diag`` and
        :func:`asypfl_draw_round_for`, or the same function interpreted
        (:func:`problem_batch_grad`, ``sample_batch`` per step into a list ``Z``); one
        state row, ``beta_k`` (the personal metrics' row), ``fp`` = :data:`PARAMS`."""
        from fedsim.local.forms import ClientForm

        if self.fast:
            return ClientForm(update=self.compiled_update, draw_round=self.compiled_draw_round,
                              vdata=self.vdata, c_rows=1, k=self.draws, dtype=self.dtype,
                              fp=self.params(), compiled=True, init_state=self.init_state,
                              personal_row=0)
        return ClientForm(update=_interpreted_update, draw_round=_interpreted_draw_round,
                          vdata=self.vdata, c_rows=1, k=0, dtype=np.float64, fp=self.params(),
                          compiled=False, init_state=self.init_state,
                          make_z=lambda nsteps: [None] * nsteps, personal_row=0)

    def init_state(self, cst: np.ndarray, w0: np.ndarray) -> None:
        """``beta_k^0 = omega^0`` (module docstring) into ``cst`` (``(c_rows, d)``)."""
        cst[0] = w0

    def fisher_diag(self, i: int, w: np.ndarray) -> np.ndarray:
        """``diag(h_i(w))`` = the diagonal of ``problem.hess(i, w)`` (module docstring), by the
        oracle the rule runs (the view's compiled ``hess_diag``, else
        :func:`problem_hess_diag`)."""
        h = np.empty(self.d)
        w = np.ascontiguousarray(w, dtype=np.float64)
        if self.fast:
            self._hd(i, w, h)
        else:
            problem_hess_diag((self.problem, self.batch), i, w, h)
        return h

    def _block(self, rng: np.random.Generator, i: int, E: int) -> Any:
        """The round's ``E`` batches: ``(E, draws)`` from the view's block draw, or the list
        of ``E`` ``sample_batch`` calls on the interpreted path (the same numbers)."""
        if not self.fast:
            return [self.problem.sample_batch(i, self.batch, rng) for _ in range(E)]
        if E * self.draws > self._blk.size:
            self._blk = np.empty(E * self.draws)
        return round_block(self.cv, rng, i, E, self.draws, self._blk)

    def round(self, i: int, omega0: np.ndarray, beta: np.ndarray, out: np.ndarray,
              rng: np.random.Generator, tau: int, E: int) -> np.ndarray:
        """``E`` local steps from ``omega_k = omega0`` (read only); ``omega_k`` ends in
        ``out`` (the upload), ``beta`` (client i's personal model) is updated in place."""
        require(isinstance(E, (int, np.integer)) and E >= 1, "E_k", E, "must be an integer >= 1")
        E = int(E)
        cst = beta.reshape(1, -1)
        require(np.shares_memory(cst, beta), "beta", beta.shape,
                "must be a contiguous vector (it is updated in place)")
        Z = self._block(rng, i, E)
        if self.fast:
            self._round(i, cst, omega0, int(tau), Z, E, self._fp, out, self._cnt)
        else:
            asypfl_update.py_func(problem_batch_grad, problem_hess_diag, self.vdata, i, cst,
                                  omega0, int(tau), Z, E, self._fp, out, self._cnt)
        return out

    def step(self, i: int, omega: np.ndarray, beta: np.ndarray, rng: np.random.Generator,
             tau: int) -> None:
        """One local step of Algorithm 1, in place on ``omega`` then ``beta``."""
        self.round(i, omega, beta, omega, rng, tau, 1)

    def init(self, w0: np.ndarray) -> np.ndarray:
        """Client state: the personal model ``beta_k^0 = omega^0`` (module docstring)."""
        return np.array(w0, dtype=np.float64)

    def update(self, i: int, w_read: np.ndarray, out: np.ndarray, rng: np.random.Generator,
               state: np.ndarray, tau: int = 0, E: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """One round (the optax-style ``update``); ``state`` is ``beta_k``, updated in place."""
        return self.round(i, w_read, state, out, rng, tau=tau, E=E), state
