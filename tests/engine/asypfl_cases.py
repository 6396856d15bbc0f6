"""The AsyPFL scenarios whose traces were recorded with the engine that computed inside
SimPy (``tests/engine/data/asypfl_ref.npz``, written by ``python -m
tests.engine.asypfl_cases`` on main at bd440e6, before the move to the event table).
Shared by ``tests/engine/test_asypfl_replay.py``."""

from __future__ import annotations

import numpy as np

from fedsim import config

__all__ = ["CASES", "scenario", "flatten"]

_DIGITS = {"kind": "softmax", "n_clients": 5, "split": "classes", "classes_per_client": 3,
           "test_fraction": 0.2, "validation_fraction": 0.2, "reg": 1e-3, "seed": 0,
           "min_rows": 5}
_QUAD = {"kind": "quadratic", "n": 6, "dim": 4, "mu": 0.1, "L": 1.0, "heterogeneity": 1.0,
         "noise": "additive", "noise_sd": 0.1, "seed": 0}
_DELAYS = {"compute": {"kind": "exponential", "rate": 10.0}, "compute_per": "step",
           "download": {"kind": "exponential", "rate": 2.0},
           "upload": {"kind": "exponential", "rate": 2.0},
           "override": [{"clients": [0, 1],
                         "download": {"kind": "exponential", "rate": 0.4},
                         "upload": {"kind": "exponential", "rate": 0.4}}]}
_PERS = ["pers_acc_beta", "pers_loss_beta", "val_pers_acc_beta", "val_pers_loss_beta",
         "f_gap", "test_acc"]

#: name -> (problem, algorithm overrides, metrics, steps, every, seed)
CASES = {
    "quad_lam2_gamma": (_QUAD, {"lam": 2.0, "gamma": 0.01}, ["grad_sq", "dist_sq", "f_gap"],
                        400, 3, 1),
    "quad_lam0": (_QUAD, {"lam": 0.0}, ["grad_sq", "f_gap"], 300, 1, 2),
    "quad_diverge": (_QUAD, {"lam": 1.0, "eta": 8.0, "delta": 8.0}, ["grad_sq"], 400, 2, 3),
    "digits_lam2_gamma": (_DIGITS, {"lam": 2.0, "gamma": 0.02}, _PERS, 150, 7, 3),
    "digits_lam0": (_DIGITS, {"lam": 0.0}, _PERS, 120, 5, 4),
    "logistic_lam1": ({"kind": "logistic", "n_clients": 6, "dim": 3,
                       "samples_per_client": 20, "nu_reg": 0.01, "seed": 0},
                      {"lam": 1.0, "gamma": 0.001}, ["grad_sq", "f_gap"], 200, 5, 1),
}


def scenario(name: str) -> config.Scenario:
    """The scenario of case ``name``."""
    problem, over, metrics, steps, every, seed = CASES[name]
    alg = {"name": "asypfl", "client_rule": "asypfl", "E": 2, "eta": 0.1, "delta": 0.1,
           "gamma": 0.0, "batch": 4}
    alg.update(over)
    return config.Scenario.from_dict({
        "name": name, "seed": seed, "problem": problem, "algorithm": alg, "delays": _DELAYS,
        "trigger": {"kind": "every_upload"}, "horizon": {"steps": steps},
        "record": {"every": every, "metrics": metrics}})


def flatten(tr, prefix: str) -> dict[str, np.ndarray]:
    """A Trace as named arrays (``prefix/field``, ``prefix/m/name``, ``prefix/i/name``)."""
    out = {}
    for f in ("time", "kind_code", "client", "staleness_steps", "staleness_time",
              "buffer_fill", "metric_steps", "client_updates", "concurrency_time",
              "concurrency_busy", "final_w"):
        out[f"{prefix}/{f}"] = np.asarray(getattr(tr, f))
    for f in ("concurrency_mean", "sim_time", "staleness_bound", "steps_done"):
        out[f"{prefix}/{f}"] = np.asarray(getattr(tr, f))
    out[f"{prefix}/diverged_step"] = np.asarray(-1 if tr.diverged_step is None
                                                else tr.diverged_step)
    for k, v in tr.metrics.items():
        out[f"{prefix}/m/{k}"] = np.asarray(v)
    for k, v in tr.info.items():
        out[f"{prefix}/i/{k}"] = np.asarray(v)
    return out


if __name__ == "__main__":  # pragma: no cover - writes the reference file
    from pathlib import Path

    from fedsim.engine import run

    arrays: dict[str, np.ndarray] = {}
    for case in CASES:
        for rep in (0, 1):
            arrays.update(flatten(run(scenario(case), rep), f"{case}/{rep}"))
    path = Path(__file__).with_name("data") / "asypfl_ref.npz"
    np.savez_compressed(path, **arrays)
    print(path, len(arrays))
