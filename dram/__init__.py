"""DDR5 timing model (numba), usable alone on memory traces. Knows nothing about ANNS.

Public API::

    from dram import DRAMConfig, replay, list_presets
    result = replay({"addr": addr, "is_write": w, "arrival": t}, DRAMConfig(channels=4))
    result.completion, result.stats["mean_read_latency_cycles"]

``replay`` refuses addresses beyond ``config.capacity_bytes`` as ``cosmos dram replay`` does
(``wrap=True`` takes them modulo the capacity, as ``--wrap``).

Closed loop from jitted code: :mod:`dram.kernel` (``new_state``, ``offer``, ``tick``,
``pop_completions``, ``next_event``). See docs/dram.md.
"""

from dram.config import DRAMConfig, Params
from dram.standards import list_presets


def replay(trace, config=None, progress=None, **kwargs):
    """Open-loop replay; see :func:`dram.openloop.replay` (imports numba on first call)."""
    from dram.openloop import replay as _replay

    return _replay(trace, config, progress, **kwargs)


__all__ = ["DRAMConfig", "Params", "list_presets", "replay"]
