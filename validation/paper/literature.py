"""``fedsim validate --suite literature``: the asynchronous-SGD literature's claims as paper
experiments (the paper suite's two-stage design, claims and paired 99% intervals:
:mod:`fedsim.validation.paper.common`, ``docs/theory/*.md`` for the statements read).

Every experiment runs on a homogeneous quadratic (``heterogeneity = 0``, shared Hessian:
Koloskova et al. §4's setting ``f_i = f``), ``n`` workers each holding one job
(maximum concurrency, Koloskova Example 3: ``tau_C = n``), additive gradient noise, from
``w0 = (1, ..., 1)``; the server's time is zero (§4.4's assumption).  Every family is tuned
on the same step-size grid (multiples of ``1/L``) by the training gap at the horizon, on
tuning replicates disjoint from the measurement's.

Experiments (:data:`LITERATURE`):

* ``koloskova_44``   -- §4.4: asynchronous SGD with steps (11) against mini-batch SGD, over
  delay distributions (exponential, rare straggler, Pareto, log-normal);
* ``koloskova_tavg`` -- "depends on tau_avg, not tau_max": tau_C fixed, tau_max grown by a
  rare straggler; constant steps against steps (11), in iterations;
* ``cohen_picky``    -- Picky SGD against asynchronous SGD under heavy-tailed delays;
* ``xie_fedasync``   -- Xie's FedAsync mixing, polynomial against constant staleness
  weight, beside PersA-FL's Option A (reported, no claim: no paper orders them);
* ``koloskova_shape`` -- Theorem 8 / Corollary 9's rate shape against Theorem 6's: the
  growth of the accuracy after ``K`` iterations with ``tau_max`` (tau_C fixed) and with
  ``tau_C``, as log-log slopes between two design points (:func:`koloskova_shape`).

Not run: Toghani & Uribe's FedBuff bound (only the abstract could be read, so there is no
statement to evaluate: ``docs/theory/toghani-uribe-2022.md``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from fedsim.validation.paper.common import (
    MEASURE_R,
    Arm,
    Claim,
    Contrast,
    Experiment,
    L_of,
    Setting,
    scenario_dict,
)

__all__ = ["LITERATURE", "problem", "DELAYS", "koloskova_44", "koloskova_tavg", "cohen_picky",
           "xie_fedasync", "koloskova_shape", "straggler", "tau_max_bound", "shape_slopes"]

#: the step-size grid, multiples of 1/L, shared by every family; its top, 1.9/L, is just
#: under the 2/L stability limit of gradient descent on a quadratic, so that no family
#: (mini-batch SGD above all) is held below its best step by the grid
GRID = (0.01, 0.03, 0.1, 0.3, 1.0, 1.9)

#: compute-time distributions of the §4.4 grid (mean about 1 each)
DELAYS: dict[str, dict[str, Any]] = {
    "exponential": {"kind": "exponential", "rate": 1.0},
    "straggler": {"kind": "straggler", "base": {"kind": "uniform", "low": 0.5, "high": 1.5},
                  "p": 0.02, "m": 50.0},
    "pareto": {"kind": "pareto", "shape": 1.5, "scale": 1.0 / 3.0},
    "lognormal": {"kind": "lognormal", "mu": -1.125, "sigma": 1.5},
}


def problem(n: int, dim: int = 4, noise_sd: float = 0.1) -> dict[str, Any]:
    """The homogeneous quadratic (module docstring)."""
    return {"kind": "quadratic", "n": n, "dim": dim, "mu": 0.1, "L": 1.0,
            "heterogeneity": 0.0, "shared_hessian": True, "noise": "additive",
            "noise_sd": noise_sd, "seed": 0}


def _arms(key: str, family: str, label: str, prob: dict, alg: dict, delays: dict, *,
          horizon: float, steps: int, grid: Sequence[float], every: int,
          sync: bool = False, metrics: Sequence[str] = ("f_gap",)) -> list[Arm]:
    L = L_of(prob)
    out = []
    for g in grid:
        a = {"Q": 1, "batch": 1, "w0": [1.0] * int(prob["dim"]), **alg, "eta": g / L}
        trig = None if sync else {"kind": "every_upload"}
        sc = scenario_dict(f"{key}-{family}-{g:g}", prob, a, {"compute": delays},
                           horizon=horizon, metrics=tuple(metrics), every=every, trigger=trig,
                           max_steps=steps)
        out.append(Arm(f"{key}/{family}/{g:g}", family, label, sc, grid=g))
    return out


def _async(tau_c: int, rule: str = "koloskova") -> dict[str, Any]:
    return {"name": "async_sgd", "client_rule": "sgd", "beta": 1.0, "tau_C": tau_c,
            "step_rule": rule}


def koloskova_44(*, replicates: int = MEASURE_R, n: int = 8, horizon: float = 150.0,
                 kinds: Sequence[str] = tuple(DELAYS), grid: Sequence[float] = GRID
                 ) -> Experiment:
    """Koloskova et al. §4.4 (module docstring): per delay distribution, asynchronous SGD
    with steps (11) (``tau_C = n``, ``eta_t = eta/tau_t`` beyond) against synchronous
    mini-batch SGD (``fedavg``, every worker one step, the average) at equal simulated
    time."""
    prob = problem(n)
    settings, claims = [], []
    for k in kinds:
        arms = (_arms(k, "async", "async SGD, steps (11)", prob, _async(n), DELAYS[k],
                      horizon=horizon, steps=10**7, grid=grid, every=8)
                + _arms(k, "minibatch", "mini-batch SGD (batch n)", prob,
                        {"name": "fedavg", "client_rule": "sgd", "participation": 1.0},
                        DELAYS[k], horizon=horizon, steps=10**7, grid=grid, every=1,
                        sync=True))
        settings.append(Setting(k, f"compute ~ {k}", tuple(arms)))
        claims.append(Claim(k, "f_gap", "async", "<", "minibatch",
                            text=f"{k}: async SGD with steps (11) reaches a lower f - f* "
                                 "than mini-batch SGD in the same simulated time"))
    return Experiment(
        name="koloskova_44", title="Koloskova et al. §4.4: async SGD (11) vs mini-batch SGD",
        source="Koloskova, Stich & Jaggi, NeurIPS 2022, §4.4 (with Theorem 8, eq. (11))",
        claim='"our result shows for the first time that asynchronous SGD is always faster '
              'than mini-batch SGD, regardless of the delay pattern. A small note that in '
              'our reasoning we implicitly assumed that the sever can perform its operations '
              'in negligible time."',
        analogue=f"n = {n} workers, homogeneous quadratic (dim 4, mu 0.1, L 1, noise sd "
                 f"0.1); 'faster to eps' is read as 'lower f - f* at the same simulated "
                 f"time' ({horizon:g}), the inverse of time-to-eps for monotone curves; the "
                 "steps of both methods are tuned on the same grid; server time zero",
        settings=tuple(settings), claims=tuple(claims), horizon=horizon,
        replicates=replicates, curve_metric="f_gap", metrics=("f_gap",), curve_log=True,
        rule="per setting and method, the grid value with the lowest mean f - f* at the "
             "horizon on 3 tuning replicates")


def koloskova_tavg(*, replicates: int = MEASURE_R, n: int = 8, steps: int = 1600,
                   horizon: float = 1500.0,
                   ms: Sequence[float] = (1.0, 100.0), grid: Sequence[float] = GRID
                   ) -> Experiment:
    """"Depends on tau_avg, not tau_max": one setting, the straggler factor ``m`` of a
    rare straggler (``p = 0.02``, uniform base) raising ``tau_max`` while ``tau_C = n``
    stays fixed; constant steps (``tau_C`` never exceeded: the rule's factor is 1) against
    steps (11); ``steps`` server iterations (the rates count iterations)."""
    prob = problem(n)
    arms: list[Arm] = []
    fams = []
    for m in ms:
        d = {"kind": "straggler", "base": {"kind": "uniform", "low": 0.5, "high": 1.5},
             "p": 0.02, "m": float(m)}
        for fam, alg in ((f"const_m{m:g}", _async(10**9)), (f"adapt_m{m:g}", _async(n))):
            arms += _arms("tavg", fam, f"{fam.split('_')[0]} steps, m = {m:g}", prob, alg, d,
                          horizon=horizon, steps=steps, grid=grid, every=16)
            fams.append(fam)
    lo, hi = f"{ms[0]:g}", f"{ms[-1]:g}"
    claims = (
        Contrast("tavg", "f_gap", ((1.0, f"const_m{hi}"), (-1.0, f"const_m{lo}"),
                                   (-1.0, f"adapt_m{hi}"), (1.0, f"adapt_m{lo}")), ">",
                 text=f"growing tau_max (m = {lo} -> {hi}) costs constant steps more than "
                      "steps (11): (const_hi - const_lo) - (adapt_hi - adapt_lo) > 0"),
        Claim("tavg", "f_gap", f"adapt_m{hi}", "<", f"const_m{hi}",
              text=f"with the straggler (m = {hi}), steps (11) reach a lower f - f* than "
                   "constant steps after the same iterations"),
    )
    return Experiment(
        name="koloskova_tavg", title='Koloskova et al.: "tau_avg, not tau_max"',
        source="Koloskova, Stich & Jaggi, NeurIPS 2022, Theorem 6 (8) vs Theorem 8 (12), "
               "§4.4 'Average vs maximum delay'",
        claim='"occasional straggler devices will usually be present. In this case the '
              'maximum delay is much larger than the average delay." (4.4), with Theorem 8 '
              '(12): O(sigma^2/eps^2 + tau_C/eps) iterations for steps (11), against '
              'Theorem 6 (8): O(sigma^2/eps^2 + sqrt(tau_C tau_max)/eps) for a constant step',
        analogue=f"n = {n}, tau_C = n; a rare straggler (p = 0.02) multiplies a uniform "
                 f"[0.5, 1.5] compute time by m in {list(ms)}, which raises tau_max (the "
                 "engine's provable bound grows with m) and leaves tau_C; the O(.) rates' "
                 "testable content is the ordering of the tuned errors after "
                 f"{steps} iterations",
        settings=(Setting("tavg", "tau_C = n, tau_max grown by m", tuple(arms)),),
        claims=claims, horizon=horizon, replicates=replicates, curve_metric="f_gap",
        metrics=("f_gap",), curve_log=True,
        rule="per family (rule, m), the grid value with the lowest mean f - f* at the "
             "horizon on 3 tuning replicates")


def cohen_picky(*, replicates: int = MEASURE_R, n: int = 8, steps: int = 1600,
                horizon: float = 1500.0,
                thresholds: Sequence[float] = (0.05, 0.2), grid: Sequence[float] = GRID
                ) -> Experiment:
    """Picky SGD (threshold and step tuned on their grids) against constant-step
    asynchronous SGD, Pareto compute times (infinite variance)."""
    prob = problem(n)
    d = DELAYS["pareto"]
    arms = _arms("picky", "async", "async SGD, constant steps", prob, _async(10**9), d,
                 horizon=horizon, steps=steps, grid=grid, every=16)
    for th in thresholds:
        arms += _arms(f"picky-th{th:g}", "picky", f"Picky SGD, threshold {th:g}", prob,
                      {"name": "picky_sgd", "client_rule": "sgd", "beta": 1.0,
                       "threshold": float(th)}, d, horizon=horizon, steps=steps, grid=grid,
                      every=16)
    claims = (Claim("pareto", "f_gap", "picky", "<", "async",
                    text="Pareto(1.5) compute times: Picky SGD reaches a lower f - f* than "
                         "constant-step asynchronous SGD after the same iterations"),)
    return Experiment(
        name="cohen_picky", title="Cohen et al.: Picky SGD vs asynchronous SGD",
        source="Cohen, Daniely, Drori, Koren & Schain, NeurIPS 2021 (abstract); the test as "
               "Koloskova et al. 2022 §4.4 describe it",
        claim='"Our experiments demonstrate the efficacy and robustness of our algorithm in '
              'cases where the delay distribution is skewed or heavy-tailed."',
        analogue=f"n = {n}, Pareto(shape 1.5) compute times; Picky's threshold is tuned "
                 f"over {list(thresholds)} with the step (the paper's own threshold could "
                 f"not be read); {steps} iterations",
        settings=(Setting("pareto", "compute ~ Pareto(1.5)", tuple(arms)),), claims=claims,
        horizon=horizon, replicates=replicates, curve_metric="f_gap", metrics=("f_gap",),
        curve_log=True, rule="per family, the (threshold, step) with the lowest mean "
                             "f - f* at the horizon on 3 tuning replicates")


def xie_fedasync(*, replicates: int = MEASURE_R, n: int = 8, steps: int = 1600,
                 horizon: float = 1500.0,
                 grid: Sequence[float] = GRID) -> Experiment:
    """Xie's mixing with the polynomial staleness weight (``a = 0.5``) against the
    constant one, and PersA-FL's Option A (``fedasync``) beside them, log-normal compute
    times; every family tuned on the step grid (``alpha = 0.6`` / ``beta = 0.6``)."""
    prob = problem(n)
    d = DELAYS["lognormal"]
    arms = []
    for fam, alg in (("xie_poly", {"name": "fedasync_xie", "alpha": 0.6,
                                   "staleness": "polynomial", "a": 0.5}),
                     ("xie_const", {"name": "fedasync_xie", "alpha": 0.6,
                                    "staleness": "constant"}),
                     ("persafl_A", {"name": "fedasync", "beta": 0.6})):
        arms += _arms("xie", fam, fam, prob, {"client_rule": "sgd", **alg}, d,
                      horizon=horizon,
                      steps=steps, grid=grid, every=16)
    claims = (Claim("lognormal", "f_gap", "xie_poly", "<", "xie_const",
                    text="log-normal compute times: the polynomial staleness weight reaches "
                         "a lower f - f* than the constant one"),)
    return Experiment(
        name="xie_fedasync", title="Xie et al. FedAsync mixing vs PersA-FL Option A",
        source="Xie, Koyejo & Gupta 2019 (abstract; staleness functions from a secondary "
               "source, docs/theory/xie-2019.md)",
        claim='"Empirical results show that the proposed algorithm converges quickly and '
              'tolerates staleness" (abstract); the adaptive (polynomial, hinge) mixing is '
              'the paper\'s device for staleness',
        analogue=f"n = {n}, log-normal compute times (sigma 1.5), one local SGD step (not "
                 "Xie's regularised local problem, which could not be read); PersA-FL's "
                 "Option A is shown for reference: neither paper orders it against Xie's",
        settings=(Setting("lognormal", "compute ~ log-normal", tuple(arms)),), claims=claims,
        horizon=horizon, replicates=replicates, curve_metric="f_gap", metrics=("f_gap",),
        curve_log=True, rule="per family, the step with the lowest mean f - f* at the "
                             "horizon on 3 tuning replicates")


#: the step-size grid of :func:`koloskova_shape` (multiples of 1/L): finer than
#: :data:`GRID`, since a slope between two design points reads the ratio of two tuned
#: errors and a coarse grid quantises it
SHAPE_GRID = (0.01, 0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 0.7, 1.0, 1.4, 1.9)


def straggler(m: float, p: float = 0.05) -> dict[str, Any]:
    """A rare-straggler compute law: uniform [0.5, 1.5], multiplied by ``m`` with
    probability ``p`` (``m = 1``: no straggler)."""
    return {"kind": "straggler", "base": {"kind": "uniform", "low": 0.5, "high": 1.5},
            "p": float(p), "m": float(m)}


def tau_max_bound(compute: dict[str, Any], n: int) -> float:
    """The engine's provable maximum staleness of ``n`` always-busy asynchronous-SGD
    workers with compute law ``compute`` (``fedsim.engine.physical_staleness_bound``,
    docs/PLUGINS.md section 4): the ``tau_max`` of Definition 4 the design reads."""
    from fedsim.config import DelaysConfig
    from fedsim.engine import physical_staleness_bound

    return float(physical_staleness_bound(DelaysConfig.from_dict({"compute": compute}), n, 1,
                                          False, 1))


def koloskova_shape(*, replicates: int = MEASURE_R, n: int = 4, steps: int = 800,
                    ms: Sequence[float] = (1.0, 32.0), ns: Sequence[int] = (2, 16),
                    noise_sd: float = 0.01, grid: Sequence[float] = SHAPE_GRID) -> Experiment:
    """Theorem 8 / Corollary 9 (steps (11)) against Theorem 6 (constant steps) as rate
    shapes (``RATE_SHAPE_ONLY``: the constants were not read).  Written as the accuracy
    after ``K`` iterations, ``eps(K) ~ sigma/sqrt(K) + tau/K`` (``fedsim.literature.
    koloskova``: the iteration count to ``eps`` and ``eps(K)`` agree up to a factor 2), with
    ``tau = tau_C`` (12) or ``sqrt(tau_C tau_max)`` (8); the noise is small (sd
    ``noise_sd``) so that the delay term ``tau/K`` is the one measured.  The metric is the
    theorems' own, ``(1/K) sum_{t<K} ||grad f(x_t)||^2`` (``avg_grad_sq``, recorded at every
    step), after ``steps`` iterations, each family's step tuned on ``grid``.

    A log-log slope below ``s`` between design points ``x_lo < x_hi`` is the claim
    ``eps(x_hi) < (x_hi/x_lo)^s eps(x_lo)``, judged on paired replicates:

    * setting ``tau_max``: ``n`` workers (``tau_C = n``), a rare straggler (``p = 0.05``)
      of factor ``m`` in ``ms`` grows ``tau_max`` (the engine's provable bound,
      :func:`tau_max_bound`); the slope in ``tau_max`` is below 1/2 -- for steps (11) this
      is Theorem 8's content against Theorem 6 (whose rate grows as ``sqrt(tau_max)``),
      for constant steps it is Theorem 6's own shape (8);
    * setting ``tau_C``: no straggler, ``n`` in ``ns`` workers (``tau_C = n``, ``tau_max``
      proportional to it); the slope in ``tau_C`` is at most 1 (the ``tau_C/eps`` term of
      (12), and of (8) with ``tau_max ~ tau_C``)."""
    hi_m, lo_m = float(ms[-1]), float(ms[0])
    t_lo, t_hi = tau_max_bound(straggler(lo_m), n), tau_max_bound(straggler(hi_m), n)
    # a time long enough for ``steps`` iterations of every family (the step cap ends the
    # runs: mean compute (1 + p (m - 1)) over min(n) workers, 1.5 times over; the
    # recorded design's longest run took 589 of this 1530)
    horizon = 1.5 * steps * (1.0 + 0.05 * (max(hi_m, 1.0) - 1.0)) / min(n, *ns)
    arms: list[Arm] = []
    prob = problem(n, noise_sd=noise_sd)
    for m in ms:
        for fam, alg in ((f"const_m{m:g}", _async(10**9)), (f"adapt_m{m:g}", _async(n))):
            arms += _arms("shape-tmax", fam, f"{fam.split('_')[0]} steps, m = {m:g}", prob,
                          alg, straggler(m), horizon=horizon, steps=steps, grid=grid,
                          every=1, metrics=("grad_sq", "f_gap"))
    arms_c: list[Arm] = []
    for k in ns:
        pk = problem(int(k), noise_sd=noise_sd)
        for fam, alg in ((f"const_n{k}", _async(10**9)), (f"adapt_n{k}", _async(int(k)))):
            arms_c += _arms("shape-tauc", fam, f"{fam.split('_')[0]} steps, n = {k}", pk,
                            alg, straggler(1.0), horizon=horizon, steps=steps, grid=grid,
                            every=1, metrics=("grad_sq", "f_gap"))
    f_max = (t_hi / t_lo) ** 0.5
    f_c = float(ns[-1]) / float(ns[0])
    claims = tuple(
        Claim("tau_max", "avg_grad_sq", f"{r}_m{hi_m:g}", "<", f"{r}_m{lo_m:g}", factor=f_max,
              text=f"{what}: slope of eps(K) in tau_max ({t_lo:g} -> {t_hi:g}) below 1/2, "
                   f"i.e. eps(m = {hi_m:g}) < {f_max:.3g} eps(m = {lo_m:g})")
        for r, what in (("adapt", "steps (11), Theorem 8 vs Theorem 6"),
                        ("const", "constant steps, Theorem 6 (8)"))) + tuple(
        Claim("tau_C", "avg_grad_sq", f"{r}_n{ns[-1]}", "<", f"{r}_n{ns[0]}", factor=f_c,
              text=f"{what}: slope of eps(K) in tau_C ({ns[0]} -> {ns[-1]}) at most 1, "
                   f"i.e. eps(n = {ns[-1]}) < {f_c:g} eps(n = {ns[0]})")
        for r, what in (("adapt", "steps (11), Theorem 8 (12)"),
                        ("const", "constant steps, Theorem 6 (8)")))
    return Experiment(
        name="koloskova_shape", title="Koloskova et al.: rate shapes of Theorems 6 and 8",
        source="Koloskova, Stich & Jaggi, NeurIPS 2022, Theorem 6 (8), Theorem 8 (11)-(12), "
               "Corollary 9 (13)",
        claim='"occasional straggler devices will usually be present. In this case the '
              'maximum delay is much larger than the average delay." (4.4); Theorem 8 (12): '
              'O(sigma^2/eps^2 + tau_C/eps) iterations with steps (11), Theorem 6 (8): '
              'O(sigma^2/eps^2 + sqrt(tau_C tau_max)/eps) with a constant step, Corollary 9 '
              '(13): O(sigma^2/eps^2 + tau_avg/eps)',
        analogue=f"homogeneous quadratic (dim 4, mu 0.1, L 1, noise sd {noise_sd:g}), "
                 f"{steps} iterations, accuracy (1/K) sum ||grad f||^2; tau_max setting: "
                 f"n = {n}, straggler m in {list(ms)} (provable tau_max {t_lo:g} -> "
                 f"{t_hi:g}); tau_C setting: n in {list(ns)}; the O(.) constants are "
                 "unknown, so only slopes (ratios between design points) are claimed",
        settings=(Setting("tau_max", f"tau_C = {n}, tau_max grown by m", tuple(arms)),
                  Setting("tau_C", "tau_C = n grown, no straggler", tuple(arms_c))),
        claims=claims, horizon=horizon, replicates=replicates, curve_metric="avg_grad_sq",
        metrics=("avg_grad_sq", "f_gap"), curve_log=True, select_metric="avg_grad_sq",
        rule="per family (rule, design point), the grid value with the lowest mean "
             "(1/K) sum ||grad f||^2 at the horizon on 3 tuning replicates")


def shape_slopes(run_dir: str, exp: Experiment | None = None) -> list[dict[str, Any]]:
    """The log-log slopes behind :func:`koloskova_shape`'s claims, read from a finished run
    directory: per claim ``a < (x_hi/x_lo)^s0 b``, the slope ``log(mean a / mean b) /
    log(x_hi/x_lo)`` and its 99% interval (delta method on the paired measurement
    replicates: ``log mean a - log mean b`` has the variance of ``a_r/mean a - b_r/mean b``
    over ``R``; Student t, ``R - 1`` degrees of freedom), with ``s0`` and the claim text."""
    import math as _m

    import numpy as np
    from fedsim.validation.montecarlo_store import load_records
    from fedsim.validation.paper.stats import arm_values, select
    from scipy import stats as st

    e = exp or koloskova_shape()
    recs = load_records(run_dir)
    chosen = select(e, recs)
    arms = {(s.key, a.key): a for s in e.settings for a in s.arms}
    out = []
    for c in e.claims:
        a = arm_values(e, arms[(c.setting, chosen[c.setting][c.a])], recs, c.metric)
        b = arm_values(e, arms[(c.setting, chosen[c.setting][c.b])], recs, c.metric)
        ok = np.isfinite(a) & np.isfinite(b)
        a, b = a[ok], b[ok]
        ratio = float(c.factor) ** (1.0 / (0.5 if c.setting == "tau_max" else 1.0))
        lx = _m.log(ratio)
        d = _m.log(a.mean() / b.mean())
        se = float(np.std(a / a.mean() - b / b.mean(), ddof=1) / _m.sqrt(a.size))
        t = float(st.t.ppf(0.995, a.size - 1))
        out.append({"setting": c.setting, "claim": c.text, "s0": 0.5 if c.setting == "tau_max"
                    else 1.0, "x_ratio": ratio, "slope": d / lx, "lo": (d - t * se) / lx,
                    "hi": (d + t * se) / lx, "pairs": int(a.size)})
    return out


#: name -> builder(small) -> Experiment (the small forms are the end-to-end test's)
LITERATURE: dict[str, Callable[[bool], Experiment]] = {
    "koloskova_44": lambda small: koloskova_44(replicates=2, horizon=20.0, n=3,
                                               kinds=("exponential", "pareto"),
                                               grid=(0.15,)) if small else koloskova_44(),
    "koloskova_tavg": lambda small: koloskova_tavg(replicates=2, n=3, steps=60, horizon=100.0,
                                                   grid=(0.15,)) if small
    else koloskova_tavg(),
    "cohen_picky": lambda small: cohen_picky(replicates=2, n=3, steps=60, horizon=100.0,
                                             thresholds=(0.2,), grid=(0.15,)) if small
    else cohen_picky(),
    "xie_fedasync": lambda small: xie_fedasync(replicates=2, n=3, steps=60, horizon=100.0,
                                               grid=(0.15,))
    if small else xie_fedasync(),
    "koloskova_shape": lambda small: koloskova_shape(replicates=2, steps=40, ms=(1.0, 4.0),
                                                     ns=(2, 3), grid=(0.15,)) if small
    else koloskova_shape(),
}
