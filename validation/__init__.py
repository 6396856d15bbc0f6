"""fedsim.validation: Monte-Carlo validation of convergence theorems against simulation.

Public API (loaded lazily):

* :func:`validate` -- ``validate("smoke")`` or ``validate(cases)`` -> the verdict table as a
  DataFrame (measured mean, 99% CI, bound, verdict, status, hypotheses);
* :func:`run_suite`, :func:`run_cases`, :func:`build_cases`, :data:`SUITES` -- the suite
  machinery behind ``fedsim validate`` (run directories are resumable);
* :class:`Case` -- one (theorem, scenario) pair of a suite.

The papers' own experiments: :mod:`fedsim.validation.paper`; violation and looseness
search: :mod:`fedsim.validation.search`; PDF reports: :mod:`fedsim.validation.report`.
"""

from __future__ import annotations

from fedsim.lazy import lazy_exports

_LAZY: dict[str, tuple[str, str]] = {
    "validate": ("fedsim.validation.api", "validate"),
    "run_suite": ("fedsim.validation.suites", "run_suite"),
    "run_cases": ("fedsim.validation.suites", "run_cases"),
    "build_cases": ("fedsim.validation.suites", "build_cases"),
    "SUITES": ("fedsim.validation.suites", "SUITES"),
    "Case": ("fedsim.validation.scenarios", "Case"),
}

__all__ = list(_LAZY)

__getattr__, __dir__ = lazy_exports("fedsim.validation", _LAZY, globals())
