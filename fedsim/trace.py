"""What one simulated run recorded, as NumPy columns (docs/INTERNALS.md section 4).

Per server step ``t = 0..T`` (row 0 is the initial model; it has no event, kind
``"init"``): ``time`` (simulated), ``kind`` (``"upload"`` FedAsync applies one upload,
``"aggregate"`` FedBuff / AS-FedAvg / FedAvg aggregate a buffer or a round, ``"client"`` /
``"server"`` AREA's two event kinds), ``client`` (-1 when no single client is
responsible), ``staleness_steps`` (``t - 1 - Omega``: the number of server steps that
happened between the download of the model the update was computed from and this
step; the maximum over a buffer), ``staleness_time`` (simulated time since that
download) and ``buffer_fill`` (updates contained in the step).

Metrics are recorded at ``metric_steps`` (every ``record.every`` steps, always step 0 and
the last).  Names: ``grad_sq`` = ||grad f(w)||^2, ``grad_maml_sq`` = ||grad F^(b)(w)||^2,
``grad_me_sq`` = ||grad F^(c)(w)||^2, ``dist_sq`` = ||w - x*||^2, ``f_gap`` = f(w) - f*,
``ergodic_f_gap`` = f(xbar_t) - f* with ``xbar_t = (1/t) sum_{k<t} w_k`` over *every* step
([A] Theorem 8's quantity).  Held-out metrics (a problem built with test rows, e.g.
``[problem] kind = "softmax"`` with ``test_fraction > 0``; :mod:`fedsim.problems.evaluation`):
``test_acc`` / ``test_loss`` of the global model on every client's test rows pooled;
``pers_acc_maml`` / ``pers_loss_maml`` of the personal models ``w - alpha grad f_i(w)``
(one step on the client's training rows, alpha = ``record.maml_alpha``);
``pers_acc_me`` / ``pers_loss_me`` of ``theta_hat_i(w, lam)`` (lam = ``record.me_lam``),
each client's model on its own test rows, pooled over all test rows (a client with more
test rows weighs more); ``pers_acc_beta`` / ``pers_loss_beta`` of the
personal models the clients keep themselves (AsyPFL's ``beta_k``, Ma et al. 2022
Algorithm 1; an engine that keeps them attaches them as ``Recorder.personal``), client
k's ``beta_k`` on client k's test rows, averaged over the clients (the paper's "mean
testing accuracy", Sec. 4.1).  Every held-out metric has a validation twin on the rows
``[problem] validation_fraction`` carves from the training rows (``val_acc``,
``val_loss``, ``val_pers_acc_maml``, ..., ``val_pers_acc_beta``, ``val_pers_loss_beta``),
for choosing hyper-parameters without the test rows.  For each metric m, ``avg_<m>`` at step t is
the mean of m over the recorded steps before t (the theorems' ``(1/T) sum_{t<T}``; exact when
``record.every == 1``).  Quadratics use the problem's O(d^2) closed forms.

A run whose model stops being finite, or whose norm passes 1e150, is marked
``diverged`` with ``diverged_step``; it never raises.
"""

from __future__ import annotations

import functools
import math
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fedsim.errors import require

__all__ = ["Trace", "Recorder", "running_averages", "KINDS", "METRICS", "HELD_OUT", "PERSONAL",
           "VALIDATION", "metric_functions"]

KINDS: tuple[str, ...] = ("init", "upload", "aggregate", "client", "server")
#: metrics of the clients' own personal models (``Recorder.personal``, e.g. AsyPFL's beta_k)
PERSONAL: tuple[str, ...] = ("pers_acc_beta", "pers_loss_beta")
#: held-out metrics (:mod:`fedsim.problems.evaluation`): need a problem with test rows
HELD_OUT: tuple[str, ...] = ("test_acc", "test_loss", "pers_acc_maml", "pers_loss_maml",
                             "pers_acc_me", "pers_loss_me") + PERSONAL
#: the held-out metrics on the validation rows (``validation_fraction``): val_<name>
VALIDATION: tuple[str, ...] = tuple("val_" + m.removeprefix("test_") for m in HELD_OUT)
METRICS: tuple[str, ...] = ("grad_sq", "grad_maml_sq", "grad_me_sq", "dist_sq", "f_gap",
                            "ergodic_f_gap") + HELD_OUT + VALIDATION
DIVERGE_NORM = 1e150
_HELD_OUT_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@dataclass
class Trace:
    """Columns of one run; see the module docstring for their meaning."""

    time: np.ndarray
    kind_code: np.ndarray
    client: np.ndarray
    staleness_steps: np.ndarray
    staleness_time: np.ndarray
    buffer_fill: np.ndarray
    metric_steps: np.ndarray
    metrics: dict[str, np.ndarray]
    client_updates: np.ndarray
    concurrency_time: np.ndarray
    concurrency_busy: np.ndarray
    concurrency_mean: float
    diverged: bool
    diverged_step: int | None
    final_w: np.ndarray
    steps_done: int
    sim_time: float
    staleness_bound: float
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def kind(self) -> np.ndarray:
        """Event kind of every step as strings (``KINDS``)."""
        return np.asarray(KINDS, dtype=object)[self.kind_code].astype(str)

    def to_pandas(self, *, metrics: bool = True):  # -> pandas.DataFrame
        """One row per server step (``step`` 0..T) with the per-step columns and, with
        ``metrics=True`` (the default), every metric column: its value at the steps where it
        was recorded (``metric_steps``, see ``record.every``) and NaN at the others; a
        ``diverged`` column (0/1) says whether the run diverged."""
        import pandas as pd

        frame = pd.DataFrame({
            "step": np.arange(self.time.size),
            "time": self.time,
            "kind": self.kind,
            "client": self.client,
            "staleness_steps": self.staleness_steps,
            "staleness_time": self.staleness_time,
            "buffer_fill": self.buffer_fill,
        })
        if not metrics:
            return frame
        out = frame.merge(self.metrics_frame().drop(columns=["time"]), on="step", how="left")
        out["diverged"] = int(bool(self.diverged))
        return out

    def metrics_frame(self):  # -> pandas.DataFrame
        """One row per recorded step: ``step``, ``time`` and every metric column."""
        import pandas as pd

        cols: dict[str, Any] = {"step": self.metric_steps,
                                "time": self.time[self.metric_steps]}
        cols.update(self.metrics)
        return pd.DataFrame(cols)

    def equals(self, other: Trace) -> bool:
        """Bit-for-bit equality of every column (NaNs equal)."""
        def same(a: Any, b: Any) -> bool:
            return np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True)

        if set(self.metrics) != set(other.metrics):
            return False
        cols = ("time", "kind_code", "client", "staleness_steps", "staleness_time",
                "buffer_fill", "metric_steps", "client_updates", "concurrency_time",
                "concurrency_busy", "final_w")
        return (all(same(getattr(self, c), getattr(other, c)) for c in cols)
                and all(same(self.metrics[k], other.metrics[k]) for k in self.metrics)
                and self.diverged == other.diverged
                and self.diverged_step == other.diverged_step
                and self.steps_done == other.steps_done
                and same(self.sim_time, other.sim_time))


def running_averages(metrics: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``metrics`` plus ``avg_<name>`` for every metric but ``ergodic_f_gap``: at record
    ``k`` the mean of records ``0 .. k-1`` (NaN at ``k = 0``).  The one home of the running
    averages of every engine and the replay."""
    out = dict(metrics)
    for name, v in metrics.items():
        if name == "ergodic_f_gap":
            continue
        v = np.asarray(v, dtype=np.float64)
        csum = np.concatenate(([0.0], np.cumsum(v)[:-1]))
        cnt = np.arange(v.size, dtype=np.float64)
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            out[f"avg_{name}"] = np.where(cnt > 0, csum / np.maximum(cnt, 1), np.nan)
    return out


def metric_functions(problem, names: list[str] | tuple[str, ...], maml_alpha: float | None,
                     me_lam: float | None, personal: Callable[[], Any] | None = None
                     ) -> list[tuple[str, Any]]:
    """``[(name, fn(w) -> float)]``; O(d^2) closed forms when the problem offers them.

    ``personal()`` returns the clients' personal models (n x dim) for the ``PERSONAL``
    metrics and their validation twins, or None when the engine keeps none."""
    out: list[tuple[str, Any]] = []
    for name in names:
        require(name in METRICS, "record.metrics", name, f"must be one of {list(METRICS)}")
        if name == "ergodic_f_gap":
            continue
        if name in PERSONAL or name.removeprefix("val_") in PERSONAL:
            out.append((name, _personal_fn(problem, name, personal)))
            continue
        out.append((name, _metric_fn(problem, name, maml_alpha, me_lam)))
    return out


def _rows(problem, name: str) -> tuple[Any, Any]:
    """The rows a held-out metric is measured on: validation rows for ``val_*``, else None
    (the problem's test rows)."""
    from fedsim.problems import evaluation

    if name.startswith("val_"):
        require(getattr(problem, "X_val", None) is not None, "record.metrics", name,
                f"needs validation rows, which this {type(problem).__name__} does not carry "
                "(use [problem] kind = 'softmax' with validation_fraction > 0)")
        return evaluation.validation_rows(problem)
    require(getattr(problem, "X_test", None) is not None, "record.metrics", name,
            f"needs held-out rows, which this {type(problem).__name__} does not carry "
            "(use [problem] kind = 'softmax' with test_fraction > 0)")
    return None, None


def _personal_fn(problem, name: str, personal: Callable[[], Any] | None):
    """A ``PERSONAL`` metric (or its ``val_`` twin): the clients' own models on their rows,
    mean over clients; acc and loss of one set of models share one evaluation."""
    from fedsim.problems import evaluation

    Xs, ys = evaluation.test_rows(problem, *_rows(problem, name))
    key = "acc" if "_acc_" in name else "loss"
    per = _HELD_OUT_CACHE.setdefault(problem, {})
    memo = per.setdefault(("personal", name.startswith("val_")), [None, None])

    def fn(w: np.ndarray) -> float:
        models = personal() if personal is not None else None
        require(models is not None, "record.metrics", name,
                "needs per-client personal models, which only an algorithm whose clients "
                "keep them records (algorithm.name = 'asypfl')")
        if memo[0] is None or not np.array_equal(memo[0], models):
            memo[1] = evaluation.models_metrics(problem, models, weighting="clients",
                                                X_test=Xs, y_test=ys)
            memo[0] = np.array(models, copy=True)
        return float(memo[1][key])
    return fn


def _held_out_fn(problem, name: str, maml_alpha: float | None, me_lam: float | None):
    """A held-out metric of :mod:`fedsim.problems.evaluation` (test or validation rows)."""
    from fedsim.problems import evaluation

    X_rows, y_rows = _rows(problem, name)
    val = name.startswith("val_")
    if val:
        name = "test_" + name[4:] if name in ("val_acc", "val_loss") else name[4:]
    if name.endswith("_maml"):
        require(maml_alpha is not None, "record.maml_alpha", maml_alpha,
                f"is needed for {name} (the one-step adaptation size)")
    if name.endswith("_me"):
        require(me_lam is not None, "record.me_lam", me_lam,
                f"is needed for {name} (the Moreau-envelope weight)")
    a = maml_alpha if name.endswith("_maml") else None
    lam = me_lam if name.endswith("_me") else None
    per = _HELD_OUT_CACHE.setdefault(problem, {})
    if (a, lam, val) not in per:  # acc and loss of one kind share one set of personal models
        per[(a, lam, val)] = evaluation.metric_functions(problem, maml_alpha=a, me_lam=lam,
                                                         X_test=X_rows, y_test=y_rows)
    return per[(a, lam, val)][name]


def _metric_fn(problem, name: str, maml_alpha: float | None, me_lam: float | None):
    if name in HELD_OUT or name in VALIDATION:
        return _held_out_fn(problem, name, maml_alpha, me_lam)
    if name == "grad_sq":
        if hasattr(problem, "grad_f_sq"):
            return problem.grad_f_sq
        return lambda w: float(np.sum(problem.grad_f(w) ** 2))
    if name == "grad_maml_sq":
        require(maml_alpha is not None, "record.maml_alpha", maml_alpha,
                "is needed for grad_maml_sq (set it, or use client_rule maml/fomaml/hfmaml)")
        if hasattr(problem, "maml"):
            return problem.maml(maml_alpha).grad_sq
        if hasattr(problem, "grad_F_maml_sq"):
            return functools.partial(problem.grad_F_maml_sq, alpha=maml_alpha)
        return lambda w: float(np.sum(problem.grad_F_maml(w, maml_alpha) ** 2))
    if name == "grad_me_sq":
        require(me_lam is not None, "record.me_lam", me_lam,
                "is needed for grad_me_sq (set it, or use client_rule moreau)")
        if hasattr(problem, "me"):
            return problem.me(me_lam).grad_sq
        return lambda w: float(np.sum(problem.grad_F_me(w, me_lam) ** 2))
    if name == "dist_sq":
        if hasattr(problem, "dist_sq"):
            return problem.dist_sq
        xs = _x_star(problem)
        return lambda w: float(np.sum((w - xs) ** 2))
    if name == "f_gap":
        if hasattr(problem, "f_gap"):
            return problem.f_gap
        fs = _f_star(problem)
        return lambda w: float(problem.f(w) - fs)
    raise AssertionError(name)  # pragma: no cover - guarded by metric_functions


def _x_star(problem) -> np.ndarray:
    xs = getattr(problem, "x_star", None)
    require(xs is not None, "record.metrics", "dist_sq",
            f"needs a known minimiser x_star, which {type(problem).__name__} does not expose")
    return np.asarray(xs, dtype=np.float64)


def _f_star(problem) -> float:
    for attr in ("f_star", "f_star_A"):
        v = getattr(problem, attr, None)
        if v is not None:
            return float(v)
    raise AssertionError("unreachable")  # pragma: no cover


class Recorder:
    """Column builder used by the engine (preallocated, grows by doubling)."""

    def __init__(self, problem, names: list[str] | tuple[str, ...], every: int, n: int,
                 capacity: int, maml_alpha: float | None = None,
                 me_lam: float | None = None) -> None:
        self.every = int(every)
        self.names = list(names)
        #: the clients' personal models (n x dim), attached by an engine that keeps them
        self.personal: np.ndarray | None = None
        self.fns = metric_functions(problem, names, maml_alpha, me_lam,
                                    personal=lambda: self.personal)
        self.ergodic = "ergodic_f_gap" in self.names
        if self.ergodic:
            self._ergo_fn = _metric_fn(problem, "f_gap", maml_alpha, me_lam)
            self.wsum = np.zeros(problem.dim)
        cap = max(int(capacity), 2)
        self.time = np.zeros(cap)
        self.kind = np.zeros(cap, dtype=np.int8)
        self.client = np.full(cap, -1, dtype=np.int64)
        self.st_steps = np.zeros(cap, dtype=np.int64)
        self.st_time = np.zeros(cap)
        self.fill = np.zeros(cap, dtype=np.int64)
        self.m_steps: list[int] = []
        self.m_vals: list[list[float]] = [[] for _ in self.fns]
        self._pairs = [(fn, vals.append) for (_, fn), vals in zip(self.fns, self.m_vals,
                                                                   strict=True)]
        self.m_ergo: list[float] = []
        self.client_updates = np.zeros(n, dtype=np.int64)
        self.conc_t: list[float] = []
        self.conc_b: list[float] = []
        self.info: dict[str, Any] = {}

    def grow(self, t: int) -> None:
        """Make room for step index ``t``."""
        cap = self.time.size
        if t < cap:
            return
        new = max(2 * cap, t + 1)
        for name in ("time", "kind", "client", "st_steps", "st_time", "fill"):
            old = getattr(self, name)
            arr = np.zeros(new, dtype=old.dtype) if name != "client" else np.full(new, -1)
            arr[:cap] = old
            setattr(self, name, arr)

    def metrics_at(self, t: int, w: np.ndarray) -> None:
        """Record every metric of ``w`` at step ``t``."""
        self.m_steps.append(t)
        for fn, app in self._pairs:
            app(fn(w))
        if self.ergodic:
            self.m_ergo.append(self._ergo_fn(self.wsum / t) if t > 0 else math.nan)

    def busy(self, time: float, frac: float) -> None:
        """A change of the busy fraction at ``time``."""
        if self.conc_t and self.conc_t[-1] == time:
            self.conc_b[-1] = frac
        else:
            self.conc_t.append(time)
            self.conc_b.append(frac)

    def finish(self, t: int, w: np.ndarray, sim_time: float, diverged_step: int | None,
               staleness_bound: float) -> Trace:
        """Close the run at step ``t`` (records the last metrics) and build the Trace."""
        if not self.m_steps or self.m_steps[-1] != t:
            if self.ergodic and diverged_step is None:
                # The step log has already added w_t to wsum (it adds after the metric hook),
                # but xbar_t is the mean of w_0..w_{t-1} ([A] Thm 8): take w_t out for this
                # last, off-grid record.  A diverged run never added w_t.
                np.subtract(self.wsum, w, out=self.wsum)
                self.metrics_at(t, w)
                np.add(self.wsum, w, out=self.wsum)
            else:
                self.metrics_at(t, w)
        steps = np.asarray(self.m_steps, dtype=np.int64)
        metrics: dict[str, np.ndarray] = {}
        for k, (name, _) in enumerate(self.fns):
            metrics[name] = np.asarray(self.m_vals[k], dtype=np.float64)
        if self.ergodic:
            metrics["ergodic_f_gap"] = np.asarray(self.m_ergo, dtype=np.float64)
        metrics = running_averages(metrics)
        ct = np.asarray(self.conc_t, dtype=np.float64)
        cb = np.asarray(self.conc_b, dtype=np.float64)
        if ct.size and sim_time > ct[0]:
            dur = np.diff(np.append(ct, sim_time))
            conc_mean = float(np.sum(dur * cb) / (sim_time - ct[0]))
        else:
            conc_mean = float(cb[-1]) if cb.size else math.nan
        n1 = t + 1
        return Trace(
            time=self.time[:n1].copy(), kind_code=self.kind[:n1].copy(),
            client=self.client[:n1].copy(), staleness_steps=self.st_steps[:n1].copy(),
            staleness_time=self.st_time[:n1].copy(), buffer_fill=self.fill[:n1].copy(),
            metric_steps=steps, metrics=metrics, client_updates=self.client_updates.copy(),
            concurrency_time=ct, concurrency_busy=cb, concurrency_mean=conc_mean,
            diverged=diverged_step is not None, diverged_step=diverged_step,
            final_w=np.array(w, dtype=np.float64), steps_done=t, sim_time=float(sim_time),
            staleness_bound=float(staleness_bound), info=dict(self.info))
