"""The corpus of issue 31 (:mod:`hostile_corpus`): the Python API, plug-ins, a damaged
store, the disk and the process limits, the environment, and outputs that would replace an
input.  Each case asserts its own outcome (exit code, the one line it must print, what it
leaves).  ``make test`` runs the cheapest cases of every category; the whole corpus is
``-m slow``.  The cases that mount a tmpfs are skipped where the test does not run as root.
"""

from __future__ import annotations

import pytest
from hostile_corpus import CASES, run_hostile, skip_reason

#: the cases ``make test`` runs: a few of every category, the cheapest
FAST = {"api-run-replicate-1e30", "api-bound-T-2x2", "api-bound-theorem7-K-1e18",
        "api-validate-out-fifo", "api-validate-unguarded-script",
        "plugin-sys-exit-at-import", "plugin-entry-points-not-utf8-help", "plugin-nan-value",
        "plugin-unknown-status", "plugin-string-value",
        "store-planted-trigger", "report-meta-link-dev-zero",
        "run-out-full-disk", "run-out-file-size-limit", "bounds-stdout-dev-full",
        "bounds-stderr-closed-bad-input", "run-memory-budget-1T-huge-dim",
        "env-budget-zzz-validate", "env-numba-disable-jit", "env-cache-dir-is-a-file",
        "run-out-is-scenario", "report-out-is-store"}


def _param(case):
    marks = [] if case.name in FAST else [pytest.mark.slow]
    why = skip_reason(case)
    if why:
        marks.append(pytest.mark.skip(reason=why))
    return pytest.param(case, id=case.name, marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_hostile_case(case):
    ok, why = run_hostile(case)
    assert ok, f"{case.name}: {why}"


def test_fast_set_covers_every_category():
    assert FAST <= {c.name for c in CASES}
    assert {c.category for c in CASES if c.name in FAST} == {c.category for c in CASES
                                                             if c.category != "last round"}
    assert len({c.name for c in CASES}) == len(CASES)
