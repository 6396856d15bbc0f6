"""A Dask run without progress says so in one line and keeps waiting, or gives up after
``--dask-timeout`` (issue 21 item 4); the watcher is tested with a fake cluster."""

from __future__ import annotations

import pytest

pytest.importorskip("dask.distributed")

import dask.distributed  # noqa: E402
from fedsim.validation import montecarlo_backends as mb  # noqa: E402

from fedsim.errors import FedsimError  # noqa: E402


class _Client:
    def scheduler_info(self):
        return {"workers": {}}   # every worker died


def _fake_wait(script):
    """``distributed.wait`` that times out ``script[k]`` times before finishing one future."""
    calls = {"n": 0}

    def wait(pending, timeout=None, return_when=None):
        calls["n"] += 1
        if script and calls["n"] <= script[0]:
            raise TimeoutError
        if script:
            script.pop(0)
            calls["n"] = 0
        f = sorted(pending)[0]
        return {f}, set(pending) - {f}

    return wait


def test_a_stall_prints_one_line_and_the_run_goes_on(monkeypatch, capsys):
    monkeypatch.setattr(mb, "DASK_STALL_SECONDS", 0.01)
    monkeypatch.setattr(dask.distributed, "wait", _fake_wait([3, 0]))
    mb.set_dask_timeout(None)
    got = list(mb._watched(_Client(), "tcp://10.0.0.1:8786", ["a", "b"]))
    assert got == ["a", "b"]
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "no progress" in err[0] and "(0 workers connected)" in err[0]
    assert "still waiting" in err[0]


def test_dask_timeout_gives_up_with_one_line(monkeypatch, capsys):
    monkeypatch.setattr(mb, "DASK_STALL_SECONDS", 0.01)
    monkeypatch.setattr(dask.distributed, "wait", _fake_wait([10**9]))
    mb.set_dask_timeout(0.05)
    try:
        with pytest.raises(FedsimError, match=r"no progress for \d+ s on the Dask cluster "
                                              r"tcp://h:1 \(0 workers\); finished records"):
            list(mb._watched(_Client(), "tcp://h:1", ["a"]))
    finally:
        mb.set_dask_timeout(None)


def test_dask_timeout_option_is_checked(capsys):
    from fedsim.cli import main

    with pytest.raises(SystemExit) as e:
        main(["validate", "--suite", "smoke", "--dask", "local", "--dask-timeout", "-1"])
    assert e.value.code == 2
    assert "dask-timeout must be a number of seconds > 0" in capsys.readouterr().err
