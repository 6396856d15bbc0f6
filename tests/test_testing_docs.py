"""docs/TESTING.md works as written: its Python blocks run, the paper-literal Theorem 8 test
finds a counterexample that hypothesis shrinks to a small instance (the one the page quotes),
and the corrected Theorem 8 test passes on the same strategy."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from fedsim.testing import BoundCheck, BoundViolated

DOC = (Path(__file__).resolve().parents[1] / "docs" / "TESTING.md").read_text()
BLOCKS = re.findall(r"```python\n(.*?)```", DOC, re.S)


def test_the_page_has_the_two_tests():
    assert len(BLOCKS) == 2
    assert len(BLOCKS[0].strip().splitlines()) <= 10     # "a ten-line test"


def test_paper_theorem8_is_violated_and_shrinks_and_corrected_holds():
    ns: dict = {}
    exec(compile(BLOCKS[0], "TESTING.md[0]", "exec"), ns)
    t0 = time.perf_counter()
    with pytest.raises(BoundViolated) as err:
        ns["test_paper_theorem8"]()
    seconds = time.perf_counter() - t0
    rec = err.value.record
    assert isinstance(rec, BoundCheck)
    assert rec.verdict == "violated" and rec.method == "exact" and rec.ratio > 1.0
    assert rec.measured > rec.bound and rec.status == "PAPER_LITERAL_KNOWN_ERRATUM"
    assert rec.params["n"] <= 2 and rec.params["M"] <= 10 and rec.params["K"] <= 8
    # the page quotes this very record (derandomized: the same on every run)
    shown = ", ".join(f"{k}={v!r}" for k, v in rec.params.items())
    assert f"theorem8-norm({shown})" in DOC, (str(rec), seconds)
    assert f"{rec.measured:.6g}" in DOC and f"{rec.bound:.6g}" in DOC
    exec(compile(BLOCKS[1], "TESTING.md[1]", "exec"), ns)
    ns["test_corrected_theorem8"]()
