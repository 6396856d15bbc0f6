"""Cross-field rules that several algorithms share (their ``check(scenario)`` hooks).

Each function takes a whole :class:`fedsim.config.Scenario` (duck-typed: this package sits
below the config) and raises :class:`~fedsim.errors.ConfigError` naming the dotted field.
"""

from __future__ import annotations

from typing import Any

from fedsim.delays import Constant, Exponential
from fedsim.errors import require

__all__ = ["every_upload", "buffered_trigger", "exp_cycle", "window_horizon",
           "buffer_trigger_default", "is_zero"]


def is_zero(v: Any) -> bool:
    """``v`` is the constant-0 delay."""
    return isinstance(v, Constant) and v.value == 0.0


def every_upload(scenario: Any, why: str) -> None:
    """The trigger must be ``every_upload`` (``why`` completes the message)."""
    tr = scenario.trigger
    require(tr.kind == "every_upload", "trigger.kind", tr.kind, why)


def buffered_trigger(scenario: Any) -> None:
    """FedBuff / AS-FedAvg: a buffer of Delta > 1 uploads needs ``every_k`` with count
    Delta (or a timer)."""
    tr, buf = scenario.trigger, scenario.algorithm.get("buffer")
    if tr.kind == "every_upload":
        require(buf == 1, "trigger.kind", tr.kind,
                f"must be 'every_k' with count = algorithm.buffer = {buf} "
                "(or a timer) when buffer > 1")
    elif tr.kind == "every_k":
        require(tr.count == buf, "trigger.count", tr.count,
                f"must equal algorithm.buffer = {buf}")


def buffer_trigger_default(cfg: Any) -> dict[str, Any] | None:
    """The trigger a buffered algorithm implies when ``[trigger]`` is omitted."""
    buf = cfg.get("buffer")
    return {"kind": "every_k", "count": buf} if buf > 1 else None


def exp_cycle(scenario: Any) -> None:
    """THEORY_SPEC 10.2(b) / [A] Appendix A: the whole cycle is one Exp(rate_i), no
    communication delay (models ``expcycle`` and ``iterate_model``)."""
    dl, m = scenario.delays, scenario.algorithm.model
    require(dl.compute_per == "round", "delays.compute_per", dl.compute_per,
            f"must be 'round' for model={m!r} (the whole cycle is one Exp(rate_i))")
    for i in range(scenario.problem.n):
        dd = dl.for_client(i)
        for k in ("download", "upload", "think"):
            v = dd[k]
            require(is_zero(v), f"delays.{k}", v.to_dict(),
                    f"must be constant 0 for model={m!r} (zero communication delay)")
        require(isinstance(dd["compute"], Exponential), "delays.compute",
                dd["compute"].to_dict(), f"must be exponential for model={m!r}")


def window_config(scenario: Any) -> None:
    """THEORY_SPEC 10.2(a)'s keys: ``tau`` (an integer >= 0, checked with the section) is
    required, and ``delay_pmf``, when given, is a distribution on ``{0..tau}``."""
    a, f = scenario.algorithm, "algorithm"
    require(a.tau is not None, f"{f}.tau", None, "is required for model='window'")
    if a.delay_pmf is not None:
        pmf = a.delay_pmf  # numbers >= 0 (fedsim.config.algorithm)
        require(len(pmf) == a.tau + 1, f"{f}.delay_pmf", list(pmf),
                f"must have tau+1 = {a.tau + 1} entries")
        require(abs(sum(pmf) - 1.0) <= 1e-9, f"{f}.delay_pmf", list(pmf), "must sum to 1")


def window_horizon(scenario: Any) -> None:
    """THEORY_SPEC 10.2(a): time is the step index, so ``horizon.steps`` is needed."""
    require(scenario.horizon.steps is not None, "horizon.steps", None,
            "is required for model='window' (time is the step index)")
