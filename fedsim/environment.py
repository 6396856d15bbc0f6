"""The environment variables fedsim reads, checked once before any work (issue 31, Deliver
4): every command and every Python door refuses a bad value alike (a
:class:`~fedsim.errors.ConfigError`, exit 2 on the command line), instead of each reader
failing its own way later (``FEDSIM_MEMORY_BUDGET=zzz`` used to turn every replicate of
``fedsim validate`` into an error record).

* ``FEDSIM_MEMORY_BUDGET`` -- a size (``4G``, ``512M``, ``1e9``;
  :func:`fedsim.config.budget.parse_size`);
* ``FEDSIM_BATCHED`` -- ``0`` or ``1`` (accepted, no effect);
* ``FEDSIM_FAULT`` -- ``<point>[@<n>]`` with ``n >= 1`` (:mod:`fedsim.faults`, tests only);
* ``NUMBA_DISABLE_JIT`` -- numba's debugging switch; fedsim's replay runs compiled code
  only, so a value other than ``0`` is refused with a message saying so.

An empty value counts as unset.
"""

from __future__ import annotations

import os
import re

from fedsim.errors import ConfigError

__all__ = ["check_environment", "VARIABLES"]

#: every environment variable :func:`check_environment` checks
VARIABLES = ("FEDSIM_MEMORY_BUDGET", "FEDSIM_BATCHED", "FEDSIM_FAULT", "NUMBA_DISABLE_JIT")


def check_environment() -> None:
    """Raise :class:`ConfigError` (one line naming the variable, its value and the fix) on
    the first bad value (module doc)."""
    env = os.environ
    budget = env.get("FEDSIM_MEMORY_BUDGET")
    if budget:
        from fedsim.config.budget import parse_size

        parse_size(budget, "FEDSIM_MEMORY_BUDGET")
    batched = env.get("FEDSIM_BATCHED")
    if batched and batched not in ("0", "1"):
        raise ConfigError(f"FEDSIM_BATCHED must be 0 or 1, got FEDSIM_BATCHED={batched!r}")
    fault = env.get("FEDSIM_FAULT")
    if fault and not re.fullmatch(r"[A-Za-z0-9_.:-]+(@[1-9][0-9]{0,8})?", fault):
        raise ConfigError(f"FEDSIM_FAULT must be <point>[@<n>] (n >= 1), got "
                          f"FEDSIM_FAULT={fault!r}")
    nojit = env.get("NUMBA_DISABLE_JIT", "").strip()
    if nojit and nojit != "0":
        raise ConfigError(f"NUMBA_DISABLE_JIT={nojit} turns numba's compilation off, and "
                          "fedsim's simulation runs compiled code only; unset it (or set 0)")
