"""The ``fedsim`` hypothesis profile: a shrunk counterexample that is the same on every run.

``derandomize=True`` (examples seeded from the test's source), no example database (nothing
carried between runs), no deadline (an exact enumeration or a Monte-Carlo check can take
seconds), ``report_multiple_bugs=False`` (the one shrunk failure is raised as itself, so
``pytest.raises(BoundViolated)`` sees it).  With :func:`fedsim.testing.check_bound`'s default
method (the exact oracle where the family has one, else Monte Carlo with a seed derived from
the point) every check is a function of the point, hence so is the shrunk example.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings

__all__ = ["PROFILE", "fedsim_profile"]

#: the profile's name (``pytest --hypothesis-profile=fedsim``)
PROFILE = "fedsim"

settings.register_profile(PROFILE, derandomize=True, database=None, deadline=None,
                          max_examples=100, report_multiple_bugs=False, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow,
                                                 HealthCheck.filter_too_much])

#: the profile's settings, usable as a decorator on one test: ``@fedsim_profile``
fedsim_profile = settings.get_profile(PROFILE)
