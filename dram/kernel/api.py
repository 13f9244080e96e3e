"""The public driver API: ``@njit`` functions of ``(params, state, ...)``.

Part of the cycle: the loop around it. A driver offers requests (:func:`offer`), ticks the
controllers at the cycles where something can happen (:func:`tick`, :func:`next_event`,
:func:`ticks_until`) and pops completions (:func:`pop_completions`). Open-loop replay
(:mod:`dram.openloop`) and the closed-loop engine (:mod:`cosmos.engine`) call these (or the
``_``-prefixed forms on ``state.heap`` they wrap).
"""

from __future__ import annotations

from pathlib import Path

from numba import njit

from dram.jitcache import drop_stale
import dram.config as _config
from .layout import G_CHANGES, G_CLEN, H_O_GLOB, _u
from .frontend import _offer, _pop
from .controller import _next_event, _tick

# the jitted code here inlines the package's other modules and compiles in constants of
# dram.config: its cache goes when one of them changes
drop_stale(__file__, str(Path(__file__).with_name("__init__.py")), _config.__file__)


@njit(cache=True, _nrt=False)
def offer(params, state, instance, req_id, addr, is_write, rank_local, clk):
    """Offer one 64-B request at cycle ``clk`` (Ramulator's ``send``); True if accepted.

    A read whose address is in its channel's write buffer is forwarded (completes at the
    first cycle >= clk + 1 at which no older read is pending); a write whose address is
    already in the write buffer is coalesced (completes now, at ``clk``). Otherwise the
    request needs a free read/write buffer entry. ``rank_local`` = 1 marks a rank-PU access
    (it becomes RD_L / WR_L: command bus shared, channel data bus not used).
    """
    return _offer(params, state.heap, instance, req_id, addr, is_write, rank_local, clk)


@njit(cache=True, _nrt=False)
def pop_completions(state, out_ids, out_cycles):
    """Move up to len(out_ids) completions (oldest first) to the outputs; return how many.

    out_ids, out_cycles : int64[K] -> request id, completion cycle.
    """
    return _pop(state.heap, out_ids, out_cycles)


@njit(cache=True, _nrt=False)
def completions_pending(state):
    """Number of completions waiting in the ring."""
    H = state.heap
    return H[_u(H[_u(H_O_GLOB)] + G_CLEN)]


@njit(cache=True, _nrt=False)
def tick(params, state, clk):
    """One controller cycle at clock ``clk`` for every channel of every instance.

    Channels with nothing to do at ``clk`` are skipped (exactly: nothing would change).
    Completions are appended to the completion ring (:func:`pop_completions`).
    """
    _tick(params, state.heap, clk)


@njit(cache=True, _nrt=False)
def next_event(params, state, clk):
    """Earliest cycle >= clk at which :func:`tick` can change anything (``INF`` if never).

    Ticking every cycle and ticking only at these cycles give identical results.
    """
    return _next_event(params, state.heap, clk)


@njit(cache=True, _nrt=False)
def changes(state):
    """Counter of buffer-changing events (accepts and issued commands), for drivers."""
    H = state.heap
    return H[_u(H[_u(H_O_GLOB)] + G_CHANGES)]


@njit(cache=True, _nrt=False)
def ticks_until(params, state, clk_from, clk_to):
    """Tick every cycle in [clk_from, clk_to] at which something can happen (for a driver
    with nothing to offer in between); returns clk_to + 1."""
    H = state.heap
    c = _next_event(params, H, clk_from)
    while c <= clk_to:
        _tick(params, H, c)
        c = _next_event(params, H, c + 1)
    return clk_to + 1
