"""Long set-up work shows a first line within 2 s (issue 21): :func:`notice_after` and
the commands that use it."""

from __future__ import annotations

import functools
import time

import pytest

from fedsim.notice import NOTICE_SECONDS, notice_after


def test_a_long_block_says_so_once_within_2_s(capsys):
    with notice_after("building things"):
        time.sleep(2.0)
    err = capsys.readouterr().err
    assert err == "fedsim: building things\n"
    assert NOTICE_SECONDS < 2.0


def test_a_quick_block_prints_nothing(capsys):
    with notice_after("never shown"):
        time.sleep(0.05)
    time.sleep(NOTICE_SECONDS + 0.3)          # the cancelled timer does not fire later
    assert capsys.readouterr().err == ""


def test_disabled_prints_nothing(capsys):
    with notice_after("never shown", enabled=False, seconds=0.01):
        time.sleep(0.2)
    assert capsys.readouterr().err == ""


def test_bounds_says_so_when_the_evaluation_is_long(monkeypatch, capsys):
    from fedsim.theory.registry import get_theorem

    from fedsim.cli import main

    th = get_theorem("theorem7")
    slow_calls = []
    real = th.function

    @functools.wraps(real)       # the options are read from the signature
    def slow(**kw):
        slow_calls.append(time.monotonic())
        time.sleep(NOTICE_SECONDS + 0.6)
        return real(**kw)

    monkeypatch.setattr(th, "function", slow)   # a plain dataclass field
    rc = main(["bounds", "theorem7", "--L", "1", "--mu", "0.5", "--M", "1", "--p", "0.4,0.4",
               "--p-s", "0.2", "--sigma", "0.1", "--zeta", "1", "--R0", "1", "--K", "10"])
    assert rc == 0 and slow_calls
    assert "fedsim: evaluating theorem7's bound" in capsys.readouterr().err


def test_paper_suite_says_so_while_building(monkeypatch, capsys):
    import fedsim.validation.paper as paper

    def slow_build(only, small):
        time.sleep(NOTICE_SECONDS + 0.6)
        raise KeyboardInterrupt  # stop there: only the first line is under test

    monkeypatch.setattr(paper, "build_experiments", slow_build)
    with pytest.raises(KeyboardInterrupt):
        paper.run_paper_suite(out="unused", report=None, small=True, progress=True)
    assert "fedsim: building the paper suite's experiments" in capsys.readouterr().err


def test_validate_says_what_it_builds_before_building(monkeypatch, tmp_path, capsys):
    import fedsim.validation.suites as suites

    seen = []

    def build_cases(*a, **k):
        seen.append(capsys.readouterr().err)
        raise KeyboardInterrupt

    monkeypatch.setattr(suites, "build_cases", build_cases)
    with pytest.raises(KeyboardInterrupt):
        suites.run_suite("smoke", out=tmp_path / "run", report=None, workers=1)
    assert seen and "fedsim: building the smoke suite" in seen[0]
