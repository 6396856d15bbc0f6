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
* ``crash_if`` -- path; if the file exists, the process dies with ``os._exit(3)``.
"""

from __future__ import annotations

import os

import numpy as np

__all__ = ["normal_mean", "replicate_generator"]


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
