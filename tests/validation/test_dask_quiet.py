"""A Dask run's shutdown: an error while closing (after every record was saved) is one line
on stderr, never a traceback; the cluster's own loggers are quiet meanwhile."""

from __future__ import annotations

import logging

from fedsim.validation import montecarlo_backends as mb


class _Boom:
    def __init__(self, log: bool = False) -> None:
        self.closed = False
        self.log = log

    def close(self) -> None:
        self.closed = True
        if self.log:  # what distributed does when a heartbeat meets a closed comm
            logging.getLogger("distributed.worker").error("Failed to communicate with "
                                                          "scheduler during heartbeat")
        raise OSError("CommClosedError")


def test_close_error_is_one_line(capsys):
    client, cluster = _Boom(log=True), _Boom()
    before = logging.getLogger("distributed").level
    mb._quiet_close(client, cluster)
    err = capsys.readouterr().err
    assert client.closed and cluster.closed
    assert err.count("\n") == 1 and "Traceback" not in err and "heartbeat" not in err
    assert err.startswith("fedsim: note: closing Dask failed") and "saved" in err
    assert logging.getLogger("distributed").level == before


def test_clean_close_prints_nothing(capsys):
    class _Ok:
        def close(self) -> None:
            pass

    mb._quiet_close(_Ok(), None)
    assert capsys.readouterr().err == ""


def _visible_line_before(err: str, needle: str) -> str:
    """What a terminal shows left of ``needle`` on its line (a carriage return goes back to
    the start of the line, a newline starts a new one)."""
    head = err[:err.index(needle)].rsplit("\n", 1)[-1]
    return head.rsplit("\r", 1)[-1]


def test_close_note_is_on_its_own_line_beside_a_live_bar(capsys):
    import sys

    from tqdm import tqdm

    bar = tqdm(total=4, desc="replicates", file=sys.stderr, disable=False)
    bar.update(4)                            # 100 %, the bar's line not ended yet
    mb._quiet_close(_Boom(), None)
    bar.close()
    err = capsys.readouterr().err
    assert "closing Dask failed" in err
    assert _visible_line_before(err, "fedsim: note: closing Dask failed").strip() == ""
    note = [ln for ln in err.replace("\r", "\n").split("\n") if "closing Dask" in ln]
    assert len(note) == 1 and note[0].startswith("fedsim: note:")
