"""Stopping a command and its worker processes on a signal.

A command stopped by a signal must leave no process behind. Two parts see to it:

- :func:`stop_on_signals` (the command line, around a command): SIGTERM and SIGHUP raise
  :class:`Terminated` in the main process, as Ctrl-C raises ``KeyboardInterrupt``, so the
  command stops the same way: its pool's workers are stopped
  (:func:`experiments.harness.common.run_sweep`), its results folder says why it stopped, and it
  exits with status 128 + the signal's number. Without it SIGTERM ends the interpreter at once
  and nothing stops the workers.
- :func:`worker_init` (the initializer of every worker process of a pool): the kernel kills
  the worker as soon as the process that started it ends, however it ends (SIGKILL, a crash,
  a signal that is not caught), and SIGTERM / SIGHUP end the worker at once.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading

__all__ = ["Terminated", "stop_on_signals", "worker_init", "exit_status"]

#: signals that stop a command through :class:`Terminated` (Ctrl-C's SIGINT raises
#: ``KeyboardInterrupt`` already)
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP")
                     if hasattr(signal, name))

#: prctl option: the signal the kernel sends this process when its parent ends (Linux)
_PR_SET_PDEATHSIG = 1


class Terminated(KeyboardInterrupt):
    """The command was asked to stop by signal ``signum`` (SIGTERM or SIGHUP).

    A ``KeyboardInterrupt``, so every path that cleans up after Ctrl-C cleans up after it."""

    def __init__(self, signum: int):
        self.signum = int(signum)
        super().__init__(f"stopped by {signal.Signals(self.signum).name}")

    @property
    def name(self) -> str:
        """The signal's name, e.g. ``SIGTERM``."""
        return signal.Signals(self.signum).name


def exit_status(exc: KeyboardInterrupt) -> int:
    """The exit status of a command stopped by ``exc``: 128 + the signal's number (130 for
    Ctrl-C, 143 for SIGTERM)."""
    return 128 + (exc.signum if isinstance(exc, Terminated) else int(signal.SIGINT))


def _raise_terminated(signum, frame):
    raise Terminated(signum)


@contextlib.contextmanager
def stop_on_signals():
    """Within the block, SIGTERM and SIGHUP raise :class:`Terminated` in this process (the
    handlers before it are restored after). Outside the main thread, where Python cannot set
    signal handlers, it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {}
    try:
        for sig in STOP_SIGNALS:
            before[sig] = signal.signal(sig, _raise_terminated)
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


def worker_init(parent_pid: int) -> None:
    """Initializer of a pool's worker process started by process ``parent_pid``: SIGTERM and
    SIGHUP take their default action (end the process at once, even inside compiled code; a
    worker started by fork inherits :func:`stop_on_signals`' handlers otherwise), and on
    Linux the kernel sends the worker SIGKILL when its parent ends (``prctl``
    ``PR_SET_PDEATHSIG``; the parent is the process that forked it: ``parent_pid`` or, with
    the forkserver start method, the server, which ends with ``parent_pid``). If
    ``parent_pid`` ended before this call, the worker ends here."""
    for sig in STOP_SIGNALS:
        signal.signal(sig, signal.SIG_DFL)
    _set_parent_death_signal(signal.SIGKILL)
    if os.getppid() != parent_pid and not _exists(parent_pid):
        os._exit(1)


def _exists(pid: int) -> bool:
    """Whether process ``pid`` exists (signal 0 only asks)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        pass                        # it exists, and is not ours to signal
    return True


def _set_parent_death_signal(sig: int) -> bool:
    """Ask the kernel to send ``sig`` to this process when its parent ends; False where
    that is not available (not Linux)."""
    import sys

    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False
