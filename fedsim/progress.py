"""One line on stderr beside a live progress bar.

A tqdm bar's line has no newline until the bar closes, so a note written to stderr while a
bar is drawn lands on the bar's line ("... 100%|####| 64/64 [00:12<00:00]fedsim: note: ...").
:func:`note_line` clears the bars drawn on stderr, writes the line and draws them again below
it (``tqdm.write``); with no bar it is a plain write.
"""

from __future__ import annotations

import sys

__all__ = ["note_line"]


def note_line(text: str) -> None:
    """Write ``text`` and a newline to stderr on a line of its own, above any live bar."""
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm is a dependency
        sys.stderr.write(text + "\n")
    else:
        tqdm.write(text, file=sys.stderr)
    sys.stderr.flush()
