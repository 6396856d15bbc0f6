"""AsyPFL (Ma, Lu, Li, Cui 2022; /work/shared/papers/asypfl.md): Figures 2 and 3 on digits.

Both experiments measure what the paper measures, the *mean testing accuracy* ("the
average testing accuracy of all clients", Sec. 4.1) of the clients' personalised models:
for AsyPFL client k's own ``beta_k`` on client k's test rows (``pers_acc_beta``), averaged
over the clients.  On the *training* loss purely local models win trivially, so nothing
here is judged on training rows.  Data: softmax regression on scikit-learn's digits,
``c`` classes per client (the paper's non-IID(m) split), 20% of each client's rows held
out for testing and, of the rest, 20% for validation (:func:`fedsim.problems.splits.
validation_split`; its own seeded stream).

* :func:`fig2_experiment` -- Sec. 4.3, Figure 2: AsyPFL with ``lambda = 0`` (purely local
  personal models) against AsyPFL with the best ``lambda`` of a grid.  ``lambda`` is a
  model hyper-parameter, so it is chosen like the step size, on the *validation* rows
  (highest mean validation accuracy of the personal models over the tuning replicates):
  the suite's default rule (lowest training gap) would pick ``lambda = 0`` trivially, and
  the test rows are never used to choose.  The grid holds only ``lambda > 0`` (the paper
  compares "AsyPFL with lambda = 0 and AsyPFL with best lambda").
* :func:`fig3_experiment` -- Sec. 4.4, Figure 3: a fraction ``s`` of irregular clients
  (stragglers: download and upload ``slow`` times slower on average) for ``s`` in
  {0, 0.3, 0.6}.  The paper's baselines FedProx and APFL are not in fedsim; the baseline
  is synchronous FedAvg over all clients (FedProx with mu = 0; it never uses a stale
  update: a round waits for its slowest client), scored like Per-FedAvg's evaluation by
  one gradient step of size ``1/L`` on each client's training rows (``pers_acc_maml``).
  Claims: (a) more irregular clients hurt each method (accuracy at the horizon falls with
  ``s``); (b) AsyPFL's drop from ``s = 0`` to the largest ``s`` is smaller than the
  baseline's -- a difference of differences over four arms, a
  :class:`~validation.paper.common.Contrast` (judged on the common-random-number
  replicates by :func:`fedsim.validation.paper.stats.judge_contrast`).

The x-axis is simulated time (the paper's is communication rounds).  Step sizes: the
same grid ``g/L`` for every algorithm (``eta = delta = g/L`` for AsyPFL, ``eta = g/L``
for FedAvg), chosen on the validation rows like ``lambda``; in Fig. 3 every (method,
share) pair is its own family, so the step is re-chosen for each share of stragglers.
"""

from __future__ import annotations

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

__all__ = ["fig2_experiment", "fig3_experiment", "digits_problem", "METRICS",
           "straggler_delays", "RULE"]

RULE = ("step size g/L for g in the grid (eta = delta = g/L for AsyPFL, eta = g/L for "
        "FedAvg; L the problem's tagged smoothness bound, UPPER) and, where a family has "
        "one, lambda from its grid: per family and setting the arm with the HIGHEST mean "
        "validation accuracy of the personalised models (val_pers_acc, on validation rows "
        "carved from the training rows) over the tuning replicates, among arms with no "
        "diverged replicate; the same grid and rule for every algorithm; the test rows "
        "are never used to choose")

#: experiment metric -> recorded metric, per scoring of the personalised models
_BETA = {"pers_acc": "pers_acc_beta", "pers_loss": "pers_loss_beta",
         "val_pers_acc": "val_pers_acc_beta"}
_MAML = {"pers_acc": "pers_acc_maml", "pers_loss": "pers_loss_maml",
         "val_pers_acc": "val_pers_acc_maml"}
METRICS = ("pers_acc", "val_pers_acc", "pers_loss", "f_gap")
_ANALOGUE = ("digits (1,797 8x8 images, not MNIST/EMNIST/CIFAR100/Sentiment140/"
             "Shakespeare), a linear softmax model (not VGG11, ResNet50 or an LSTM), "
             "n={n} clients with c={c} classes each (the paper's non-IID(m) split), 20% of "
             "each client's rows held out for testing and 20% of the rest for validation; "
             "x-axis simulated time (the paper's: communication rounds); compute "
             "Exp(mean 0.1) per local step, download and upload Exp(mean 0.5)")


def _two_stage(tune_replicates: int) -> dict[str, Any]:
    """Stage 1 of the suite (:mod:`fedsim.validation.paper.common`): ``tune_replicates`` tuning
    replicates, the arm with the highest mean validation accuracy is kept."""
    return {"tune_replicates": tune_replicates, "select_metric": "val_pers_acc",
            "select_max": True}


def digits_problem(n: int, classes: int) -> dict:
    """``[problem]``: digits softmax, ``classes`` per client, test 20%, validation 20%."""
    return {"kind": "softmax", "n_clients": n, "split": "classes",
            "classes_per_client": classes, "test_fraction": 0.2, "validation_fraction": 0.2,
            "reg": 1e-3, "seed": 0, "min_rows": 5}


def straggler_delays(n: int, s: float, slow: float) -> dict:
    """``[delays]``: compute Exp(mean 0.1) per local step, download and upload Exp(mean
    0.5); the first ``round(s n)`` clients (irregular) communicate ``slow`` times slower."""
    d: dict[str, Any] = {"compute": {"kind": "exponential", "rate": 10.0},
                         "compute_per": "step",
                         "download": {"kind": "exponential", "rate": 2.0},
                         "upload": {"kind": "exponential", "rate": 2.0}}
    k = int(round(s * n))
    if k:
        d["override"] = [{"clients": list(range(k)),
                          "download": {"kind": "exponential", "rate": 2.0 / slow},
                          "upload": {"kind": "exponential", "rate": 2.0 / slow}}]
    return d


def _every(n: int, horizon: float, records: int = 40) -> int:
    """About ``records`` metric records per AsyPFL run (one server step per upload; a
    round takes about 1.2 time units when nothing straggles)."""
    return max(1, int(n * horizon / 1.2 / records))


def _asypfl_arm(tag: str, family: str, label: str, problem: dict, delays: dict, L: float,
                g: float, lam: float, E: int, batch: int, horizon: float, n: int) -> Arm:
    alg = {"name": "asypfl", "client_rule": "asypfl", "E": E, "eta": g / L, "delta": g / L,
           "gamma": 0.0, "lam": lam, "batch": batch}
    sc = scenario_dict(f"{tag}-g{g:g}-lam{lam:g}", problem, alg, delays, horizon=horizon,
                       metrics=tuple(_BETA.values()) + ("f_gap",),
                       every=_every(n, horizon), trigger={"kind": "every_upload"})
    return Arm(f"{tag}/g{g:g}/lam{lam:g}", family, f"{label} (g={g:g}, lambda={lam:g})", sc,
               g, alias=dict(_BETA))


def fig2_experiment(*, replicates: int = MEASURE_R, tune_replicates: int = 3, n: int = 30,
                    classes: int = 3, horizon: float = 60.0,
                    grid: tuple[float, ...] = (0.5, 2.0),
                    lams: tuple[float, ...] = (1.0, 4.0, 16.0, 64.0), E: int = 2,
                    batch: int = 16) -> Experiment:
    """[AsyPFL] Sec. 4.3, Figure 2 analogue (module docstring)."""
    problem = digits_problem(n, classes)
    L = L_of(problem)
    d = straggler_delays(n, 0.0, 1.0)
    arms = [_asypfl_arm("fig2/lam0", "lam0", "AsyPFL, lambda=0", problem, d, L, g, 0.0, E,
                        batch, horizon, n) for g in grid]
    arms += [_asypfl_arm("fig2/best", "best", "AsyPFL, best lambda", problem, d, L, g, lam,
                         E, batch, horizon, n) for g in grid for lam in lams]
    claims = (Claim("noniid", "pers_acc", "best", ">", "lam0",
                    text="mean personal test accuracy at t_h: best lambda > lambda = 0"),)
    return Experiment(
        name="asypfl_fig2", title="AsyPFL Fig. 2 analogue: the elastic term (lambda)",
        source="AsyPFL (Ma et al. 2022) Sec. 4.3, Figure 2 (non-IID)",
        claim='"We compare the result between AsyPFL with lambda = 0 and AsyPFL with best '
              'lambda ... the appropriate lambda can increase the stability for unstable '
              'methods and can force divergent methods to converge. It also increases '
              'accuracy in most cases" (Sec. 4.3; Figure 2: "AsyPFL with elastic term '
              'stabilizes and improves the convergence of the algorithm")',
        analogue=_ANALOGUE.format(n=n, c=classes) + f"; E={E}, batch {batch}, gamma=0; "
                 f"lambda grid {list(lams)} (the paper's values are not given); "
                 "untested: the stability part of the claim (a convex model: lambda = 0 "
                 "does not diverge at these steps) and the second row of Figure 2 "
                 "(training loss)",
        settings=(Setting("noniid", f"n={n}, c={classes}", tuple(arms)),),
        claims=claims, horizon=horizon, replicates=replicates, curve_metric="pers_acc",
        metrics=METRICS, rule=RULE, **_two_stage(tune_replicates))


def _fedavg_arm(tag: str, family: str, label: str, problem: dict, delays: dict, L: float,
                g: float, E: int, batch: int, horizon: float) -> Arm:
    alg = {"name": "fedavg", "client_rule": "sgd", "Q": E, "eta": g / L, "batch": batch,
           "participation": 1.0}
    sc = scenario_dict(f"{tag}-g{g:g}", problem, alg, delays, horizon=horizon,
                       metrics=tuple(_MAML.values()) + ("f_gap",), every=1,
                       record={"maml_alpha": 1.0 / L})
    return Arm(f"{tag}/g{g:g}", family, f"{label} (g={g:g})", sc, g, alias=dict(_MAML))


def _pct(s: float) -> str:
    return f"s{int(round(100 * s))}"


def fig3_experiment(*, replicates: int = MEASURE_R, tune_replicates: int = 3, n: int = 30,
                    classes: int = 3, horizon: float = 120.0,
                    shares: tuple[float, ...] = (0.0, 0.3, 0.6), slow: float = 5.0,
                    grid: tuple[float, ...] = (0.5, 2.0), lam: float = 4.0, E: int = 2,
                    batch: int = 16) -> Experiment:
    """[AsyPFL] Sec. 4.4, Figure 3 analogue (module docstring)."""
    problem = digits_problem(n, classes)
    L = L_of(problem)
    arms: list[Arm] = []
    for s in shares:
        d = straggler_delays(n, s, slow)
        arms += [_asypfl_arm(f"fig3/asypfl/{_pct(s)}", f"asypfl_{_pct(s)}",
                             f"AsyPFL, s={s:g}", problem, d, L, g, lam, E, batch, horizon, n)
                 for g in grid]
        arms += [_fedavg_arm(f"fig3/fedavg/{_pct(s)}", f"fedavg_{_pct(s)}",
                             f"sync FedAvg + 1 step, s={s:g}", problem, d, L, g, E, batch,
                             horizon) for g in grid]
    claims = []
    for m, name in (("asypfl", "AsyPFL"), ("fedavg", "sync FedAvg")):
        claims += [Claim("irregular", "pers_acc", f"{m}_{_pct(hi)}", "<", f"{m}_{_pct(lo)}",
                         text=f"{name}: accuracy at t_h with s={hi:g} < with s={lo:g}")
                   for lo, hi in zip(shares[:-1], shares[1:], strict=True)]
    s0, s1 = _pct(shares[0]), _pct(shares[-1])
    claims.append(Contrast(
        "irregular", "pers_acc",
        ((1.0, f"asypfl_{s1}"), (-1.0, f"asypfl_{s0}"), (-1.0, f"fedavg_{s1}"),
         (1.0, f"fedavg_{s0}")), ">",
        text=f"AsyPFL's drop from s={shares[0]:g} to s={shares[-1]:g} is smaller than sync "
             "FedAvg's: (A(s1) - A(s0)) - (B(s1) - B(s0)) > 0"))
    return Experiment(
        name="asypfl_fig3", title="AsyPFL Fig. 3 analogue: irregular clients (stragglers)",
        source="AsyPFL (Ma et al. 2022) Sec. 4.4, Figure 3",
        claim='"a more significant number of irregular clients have adverse effects on all '
              'methods" (Sec. 4.4); Figure 3: "AsyPFL utilizes stale updates from stragglers '
              'and is robust to irregular clients"',
        analogue=_ANALOGUE.format(n=n, c=classes) + f"; irregular clients: a share s in "
                 f"{list(shares)} of the clients whose download and upload are {slow:g} "
                 f"times slower; AsyPFL with lambda={lam:g} (fixed), E={E}, batch {batch}; "
                 "the paper's baselines FedProx and APFL are not in fedsim (nor SCAFFOLD, "
                 "FedGATE, VRL-SGD, FedAMP): the baseline is synchronous FedAvg over all "
                 "clients (FedProx with mu = 0), which waits for stragglers instead of "
                 "dropping them as the paper's FedProx does, scored after one gradient step "
                 "of size 1/L on each client's training rows; claim (b), the smaller drop, "
                 "is a difference of differences (a contrast of four arms)",
        settings=(Setting("irregular", f"n={n}, c={classes}, slow={slow:g}x", tuple(arms)),),
        claims=tuple(claims), horizon=horizon, replicates=replicates, curve_metric="pers_acc",
        metrics=METRICS, rule=RULE, extra={"shares": list(shares)},
        **_two_stage(tune_replicates))
