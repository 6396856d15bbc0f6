"""Test support: synthetic task functions for the Monte-Carlo runner's tests.

These live in the package (not in ``tests/``) because worker processes started by
``spawn``/``forkserver`` and Dask workers must be able to import them.  They do not
depend on the engine or on theory.  Payload keys:

* ``seed``, ``replicate`` -- the replicate's stream is
  ``numpy.random.Generator(PCG64(SeedSequence(seed, spawn_key=(replicate,))))``;
* ``n`` -- number of standard-normal draws (default 100);
* ``log`` -- a file to which every call appends one line ``<task tag>`` (call counter);
* ``tag`` -- the text written to the log (default ``seed/replicate``);
* ``fail`` -- ``"error"`` raises ValueError, ``"diverge"`` returns a diverged result;
* ``interrupt_if`` -- path; if the file exists, raise KeyboardInterrupt (a simulated kill);
* ``crash_if`` -- path; if the file exists, the process dies with ``os._exit(3)``;
* ``sleep`` -- seconds to sleep before computing (to kill a run midway in tests);
* ``batch_log`` -- (:func:`normal_mean_batched` only) a file to which every batch call
  appends one line: the tags of its payloads, comma-separated.

:func:`normal_mean_batched` is :func:`normal_mean` with a batch variant
(``normal_mean_batched.batch``: a list of payloads -> their values, computed one by one),
to test how the runner groups tasks into batch calls; :func:`normal_mean_grouped` adds a
group key (``group``), to test how the runner chunks groups.
"""

from __future__ import annotations

import os
import time

import numpy as np

__all__ = ["normal_mean", "normal_mean_batched", "normal_mean_grouped", "group_of",
           "replicate_generator", "write_synthetic_run"]


def replicate_generator(seed: int, replicate: int) -> np.random.Generator:
    """The generator of one replicate, derived from the payload only."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed,
                                                                      spawn_key=(replicate,))))


def normal_mean(payload: dict) -> dict:
    """Mean and mean square of ``n`` standard normals; optional failure modes (see module)."""
    seed, rep = int(payload.get("seed", 0)), int(payload.get("replicate", 0))
    if payload.get("log"):
        with open(payload["log"], "a", encoding="utf-8") as fh:
            fh.write(f"{payload.get('tag', f'{seed}/{rep}')}\n")
    if payload.get("interrupt_if") and os.path.exists(payload["interrupt_if"]):
        raise KeyboardInterrupt("simulated kill")
    if payload.get("crash_if") and os.path.exists(payload["crash_if"]):
        os._exit(3)
    if payload.get("sleep"):
        time.sleep(float(payload["sleep"]))
    fail = payload.get("fail")
    if fail == "error":
        raise ValueError(f"synthetic failure in replicate {rep}\nsecond line")
    x = replicate_generator(seed, rep).standard_normal(int(payload.get("n", 100)))
    out = {"mean": np.float64(x.mean()), "mean_sq": float(np.mean(x * x)),
           "first": x[:3], "replicate": rep}
    if fail == "diverge":
        out.update(diverged=True, reason=f"iterate norm exceeded 1e12 at step {rep + 7}",
                   mean=float("inf"))
    return out


def normal_mean_batched(payload: dict) -> dict:
    """:func:`normal_mean`; the task function whose batch variant is :func:`normal_means`."""
    return normal_mean(payload)


def normal_means(payloads: list[dict]) -> list[dict]:
    """The batch variant of :func:`normal_mean_batched` (logs its call to ``batch_log``)."""
    for log in {p["batch_log"] for p in payloads if p.get("batch_log")}:
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(",".join(str(p.get("tag", p.get("replicate"))) for p in payloads) + "\n")
    return [normal_mean(p) for p in payloads]


normal_mean_batched.batch = normal_means  # type: ignore[attr-defined]


def normal_mean_grouped(payload: dict) -> dict:
    """:func:`normal_mean` with the batch variant :func:`normal_means` and a group key
    (:func:`group_of`: the payload's ``group``), to test how the runner chunks groups."""
    return normal_mean(payload)


def group_of(payload: dict) -> str:
    """The group key of :func:`normal_mean_grouped`: the payload's ``group``."""
    return str(payload.get("group", ""))


normal_mean_grouped.batch = normal_means  # type: ignore[attr-defined]
normal_mean_grouped.group = group_of  # type: ignore[attr-defined]


def write_synthetic_run(run_dir: str | os.PathLike, seed: int = 0, replicates: int = 20) -> dict:
    """A small synthetic run directory (verdicts.csv + meta/*.json) for report tests and demos.

    Two theorems: ``ThmA`` (T axis, O(1/sqrt T)) with an in-regime scenario in two modes,
    a deliberately out-of-regime control whose certified bound is too small (must be
    flagged ``violated``) and a scenario whose hypotheses fail (``not_applicable``);
    ``ThmB`` (K axis, O(1/K)) with an exact oracle and no representative run.
    Returns ``{"groups": ..., "theorems": ..., "scenarios": {...}}`` for page counting.
    """
    import json
    from pathlib import Path

    import pandas as pd
    from fedsim.validation.compare import verdict_table, write_verdicts

    rng = replicate_generator(seed, 0)
    run_dir = Path(run_dir)
    (run_dir / "meta").mkdir(parents=True, exist_ok=True)
    samples, bounds = [], []

    def add(th, sc, md, hs, true, bnd, status, cert, hyp, exact=None, slope=-0.5, ctl="",
            expect=""):
        for h in hs:
            mu = true(h)
            for v in mu * (1.0 + 0.05 * rng.standard_normal(replicates)):
                samples.append((th, sc, md, h, v))
            bounds.append((th, sc, md, h, bnd(h), status, cert, hyp,
                           exact(h) if exact else float("nan"), slope, ctl, expect))

    T = [100, 300, 1000, 3000, 10000]
    add("ThmA", "quad_shared", "paper", T, lambda t: 2 / t**0.5, lambda t: 9 / t**0.5,
        "CERTIFIED_PAPER", True, True)
    add("ThmA", "quad_shared", "proof_general_eta", T, lambda t: 2 / t**0.5,
        lambda t: 4 / t**0.5, "PROOF_LEVEL", True, True)
    add("ThmA", "too_small_bound", "paper", T, lambda t: 2 / t**0.5, lambda t: 1 / t**0.5,
        "CERTIFIED_PAPER", True, True, ctl="bound_too_small", expect="violated")
    add("ThmA", "unequal_hessians", "paper", T, lambda t: 3 / t**0.4, lambda t: 5 / t**0.5,
        "NOT_APPLICABLE", False, False, ctl="out_of_regime", expect="not_applicable")
    K = [10, 30, 100, 300]
    add("ThmB", "area_quadratic", "certified_vector", K, lambda k: 5 / k,
        lambda k: 40 / k + 0.01, "CERTIFIED_CORRECTED", True, True,
        exact=lambda k: 5 / k, slope=-1.0)
    cols = ["theorem", "scenario", "mode", "horizon", "bound", "status", "bound_is_certified",
            "hypotheses_hold", "exact", "expected_slope", "control", "expected_verdict"]
    df = verdict_table(pd.DataFrame(samples, columns=["theorem", "scenario", "mode", "horizon",
                                                       "value"]),
                       pd.DataFrame(bounds, columns=cols))
    write_verdicts(df, run_dir / "verdicts.csv")

    def rep(n_clients: int, steps: int) -> dict:
        stale = rng.poisson(n_clients - 1, steps).tolist()
        t = np.cumsum(rng.exponential(1.0, 200)).tolist()
        busy = np.clip(rng.binomial(n_clients, 0.8, 200) / n_clients, 0, 1).tolist()
        return {"staleness_steps": stale, "concurrency_time": t, "concurrency_busy": busy,
                "concurrency_mean": float(np.mean(busy))}

    hyps = [{"name": "Asm 1 (bounded staleness)", "holds": True, "detail": "tau = 4 (window)"},
            {"name": "Asm 2 (L-smooth)", "holds": True, "detail": "L = 1 exact"},
            {"name": "Asm 5 (bounded diversity)", "holds": None,
             "detail": "cannot be checked globally; local estimate only " * 3}]
    consts = [{"name": "L", "value": 1.0, "tag": "EXACT", "reason": "max eigenvalue of A_i"},
              {"name": "sigma_g2", "value": 0.1, "tag": "EXACT", "reason": "trace of S_i"},
              {"name": "gamma_g2", "value": float("inf"), "tag": "INFINITE",
               "reason": "unequal Hessians: gradient diversity unbounded on R^d"},
              {"name": "f_star_A", "value": -1.2345678, "tag": "NUMERIC",
               "reason": "solved to 1e-12"}]
    metas = [
        ("ThmA", "quad_shared", "paper", "T", -0.5, hyps, rep(4, 2000)),
        ("ThmA", "too_small_bound", "paper", "T", -0.5, hyps, rep(8, 2000)),
        ("ThmA", "unequal_hessians", "paper", "T", -0.5,
         hyps[:2] + [{"name": "Asm 5", "holds": False, "detail": "gamma_g2 = inf"}], rep(4, 500)),
        ("ThmB", "area_quadratic", "certified_vector", "K", -1.0, hyps[:2], None),
    ]
    for th, sc, md, xl, es, hy, rp in metas:
        m = {"theorem": th, "scenario": sc, "mode": md, "title": f"synthetic {th}",
             "description": f"Synthetic scenario {sc}: {replicates} replicates of a made-up "
                            "measurement, used to test the report layout.",
             "x_label": xl, "expected_slope": es, "hypotheses": hy, "constants": consts,
             "bound_status": "CERTIFIED_PAPER", "step_sizes": {"eta": 0.01, "beta": 1.0},
             "notes": ["synthetic data", "not a real theorem"],
             "quantity": "(1/T) sum E||grad f||^2"}
        if rp is not None:
            m["representative"] = rp
        (run_dir / "meta" / f"{th}__{sc}.json").write_text(json.dumps(m, indent=1))
    return {"groups": {"ThmA": 4, "ThmB": 1}, "scenarios": {"ThmA": 3 + 0, "ThmB": 1}}
