"""The pytest plugin of :mod:`fedsim.testing` (entry point ``pytest11``: ``fedsim``).

Registers the ``fedsim`` marker (select property tests of bounds with ``pytest -m fedsim``)
and the ``fedsim`` hypothesis profile (:mod:`fedsim.testing.profile`; load it with
``pytest --hypothesis-profile=fedsim``).  With that profile the session writes nothing to
``.hypothesis/``: the profile keeps no example database, and hypothesis's other storage (its
cache of the constants found in local source files, e.g. an editable fedsim's) goes to a
temporary directory removed at the end of the session (unless
``HYPOTHESIS_STORAGE_DIRECTORY`` says where it should go).  Without hypothesis installed
(``pip install 'fedsim[testing]'`` brings it) only the marker is registered: pytest keeps working.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any

__all__ = ["pytest_configure", "pytest_unconfigure", "PROFILE"]

# registered at import (pytest imports plugins before any pytest_configure runs), so that
# hypothesis's own plugin finds the profile whatever the plugin order
try:
    from fedsim.testing.profile import PROFILE
except ImportError:  # hypothesis is not installed: the marker only
    PROFILE = "fedsim"


try:
    import pytest

    _HOME = pytest.StashKey[str]()
except ImportError:  # pragma: no cover - the plugin is only loaded by pytest
    _HOME = None


def pytest_configure(config: Any) -> None:
    """Register the ``fedsim`` marker."""
    config.addinivalue_line(
        "markers", "fedsim: a property test of a fedsim convergence bound (fedsim.testing); "
                   f"run them alone with -m fedsim, derandomized with "
                   f"--hypothesis-profile={PROFILE}")
    try:
        chosen = config.getoption("hypothesis_profile", default=None)
    except ValueError:
        chosen = None
    if chosen == PROFILE and not os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
        from hypothesis.configuration import set_hypothesis_home_dir

        home = tempfile.mkdtemp(prefix="fedsim-hypothesis-")
        set_hypothesis_home_dir(home)
        config.stash[_HOME] = home


def pytest_unconfigure(config: Any) -> None:
    """Remove the temporary hypothesis storage of a ``fedsim``-profile session."""
    home = config.stash.get(_HOME, None)
    if home is not None:
        from hypothesis.configuration import set_hypothesis_home_dir

        set_hypothesis_home_dir(None)
        shutil.rmtree(home, ignore_errors=True)
