"""Hypothesis profiles for the test suite.

* ``ci`` (``make test``, hence ``.ci/run``): ``derandomize=True`` -- every run tries the same
  examples (seeded from each test's source), so a commit that passed keeps passing on a
  fresh clone and a failure is reproducible by re-running.
* ``explore`` (``make explore``): fresh random examples on every run and five times as
  many; run it to hunt for new counterexamples.  Two real numerical defects were found
  this way (``max_quadratic_on_ball`` 3e-12 low; a Theorem-7 test tolerance below the
  oracle's rounding); each failing case then became an ``@example``, which every profile
  runs.
Plain ``pytest`` uses Hypothesis's defaults (random, with its example database).
"""

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, max_examples=500, print_blob=True)
