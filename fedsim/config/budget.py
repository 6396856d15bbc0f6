"""Size and memory of a scenario, estimated BEFORE anything is allocated (issue 14 item 1).

:func:`estimate_bytes` adds the arrays a run allocates that grow with the scenario's sizes
(float64, 8 bytes each):

* the problem: quadratic ``6 n d^2`` with client-specific Hessians (Hessians,
  eigenvectors, noise factors and the MAML / Moreau caches), ``n d^2 + 4 n d`` with a shared
  one (the per-client layout its reductions read once, then the optima, eigenvalues,
  gradients at ``x*`` and noise scales; the compiled view reads the one Hessian),
  logistic ``2 n (m + 2d) d`` (features and the 2d anchor rows, with one working copy),
  norm ``n d``, digits the bundled 1797 x 64 set per client;
* the client rule's round buffer ``Q d`` and the server and client models ``3 n d``;
* the trace: 6 numbers per recorded step (``horizon.steps``);
* what the scenario's execution model declares it adds (``model_memory``: its home's
  ``ExecutionModel.memory``, e.g. the window model's ring of the last ``tau + 1`` server
  models), which the engine's doors pass (the config does not import the engine).

:func:`check_budget` refuses a scenario over the budget with a ConfigError that names the
estimate.  The budget is 4 GiB unless the environment variable ``FEDSIM_MEMORY_BUDGET``
(bytes, or a number with a K/M/G/T suffix) or ``fedsim run --memory-budget`` says otherwise.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from typing import Any

from fedsim.errors import ConfigError, require

__all__ = ["estimate_bytes", "check_budget", "parse_size", "memory_budget",
           "set_memory_budget", "DEFAULT_BUDGET", "MAX_SIZE", "machine_memory", "MemoryFn"]

DEFAULT_BUDGET = 4 * 2**30
#: an execution model's estimate: ``(scenario, d) -> {part: bytes}``
MemoryFn = Callable[[Any, float], Mapping[str, float]]
_SUFFIX = {"": 1, "B": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
_override: int | None = None
#: the largest size a size option accepts (an exabyte: far above any machine's memory)
MAX_SIZE = 1e18


def parse_size(text: str, field: str = "memory budget") -> int:
    """``"4G"``, ``"512M"``, ``"1e9"`` -> bytes (ConfigError on anything else)."""
    s = str(text).strip().upper().removesuffix("IB").removesuffix("B")
    unit = s[-1:] if s[-1:] in _SUFFIX and s[-1:] else ""
    num = s[:-1] if unit else s
    try:
        x = float(num)
    except ValueError:
        raise ConfigError(f"{field} must be a size such as 4G, 512M or 1e9 (bytes), "
                          f"got {field}={text!r}") from None
    require(math.isfinite(x) and x > 0, field, text, "must be a finite size > 0")
    nbytes = x * _SUFFIX[unit]
    require(nbytes <= MAX_SIZE, field, text, f"must be at most {MAX_SIZE:.0e} bytes")
    return int(nbytes)


def machine_memory() -> int | None:
    """The machine's physical memory in bytes (None where the system does not say)."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def set_memory_budget(nbytes: int | None) -> None:
    """Set the process-wide budget (``None``: back to the environment / default)."""
    global _override
    _override = nbytes


def memory_budget() -> int:
    """The budget in bytes: :func:`set_memory_budget`, else ``FEDSIM_MEMORY_BUDGET``,
    else 4 GiB."""
    if _override is not None:
        return _override
    env = os.environ.get("FEDSIM_MEMORY_BUDGET")
    return parse_size(env, "FEDSIM_MEMORY_BUDGET") if env else DEFAULT_BUDGET


def _num(x: Any, default: float) -> float:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else default


def estimate_bytes(scenario: Any, model_memory: MemoryFn | None = None) -> dict[str, float]:
    """Bytes per part (``problem``, ``rule``, ``models``, ``trace``) of one run, plus the
    parts ``model_memory(scenario, d)`` names (the execution model's own estimate,
    ``fedsim.engine.models.ExecutionModel.memory``, which the engine passes)."""
    pc = scenario.problem
    p = pc.params
    n = float(pc.n)
    if pc.kind == "quadratic":
        d = _num(p.get("dim"), 1.0)
        shared = p.get("shared_hessian", True) is True
        prob = n * d * d + 4.0 * n * d if shared else 6.0 * n * d * d
    elif pc.kind == "logistic":
        d, m = _num(p.get("dim"), 1.0), _num(p.get("samples_per_client"), 1.0)
        prob = 2.0 * n * (m + 2.0 * d) * d
        d = d + 1.0
    elif pc.kind == "digits":
        d = 65.0
        prob = 2.0 * 1797.0 * 65.0 + n * 4.0 * d * d
    else:
        d = _num(p.get("dim"), 1.0)
        prob = n * d
    a = scenario.algorithm
    steps_q = max(_num(a.get("Q"), 1.0), _num(a.get("M"), 1.0))
    steps = scenario.horizon.steps
    trace = 6.0 * (float(steps) if steps is not None else 0.0)
    out = {"problem": 8.0 * prob, "rule": 8.0 * steps_q * d, "models": 8.0 * 3.0 * n * d,
           "trace": 8.0 * trace}
    if model_memory is not None:
        out.update({k: float(v) for k, v in model_memory(scenario, d).items()})
    return out


def _fmt(b: float) -> str:
    for unit, k in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if b >= k:
            return f"{b / k:.3g} {unit}"
    return f"{b:.0f} B"


def check_budget(scenario: Any, budget: int | None = None, *,
                 model_memory: MemoryFn | None = None) -> float:
    """Total estimate in bytes (:func:`estimate_bytes`); ConfigError naming the largest part
    when over ``budget``."""
    budget = memory_budget() if budget is None else budget
    parts = estimate_bytes(scenario, model_memory)
    total = sum(parts.values())
    if total > budget:
        big = max(parts, key=parts.get)
        raise ConfigError(
            f"scenario needs about {_fmt(total)} of memory ({big}: {_fmt(parts[big])}), over "
            f"the budget of {_fmt(budget)}; reduce the sizes or raise the budget "
            "(fedsim run --memory-budget SIZE, or FEDSIM_MEMORY_BUDGET)")
    ram = machine_memory()
    if ram is not None and total > ram:
        raise ConfigError(f"scenario needs about {_fmt(total)} of memory, more than this "
                          f"machine has ({_fmt(ram)}), whatever the budget; reduce the sizes")
    return total
