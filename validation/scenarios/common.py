"""What every validation scenario shares: the Case/Row/RunSpec/SimCheck records, the root
seed, the on-disk oracle cache, and small helpers that turn a problem config into an engine
scenario dict (THEORY_SPEC 9.3, 10).

A :class:`Case` holds the simulated run sets of one (theorem, scenario) pair and its verdict
rows: the bound (a :class:`theory.result.BoundResult` for exactly the simulated constants),
the exact oracle value where one exists, and the checks only the simulation can make.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fedsim.config import ProblemConfig, build_problem
from theory.result import BoundResult, Hypothesis, Status

__all__ = ["RunSpec", "Row", "SimCheck", "Case", "CLAIM_STATUSES", "SEED", "set_oracle_cache"]

#: statuses whose value the verdict tests as an upper bound: the certified ones, and the
#: paper-literal ones (the paper claims them; testing that claim is the point of E-A6)
CLAIM_STATUSES = frozenset({Status.CERTIFIED_PAPER, Status.CERTIFIED_CORRECTED,
                            Status.PROOF_LEVEL, Status.PAPER_LITERAL_KNOWN_ERRATUM,
                            Status.VACUOUS})

SEED = 20261121   # the suites' root seed (every replicate r uses Streams(SEED, r))

_CACHE_DIR: Path | None = None


def set_oracle_cache(path: str | os.PathLike | None) -> None:
    """Keep exact oracle values under ``path`` (one JSON file per call), so a resumed suite
    does not recompute them; ``None`` disables the cache."""
    global _CACHE_DIR
    _CACHE_DIR = None if path is None else Path(path)


def _cached(tag: str, args: Any, compute) -> Any:
    """``compute()`` memoised on disk by ``sha256(tag, repr(args))`` (values are JSON)."""
    if _CACHE_DIR is None:
        return compute()
    h = hashlib.sha256(f"{tag}|{args!r}".encode()).hexdigest()[:24]
    path = _CACHE_DIR / f"{tag}-{h}.json"
    if path.exists():
        return json.loads(path.read_text())["value"]
    value = compute()
    from validation.montecarlo import atomic_write_json

    atomic_write_json(path, {"tag": tag, "args": repr(args), "value": value})
    return value


@dataclass(frozen=True)
class RunSpec:
    """One set of simulated replicates: a scenario, the metric, the horizons to read."""

    key: str
    scenario: dict
    metric: str
    horizons: tuple[int, ...]
    replicates: int


@dataclass(frozen=True)
class SimCheck:
    """A hypothesis only the simulation can check, evaluated on every replicate's record.

    ``kind="max_staleness"``: max over replicates of max_t (t - Omega(t)) <= ``limit``;
    ``kind="inner_failures"``: total Option C inner solves that stopped before reaching
    ``||grad h~|| <= nu`` is <= ``limit`` (i.e. 0).
    """

    name: str
    limit: float
    detail: str
    kind: str = "max_staleness"
    replaces: tuple[str, ...] = ()   # unknown theory hypotheses (name prefixes) it settles


def _resolve(res: BoundResult, facts: dict[str, tuple[bool, str]]) -> BoundResult:
    """Replace hypotheses the theory cannot check (holds=None) by what the scenario
    guarantees by construction: ``facts`` maps a hypothesis-name prefix to (holds, why)."""
    out = []
    for h in res.hypotheses:
        hit = next((v for k, v in facts.items() if h.name.startswith(k)), None)
        if h.holds is None and hit is not None:
            h = Hypothesis(h.name, hit[0], f"scenario: {hit[1]}")
        # (facts may keep holds=None with a better detail: an honest "unknown")
        out.append(h)
    res.hypotheses = out
    if any(h.holds is False for h in out):
        res.status = Status.NOT_APPLICABLE
    return res


_FRESH = (True, "the engine draws a fresh batch of size b per local step from the client's "
                "own noise stream, independent of the events")
_QUAD_SMOOTH = (True, "quadratic: L = max_i lam_max(A_i) EXACT, f_i* = c_i > -inf")
_LOGI_SMOOTH = (True, "logistic: L = max_i lam_max(X_i^T X_i)/(4 m_i) EXACT, f_i >= 0")


@dataclass
class Row:
    """One verdict row's theory side."""

    mode: str
    horizon: int
    run_key: str
    result: BoundResult
    bound: float
    exact: float = math.nan
    control: str = ""
    expected_verdict: str = ""


@dataclass
class Case:
    """Everything one (theorem, scenario) pair needs."""

    theorem: str
    scenario: str
    title: str
    description: str
    x_label: str
    quantity: str
    expected_slope: float
    runs: list[RunSpec]
    rows: list[Row]
    constants: list[dict]
    sim_checks: list[SimCheck] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    control: str = ""
    expected_verdict: str = ""


# ---------------------------------------------------------------------------------------
# shared helpers
# ---------------------------------------------------------------------------------------
def _problem(cfg: dict):
    return build_problem(ProblemConfig.from_dict(cfg))


def _consts(problem) -> list[dict]:
    return problem.constants_frame().to_dict("records")


def _v(problem, name: str) -> float:
    return float(problem.constants.value(name))


def _scenario(name: str, problem: dict, algorithm: dict, steps: int, metrics: list[str],
              every: int = 1, delays: dict | None = None, trigger: dict | None = None,
              record_extra: dict | None = None) -> dict:
    d: dict[str, Any] = {"name": name, "seed": SEED, "problem": dict(problem),
                         "algorithm": dict(algorithm), "horizon": {"steps": int(steps)},
                         "record": {"every": int(every), "metrics": list(metrics)}}
    if delays is not None:
        d["delays"] = delays
    if trigger is not None:
        d["trigger"] = trigger
    if record_extra:
        d["record"].update(record_extra)
    return d

