"""Fuzz test of every subcommand's front door (issue 21 item 5).

Each case of :mod:`cli_corpus` (the issue's malformed, odd and hostile inputs for ``run``,
``bounds``, ``validate``, ``report`` and ``search``, plus seeded mutations of valid command
lines) runs in its own process under a memory limit (``RLIMIT_AS``) and a time limit; the
oracle: exit 0, 2 or 3, at most two stderr lines, no traceback, no process left after
5 s, no temporary file left, no symlink followed and no device replaced, and the
"accepted silently" cases do not exit 0.  ``make test`` runs one case per subcommand and
category plus a few generated ones; the whole corpus is ``-m slow``.
"""

from __future__ import annotations

import pytest
from cli_corpus import CASES, generated_cases, run_case

#: the cases ``make test`` runs (one per subcommand and category, the cheapest)
FAST = {"bounds-L-1e308", "heat-same-axis", "validate-out-dangling-link", "deep-toml",
        "report-non-numeric-mean", "plot-xyz", "fixed-n-1e9", "bounds-theorem7-K-1e18",
        "run-dev-zero", "window-tau-1e9", "replicates-1e9", "run-fifo",
        "zero-delays-time-horizon", "fixed-overlaps-space", "bounds-theorem7-K-0",
        "per-client-list-length", "validate-out-empty", "run-out-symlink",
        "report-out-device", "dask-file-url"}
GENERATED = generated_cases(24)


def _param(case, fast: bool):
    marks = () if fast else (pytest.mark.slow,)
    return pytest.param(case, id=case.name, marks=marks)


@pytest.mark.parametrize("case", [_param(c, c.name in FAST) for c in CASES]
                         + [_param(c, k < 4) for k, c in enumerate(GENERATED)])
def test_case_ends_clean(case):
    ok, why = run_case(case)
    assert ok, f"{case.name}: {why}"


def test_fast_set_covers_every_subcommand_and_category():
    fast = [c for c in CASES if c.name in FAST]
    assert {c.argv[0] for c in fast} == {"run", "bounds", "validate", "report", "search"}
    assert {c.category for c in fast} == {c.category for c in CASES}
    assert FAST <= {c.name for c in CASES}
