"""The power-state policy: power-down and self refresh of idle ranks.

Part of the cycle: step 3d, after the read and write buffers (a rank is put to sleep only
when no request of the channel can issue in this cycle), compiled in only with the policy on
(``FEATURE_POWER``: ``DRAMConfig.powerdown_idle_ns`` or ``selfrefresh_idle_ns`` set), so that
without it the controller is the Ramulator 2.1 one, cycle for cycle.

A rank is idle while it has no buffered request (read, write or active; ``RA_NREQ``) and the
channel has no refresh request waiting. Once it has been idle for ``params.pd_idle`` cycles
since the last command a request or a refresh issued to it (``RA_LASTCMD``), the policy
closes its rows (PREab, if one is open) and powers it down (PDE): precharge power-down, IDD2P.
Once no request has issued a command to it for ``params.sr_idle`` cycles (``RA_LASTREQ``;
refreshes do not count, or the refresh period would keep resetting the timer) it leaves
power-down (PDX) and enters self refresh (SRE), where the refresh manager leaves it alone.
A request to a sleeping rank wakes it: its next command is PDX or SRX
(:func:`.issue.power_preq`), then tXP or tXS pass before its ACT (the timing records of the
standard). The timeouts are events: :func:`_power_next` returns the earliest cycle at which
its decision can change, which the scheduler makes the channel's wake-up cycle, so skipping
idle cycles gives the state ticking every cycle gives.
"""

from __future__ import annotations

from pathlib import Path

from numba import njit

from dram.jitcache import drop_stale
import dram.config as _config
from .commands import PDE, SRE
from .layout import INF, PS_PD, PS_SR, PS_UP, RA_LASTCMD, RA_LASTREQ, RA_NREQ, RA_PS, _u
from .timing import ready_time
from .issue import _ract, preq_command

# the jitted code here inlines the package's other modules and compiles in constants of
# dram.config: its cache goes when one of them changes
drop_stale(__file__, str(Path(__file__).with_name("__init__.py")), _config.__file__)


@njit(cache=True, _nrt=False)
def _power_next(params, H, g, clk):
    """The power-state command to issue at ``clk`` on channel g: (rank, command, -) if one
    is ready (PREab, PDE, PDX or SRE toward the state the rank's idle time asks for), else
    (-1, -1, the earliest cycle at which that can change: a timeout or a command's ready
    cycle; INF if none). Call only with the channel's priority buffer empty."""
    wake = INF
    nbr = params.n_bg * params.n_banks
    for r in range(params.n_ranks):
        o = _ract(H, g, r)
        if H[_u(o + RA_NREQ)] != 0:
            continue
        ps = H[_u(o + RA_PS)]
        target = PS_UP
        if params.sr_idle > 0 and ps != PS_SR:
            due = H[_u(o + RA_LASTREQ)] + params.sr_idle
            if due <= clk:
                target = PS_SR
            elif due < wake:
                wake = due
        if target == PS_UP and params.pd_idle > 0 and ps == PS_UP:
            due = H[_u(o + RA_LASTCMD)] + params.pd_idle
            if due <= clk:
                target = PS_PD
            elif due < wake:
                wake = due
        if target == PS_UP:
            continue
        # PREab while a row is open, PDX out of power-down on the way to self refresh, then
        # the entry itself (preq_command, as for a refresh)
        cmd = preq_command(params, H, g, SRE if target == PS_SR else PDE, r, r * nbr, -1)
        rt = ready_time(params, H, g, cmd, r, r * nbr)
        if rt <= clk:
            return r, cmd, wake
        if rt < wake:
            wake = rt
    return -1, -1, wake
