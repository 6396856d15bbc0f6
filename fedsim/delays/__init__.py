"""Delay models: non-negative random durations for download, compute, upload and think time.

Every model is a frozen dataclass deriving from :class:`Delay` with

* ``sample(rng, size=None)`` -- vectorised draws from an explicit
  ``numpy.random.Generator`` (a Python ``float`` when ``size`` is None, a float64
  array otherwise; the engine draws in blocks, e.g. ``size=4096``);
* analytic ``mean`` and ``variance`` properties (of the delay actually drawn:
  for the truncated normal these are the *truncated* moments);
* the support ``lower``/``upper`` (``inf`` when unbounded), always inside
  ``[0, inf)`` because delays are durations -- the engine derives its provable
  staleness bound from these;
* ``Normal(mean, sd, low, high)`` keeps the parent normal's ``mean`` as ``loc``, so
  that ``.mean`` is, for every model, the expected delay;
* ``to_dict()`` and ``Delay.from_dict(d)`` with TOML-friendly dicts such as
  ``{"kind": "exponential", "rate": 2.0}`` (kinds: exponential, normal,
  lognormal, uniform, constant, empirical).

Parameters are validated when the object is built; a bad one raises
:class:`fedsim.errors.ConfigError` naming the field, the value and the rule
(``rate must be > 0, got rate=-1.0``).

The package: :mod:`~fedsim.delays.base` (the :class:`Delay` contract, ``from_dict``),
:mod:`~fedsim.delays.families` (exponential, log-normal, uniform, constant),
:mod:`~fedsim.delays.normal` and its maths :mod:`~fedsim.delays.truncated_normal`,
:mod:`~fedsim.delays.empirical`; ``KINDS`` (from :mod:`~fedsim.delays.base`) is the registry
of ``kind`` names, filled by each model class as it is defined.
"""

from __future__ import annotations

from fedsim.delays.base import KINDS, Delay
from fedsim.delays.empirical import Empirical
from fedsim.delays.families import Constant, Exponential, LogNormal, Uniform
from fedsim.delays.normal import Normal
from fedsim.delays.pareto import Pareto
from fedsim.delays.straggler import Straggler

__all__ = [
    "Delay",
    "Exponential",
    "Normal",
    "LogNormal",
    "Uniform",
    "Constant",
    "Empirical",
    "Pareto",
    "Straggler",
    "KINDS",
]
