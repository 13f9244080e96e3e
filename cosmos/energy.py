"""Energy of a simulated run: joules per query and average power, by component.

Every resource the engine models is charged from what the run counted:

* DRAM (every memory instance: the devices' DRAM, or host DRAM, and a host graph cache):
  :func:`dram.energy.energy_stats` of each controller state over the simulated time, split into
  ``dram_array`` (activation, precharge, array reads and writes -- rank-local PU bursts
  included -- and refresh), ``dram_background`` (active / precharged standby) and ``dram_io``
  (bursts over the channels' data buses).
* ``link_switch``: wire bytes on every CXL link (``EngineState.link_bytes``, payload plus flit
  overhead, both directions, device links and the switch's upstream port) x 8 x
  ``link_pJ_per_bit``, plus the bytes through the switch (those on the device links) x 8 x
  ``switch_pJ_per_bit``.
* ``host``: context-holding cycles of the host cores (pool 0: a core holds its context while
  it computes and while it stalls on memory) x ``host_core_active_W``.
* ``gpc``: context-holding cycles on the devices' GPC pools / ``gpc.threads_per_core`` (the
  core-busy time) x ``gpc_core_active_W``.
* ``switch_core``: context-holding cycles on the CXL switch's core pool /
  ``switch_core.threads_per_core`` x ``switch_core_active_W`` (searches in the switch).
* ``pu_accel``: rank-local bursts (``EngineState.inst_local``: each a 64-B segment the rank PU
  reduces to a partial distance) x ``rank_pu_pJ_per_burst``; for systems whose device
  accelerator computes distances from the channel (a ``Read`` on unit ``accelerator`` without
  rank PUs, or on a near-memory ``scan-unit``: its decoding or dot-product pipeline, charged
  as the same distance unit per line), the device's non-local DRAM requests x
  ``accel_pJ_per_line`` (an upper bound: it charges adjacency lines as well as vector lines).
* ``static``: ``host_static_W`` for the host, plus ``device_static_W`` per CXL device, over the
  simulated time.

Energy per query = total / queries simulated; average power = total / simulated time. The
constants are the system configuration's ``energy`` section (:class:`cosmos.config.EnergyConfig`,
settable like any field: ``--set energy.link_pJ_per_bit=3``); they are estimates (none of them
is a measurement of the paper's hardware), each with its reasoning in ``cosmos.config.SOURCE``.
"""

from __future__ import annotations

import numpy as np

from cosmos.config import TCK_PS, EnergyConfig  # noqa: F401  (EnergyConfig: re-exported)
from cosmos.program import switch_pool
from cosmos.systems import Read, model_for
from cosmos.units import unit
from dram.energy import energy_stats

#: Reported components, in order.
COMPONENTS = ("dram_array", "dram_background", "dram_io", "link_switch", "host", "gpc",
              "switch_core", "pu_accel", "static")


def energy_J(res, ecfg: EnergyConfig | None = None) -> dict:
    """Energy of the whole run in joules by component (:data:`COMPONENTS`), from a
    :class:`cosmos.simulate.SimResult` (its ``dram_config``: the DRAM configuration of one
    memory instance). Empty if the DRAM has no power preset."""
    cfg, st, pg = res.config, res.state, res.program
    ecfg = ecfg or cfg.energy
    model = model_for(cfg)
    cycles = max(int(res.cycles), 1)
    seconds = cycles * TCK_PS * 1e-12
    dcfg = res.dram_config
    out = dict.fromkeys(COMPONENTS, 0.0)
    for state in res.dram_state:
        d = energy_stats(dcfg, state, cycles)
        if not d:
            return {}
        out["dram_array"] += sum(d[f"energy_{c}_nJ"] for c in
                                 ("act", "pre", "read", "write", "refresh")) * 1e-9
        out["dram_background"] += (d["energy_background_active_nJ"]
                                   + d["energy_background_precharged_nJ"]) * 1e-9
        out["dram_io"] += d["energy_io_nJ"] * 1e-9
    D = cfg.device.count
    if model.uses_link:
        wire_bits = float(st.link_bytes.sum()) * 8
        switched_bits = float(st.link_bytes[:D].sum()) * 8
        out["link_switch"] = (wire_bits * ecfg.link_pJ_per_bit
                              + switched_bits * ecfg.switch_pJ_per_bit) * 1e-12
    held = np.where(st.task_end >= 0, st.task_end - st.task_start, 0).astype(np.float64)
    s_per_cycle = TCK_PS * 1e-12
    out["host"] = float(held[pg.task_pool == 0].sum()) * s_per_cycle * ecfg.host_core_active_W
    if model.search_location == "device":
        gpc = (pg.task_pool >= 1) & (pg.task_pool <= D)
        out["gpc"] = (float(held[gpc].sum()) / cfg.gpc.threads_per_core * s_per_cycle
                      * ecfg.gpc_core_active_W)
    if model.search_location == "switch":
        sw = pg.task_pool == switch_pool(D)
        out["switch_core"] = (float(held[sw].sum()) / cfg.switch_core.threads_per_core
                              * s_per_cycle * ecfg.switch_core_active_W)
    local = float(st.inst_local.sum())
    out["pu_accel"] = local * ecfg.rank_pu_pJ_per_burst * 1e-12
    if _accelerator_from_channel(model):
        out["pu_accel"] += (float(st.inst_reqs[:D].sum()) - float(st.inst_local[:D].sum())) \
            * ecfg.accel_pJ_per_line * 1e-12
    out["static"] = (ecfg.host_static_W + (D * ecfg.device_static_W if model.uses_link
                                           else 0.0)) * seconds
    return out


def _accelerator_from_channel(model) -> bool:
    """Some read is on a unit charged per line it reads over the channel (cosmos.units:
    ``energy="per-line"``, without the rank PUs)."""
    return any(isinstance(s, Read) and unit(s.unit).energy == "per-line" and not s.rank_pus
               for _, _, s in model.steps())


def summary_fields(res, ecfg: EnergyConfig | None = None) -> dict:
    """``energy_per_query_mJ``, ``power_avg_W``, ``energy_breakdown_mJ_per_query`` (by
    component) and ``qps_per_W`` (queries over the simulated time / power_avg_W) of a run; empty
    if the DRAM has no power preset."""
    e = energy_J(res, ecfg)
    if not e:
        return {}
    Q = res.queries     # the queries simulated (a run stopped by ci_target: its first Q)
    seconds = max(int(res.cycles), 1) * TCK_PS * 1e-12
    total = sum(e.values())
    power = total / seconds
    return {
        "energy_per_query_mJ": total / Q * 1e3,
        "power_avg_W": power,
        "energy_breakdown_mJ_per_query": {c: v / Q * 1e3 for c, v in e.items()},
        "qps_per_W": (Q / seconds) / power if power > 0 else float("nan"),
    }
