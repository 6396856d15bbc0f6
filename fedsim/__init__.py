"""fedsim: discrete-event simulation of asynchronous and personalized federated learning,
checked against published convergence theorems.

The public API for a notebook user (``docs/API.md``):

* :func:`fedsim.run` -- simulate one scenario (a :class:`~fedsim.config.Scenario` or a TOML
  file) and get a :class:`~fedsim.trace.Trace`; ``trace.to_pandas()`` has one row per server
  step with every metric column;
* :func:`fedsim.load` -- read a scenario TOML file into a :class:`~fedsim.config.Scenario`;
* :mod:`fedsim.theory` -- the bounds (``fedsim.theory.bound(name, **constants)``);
* :mod:`fedsim.validation` -- Monte-Carlo validation (``fedsim.validation.validate(...)``).

Subpackages: :mod:`fedsim.problems` (objectives with tagged constants),
:mod:`fedsim.local` and :mod:`fedsim.servers` (update rules), :mod:`fedsim.engine` (SimPy
processes), :mod:`fedsim.trace` (what a run records), :mod:`fedsim.config` (scenarios).

The names load lazily: ``import fedsim`` or ``import fedsim.theory`` imports neither the
engine nor SimPy.
"""

from __future__ import annotations

from fedsim.lazy import lazy_exports

__version__ = "0.2.0"

#: public name -> (module, attribute), imported on first use
_LAZY: dict[str, tuple[str, str]] = {
    "run": ("fedsim.api", "run"),
    "load": ("fedsim.config", "load"),
    "Scenario": ("fedsim.config", "Scenario"),
    "Trace": ("fedsim.trace", "Trace"),
    "FedsimError": ("fedsim.errors", "FedsimError"),
    "ConfigError": ("fedsim.errors", "ConfigError"),
    "worst_case": ("fedsim.worstcase.door", "worst_case"),
}

__all__ = ["__version__", *_LAZY]

__getattr__, __dir__ = lazy_exports("fedsim", _LAZY, globals())
