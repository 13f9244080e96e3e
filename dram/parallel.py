"""Threads for the DRAM package's compiled kernels, which release the GIL (``nogil=True``):
how many CPUs this process may use, and running a function over several threads with the
first error (or Ctrl-C in the calling thread) stopping the others and raised once.

Used by the trace scanner (:mod:`dram.tracescan`: pieces of a block) and the open-loop
driver (:mod:`dram.openloop`: one channel per thread at a time).
"""

from __future__ import annotations

import os
import threading
from typing import Callable


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def run_in_threads(fn: Callable[[int], None], count: int, *,
                   poll: Callable[[], None] | None = None,
                   stop: threading.Event | None = None) -> None:
    """``fn(k)`` for k in range(count), each in a thread of its own (one: in this thread).

    The calling thread waits, calling ``poll()`` about every 0.1 s if given (progress). An
    exception in any ``fn`` sets ``stop`` (so the others can end early, if they watch it) and
    is raised here once every thread has ended; so is Ctrl-C in the calling thread.
    """
    if count <= 1:
        if count == 1:
            fn(0)
        return
    errors: list[BaseException] = []

    def guarded(k: int) -> None:
        try:
            fn(k)
        except BaseException as exc:        # re-raised in the calling thread
            errors.append(exc)
            if stop is not None:
                stop.set()

    threads = [threading.Thread(target=guarded, args=(k,), daemon=True) for k in range(count)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            while t.is_alive():
                t.join(0.1)
                if poll is not None:
                    poll()
    except BaseException:
        if stop is not None:
            stop.set()
        for t in threads:
            t.join()
        raise
    if errors:
        raise errors[0]
