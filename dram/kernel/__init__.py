"""The numba DDR5 controller, in parts: per-channel read/write/active/priority buffers, FR-FCFS,
write drain, open/closed rows, all-bank refresh, the timing-constraint table -- and the
closed-loop API that the system engine calls from its own jitted code.

Public functions are ``@njit(cache=True)`` functions of ``(params, state, ...)``: ``params`` is
:data:`dram.config.Params` (``DRAMConfig.resolve()``, a numpy record), ``state`` is :class:`State`
(:func:`new_state`). Open-loop replay (:mod:`dram.openloop`) drives the very same
:func:`offer` and :func:`tick`. Every name of the parts below is importable from here.

The parts, in reading order (docs/dram.md, "Parts of the controller"):

========================  ======================================================================
:mod:`.commands`          the commands of the standard and their ids
:mod:`.layout`            the state: one int64 array, its header and regions (``H_*``, ``SL_*``)
:mod:`.mapping`           address -> (channel, rank, bank group, bank, row, column)
:mod:`.timing`            when a command may issue (ready cycles), the constraint table's update
:mod:`.issue`             a request's next command; issuing a command (banks, counters, log)
:mod:`.scheduler`         FR-FCFS and the other schedulers: the command of this cycle
:mod:`.frontend`          offer (requests in), the completion ring (completions out)
:mod:`.controller`        one cycle of one channel; event skipping
:mod:`.power`             the power-state policy: power-down and self refresh of idle ranks
:mod:`.refresh`           idle refresh periods in closed form
:mod:`.api`               the driver functions on ``state`` (offer, tick, pop_completions, ...)
:mod:`.compiletime`       what a specialized build compiles in (``cosmos.specialize``)
========================  ======================================================================

Semantics (Ramulator 2.1 ``GenericDDR`` controller; docs/dram.md)
----------------------------------------------------------------
One controller cycle at clock ``clk`` (per channel, channels in index order):

1. Completed reads: every read at the front of the pending FIFO with depart <= clk completes
   (completion cycle = clk).
2. Refresh: at clk = k * nREFI (k >= 1) one REFab request per rank enters the priority buffer.
3. Scheduling, at most one command per channel per cycle:
   a. active buffer (requests whose ACT issued): the FR-FCFS best, if timing-ready;
   b. else the priority-buffer head (PREab until the rank is closed, then REFab), if ready
      and it does not close a bank that an active request needs;
   c. else, only if the priority buffer is empty: update write mode (enter when the write
      buffer reaches the high watermark or no read waits; leave below the low watermark when
      reads wait), then the FR-FCFS best eligible request of the read or write buffer, if
      ready. Eligible = its next command does not close a bank held by an active request.
   d. else, with the power-state policy (off by default), a rank idle for its timeout is
      powered down (PREab, PDE) or put in self refresh (PDX, SRE) (:mod:`.power`).
   FR-FCFS: timing-ready first, then oldest acceptance cycle, then buffer order.
4. Issue: row hit/miss/conflict counted at a request's first command (bank state before it);
   the constraint table updates the timing state; ACT moves the request to the active buffer;
   the final RD completes at issue + nCL + nBL; the final WR completes at its issue.

Idle cycles cost nothing: each channel keeps ``wake``, the earliest cycle at which its
decision can change (a not-ready command becomes ready), and :func:`tick` skips it before then;
:func:`next_event` tells a driver the next cycle at which anything can happen. Idle refresh
periods cost nothing either: :func:`advance_channel` takes a channel through an idle stretch
of any length, applying its refresh periods in closed form (the state stepping would give).
"""

from __future__ import annotations

from .commands import (ACT, CMD_ID, COMMAND_NAMES, FINAL_SLOT, FINALS, N_CMDS, N_FINALS,
                       PREab, PREpb, PREsb, RD, REFab, REFsb, WR)
from .layout import (INF, _u, _wrap, H_G, H_S, H_NN, H_NC, H_HM, H_PQ, H_PD, H_CAP, H_LOGCAP, H_NB,
                     H_R, H_NSTAT, H_DIRECT, H_O_SLOT, H_O_Q, H_O_CH, H_O_PRIO, H_O_PEND, H_O_BANK,
                     H_O_READY, H_O_HIST, H_O_COMP, H_O_GLOB, H_O_STATS, H_O_RBUSY, H_O_LOG,
                     H_O_BKL, H_O_RACT, HEADER, SL_ID, SL_ADDR, SL_RANK, SL_FB, SL_ROW, SL_ARR,
                     SL_TYPE, SL_FINAL, SL_STAT, SL_RKO, SL_BGO, SL_BKO, SL_NC, SL_L, SL_LNEXT,
                     SL_LPREV, NSL, Q_RD, Q_WR, Q_ACT, Q_FREE, C_PQH, C_PQL, C_PDH, C_PDL, C_WMODE,
                     C_WAKE, C_NREF, C_NA, C_OFFSTAMP, C_LASTTICK, C_EPOCH, C_MCLK, C_MQ, C_MPOS,
                     C_MCMD, C_MEPOCH, D_NONE, D_REFRESHED, NCHF, G_CHEAD, G_CLEN, G_COVF,
                     G_CHANGES, G_LOGLEN, S_RD_HIT, S_RD_MISS, S_RD_CONF, S_WR_HIT, S_WR_MISS,
                     S_WR_CONF, S_READS, S_WRITES, S_REFRESH, S_FORWARDED, S_COALESCED, S_BUS_BUSY,
                     S_CMD0, N_STATS, STAT_NAMES, T_READ, T_WRITE, RA_OPEN, RA_SINCE, RA_CYCLES,
                     RA_BANKCYC, RA_LAST, RA_PS, RA_PS_SINCE, RA_PD_CYC, RA_SR_CYC, RA_LASTCMD,
                     RA_LASTREQ, RA_NREQ, RA_HOLD, RA_ENDED, PS_UP, PS_PD, PS_SR, NRA, LOG_CLK, LOG_CH, LOG_CMD, LOG_RANK, LOG_BG,
                     LOG_BANK, LOG_ROW, State, new_state, views)
from .mapping import (map_address, map_channels, map_all)
from .timing import (ready_time, update_timing)
from .issue import (preq_command, issue_command, power_preq)
from .frontend import (_offer, _offer_mapped, _pop)
from .controller import (_channel_tick, _tick, _channel_next_event, _next_event)
from .refresh import (jump_scratch, advance_channel)
from .api import (offer, pop_completions, completions_pending, tick, next_event, changes,
                  ticks_until)

# every command's id under its name (``K.RDA``, ``K.WRA_L``, ...), for drivers and tests
globals().update(CMD_ID)
