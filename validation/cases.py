"""What every validation scenario shares: the Case/Row/RunSpec/SimCheck records, the root
seed, the on-disk oracle cache, and small helpers that turn a problem config into an engine
scenario dict (THEORY_SPEC 9.3, 10).

A suite row is described by a *family* (:mod:`fedsim.validation.families`), a point, its
horizons and a control kind; :class:`Case`, :class:`Row`, :class:`RunSpec` and
:class:`ExactSpec` are the view of built family instances that the suites' runner reads
(:func:`fedsim.validation.families.base.instances_case` is the one function that makes
them): a :class:`Case` holds the simulated run sets of one (theorem, scenario) pair and its
verdict rows -- the bound (a :class:`fedsim.theory.result.BoundResult` for exactly the
simulated constants), the exact oracle value where one exists, and the checks only the
simulation can make.

A row can also be *exact*: its run key names an :class:`ExactSpec` instead of a
:class:`RunSpec`, and its measured value is the exact oracle value, nothing is simulated
(:func:`fedsim.validation.compare.verdict_table` with ``measured_exactly``; the convention in
verdicts.csv is ``mean = ci_low = ci_high = exact``, ``n_ok = 0``, ``sem = 0``, no CI level).
This is how counterexamples that no simulation can reach (Per-FedAvg E-F1 at K = 1e11, AsyPFL
with two clients in the tick model) become rows of the suites: their families build
instances without a scenario.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fedsim.theory.result import BoundResult, Hypothesis, Status

from fedsim.config import ProblemConfig, build_problem

__all__ = ["RunSpec", "ExactSpec", "Row", "SimCheck", "Case", "CaseGrid", "CLAIM_STATUSES",
           "SEED",
           "set_oracle_cache", "oracle_cache_stats", "cached", "resolve_hypotheses",
           "FRESH_BATCHES", "QUAD_SMOOTH", "LOGI_SMOOTH", "problem_from_dict", "constants_records",
           "scenario_dict"]

#: statuses whose value the verdict tests as an upper bound: the certified ones, and the
#: paper-literal ones (the paper claims them; testing that claim is the point of E-A6)
CLAIM_STATUSES = frozenset({Status.CERTIFIED_PAPER, Status.CERTIFIED_CORRECTED,
                            Status.PROOF_LEVEL, Status.PAPER_LITERAL_KNOWN_ERRATUM,
                            Status.VACUOUS})

SEED = 20261121   # the suites' root seed (every replicate r uses Streams(SEED, r))

_CACHE_DIR: Path | None = None


_CACHE_STATS: dict[str, int] = {"hits": 0, "computed": 0, "damaged": 0}


def set_oracle_cache(path: str | os.PathLike | None) -> None:
    """Keep exact oracle values in the database of run directory ``path`` (table ``oracle``
    of ``path/store.sqlite``, :mod:`fedsim.validation.montecarlo_db`), so a resumed suite
    does not recompute them; ``None`` disables the cache.  Resets :func:`oracle_cache_stats`.
    """
    global _CACHE_DIR
    _CACHE_DIR = None if path is None else Path(path)
    _CACHE_STATS.update(hits=0, computed=0, damaged=0)


def oracle_cache_stats() -> dict[str, int]:
    """Since the last :func:`set_oracle_cache`: entries read (``hits``), entries computed
    (``computed``, damaged ones included) and entries found damaged and recomputed."""
    return dict(_CACHE_STATS)


def _oracle_value_ok(value: Any) -> bool:
    """An oracle value is a JSON number or a (nested) list of numbers, never a bool."""
    if isinstance(value, list):
        return all(_oracle_value_ok(v) for v in value)
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _entry_checksum(tag: str, args: str, value: Any) -> str:
    from fedsim.validation.montecarlo_store import canonical_json

    body = json.loads(canonical_json({"tag": tag, "args": args, "value": value}))
    return hashlib.sha256(canonical_json(body).encode()).hexdigest()


def _check_entry(entry: Any, tag: str, args: str) -> tuple[Any, str | None]:
    """``(value, None)`` for a verified cache entry; ``(None, reason)`` otherwise."""
    if not isinstance(entry, dict) or set(entry) != {"tag", "args", "value", "checksum"}:
        return None, "not a cache entry (keys tag, args, value, checksum)"
    if entry["tag"] != tag or entry["args"] != args:
        return None, "the entry belongs to other arguments"
    if not _oracle_value_ok(entry["value"]):
        return None, "the value is not a number or a list of numbers"
    if entry["checksum"] != _entry_checksum(tag, args, entry["value"]):
        return None, "checksum mismatch (the entry was edited or damaged)"
    return entry["value"], None


def cached(tag: str, args: Any, compute) -> Any:
    """``compute()`` memoised in the run directory's database by ``sha256(tag, repr(args))``
    (values are JSON; table ``oracle``, one transaction per entry).

    Each entry ``{tag, args, value, checksum}`` is verified on read (the arguments it was
    computed for, a number or list of numbers, the sha256 of its canonical content); one
    that fails -- truncated, edited, written by an older fedsim without a checksum -- is
    recomputed and rewritten, with a line on stderr.
    """
    if _CACHE_DIR is None:
        return compute()
    from fedsim.validation.montecarlo_db import open_store
    from fedsim.validation.montecarlo_store import canonical_json

    store = open_store(_CACHE_DIR)
    sargs = repr(args)
    key = f"{tag}-{hashlib.sha256(f'{tag}|{sargs}'.encode()).hexdigest()[:24]}"
    entry, problem = store.get_oracle(key)
    if entry is not None or problem is not None:
        if problem is None:
            value, problem = _check_entry(entry, tag, sargs)
            if problem is None:
                _CACHE_STATS["hits"] += 1
                return value
        _CACHE_STATS["damaged"] += 1
        sys.stderr.write(f"fedsim: oracle cache entry {key} is damaged ({problem}); "
                         "recomputing it\n")
    value = json.loads(canonical_json(compute()))
    _CACHE_STATS["computed"] += 1
    store.put_oracle(key, {"tag": tag, "args": sargs, "value": value,
                           "checksum": _entry_checksum(tag, sargs, value)})
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
class ExactSpec:
    """Exact oracle values that stand in for a simulation: ``values[j]`` is the measured
    quantity itself at ``horizons[j]`` (no replicates, no CI); ``oracle`` names the function
    and arguments that computed it (shown in the notes)."""

    key: str
    horizons: tuple[int, ...]
    values: tuple[float, ...]
    oracle: str

    def __post_init__(self) -> None:
        if len(self.horizons) != len(self.values) or not self.horizons:
            raise ValueError(f"ExactSpec {self.key}: one value per horizon, at least one")

    def value(self, horizon: int) -> float:
        """The exact value at ``horizon``."""
        return float(self.values[self.horizons.index(horizon)])


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


def resolve_hypotheses(res: BoundResult, facts: Mapping[str, tuple[bool | None, str]]
                       ) -> BoundResult:
    """Replace hypotheses the theory cannot check (holds=None) by what the scenario
    guarantees by construction: ``facts`` maps a hypothesis-name prefix to (holds, why).
    A failing one makes the status ``NOT_APPLICABLE`` (as validate does).  The one helper
    of the suites' cases and of the families (:mod:`fedsim.validation.families`)."""
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


FRESH_BATCHES = (True, "the engine draws a fresh batch of size b per local step from the client's "
                "own noise stream, independent of the events")
QUAD_SMOOTH = (True, "quadratic: L = max_i lam_max(A_i) EXACT, f_i* = c_i > -inf")
LOGI_SMOOTH = (True, "logistic: L = max_i lam_max(X_i^T X_i)/(4 m_i) EXACT, f_i >= 0")


@dataclass
class Row:
    """One verdict row's theory side.  ``run_key`` names a :class:`RunSpec` of the case, or
    one of its :class:`ExactSpec` (then ``exact`` is the measured value itself)."""

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
    """Everything one (theorem, scenario) pair needs: the runner's view of family instances
    (:func:`fedsim.validation.families.base.instances_case`)."""

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
    exacts: list[ExactSpec] = field(default_factory=list)   # rows measured exactly
    family: str = ""   # the scenario family the case was built from ("" for a hand-built case)

    def exact_keys(self) -> frozenset[str]:
        """The run keys whose rows are exact oracle values (no simulation)."""
        return frozenset(e.key for e in self.exacts)


@dataclass(frozen=True, kw_only=True)
class CaseGrid:
    """A theorem's validation grids: ``builders`` maps a suite name (``quick``, ``full``,
    ``smoke``) to ``builder(R, c) -> list[Case]`` (``R`` replicates per in-regime run set,
    ``c`` per control); ``div1000`` names the scenarios whose bound / 1000 must come out
    violated (negative control (b)).  A table, not a registration: the suites read the
    scenario modules' ``GRIDS`` when they run (:func:`fedsim.validation.suites.case_grids`)."""

    theorem: str
    builders: dict[str, Callable[[int, int], list[Case]]]
    div1000: tuple[str, ...] = ()


# ---------------------------------------------------------------------------------------
# shared helpers
# ---------------------------------------------------------------------------------------
def problem_from_dict(cfg: dict):
    """The problem a scenario's ``[problem]`` table describes."""
    return build_problem(ProblemConfig.from_dict(cfg))


def constants_records(problem) -> list[dict]:
    """The problem's constants table as records (a case's ``constants``)."""
    return problem.constants_frame().to_dict("records")


def scenario_dict(name: str, problem: dict, algorithm: dict, steps: int, metrics: list[str],
                  every: int = 1, delays: dict | None = None, trigger: dict | None = None,
                  record_extra: dict | None = None, *, seed: int = SEED) -> dict:
    """A scenario dict (the ``fedsim run`` TOML shape) with root seed ``seed`` (the suites'
    by default), ``steps`` steps and ``metrics`` recorded every ``every`` steps."""
    d: dict[str, Any] = {"name": name, "seed": int(seed), "problem": dict(problem),
                         "algorithm": dict(algorithm), "horizon": {"steps": int(steps)},
                         "record": {"every": int(every), "metrics": list(metrics)}}
    if delays is not None:
        d["delays"] = dict(delays)
    if trigger is not None:
        d["trigger"] = dict(trigger)
    if record_extra:
        d["record"].update(record_extra)
    return d

