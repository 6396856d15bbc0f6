"""``make test``'s ``--dist loadgroup`` really groups: a module marked ``xdist_group`` runs on
one worker, so its module fixture (a whole smoke suite, a kill -9 reference run) runs once.

pytest-xdist marks a grouped test by renaming its node id ``<id>@<group>`` in the worker;
with pytest 9.2 the rename no longer takes (pytest-dev/pytest-xdist#1386) and the groups are
silently spread over the workers.  Under loadgroup this test fails then; elsewhere (a plain
``pytest`` run, another ``--dist``) it has nothing to check and says so.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.xdist_group("test_xdist_groups")


def test_a_grouped_test_carries_its_group(request):
    if not request.config.getoption("loadgroup", default=False):
        pytest.skip("not a --dist loadgroup worker: nothing is grouped")
    assert request.node.nodeid.endswith("@test_xdist_groups"), (
        f"{request.node.nodeid}: --dist loadgroup did not group this module (pytest "
        f"{pytest.__version__}; see setup.cfg's pin)")
