"""Whether a command draws progress bars: on a terminal only.

A bar redraws its line many times a second; written to a file or a pipe (a log, ``nohup``, a
CI job) it leaves thousands of partial lines. Every command therefore draws its bars only when
standard error is a terminal, and never with ``--no-progress``.
"""

from __future__ import annotations

import sys

__all__ = ["progress_wanted"]


def progress_wanted(no_progress: bool = False, stream=None) -> bool:
    """True when progress bars should be drawn: not ``no_progress`` and ``stream`` (default
    standard error) is a terminal."""
    if no_progress:
        return False
    stream = sys.stderr if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):        # replaced or closed stream
        return False
