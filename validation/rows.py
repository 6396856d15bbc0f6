"""Suite rows from scenario families: a family, a point, horizons, the suites it joins, a control.

A :class:`SuiteRow` is what a plug-in (or a user session) adds to ``fedsim validate``'s
suites, the same description the built-in theorems' grids use: the family builds the point
at each horizon and mode (scenario, bound with its hypotheses resolved, exact value if an
oracle exists) and :func:`fedsim.validation.families.cases.family_case` turns the instances
into run sets and verdict rows. The rows are kept in an explicit registry that
:mod:`fedsim.validation.suites` reads when a suite runs (:func:`suite_rows`), filled by
:func:`register_rows` and by the ``fedsim.suite_rows`` entry-point group
(:func:`load_row_plugins`)::

    # setup.cfg of a plug-in
    [options.entry_points]
    fedsim.suite_rows =
        my-rows = my_package.family:ROWS      # a list of SuiteRow, or a callable returning one
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fedsim.errors import ConfigError, require
from fedsim.plugins import load_group_once

__all__ = ["SuiteRow", "register_rows", "unregister_rows", "suite_rows", "load_row_plugins",
           "ENTRY_POINT_GROUP", "SUITE_NAMES"]

#: the entry-point group through which installed packages add suite rows
ENTRY_POINT_GROUP = "fedsim.suite_rows"
#: the theorem suites a row can join
SUITE_NAMES = ("quick", "full", "smoke")
_CONTROLS = ("", "violated", "holds", "not_applicable")


@dataclass(frozen=True, kw_only=True)
class SuiteRow:
    """One row of one or more suites.

    ``name``: the scenario name in ``verdicts.csv``; ``family`` and ``point``: the family
    and its parameters (the others take their defaults); ``horizons``: the horizons of its
    rows (``()``: the point's own, one row); ``modes``: the bound's modes, a row each
    (``()``: the point's); ``suites``: the suites it joins; ``replicates``: ``None`` for the suite's
    R (``fedsim validate --replicates``), else a fixed count; ``expected_verdict``: a
    control row's required verdict (``"violated"`` for a known counterexample; ``""``: an
    in-regime row); ``div1000``: also compare against the bound / 1000, which must come out
    ``violated`` (negative control (b)).
    """

    name: str
    family: str
    point: Mapping[str, Any] = field(default_factory=dict)
    horizons: tuple[int, ...] = ()
    modes: tuple[str, ...] = ()
    suites: tuple[str, ...] = SUITE_NAMES
    replicates: int | None = None
    expected_verdict: str = ""
    div1000: bool = False

    def __post_init__(self) -> None:
        require(isinstance(self.name, str) and bool(self.name), "name", self.name,
                "must be a non-empty string")
        for s in self.suites:
            require(s in SUITE_NAMES, "suites", s, f"must be among {SUITE_NAMES}")
        require(self.expected_verdict in _CONTROLS, "expected_verdict",
                self.expected_verdict, f"must be one of {_CONTROLS}")
        require(self.replicates is None or int(self.replicates) >= 2, "replicates",
                self.replicates, "must be >= 2 (a CI needs two values)")

    def case(self, replicates: int, *, max_states: int = 200_000) -> Any:
        """The row as a Case: the family at :attr:`point` for every horizon and mode
        (:func:`fedsim.validation.families.cases.family_case`); the family's exact oracle,
        where it finishes within ``max_states`` with no error bound, gives each row's
        ``exact`` value (z-tested against the Monte-Carlo mean)."""
        from fedsim.validation.families import get_family
        from fedsim.validation.families.cases import family_case

        fam = get_family(self.family)
        control = {"": "", "not_applicable": "out_of_regime"}.get(self.expected_verdict,
                                                                  "counterexample")
        R = self.replicates or replicates
        if not fam.horizon:   # a family that names no horizon parameter: the point's own
            require(not self.horizons, "horizons", self.horizons,
                    f"need a family with a horizon parameter ({fam.name} names none)")
            return fam.build(dict(self.point)).case(R, key=self.name, exact=_exact(
                fam.build(dict(self.point)), max_states), control=control,
                expected_verdict=self.expected_verdict)
        hs = self.horizons or (fam.build(dict(self.point)).horizon,)
        return family_case(fam, name=self.name, point=dict(self.point), horizons=hs,
                           modes=self.modes, replicates=R, control=control,
                           expected_verdict=self.expected_verdict, max_states=max_states)


def _exact(inst: Any, max_states: int) -> float:
    m = inst.exact(max_states) if inst.exact is not None else None
    return m.value if m is not None and m.error == 0.0 else math.nan


_ROWS: dict[str, SuiteRow] = {}


def register_rows(*rows: SuiteRow, replace: bool = False) -> None:
    """Add ``rows`` (a name already taken raises unless ``replace``)."""
    for r in rows:
        require(isinstance(r, SuiteRow), "row", r, "must be a SuiteRow")
        if r.name in _ROWS and not replace and _ROWS[r.name] != r:
            raise ConfigError(f"suite row {r.name!r} is already registered, got name={r.name!r}")
        _ROWS[r.name] = r


def unregister_rows(*names: str) -> None:
    """Remove rows by name (tests and plug-in development)."""
    for n in names:
        _ROWS.pop(n, None)


def _accept(name: str, obj: Any) -> None:
    rows = obj() if callable(obj) and not isinstance(obj, SuiteRow) else obj
    rows = [rows] if isinstance(rows, SuiteRow) else list(rows)
    require(bool(rows) and all(isinstance(r, SuiteRow) for r in rows), f"entry point {name}",
            type(obj).__name__, "must name SuiteRows or a callable returning them")
    register_rows(*rows, replace=True)


def load_row_plugins(*, force: bool = False) -> list[str]:
    """Load the ``fedsim.suite_rows`` entry points (once, or again with ``force``); a broken
    one is reported in one line and skipped (:func:`fedsim.plugins.load_group`)."""
    return load_group_once(ENTRY_POINT_GROUP, _accept, force=force)


def suite_rows(suite: str) -> list[SuiteRow]:
    """The registered rows of ``suite`` (plug-ins loaded first), in registration order."""
    load_row_plugins()
    return [r for r in _ROWS.values() if suite in r.suites]
