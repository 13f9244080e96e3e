"""Set-up shared by every test.

Property-based tests (hypothesis) are repeatable: every run tries the same examples (seeded
from each test's source), so a run fails only for a change of the code, never by drawing a
new example. ``COSMOS_HYPOTHESIS=explore`` draws fresh random examples instead, to look for
new failures (a failure found that way prints the example to pin as a plain test).

Caches: the tests keep their datasets, indexes, traces, simulation results and specialized
kernels in a cache folder of their own, never in the user's (``$COSMOS_CACHE`` or
``~/.cache/cosmos``).

The folder is made under pytest's temporary root for this run (pytest keeps the last three
runs' roots); the worker processes of pytest-xdist share it, as they share that root. Every
cache entry is written to a temporary name and renamed, so two workers that build the same
entry at once both end with a whole one. A test that needs an empty or unwritable cache points
``COSMOS_CACHE`` elsewhere itself (``monkeypatch.setenv``)."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

# no first-run compile note in the tests' output (cosmos_common.numba_cache.first_run_note;
# tests/test_numba_cache.py checks the note itself)
os.environ["COSMOS_COMPILE_NOTE"] = "off"

settings.register_profile("repeatable", derandomize=True, database=None)
settings.register_profile("explore", derandomize=False)


def pytest_configure(config):
    profile = os.environ.get("COSMOS_HYPOTHESIS", "repeatable")
    if profile not in ("repeatable", "explore"):
        raise pytest.UsageError(f"COSMOS_HYPOTHESIS={profile!r}: expected 'repeatable' or "
                                f"'explore'")
    settings.load_profile(profile)


@pytest.fixture(scope="session", autouse=True)
def _tests_own_cache(tmp_path_factory):
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):   # each worker has its own root, in the run's
        root = root.parent
    folder = root / "cosmos-cache"
    folder.mkdir(exist_ok=True)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COSMOS_CACHE", str(folder))
        yield folder
