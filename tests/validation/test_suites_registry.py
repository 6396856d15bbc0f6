"""The suites are built from validation's grid tables, in the theorem registry's order
(validation/suite_grids.py, theory/registry.py).

Each scenario module (validation/scenarios/*.py) lists its grids (``GRIDS``) by theorem
name; a suite is the concatenation, in registry order, of each theorem's grid for it, read
when the suite is built.  Nothing is written into theory's registry.  Builders are replaced
by stubs here, so nothing is simulated.
"""

from __future__ import annotations

import pytest
from fedsim.theory import registry
from fedsim.theory.registry import theorems
from fedsim.theory.result import BoundResult, Status
from fedsim.validation import scenarios as S
from fedsim.validation import suite_grids, suites

from fedsim.errors import ConfigError

BUILTIN = ["theorem1", "theorem2", "theorem3", "theorem7", "theorem8",
           "perfedavg_theorem4_5", "asypfl_theorem1", "asypfl_theorem2"]   # issue 13 added 3


def test_every_builtin_has_its_grids():
    names = [t.name for t in theorems()]
    assert names[:len(BUILTIN)] == BUILTIN
    grids = suites.case_grids()
    assert [g.theorem for g in S.GRIDS] == BUILTIN
    for th in theorems()[:len(BUILTIN)]:
        assert set(grids[th.name].builders) == {"quick", "full", "smoke"}
        assert len(grids[th.name].div1000) == 1
        assert not hasattr(th, "scenarios")             # nothing validation-side in theory
    assert not hasattr(registry, "register_scenarios")


def test_div1000_controls_are_the_old_table():
    old = (("theorem1", "quad-L1"), ("theorem2", "logistic-Lsmall"), ("theorem3", "quad-L1"),
           ("theorem7", "quad-L1"), ("theorem8", "logistic-L1"),
           ("perfedavg_theorem4_5", "quad-L1"), ("asypfl_theorem1", "quad-L1"),
           ("asypfl_theorem2", "quad-Lsmall"))
    for name in ("quick", "smoke", "full"):
        assert suites.SUITES[name].div1000 == old
    assert [s.replicates for s in suites.SUITES.values()] == [64, 6, 200]


@pytest.fixture
def stub_builders(monkeypatch):
    stub = tuple(S.CaseGrid(theorem=g.theorem, div1000=g.div1000,
                            builders={s: (lambda R, c, n=g.theorem, s=s: [(n, s, R, c)])
                                      for s in g.builders}) for g in S.GRIDS)
    monkeypatch.setattr(S, "GRIDS", stub)
    monkeypatch.setattr(suite_grids, "suite_rows", lambda suite: [])  # no installed plug-in's rows
    yield


def test_suite_is_the_registry_in_order(stub_builders):
    assert suites.build_cases("quick", 8) == [(n, "quick", 8, 4) for n in BUILTIN]
    assert suites.build_cases("smoke") == [(n, "smoke", 6, 4) for n in BUILTIN]
    assert suites.build_cases("full", 3) == [(n, "full", 3, 3) for n in BUILTIN]


def test_a_new_theorem_joins_the_suites(stub_builders):
    def toy(*, x: float) -> BoundResult:
        """Toy (eq. (1))."""
        return BoundResult(value=x, status=Status.PROOF_LEVEL)

    registry.register_theorem(name="toy_suite", function=toy, label="[T] Toy Theorem 3")
    try:
        suites.register_grid(S.CaseGrid(theorem="toy_suite", div1000=("toy",),
                                        builders={"quick": lambda R, c: [("toy", R)]}))
        assert suites.build_cases("quick", 2)[-1] == ("toy", 2)
        assert suites.build_cases("smoke")[-1][0] == "asypfl_theorem2"
        assert suites.SUITES["quick"].div1000[-1] == ("toy_suite", "toy")
        with pytest.raises(ConfigError, match="already has grids"):
            suites.register_grid(S.CaseGrid(theorem="toy_suite", builders={}))
    finally:
        suites.unregister_grid("toy_suite")
        registry.unregister("toy_suite")
    assert "toy_suite" not in suites.case_grids()


def test_replicates_must_be_an_integer():
    with pytest.raises(ConfigError, match="replicates must be an integer"):
        suites.build_cases("quick", 2.0)
    with pytest.raises(ConfigError, match="replicates must be >= 2"):
        suites.build_cases("quick", 1)
