"""A command stopped by a signal leaves no worker process behind (issue 55, bug 2).

SIGTERM to ``cosmos reproduce`` used to end the main process alone: its pool's workers,
blocked on the pool's pipe, lived on (parent 1) for minutes. Now SIGTERM and SIGHUP stop a
command as Ctrl-C does (cosmos_common.signals.stop_on_signals), its pool's workers are ended
with it (experiments.harness.common._stop_workers), and a worker ends when its parent does, however
the parent ends (SIGKILL included: cosmos_common.signals.worker_init).
"""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="reads process states from /proc")


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists and has not ended (a zombie has ended)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def _descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (children, their children, ...)."""
    parent = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parent[int(entry.name)] = int(fields[1])
    out, todo = set(), [pid]
    while todo:
        p = todo.pop()
        kids = {c for c, pp in parent.items() if pp == p and _alive(c)}
        todo += list(kids - out)
        out |= kids
    return out


def _wait_gone(pids, timeout_s: float = 15.0) -> set[int]:
    """The processes of ``pids`` still alive after up to ``timeout_s`` seconds."""
    end = time.monotonic() + timeout_s
    left = {p for p in pids if _alive(p)}
    while left and time.monotonic() < end:
        time.sleep(0.1)
        left = {p for p in left if _alive(p)}
    return left


def _kill_all(pids) -> None:
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass


# a sweep of long tasks on 2 workers, under the command line's signal handling; each task
# prints its worker's pid once it runs (so the worker is fully started)
_SWEEP = textwrap.dedent("""
    import os, sys, time
    from cosmos_common.signals import stop_on_signals
    from experiments.harness.common import run_sweep

    def nap(seconds):
        sys.stdout.write(f"{os.getpid()}\\n")     # one write: the two workers share stdout
        sys.stdout.flush()
        time.sleep(seconds)
        return seconds

    if __name__ == "__main__":
        with stop_on_signals():
            run_sweep(nap, [dict(seconds=120)] * 4, workers=2, progress=False)
""")


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP", "SIGINT", "SIGKILL"])
def test_no_worker_of_a_sweep_outlives_its_stopped_parent(tmp_path, sig):
    script = tmp_path / "sweep.py"
    script.write_text(_SWEEP)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, str(script)], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    workers = set()
    try:
        workers = {int(proc.stdout.readline()) for _ in range(2)}
        assert workers <= _descendants(proc.pid)
        proc.send_signal(getattr(signal, sig))
        proc.wait(timeout=30)       # the parent stops at once, not after its 120 s tasks
        assert _wait_gone(workers) == set(), f"workers alive after {sig} to their parent"
    finally:
        workers |= _descendants(proc.pid)   # (whatever failed: leave no process behind)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        _kill_all(workers)


def test_sigterm_to_cosmos_reproduce_ends_its_workers(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT), COSMOS_CACHE=str(tmp_path / "cache"),
               MPLBACKEND="Agg")
    proc = subprocess.Popen(
        [sys.executable, "-m", "cosmos", "reproduce", "--scale", "tiny", "--only", "fig4a_qps",
         "--workers", "2", "--no-progress", "--out-root", str(tmp_path / "results")],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    children = set()
    try:
        end = time.monotonic() + 120
        while len(children) < 2 and time.monotonic() < end and proc.poll() is None:
            time.sleep(0.2)
            children = _descendants(proc.pid)
        assert len(children) >= 2, "the pool's workers never started"
        time.sleep(1.0)             # the workers are building the workload
        children |= _descendants(proc.pid)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
        assert _wait_gone(children) == set(), "a worker outlived cosmos reproduce"
    finally:
        children |= _descendants(proc.pid)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        _kill_all(children)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("cosmos reproduce: stopped by SIGTERM")
    marker = next((tmp_path / "results").rglob("INCOMPLETE"))
    assert marker.read_text().splitlines()[-1].startswith("stopped by SIGTERM; missing:")
