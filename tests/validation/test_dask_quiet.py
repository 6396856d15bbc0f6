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
