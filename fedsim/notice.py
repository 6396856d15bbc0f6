"""A first line within 2 s for long set-up work (issue 21: "slow without a word").

:func:`notice_after` prints one line ``fedsim: <message>`` on stderr if the block it wraps
is still running after :data:`NOTICE_SECONDS` (1.5 s), from a timer thread (it fires while
the block is in numpy or a sleep; a C call that holds the GIL delays it to its end).  A
block that ends sooner prints nothing, so quick commands keep their output unchanged.
Used where a command can work for a while before its progress bar or its result appears:
``fedsim bounds`` (a bound evaluated by a long recursion) and the paper suite (building its
experiments).  ``fedsim validate`` says at once what it builds (``run_suite``) and
``fedsim search`` shows its grid bar at once, both before any long work.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator

__all__ = ["notice_after", "NOTICE_SECONDS"]

#: seconds after which a still-running set-up says what it is doing
NOTICE_SECONDS = 1.5


@contextlib.contextmanager
def notice_after(message: str, *, enabled: bool = True,
                 seconds: float = NOTICE_SECONDS) -> Iterator[None]:
    """Print ``fedsim: <message>`` once if the block runs longer than ``seconds``."""
    if not enabled:
        yield
        return
    lock = threading.Lock()
    state = {"done": False}

    def say() -> None:
        with lock:
            if not state["done"]:
                sys.stderr.write(f"fedsim: {message}\n")
                sys.stderr.flush()

    timer = threading.Timer(seconds, say)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        with lock:
            state["done"] = True
        timer.cancel()
