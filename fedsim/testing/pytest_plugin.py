"""The pytest plugin of :mod:`fedsim.testing` (entry point ``pytest11``: ``fedsim``).

Registers the ``fedsim`` marker (select property tests of bounds with ``pytest -m fedsim``)
and the ``fedsim`` hypothesis profile (:mod:`fedsim.testing.profile`; load it with
``pytest --hypothesis-profile=fedsim``).  Without hypothesis installed (``pip install
'fedsim[testing]'`` brings it) only the marker is registered: pytest keeps working.
"""

from __future__ import annotations

from typing import Any

__all__ = ["pytest_configure", "PROFILE"]

# registered at import (pytest imports plugins before any pytest_configure runs), so that
# hypothesis's own plugin finds the profile whatever the plugin order
try:
    from fedsim.testing.profile import PROFILE
except ImportError:  # hypothesis is not installed: the marker only
    PROFILE = "fedsim"


def pytest_configure(config: Any) -> None:
    """Register the ``fedsim`` marker."""
    config.addinivalue_line(
        "markers", "fedsim: a property test of a fedsim convergence bound (fedsim.testing); "
                   f"run them alone with -m fedsim, derandomized with "
                   f"--hypothesis-profile={PROFILE}")
