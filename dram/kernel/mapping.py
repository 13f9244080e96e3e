"""Address mapping: a byte address to (channel, rank, bank group, bank, row, column).

Part of the cycle: before it. A request is mapped once when it is offered (or, for a driver
that offers the same request many times, once for all by :func:`map_all`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from numba import njit

from dram.jitcache import drop_stale
import dram.config as _config
from .layout import _u

# the jitted code here inlines the package's other modules and compiles in constants of
# dram.config: its cache goes when one of them changes
drop_stale(__file__, str(Path(__file__).with_name("__init__.py")), _config.__file__)


@njit(cache=True, inline="always", _nrt=False)
def _map_field(params, addr, want):
    t = params.tab
    x = addr >> 6
    for k in range(6):
        f = t[_u(params.o_map_fields + k)]
        r = t[_u(params.o_map_radix + f)]
        if f == want:
            return x % r
        x = x // r
    return 0


@njit(cache=True, _nrt=False)
def map_address(params, addr):
    """Byte address -> (channel, rank, bank group, bank, row, column) under the mapping.

    The line index ``addr >> 6`` is split into mixed-radix fields, LSB first in the order of
    the mapping; bits above the last field are dropped (as Ramulator's mapper does).
    """
    t = params.tab
    x = addr >> 6
    ch = rank = bg = bank = row = col = 0
    for k in range(6):
        f = t[_u(params.o_map_fields + k)]
        r = t[_u(params.o_map_radix + f)]
        v = x % r
        x = x // r
        if f == 0:
            ch = v
        elif f == 1:
            rank = v
        elif f == 2:
            bg = v
        elif f == 3:
            bank = v
        elif f == 4:
            row = v
        else:
            col = v
    return ch, rank, bg, bank, row, col


@njit(cache=True)
def map_channels(params, addr):
    """Channel of each address. addr int64[N] -> int64[N]."""
    n = addr.shape[0]
    out = np.empty(n, np.int64)
    for i in range(n):
        out[i] = _map_field(params, addr[i], 0)
    return out


@njit(cache=True, _nrt=False)
def map_all(params, addr, out):
    """Map every address once (for drivers that offer the same request many times).

    addr int64[N] -> out int64[N, 5]: channel, rank, bank group, row, and the flat bank
    index within the channel, ``(rank * n_bg + bank group) * n_banks + bank``.
    """
    for i in range(addr.shape[0]):
        ch, rank, bgi, bank, row, col = map_address(params, addr[i])
        out[i, 0] = ch
        out[i, 1] = rank
        out[i, 2] = bgi
        out[i, 3] = row
        out[i, 4] = (rank * params.n_bg + bgi) * params.n_banks + bank
