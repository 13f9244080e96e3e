"""Facts about the machine a run is on."""

from __future__ import annotations

import os


def physical_memory_bytes() -> int | None:
    """The machine's physical memory (None where ``os.sysconf`` cannot tell)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return None
