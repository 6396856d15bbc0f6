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


# -- no test replaces a system device (issue 21: a helper's test once replaced /dev/null) --
import os as _os  # noqa: E402
import stat as _stat  # noqa: E402

#: the system device nodes a careless writer could replace; checked around the session
SYSTEM_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")


def device_identity() -> dict[str, tuple]:
    """``path -> (is a character device, rdev, inode)`` of every :data:`SYSTEM_DEVICES`
    node that exists."""
    out = {}
    for p in SYSTEM_DEVICES:
        try:
            st = _os.lstat(p)
        except OSError:
            continue
        out[p] = (_stat.S_ISCHR(st.st_mode), st.st_rdev, st.st_ino)
    return out


def pytest_sessionstart(session):
    session.config._fedsim_devices = device_identity()


def pytest_sessionfinish(session, exitstatus):
    before = getattr(session.config, "_fedsim_devices", {})
    after = device_identity()
    changed = sorted(p for p in before if after.get(p) != before[p])
    if changed:
        import sys

        sys.stderr.write(f"\nERROR: the test session replaced or removed system device "
                         f"node(s) {changed}: a writer followed an output path to a device\n")
        session.exitstatus = 1
