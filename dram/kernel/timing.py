"""Timing constraints: when a command may issue, and what issuing it changes.

Part of the cycle: steps 3 and 4 (docs/dram.md). Every level node (channel, rank, bank group,
bank) keeps a ready cycle per command, in the ``ready`` region. :func:`ready_time` is the
largest of them along a command's path; :func:`update_timing` applies the resolved constraint
table (``params.tab``, made by ``dram.config`` from ``dram.standards.ddr5``) for a command that
issues: a dense max-update per node, the windowed records (nFAW) through an issue history.
"""

from __future__ import annotations

from pathlib import Path

from numba import njit

from dram.config import FEATURE_SAME_BANK, M_SCOPE, SCOPE_RANK, SCOPE_SAME_BANK
from dram.jitcache import drop_stale
import dram.config as _config
from .commands import LIVE_CMDS, N_CMDS
from .compiletime import features, only_with
from .layout import H_HM, H_NN, H_O_HIST, SL_BGO, SL_BKO, SL_RKO, _fb_bg, _meta, _rdy, _u

# the jitted code here inlines the package's other modules and compiles in constants of
# dram.config: its cache goes when one of them changes
drop_stale(__file__, str(Path(__file__).with_name("__init__.py")), _config.__file__)


@njit(cache=True, inline="always", _nrt=False)
def ready_time(params, H, g, cmd, rank, fb):
    """Earliest cycle at which ``cmd`` may issue to (rank, flat bank fb) of channel g: the
    largest ready cycle of its nodes (channel, rank, and the bank groups and banks of its
    scope: fb's, every one of the rank, or bank index fb % n_banks of every bank group)."""
    NC = params.n_cmds
    base = _rdy(H, g) + cmd
    t = H[_u(base)]
    v = H[_u(base + (1 + rank) * NC)]
    if v > t:
        t = v
    nbg = params.n_bg
    nb = params.n_banks
    o_bg = 1 + params.n_ranks
    o_bk = o_bg + params.n_ranks * nbg
    scope = _meta(params, M_SCOPE, cmd)
    if scope == SCOPE_RANK:
        for k in range(nbg):
            v = H[_u(base + (o_bg + rank * nbg + k) * NC)]
            if v > t:
                t = v
        for k in range(nbg * nb):
            v = H[_u(base + (o_bk + rank * nbg * nb + k) * NC)]
            if v > t:
                t = v
        return t
    if (features(params) & FEATURE_SAME_BANK) != 0 and scope == SCOPE_SAME_BANK:
        return _ready_same_bank(params, H, base, rank, fb, t)
    v = H[_u(base + (o_bg + _fb_bg(params, fb)) * NC)]
    if v > t:
        t = v
    v = H[_u(base + (o_bk + fb) * NC)]
    if v > t:
        t = v
    return t


@only_with(FEATURE_SAME_BANK, 0)
@njit(cache=True, _nrt=False)
def _ready_same_bank(params, H, base, rank, fb, t):
    """:func:`ready_time` of a same-bank command (``FEATURE_SAME_BANK``; ``base``: its
    channel-node ready slot, ``t``: the channel and rank part): the largest also over every
    bank group of the rank and bank index fb % n_banks in each."""
    NC = params.n_cmds
    nbg = params.n_bg
    nb = params.n_banks
    o_bg = 1 + params.n_ranks
    o_bk = o_bg + params.n_ranks * nbg
    b = fb - _fb_bg(params, fb) * nb                  # bank index within its bank group
    for k in range(nbg):
        v = H[_u(base + (o_bg + rank * nbg + k) * NC)]
        if v > t:
            t = v
        v = H[_u(base + (o_bk + (rank * nbg + k) * nb + b) * NC)]
        if v > t:
            t = v
    return t


@njit(cache=True, inline="always", _nrt=False)
def _upper_ready(H, rb, o, cmd):
    """Channel- and rank-level part of the ready cycle of ``cmd`` for the request in slot
    offset ``o`` (moved by every command to the channel)."""
    t = H[_u(rb + cmd)]
    v = H[_u(rb + H[_u(o + SL_RKO)] + cmd)]
    return v if v > t else t


@njit(cache=True, inline="always", _nrt=False)
def _local_ready(H, rb, o, cmd):
    """Bank-group- and bank-level part of the ready cycle of ``cmd`` for the request in slot
    offset ``o``."""
    t = H[_u(rb + H[_u(o + SL_BGO)] + cmd)]
    v = H[_u(rb + H[_u(o + SL_BKO)] + cmd)]
    return v if v > t else t


@njit(cache=True, inline="always", _nrt=False)
def _slot_ready(H, rb, o, cmd):
    """Ready cycle of a bank-scope ``cmd`` for the request in slot offset ``o`` (rb = the
    channel's ready-region base)."""
    t = _upper_ready(H, rb, o, cmd)
    v = _local_ready(H, rb, o, cmd)
    return v if v > t else t


@njit(cache=True, inline="always", _nrt=False)
def _max4(H, t, rb, d, clk):
    """``_dense_max`` for the four follow commands at ``rb``, ``d``: every load before any
    store."""
    a0, a1, a2, a3 = clk + t[_u(d)], clk + t[_u(d + 1)], clk + t[_u(d + 2)], clk + t[_u(d + 3)]
    b0, b1, b2, b3 = H[_u(rb)], H[_u(rb + 1)], H[_u(rb + 2)], H[_u(rb + 3)]
    H[_u(rb)] = max(a0, b0)
    H[_u(rb + 1)] = max(a1, b1)
    H[_u(rb + 2)] = max(a2, b2)
    H[_u(rb + 3)] = max(a3, b3)


@njit(cache=True, inline="always", _nrt=False)
def _dense_max(H, t, rb, d, clk, n):
    """ready[rb + f] = max(ready[rb + f], clk + dlat[d + f]) for every follow command f < n
    (entries without a constraint hold NO_CONSTRAINT; ``n``: ``commands.LIVE_CMDS`` of the
    build's features, the commands it can issue).

    In groups of four commands, each with every load before any store, then the rest one by
    one (``n`` is a compile-time constant: LLVM unrolls both loops). The compiler cannot
    tell the table and the state apart, so a plain loop (load, max, store, next) must run in
    order, while each group is straight-line code that LLVM's SLP vectorizer (enabled for
    our entry points by :func:`dram.jitcache.vectorizing`) turns into one vector load, maximum
    and store. Measured with the twelve commands written out the same way: 1.02 M -> 1.09 M
    requests/s on five loaded set A traces (interleaved, best of 6); the loop form gains
    nothing from the vectorizer.
    """
    for k in range(0, n - n % 4, 4):
        _max4(H, t, rb + k, d + k, clk)
    for k in range(n - n % 4, n):
        v = clk + t[_u(d + k)]
        if v > H[_u(rb + k)]:
            H[_u(rb + k)] = v


@njit(cache=True, inline="always", _nrt=False)
def _level_update(params, H, t, rb0, oh0, HM, lc, cmd, first, cnt, tlo, thi, clk):
    """One level of :func:`update_timing`: nodes [first, first + cnt), targets [tlo, thi)."""
    NC = N_CMDS
    hl = t[_u(params.o_hist_len + lc)]
    d = params.o_dlat + lc * 2 * NC                   # dense target row; + NC: siblings
    for x in range(tlo, thi):
        node = first + x
        rb = rb0 + node * NC
        _dense_max(H, t, rb, d, clk, LIVE_CMDS[features(params)])
        if hl > 0:                                    # windowed records [k0, kw)
            oh = oh0 + (node * NC + cmd) * HM
            for k in range(hl - 1, 0, -1):
                H[_u(oh + k)] = H[_u(oh + k - 1)]
            H[_u(oh)] = clk
            for k in range(t[_u(params.o_cons_ptr + lc)], t[_u(params.o_win_end + lc)]):
                past = H[_u(oh + t[_u(params.o_win + k)] - 1)]
                if past >= 0:
                    v = past + t[_u(params.o_lat + k)]
                    f = rb + t[_u(params.o_follow + k)]
                    if v > H[_u(f)]:
                        H[_u(f)] = v
    if t[_u(params.o_has_sib + lc)] == 1:
        for x in range(cnt):
            if x < tlo or x >= thi:
                _dense_max(H, t, rb0 + (first + x) * NC, d + NC, clk,
                           LIVE_CMDS[features(params)])


@njit(cache=True, _nrt=False)
def update_timing(params, H, g, cmd, rank, fb, clk):
    """Apply the constraint table for ``cmd`` issued at ``clk`` to (rank, fb) of channel g.

    Each level's target node gets the non-sibling constraints: the spacing ones as one dense
    max-update over every follow command (``dlat``), the windowed ones through the node's
    issue history of ``cmd``; the other children of a target's parent (siblings) get the
    sibling ones (dense too). A rank-scope command (PREab, REFab) targets every bank group and
    bank of its rank; a same-bank command (PREsb, REFsb) every bank group of its rank and bank
    index fb % n_banks in each (the other banks of each group are the bank level's siblings).
    With the dense table a command costs one branch-free max-update per command and node
    instead of a loop over its records (DDR5: all but the nFAW record are spacings).
    """
    t = params.tab
    NC = N_CMDS
    rb0 = _rdy(H, g)
    HM = H[_u(H_HM)]
    oh0 = H[_u(H_O_HIST)] + g * H[_u(H_NN)] * NC * HM
    nbg, nb, nr = params.n_bg, params.n_banks, params.n_ranks
    o_bg = 1 + nr
    o_bk = o_bg + nr * nbg
    _level_update(params, H, t, rb0, oh0, HM, cmd, cmd, 0, 1, 0, 1, clk)
    _level_update(params, H, t, rb0, oh0, HM, NC + cmd, cmd, 1, nr, rank, rank + 1, clk)
    scope = _meta(params, M_SCOPE, cmd)
    if scope == SCOPE_RANK:
        _level_update(params, H, t, rb0, oh0, HM, 2 * NC + cmd, cmd, o_bg + rank * nbg, nbg,
                      0, nbg, clk)
        _level_update(params, H, t, rb0, oh0, HM, 3 * NC + cmd, cmd, o_bk + rank * nbg * nb,
                      nbg * nb, 0, nbg * nb, clk)
    elif (features(params) & FEATURE_SAME_BANK) != 0 and scope == SCOPE_SAME_BANK:
        _update_same_bank(params, H, t, rb0, oh0, HM, cmd, rank, fb, clk)
    else:
        bgi = _fb_bg(params, fb)                      # flat bank group within the channel
        x = bgi - rank * nbg
        _level_update(params, H, t, rb0, oh0, HM, 2 * NC + cmd, cmd, o_bg + rank * nbg, nbg,
                      x, x + 1, clk)
        x = fb - bgi * nb
        _level_update(params, H, t, rb0, oh0, HM, 3 * NC + cmd, cmd, o_bk + bgi * nb, nb,
                      x, x + 1, clk)


@only_with(FEATURE_SAME_BANK, None)
@njit(cache=True, _nrt=False)
def _update_same_bank(params, H, t, rb0, oh0, HM, cmd, rank, fb, clk):
    """The bank-group and bank levels of :func:`update_timing` for a same-bank command
    (``FEATURE_SAME_BANK``): every bank group of the rank, and bank index fb % n_banks in
    each (the other banks of each group are its siblings)."""
    NC = N_CMDS
    nbg, nb, nr = params.n_bg, params.n_banks, params.n_ranks
    o_bg = 1 + nr
    o_bk = o_bg + nr * nbg
    _level_update(params, H, t, rb0, oh0, HM, 2 * NC + cmd, cmd, o_bg + rank * nbg, nbg,
                  0, nbg, clk)
    b = fb - _fb_bg(params, fb) * nb
    for k in range(nbg):
        _level_update(params, H, t, rb0, oh0, HM, 3 * NC + cmd, cmd,
                      o_bk + (rank * nbg + k) * nb, nb, b, b + 1, clk)
