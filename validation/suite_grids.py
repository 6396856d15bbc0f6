"""The named suites and what each one holds, read when a suite runs (``fedsim validate``).

Every registered theorem (:mod:`fedsim.theory.registry`, in its order) contributes the cases
of its grid for the suite: the scenario modules' ``GRIDS`` tables
(:data:`fedsim.validation.scenarios.GRIDS`) and :func:`register_grid`'s, each a
:class:`fedsim.validation.cases.CaseGrid` that also names its bound/1000 control scenarios;
the family rows (:mod:`fedsim.validation.rows`, e.g. a plug-in's) follow.  Nothing is built
when this module is imported: :data:`SUITES` holds each suite's name, default replicates and
description, and :func:`build_cases` reads the grids and rows when it is called.
``--theorem`` / ``--family`` select part of a suite (:func:`check_selection`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fedsim.theory.registry import theorems
from fedsim.validation import scenarios as S
from fedsim.validation.rows import suite_rows

from fedsim.errors import ConfigError, check_integer, require

__all__ = ["SUITES", "Suite", "build_cases", "check_selection", "div1000_pairs", "case_grids",
           "register_grid", "unregister_grid"]


@dataclass(frozen=True)
class Suite:
    """A named suite: default replicates, the case list, and the /1000 control scenarios
    (both read from the grids when asked, not when this module is imported)."""

    name: str
    replicates: int
    cases: Callable[..., list[S.Case]]
    description: str

    @property
    def div1000(self) -> tuple[tuple[str, str], ...]:
        """The (theorem, scenario) pairs whose bound / 1000 must be violated (control (b))."""
        return _div1000(self.name)


_EXTRA_GRIDS: dict[str, S.CaseGrid] = {}


def register_grid(grid: S.CaseGrid, *, replace: bool = False) -> None:
    """Add a theorem's grids beside the built-in ones
    (:data:`fedsim.validation.scenarios.GRIDS`)."""
    require(isinstance(grid, S.CaseGrid), "grid", grid, "must be a CaseGrid")
    if grid.theorem in case_grids() and not replace:
        raise ConfigError(f"theorem {grid.theorem!r} already has grids, got "
                          f"theorem={grid.theorem!r}")
    _EXTRA_GRIDS[grid.theorem] = grid


def unregister_grid(theorem: str) -> None:
    """Remove grids added with :func:`register_grid`."""
    _EXTRA_GRIDS.pop(theorem, None)


def case_grids() -> dict[str, S.CaseGrid]:
    """Every theorem's grids by theorem name: the built-in tables
    (:data:`fedsim.validation.scenarios.GRIDS`), then :func:`register_grid`'s."""
    out = {g.theorem: g for g in S.GRIDS}
    out.update(_EXTRA_GRIDS)
    return out


def _ctrl_r(R: int) -> int:
    return max(2, min(R, 4))


def _from_registry(suite: str) -> Callable[..., list[S.Case]]:
    """The cases of ``suite``: every registered theorem's builder for it, in registry order
    (only the theorems named in ``only``, when given: the others' builders never run)."""

    def cases(R: int, only: frozenset[str] | None = None) -> list[S.Case]:
        c = _ctrl_r(R)
        out: list[S.Case] = []
        grids = case_grids()
        for th in theorems():
            builder = grids[th.name].builders.get(suite) if th.name in grids else None
            if builder is not None and (only is None or th.name in only):
                out += builder(R, c)
        return out

    return cases


def _names(field: str, given: str | list[str] | tuple[str, ...], known: list[str]
           ) -> frozenset[str]:
    """The comma-separated names of ``given``, each checked against ``known`` (one-line
    ConfigError listing the known names)."""
    names = [n.strip() for n in (given.split(",") if isinstance(given, str) else given)]
    names = [n for n in names if n]
    require(bool(names), field, given, "must name at least one")
    for n in names:
        require(n in known, field, n, f"must be one of {', '.join(known)}")
    return frozenset(names)


def check_selection(*, theorem: str | list[str] | None = None,
                    family: str | list[str] | None = None
                    ) -> tuple[frozenset[str] | None, frozenset[str]]:
    """The theorem names (None: every theorem) and family names of a partial suite, each
    checked against the registered ones (one-line ConfigError listing them)."""
    only = None if theorem is None else _names("theorem", theorem,
                                                [t.name for t in theorems()])
    fams: frozenset[str] = frozenset()
    if family is not None:
        from fedsim.validation.families import families

        fams = _names("family", family, [f.name for f in families()])
    return only, fams


def _row_cases(suite: str, R: int, only: frozenset[str] | None, fams: frozenset[str]
               ) -> list[S.Case]:
    """The family rows of ``suite`` (:func:`fedsim.validation.rows.suite_rows`, read now):
    all of them for the whole suite; with a selection, those of the named families or of
    the named theorems, plus each named family without a row at its default point."""
    from fedsim.validation.families import get_family

    whole = only is None and not fams
    rows = [r for r in suite_rows(suite)
            if whole or r.family in fams
            or (only is not None and get_family(r.family).theorem in only)]
    out = [r.case(R) for r in rows]
    have = {r.family for r in rows}
    out += [get_family(f).build().case(R, key=f"{f}-default") for f in sorted(fams - have)]
    return out


def div1000_pairs(suite: str) -> tuple[tuple[str, str], ...]:
    """The (theorem, scenario) pairs whose bound / 1000 must be violated: the theorems'
    (:attr:`Suite.div1000`) and the family rows' (``SuiteRow.div1000``)."""
    from fedsim.validation.families import get_family

    return SUITES[suite].div1000 + tuple((get_family(r.family).theorem, r.name)
                                         for r in suite_rows(suite) if r.div1000)


def _div1000(suite: str) -> tuple[tuple[str, str], ...]:
    """The (theorem, scenario) pairs whose bound / 1000 must be violated (control (b))."""
    grids = case_grids()
    return tuple((th.name, sc) for th in theorems() if th.name in grids
                 and suite in grids[th.name].builders for sc in grids[th.name].div1000)


#: the named suites; each one's cases and /1000 controls are read from the grids when asked
SUITES: dict[str, Suite] = {
    name: Suite(name, R, _from_registry(name), text)
    for name, R, text in (
        ("quick", 64, "every theorem at L ~ 1 and L << 1, every negative control, "
                      "R = 64 per in-regime run set"),
        ("smoke", 6, "the quick scenarios at their smallest horizons (end-to-end test)"),
        ("full", 200, "larger horizon grids; replicates per scenario sized (R = 200 default) "
                      "for 99% CIs of about +-10% of the mean"),
    )
}


def build_cases(suite: str, replicates: int | None = None, *,
                theorem: str | list[str] | None = None,
                family: str | list[str] | None = None) -> list[S.Case]:
    """The cases of ``suite`` with ``replicates`` per in-regime run set (suite default).

    The theorems' cases come first, then the family rows (:mod:`fedsim.validation.rows`,
    e.g. a plug-in's).  ``theorem`` (names, or one comma-separated string) keeps the cases
    and rows of those theorems only, and builds nothing else; ``family`` (names) adds those
    families' rows (a family with no row in the suite: its default point, ``replicates``
    replicates, one horizon).  With ``family`` alone, only the family rows run.  An unknown
    name is a one-line ConfigError listing the known ones.
    """
    require(suite in SUITES, "suite", suite, f"must be one of {sorted(SUITES)}")
    R = SUITES[suite].replicates if replicates is None else check_integer(
        "replicates", replicates)
    require(R >= 2, "replicates", replicates, "must be >= 2 (a CI needs two values)")
    only, fams = check_selection(theorem=theorem, family=family)
    cases = [] if family is not None and theorem is None else SUITES[suite].cases(R, only)
    return cases + _row_cases(suite, R, only, fams)


