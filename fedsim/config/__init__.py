"""Scenarios: a frozen dataclass tree that round-trips to TOML (docs/INTERNALS.md section 2).

Schema (every table optional except ``[problem]``; unknown keys, bad values and
inconsistent choices raise :class:`~fedsim.errors.ConfigError` naming the dotted field)::

    name = "fedasync-quadratic"       # free text
    seed = 1                          # run seed (fedsim.rng.Streams(seed, replicate))

    [problem]                         # the objective; its own `seed` (independent of the run)
    kind = "quadratic"                # "quadratic" | "logistic" | "digits" | "softmax" | "norm"
    # quadratic: QuadraticProblem.random(n, dim, mu, L, heterogeneity, noise_sd, noise,
    #            shared_hessian, seed); logistic: LogisticProblem.synthetic(n_clients, dim,
    #            samples_per_client, heterogeneity, label_noise, seed, nu_reg, anchors,
    #            anchor_scale); digits: LogisticProblem.digits(n_clients, nu_reg, ...);
    # softmax: SoftmaxProblem.digits(...); norm: NormProblem(B, n, dim)
    # (keys are the builder's keyword arguments)

    [algorithm]
    name = "fedasync"                 # "fedasync" | "fedbuff" | "area" | "fedavg" | "asfedavg"
                                      # | "asypfl"
    model = "physical"                # fedasync: "physical" | "window" | "expcycle";
                                      # fedbuff, asfedavg: "physical" | "expcycle";
                                      # fedavg, asypfl: "physical";
                                      # area: "algorithm" | "iterate_model"
    client_rule = "sgd"               # "sgd" (Option A) | "maml" | "fomaml" | "hfmaml"
                                      # (Option B) | "moreau" (Option C) | "area" | "upload"
                                      # | "asypfl" (asypfl only)
    Q = 10                            # local steps ([P]); AREA uses M
    eta = 0.01                        # local step ([P])
    batch = 1                         # batch size b
    beta = 1.0                        # fedasync: server step; asfedavg: server mixing;
                                      # fedavg: Per-FedAvg's outer step (maml rules only)
    # maml/fomaml/hfmaml: alpha (MAML inner step), hf_delta (hfmaml finite difference)
    # moreau: lam, nu, inner_max_iter, inner_solver = "gd" | "exact"
    # fedbuff: buffer (Delta >= 1), server_lr, staleness_weight = "none" | "inverse_sqrt"
    #          | "polynomial", staleness_exponent;   asfedavg: buffer, beta
    # fedavg: participation (r in (0, 1]; r*n clients per round, rounded, at least 1),
    #         server_mix (w <- w + server_mix (mean - w), default 1), beta (Per-FedAvg's
    #         outer step = the maml rule's eta; maml/fomaml/hfmaml only, not with eta)
    # area: M, alpha = {kind="constant", value=0.1} | {kind="c_over_k_plus_d", c=, d=}
    #       | {kind="theorem7"}  (the [A] Thm 7 schedule from the problem's L, mu and p_min)
    # window: tau, delay_pmf = [pi_0, ..., pi_tau]  (default: point mass at tau)
    # asypfl (Algorithm 1 of Ma et al. 2022; fedsim.engine.models.asypfl): E (local epochs, default
    #        1; E_k = pi_k E), eta (local step, 0.01), delta (personal step, 0.01), gamma
    #        (decay, 0), lam (elastic weight, required, >= 0), batch; needs trigger
    #        every_upload, delays.compute_per = "step", a compute delay that is not
    #        constant 0, and constant-0 download+upload for every client or for none
    # any algorithm: w0 = initial model w^0 (x_{s,0} for AREA): a list of dim numbers, or one
    #                number for every coordinate (default 0)

    [delays]                          # defaults below; per-client overrides in [[delays.override]]
    download = {kind = "constant", value = 0.0}
    compute = {kind = "exponential", rate = 1.0}
    upload = {kind = "constant", value = 0.0}
    think = {kind = "constant", value = 0.0}
    compute_per = "round"             # or "step" (one compute delay per local step)
    read_at = "request"               # model read when the download is requested ("request",
                                      # the server sends its current model) or when it
                                      # completes ("arrival", THEORY_SPEC 10.2(c))
    # [[delays.override]]  clients = [0, 1]  compute = {kind = "exponential", rate = 5.0}

    [trigger]                         # aggregation trigger
    kind = "every_upload"             # | "every_k" (count) | "poisson" (rate) | "period" (period)

    [horizon]
    steps = 1000                      # T server steps (K global iterations for AREA)
    time = inf                        # simulated-time horizon; at least one must be finite

    [record]
    every = 1
    metrics = ["grad_sq", "dist_sq", "f_gap"]   # also grad_maml_sq, grad_me_sq, ergodic_f_gap
    # maml_alpha, me_lam: for grad_maml_sq / grad_me_sq when the client rule does not fix them

Per-FedAvg and pFedMe are synchronous FedAvg with ``client_rule = "maml"`` / ``"moreau"``.
"""


from fedsim.config.algorithm import AlgorithmConfig, StepSchedule
from fedsim.config.io import dump, dumps, load, loads
from fedsim.config.problem import ProblemConfig, build_problem
from fedsim.config.runtime import (
    ClientDelays,
    DelaysConfig,
    HorizonConfig,
    RecordConfig,
    TriggerConfig,
)
from fedsim.config.scenario import Scenario
from fedsim.config.schema import ALGORITHMS, CLIENT_RULES, MODELS

__all__ = [
    "Scenario", "ProblemConfig", "AlgorithmConfig", "StepSchedule", "DelaysConfig",
    "ClientDelays", "TriggerConfig", "HorizonConfig", "RecordConfig",
    "load", "loads", "dump", "dumps", "build_problem",
    "ALGORITHMS", "CLIENT_RULES", "MODELS",
]
