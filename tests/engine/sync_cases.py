"""Synchronous-round scenarios whose Traces were computed by the engine of main (bd440e6)
before the synchronous runner became a table writer; ``data/sync_reference.npz`` holds
them (``data/make_sync_reference.py`` wrote it).  The replayed runner must give them
again (``tests/engine/test_sync_table.py``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from fedsim.config import Scenario
from fedsim.trace import Trace

__all__ = ["CASES", "INTERPRETED", "scenario", "load_reference", "save_reference",
           "REFERENCE"]

REFERENCE = Path(__file__).parent / "data" / "sync_reference.npz"

_QUAD = {"kind": "quadratic", "n": 10, "dim": 4, "mu": 0.1, "L": 1.0, "heterogeneity": 1.0,
         "noise_sd": 0.1, "seed": 0}
_EXP = {"download": {"kind": "exponential", "rate": 10.0},
        "compute": {"kind": "exponential", "rate": 1.0},
        "upload": {"kind": "exponential", "rate": 10.0}}
_DIGITS = {"kind": "softmax", "n_clients": 8, "split": "dirichlet", "a": 0.3,
           "test_fraction": 0.25, "reg": 1e-3, "seed": 0, "min_rows": 5}
_HELD = ["test_acc", "pers_acc_maml", "pers_acc_me", "f_gap"]


def _sc(name: str, problem: dict, algorithm: dict, horizon: dict, metrics: list[str],
        every: int = 1, delays: dict | None = None, record: dict | None = None,
        seed: int = 3) -> dict[str, Any]:
    rec = {"every": every, "metrics": metrics, **(record or {})}
    return {"name": name, "seed": seed, "problem": problem,
            "algorithm": {"name": "fedavg", **algorithm}, "delays": delays or _EXP,
            "horizon": horizon, "record": rec}


#: name -> (scenario dict, replicates)
CASES: dict[str, tuple[dict[str, Any], tuple[int, ...]]] = {
    # FedAvg with SGD on a quadratic (compiled view), participation < 1, server_mix != 1
    "quad_sgd": (_sc("quad_sgd", _QUAD, {"client_rule": "sgd", "Q": 3, "eta": 0.1,
                                         "batch": 2, "participation": 0.5,
                                         "server_mix": 0.7},
                     {"steps": 40}, ["grad_sq", "dist_sq", "f_gap"]), (0, 1, 5)),
    # full participation, the plain average, metrics every 3 steps, compute per step
    "quad_full": (_sc("quad_full", _QUAD, {"client_rule": "sgd", "Q": 4, "eta": 0.05},
                      {"steps": 25}, ["grad_sq", "ergodic_f_gap"], every=3,
                      delays={**_EXP, "compute_per": "step"}), (0, 2)),
    # a time horizon that ends inside a round
    "quad_time": (_sc("quad_time", _QUAD, {"client_rule": "sgd", "Q": 2, "eta": 0.1,
                                           "participation": 0.3},
                      {"time": 7.3, "steps": 10000}, ["grad_sq"], every=2), (0, 1)),
    # diverging: the trace is marked and truncated
    "quad_diverge": (_sc("quad_diverge", _QUAD, {"client_rule": "sgd", "Q": 3, "eta": 30.0,
                                                 "participation": 0.5},
                         {"steps": 300}, ["grad_sq", "dist_sq"]), (0, 1)),
    # Per-FedAvg on a quadratic (no compiled hvp: the interpreted MAML oracle)
    "quad_maml": (_sc("quad_maml", _QUAD, {"client_rule": "maml", "alpha": 0.05, "Q": 5,
                                           "beta": 0.05, "batch": 4, "participation": 0.5},
                      {"steps": 30}, ["grad_sq", "grad_maml_sq"]), (0, 1)),
    # pFedMe on a quadratic (Moreau, exact inner solves), server_mix != 1
    "quad_moreau": (_sc("quad_moreau", _QUAD, {"client_rule": "moreau", "lam": 2.0,
                                               "inner_solver": "exact", "nu": 0.0, "Q": 3,
                                               "eta": 0.2, "participation": 0.4,
                                               "server_mix": 0.8},
                        {"steps": 25}, ["grad_sq", "grad_me_sq"]), (0, 1)),
    # softmax digits with held-out metrics, the three MAML variants and SGD
    "digits_sgd": (_sc("digits_sgd", _DIGITS, {"client_rule": "sgd", "Q": 3, "eta": 0.3,
                                               "batch": 5, "participation": 0.5,
                                               "server_mix": 0.9},
                       {"time": 20.0, "steps": 1000}, _HELD, every=2,
                       record={"maml_alpha": 0.1, "me_lam": 5.0}), (0, 1)),
    "digits_maml": (_sc("digits_maml", _DIGITS, {"client_rule": "maml", "alpha": 0.1, "Q": 3,
                                                 "beta": 0.2, "batch": 5, "batch_inner": 4,
                                                 "batch_hess": 3, "participation": 0.5},
                        {"steps": 12}, _HELD, record={"me_lam": 5.0}), (0, 1)),
    "digits_fomaml": (_sc("digits_fomaml", _DIGITS, {"client_rule": "fomaml", "alpha": 0.1,
                                                     "Q": 2, "eta": 0.2, "batch": 5,
                                                     "participation": 0.25},
                          {"steps": 12}, _HELD, record={"me_lam": 5.0}), (0, 1)),
    "digits_hfmaml": (_sc("digits_hfmaml", _DIGITS, {"client_rule": "hfmaml", "alpha": 0.1,
                                                     "Q": 2, "eta": 0.2, "batch": 5,
                                                     "batch_hess": 3, "hf_delta": 1e-3,
                                                     "participation": 0.5,
                                                     "server_mix": 0.6},
                          {"steps": 12}, _HELD, record={"me_lam": 5.0}), (0, 1)),
    # pFedMe on digits: GD inner solves (the interpreted rule unless compiled)
    "digits_moreau": (_sc("digits_moreau", _DIGITS, {"client_rule": "moreau", "lam": 15.0,
                                                     "nu": 1e-3, "Q": 2, "eta": 0.05,
                                                     "batch": 5, "participation": 0.5},
                          {"steps": 6}, ["test_acc", "pers_acc_me", "grad_me_sq"]), (0,)),
}


#: cases also recorded with every rule interpreted (``sync_reference_interpreted.npz``)
INTERPRETED = ("quad_sgd", "quad_maml", "digits_sgd", "digits_hfmaml")


def scenario(name: str) -> Scenario:
    """The scenario of case ``name``."""
    return Scenario.from_dict(CASES[name][0])


_ARRAYS = ("time", "kind_code", "client", "staleness_steps", "staleness_time", "buffer_fill",
           "metric_steps", "client_updates", "concurrency_time", "concurrency_busy", "final_w")
_SCALARS = ("concurrency_mean", "diverged", "diverged_step", "steps_done", "sim_time",
            "staleness_bound")


def save_reference(traces: dict[tuple[str, int], Trace], path: Path = REFERENCE) -> None:
    """Write ``traces`` (keyed by (case, replicate)) to one ``.npz``."""
    out: dict[str, np.ndarray] = {}
    meta: dict[str, Any] = {}
    for (name, r), tr in traces.items():
        key = f"{name}/{r}"
        for c in _ARRAYS:
            out[f"{key}/{c}"] = np.asarray(getattr(tr, c))
        for m, v in tr.metrics.items():
            out[f"{key}/metric/{m}"] = np.asarray(v)
        meta[key] = {c: getattr(tr, c) for c in _SCALARS}
        meta[key]["info"] = {k: v for k, v in tr.info.items()
                             if isinstance(v, (int, float, str))}
        meta[key]["metrics"] = sorted(tr.metrics)
    out["meta"] = np.array(json.dumps(meta, default=float))
    np.savez_compressed(path, **out)


def load_reference(path: Path = REFERENCE) -> dict[tuple[str, int], Trace]:
    """The Traces :func:`save_reference` wrote."""
    z = np.load(path)
    meta = json.loads(str(z["meta"]))
    out = {}
    for key, m in meta.items():
        name, r = key.rsplit("/", 1)
        cols = {c: z[f"{key}/{c}"] for c in _ARRAYS}
        metrics = {k: z[f"{key}/metric/{k}"] for k in m["metrics"]}
        out[(name, int(r))] = Trace(**cols, metrics=metrics, info=m["info"],
                                    **{c: m[c] for c in _SCALARS})
    return out
