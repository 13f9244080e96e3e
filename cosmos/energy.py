"""Energy of a simulated run: joules per query and average power, by component.

Every resource the engine models is charged from what the run counted:

* DRAM (every memory instance: the devices' DRAM, or host DRAM, and a host graph cache):
  :func:`dram.energy.energy_stats` of each controller state over the simulated time, split into
  ``dram_array`` (activation, precharge, array reads and writes -- rank-local PU bursts
  included -- and refresh), ``dram_background`` (active / precharged standby, and power-down
  and self refresh with the DRAM's power-state policy) and ``dram_io``
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
Energy is linear in each of them: :func:`activity` gives what each multiplies, the summary
carries it per query (``energy_slope_mJ_per_query``), and :data:`CONSTANT_RANGES` bounds each
for the tornado of the energy_per_query experiment, which says which energy conclusions hold
whatever their values within those ranges.
"""

from __future__ import annotations

import numpy as np

from cosmos.config import TCK_PS, EnergyConfig  # noqa: F401  (EnergyConfig: re-exported)
from cosmos.program import switch_pool
from cosmos.systems import Read, model_for
from cosmos.units import unit
from dram.energy import COMPONENTS as DRAM_COMPONENTS
from dram.energy import energy_stats

#: dram.energy's components charged to ``dram_array``: the commands' own energy
DRAM_ARRAY = ("act", "pre", "read", "write", "refresh")

#: Reported components, in order.
COMPONENTS = ("dram_array", "dram_background", "dram_io", "link_switch", "host", "gpc",
              "switch_core", "pu_accel", "static")


def energy_J(res, ecfg: EnergyConfig | None = None, act: dict | None = None) -> dict:
    """Energy of the whole run in joules by component (:data:`COMPONENTS`), from a
    :class:`cosmos.simulate.SimResult` (its ``dram_config``: the DRAM configuration of one
    memory instance). Empty if the DRAM has no power preset. ``act``: the run's
    :func:`activity`, if the caller has it already."""
    ecfg = ecfg or res.config.energy
    cycles = max(int(res.cycles), 1)
    dcfg = res.dram_config
    out = dict.fromkeys(COMPONENTS, 0.0)
    for state in res.dram_state:
        d = energy_stats(dcfg, state, cycles)
        if not d:
            return {}
        out["dram_array"] += sum(d[f"energy_{c}_nJ"] for c in DRAM_ARRAY) * 1e-9
        # standby, power-down and self refresh (the last two 0 unless the DRAM's power-state
        # policy is on): every dram.energy component but the commands' and the bus's
        out["dram_background"] += sum(d[f"energy_{c}_nJ"] for c in DRAM_COMPONENTS
                                      if c not in DRAM_ARRAY + ("io",)) * 1e-9
        out["dram_io"] += d["energy_io_nJ"] * 1e-9
    act = activity(res) if act is None else act
    for const, per_unit in act.items():     # every other component: constant x activity
        component = CONSTANT_COMPONENT[const]
        out[component] += getattr(ecfg, const) * per_unit
    return out


#: Each energy constant (:class:`EnergyConfig` field) -> the component it charges.
CONSTANT_COMPONENT = {"link_pJ_per_bit": "link_switch", "switch_pJ_per_bit": "link_switch",
                      "host_core_active_W": "host", "gpc_core_active_W": "gpc",
                      "switch_core_active_W": "switch_core", "rank_pu_pJ_per_burst": "pu_accel",
                      "accel_pJ_per_line": "pu_accel", "host_static_W": "static",
                      "device_static_W": "static"}


def activity(res) -> dict:
    """What each energy constant multiplies in a run: joules per unit of the constant
    (``link_pJ_per_bit``: wire bits x 1e-12; ``host_core_active_W``: busy host-core seconds;
    ...), so that a component's energy is the sum of constant x activity over its constants
    (:data:`CONSTANT_COMPONENT`). Energy is linear in every constant, so these are also its
    exact derivatives: what :func:`energy_J` gives with other constants, without simulating
    again."""
    cfg, st, pg = res.config, res.state, res.program
    model = model_for(cfg)
    seconds = max(int(res.cycles), 1) * TCK_PS * 1e-12
    s_per_cycle = TCK_PS * 1e-12
    D = cfg.device.count
    act = dict.fromkeys(CONSTANT_COMPONENT, 0.0)
    if model.uses_link:
        act["link_pJ_per_bit"] = float(st.link_bytes.sum()) * 8 * 1e-12
        act["switch_pJ_per_bit"] = float(st.link_bytes[:D].sum()) * 8 * 1e-12
    held = np.where(st.task_end >= 0, st.task_end - st.task_start, 0).astype(np.float64)
    act["host_core_active_W"] = float(held[pg.task_pool == 0].sum()) * s_per_cycle
    if model.search_location == "device":
        gpc = (pg.task_pool >= 1) & (pg.task_pool <= D)
        act["gpc_core_active_W"] = (float(held[gpc].sum()) / cfg.gpc.threads_per_core
                                    * s_per_cycle)
    if model.search_location == "switch":
        sw = pg.task_pool == switch_pool(D)
        act["switch_core_active_W"] = (float(held[sw].sum()) / cfg.switch_core.threads_per_core
                                       * s_per_cycle)
    act["rank_pu_pJ_per_burst"] = float(st.inst_local.sum()) * 1e-12
    if _accelerator_from_channel(model):
        act["accel_pJ_per_line"] = (float(st.inst_reqs[:D].sum())
                                    - float(st.inst_local[:D].sum())) * 1e-12
    act["host_static_W"] = seconds
    act["device_static_W"] = D * seconds if model.uses_link else 0.0
    return act


def _accelerator_from_channel(model) -> bool:
    """Some read is on a unit charged per line it reads over the channel (cosmos.units:
    ``energy="per-line"``, without the rank PUs)."""
    return any(isinstance(s, Read) and unit(s.unit).energy == "per-line" and not s.rank_pus
               for _, _, s in model.steps())


#: The range of each energy constant within which the energy conclusions are tested
#: (:func:`extremes`; the energy_per_query experiment's tornado): low and high, each an
#: estimate around the default's own reasoning (cosmos.config.SOURCE).
CONSTANT_RANGES = {
    # published 32 Gb/s NRZ SerDes: about 4-7 pJ/bit both ends; 2 for a short-reach link, 10
    # for retimers or a PAM4 64 GT/s link
    "link_pJ_per_bit": (2.0, 10.0),
    # a PCIe 5.0 switch of about 10 pJ/bit whole, half in its PHYs: from a quarter to the whole
    "switch_pJ_per_bit": (2.5, 10.0),
    # a Xeon-class core from half to twice the 5 W share of its socket's TDP
    "host_core_active_W": (2.5, 10.0),
    # the socket's idle power from a fifth to three quarters of a 270 W TDP
    "host_static_W": (50.0, 200.0),
    # Arm's 1.0-1.8 W per Neoverse N1 core at 2.6-3.1 GHz; half a watt at a lower clock
    "gpc_core_active_W": (0.5, 1.8),
    "switch_core_active_W": (0.5, 1.8),
    # the 45 nm multiply-adds (74 pJ) in a 3x better or a 3x worse process and control
    "rank_pu_pJ_per_burst": (33.0, 300.0),
    "accel_pJ_per_line": (10.0, 100.0),
    # a CXL expander's 10-25 W, less its DRAM: 2 to 15 W
    "device_static_W": (2.0, 15.0),
}


def extremes():
    """Every vertex of the box :data:`CONSTANT_RANGES` (2^9 dicts of constant -> value): a
    ratio of two systems' energies, linear in the constants above and below, is most and
    least favorable at vertices."""
    names = list(CONSTANT_RANGES)
    for bits in range(1 << len(names)):
        yield {n: CONSTANT_RANGES[n][(bits >> i) & 1] for i, n in enumerate(names)}


def summary_fields(res, ecfg: EnergyConfig | None = None) -> dict:
    """``energy_per_query_mJ``, ``power_avg_W``, ``energy_breakdown_mJ_per_query`` (by
    component) and ``qps_per_W`` (queries over the simulated time / power_avg_W) of a run; empty
    if the DRAM has no power preset."""
    act = activity(res)
    e = energy_J(res, ecfg, act)
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
        # mJ per query per unit of each constant: energy_per_query_mJ at other constants is
        # this run's plus sum((new - old) x slope) (energy is linear in them; activity())
        "energy_slope_mJ_per_query": {c: a / Q * 1e3 for c, a in act.items()},
    }
