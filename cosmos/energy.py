"""Energy of a simulated run: joules per query and average power, by component.

Every resource the engine models is charged from what the run counted:

* DRAM (every memory instance: the devices' DRAM, or host DRAM, and a host graph cache):
  :func:`dram.energy.energy_stats` of each controller state over the simulated time, split into
  ``dram_array`` (activation, precharge, array reads and writes -- rank-local PU bursts
  included), ``dram_background`` (active / precharged standby, refresh -- it runs every tREFI
  whatever the traffic, so it goes with the time-proportional background, issue 51 -- and
  power-down and self refresh with the DRAM's power-state policy) and ``dram_io`` (bursts over
  the channels' data buses).
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

Over which stretch of the run (issue 51). QPS is taken over the steady-state window
(cosmos.window.steady_window: the warm-up and the drain, the first and last ``warmup`` fraction
of completions, left out); energy per query is taken over the same window
(:func:`window_energy_J`), so the two describe the same stretch of the run:

* time-proportional energy over the window's duration ``hi - lo``: static power, DRAM
  background (standby, refresh, power-down: the run's average DRAM background power x the
  window's length -- an approximation: the bank-open share of the background follows the
  traffic, a little lower in fill and drain), and the host, GPC and switch cores' busy time
  *inside* the window (each task's context-holding interval clipped to it: exact);
* activity-proportional energy (DRAM commands and channel I/O, link and switch bytes, rank-PU
  bursts and accelerator lines) over the queries completed in the window: the engine counts
  these for the whole run only (its window is known only after the run, so nothing is
  snapshotted at its start), so the window's share of each is its queries' share of the run's
  64-B DRAM requests (known per query from the program: each query's DRAM requests are what
  its commands, bursts and -- for host searches -- link lines are made of). An approximation
  for the link bytes of a search run near memory (messages per query, not per request) and
  for ACT/PRE (row hits vary with what runs alongside); equal to the run's mean per query when
  the window's queries are average ones.

Energy per query (the headline ``energy_per_query_mJ``) = the window's energy / the queries
completed in it, average power = the window's energy / its duration, ``qps_per_W`` = queries
per joule = ``qps_window`` / that power. Without a steady state (``steady_state`` false: the
window holds fewer completions than contexts) the headline falls back to the whole run, as
``qps`` does (``energy_over`` says which). The whole run's figures stay beside them:
``energy_per_query_run_mJ``, ``power_avg_run_W``, ``energy_breakdown_run_mJ_per_query``,
``qps_per_W_run``, ``energy_slope_run_mJ_per_query`` (all queries / the whole simulated time,
warm-up and drain included: what the headline was before issue 51).

Equal capacity (issue 51): DRAM-only keeps the data in host DRAM, 16 subchannels x 1 rank
(``host.dram_channels``, ``host.dram_ranks``: a quarter of the CXL systems' 4 devices x 8
subchannels x 2 ranks = 64). Its DRAM background is therefore that of a quarter of the
capacity. :func:`equal_capacity` gives its background at the CXL systems' rank count: the
per-rank floor (precharged standby, refresh and the banks it holds open, power-down) times the
rank ratio, plus the part that follows the accesses (the open-bank and rank-active increments
over precharged standby) unchanged -- the same accesses spread over more ranks open as many
banks for as long. Its timing is the simulated DRAM-only run's: the extra ranks' effect on
performance (more ranks to interleave over; two DIMMs per channel, which platforms may run at
a lower transfer rate) is not simulated. The summary of a host-DRAM system carries it in
``equal_capacity`` (flattened: ``equal_capacity_*``) and the energy_per_query experiment
shows it as the row ``dram-only-equal-capacity``.

The constants are the system configuration's ``energy`` section
(:class:`cosmos.config.EnergyConfig`, settable like any field: ``--set
energy.link_pJ_per_bit=3``); they are estimates (none of them is a measurement of the paper's
hardware), each with its reasoning in ``cosmos.config.SOURCE``. Energy is linear in each of
them: :func:`activity` (:func:`window_activity` over the window) gives what each multiplies,
the summary carries it per query (``energy_slope_mJ_per_query``), and
:data:`CONSTANT_RANGES` bounds each for the tornado of the energy_per_query experiment, which
says which energy conclusions hold whatever their values within those ranges.
"""

from __future__ import annotations

import numpy as np

from cosmos.config import TCK_PS, EnergyConfig  # noqa: F401  (EnergyConfig: re-exported)
from cosmos.program import switch_pool
from cosmos.systems import Read, model_for
from cosmos.units import unit
from cosmos.window import steady_window
from dram.energy import COMPONENTS as DRAM_COMPONENTS
from dram.energy import bank_open_cycles, device_energies_pJ, energy_stats, rank_active_cycles
from dram.standards import ddr5, ddr5_power

#: dram.energy's components charged to ``dram_array``: the access commands' own energy
#: (refresh is time-proportional: ``dram_background``)
DRAM_ARRAY = ("act", "pre", "read", "write")

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
        # standby, refresh, power-down and self refresh (the last two 0 unless the DRAM's
        # power-state policy is on): every dram.energy component but the accesses' and bus's
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
    cfg, st = res.config, res.state
    model = model_for(cfg)
    seconds = max(int(res.cycles), 1) * TCK_PS * 1e-12
    D = cfg.device.count
    act = dict.fromkeys(CONSTANT_COMPONENT, 0.0)
    if model.uses_link:
        act["link_pJ_per_bit"] = float(st.link_bytes.sum()) * 8 * 1e-12
        act["switch_pJ_per_bit"] = float(st.link_bytes[:D].sum()) * 8 * 1e-12
    held = np.where(st.task_end >= 0, st.task_end - st.task_start, 0).astype(np.float64)
    _time_activity(act, res, model, held, seconds)
    act["rank_pu_pJ_per_burst"] = float(st.inst_local.sum()) * 1e-12
    if _accelerator_from_channel(model):
        act["accel_pJ_per_line"] = (float(st.inst_reqs[:D].sum())
                                    - float(st.inst_local[:D].sum())) * 1e-12
    return act


def _time_activity(act: dict, res, model, held, seconds: float) -> None:
    """The time-proportional entries of an activity (:func:`activity`, :func:`window_activity`):
    busy core seconds from ``held`` (cycles each task held its context), per place the search
    runs (a core's threads share its power), and ``seconds`` of static power."""
    cfg, pg = res.config, res.program
    s_per_cycle = TCK_PS * 1e-12
    D = cfg.device.count
    act["host_core_active_W"] = float(held[pg.task_pool == 0].sum()) * s_per_cycle
    if model.search_location == "device":
        gpc = (pg.task_pool >= 1) & (pg.task_pool <= D)
        act["gpc_core_active_W"] = (float(held[gpc].sum()) / cfg.gpc.threads_per_core
                                    * s_per_cycle)
    if model.search_location == "switch":
        sw = pg.task_pool == switch_pool(D)
        act["switch_core_active_W"] = (float(held[sw].sum()) / cfg.switch_core.threads_per_core
                                       * s_per_cycle)
    act["host_static_W"] = seconds
    act["device_static_W"] = D * seconds if model.uses_link else 0.0


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


def held_in_window(task_start, task_end, lo: int, hi: int) -> np.ndarray:
    """Cycles of each task's context-holding interval [start, end) inside the window
    [lo, hi) (0 for a task that never ran, ``task_end`` < 0), float64."""
    start = np.asarray(task_start, dtype=np.int64)
    end = np.asarray(task_end, dtype=np.int64)
    inside = np.minimum(end, hi) - np.maximum(start, lo)
    return np.where((end >= 0) & (inside > 0), inside, 0).astype(np.float64)


def request_share(res, mask) -> float:
    """The share of the run's 64-B DRAM requests made by the queries ``mask`` selects (of the
    first ``res.queries``): what the window's queries are charged of the run's
    activity-proportional energy (module docstring). Without DRAM requests: their share of
    the queries."""
    mask = np.asarray(mask, dtype=bool)
    req = res.program.requests_per_query()[:res.queries].astype(np.float64)
    total = float(req.sum())
    if total > 0:
        return float(req[mask].sum()) / total
    return float(mask.sum()) / max(int(res.queries), 1)


def window_activity(res, lo: int, hi: int, mask, act: dict | None = None) -> dict:
    """:func:`activity` over the steady-state window [lo, hi) (cycles) and its queries
    ``mask``: static power over the window's duration, cores' busy time clipped to it
    (:func:`held_in_window`), link, switch, rank-PU and accelerator activity x the window's
    queries' :func:`request_share`. Linear in every constant, as :func:`activity`."""
    st = res.state
    act = activity(res) if act is None else act
    share = request_share(res, mask)
    out = dict.fromkeys(CONSTANT_COMPONENT, 0.0)
    for c in ("link_pJ_per_bit", "switch_pJ_per_bit", "rank_pu_pJ_per_burst",
              "accel_pJ_per_line"):
        out[c] = act[c] * share
    _time_activity(out, res, model_for(res.config),
                   held_in_window(st.task_start, st.task_end, lo, hi),
                   max(int(hi) - int(lo), 0) * TCK_PS * 1e-12)
    return out


def window_energy_J(res, lo: int, hi: int, mask, ecfg: EnergyConfig | None = None,
                    run: dict | None = None, act_window: dict | None = None) -> dict:
    """Energy in joules by component (:data:`COMPONENTS`) of the steady-state window
    [lo, hi) (cycles) and the queries ``mask`` completed in it (module docstring): DRAM
    background x the window's share of the simulated time, DRAM array and I/O x the window's
    queries' :func:`request_share`, every other component constant x
    :func:`window_activity`. ``run``: the whole run's :func:`energy_J`, if the caller has it.
    Empty if the DRAM has no power preset."""
    ecfg = ecfg or res.config.energy
    run = energy_J(res, ecfg) if run is None else run
    if not run:
        return {}
    act_w = window_activity(res, lo, hi, mask) if act_window is None else act_window
    out = dict.fromkeys(COMPONENTS, 0.0)
    out["dram_background"] = run["dram_background"] * (max(int(hi) - int(lo), 0)
                                                       / max(int(res.cycles), 1))
    share = request_share(res, mask)
    out["dram_array"] = run["dram_array"] * share
    out["dram_io"] = run["dram_io"] * share
    for const, per_unit in act_w.items():
        out[CONSTANT_COMPONENT[const]] += getattr(ecfg, const) * per_unit
    return out


def rank_counts(res) -> tuple[int, int]:
    """(ranks simulated, ranks of the CXL systems): the ranks of every memory instance of the
    run (its controller states' ranks, summed), and ``device.count`` x ``device.channels`` x
    ``device.ranks`` of its configuration (4 x 8 x 2 = 64 by default: cosmos.config.SOURCE,
    ``device.*``) -- the capacity every CXL system holds the index in."""
    sim = sum(int(np.asarray(rank_active_cycles(st, 0)).size) for st in res.dram_state)
    dev = res.config.device
    return sim, int(dev.count) * int(dev.channels) * int(dev.ranks)


def access_background_J(res) -> float:
    """The part of the run's DRAM background that follows the accesses, in joules: what a
    rank draws over precharged standby while it has a bank open (I_rho - IDD2N over its
    rank-active cycles) and each open bank's own increment (I_1 - I_rho over the banks' open
    cycles), refresh's open banks not included (dram.energy's split: ``rank_active_cycles``
    and ``bank_open_cycles`` count the accesses' opening only). The rest of the background
    (IDD2N standby, refresh and the banks it holds open, power-down) is the ranks' floor,
    whatever the traffic."""
    dcfg = res.dram_config
    power = ddr5_power.power_preset(dcfg.standard, dcfg.org)   # energy_stats' default
    if power is None:
        return 0.0
    org = ddr5.ORG_PRESETS[dcfg.org]
    chips = 32 // int(org["dq"])
    e = device_energies_pJ(power, dcfg.timing, int(org["bankgroups"]) * int(org["banks"]),
                           int(org["bankgroups"]))
    tck_ns = dcfg.timing["tCK_ps"] / 1000.0
    T = max(int(res.cycles), 1)
    pJ = 0.0
    for st in res.dram_state:
        pJ += chips * tck_ns * ((e["P_shared_mW"] - e["P_pre_mW"])
                                * float(rank_active_cycles(st, T).sum())
                                + e["P_bank_mW"] * float(bank_open_cycles(st, T).sum()))
    return pJ * 1e-12


def equal_capacity(res, run: dict | None = None) -> dict:
    """DRAM background at equal capacity (module docstring), for a run whose data is in host
    DRAM: ``ranks`` (the CXL systems'), ``ranks_simulated``, ``dram_background_factor`` (the
    equal-capacity background / the run's: floor x ranks / ranks_simulated + the accesses'
    part, over floor + accesses' part; the window's background scales by the same factor, as
    it is the run's x the window's share of time). Empty for a system on CXL memory or
    without a power preset."""
    if model_for(res.config).uses_link:
        return {}
    run = energy_J(res) if run is None else run
    if not run:
        return {}
    sim, cxl = rank_counts(res)
    bg = run["dram_background"]
    access = min(access_background_J(res), bg)
    floor = bg - access
    equal = floor * cxl / sim + access
    return {"ranks": cxl, "ranks_simulated": sim,
            "dram_background_factor": equal / bg if bg > 0 else float("nan")}


def summary_fields(res, ecfg: EnergyConfig | None = None, window=None,
                   steady: bool | None = None) -> dict:
    """Energy fields of a run's summary; empty if the DRAM has no power preset.

    Headline, over the steady-state window (module docstring; the whole run without a steady
    state, ``energy_over`` says which): ``energy_per_query_mJ``, ``power_avg_W``,
    ``energy_breakdown_mJ_per_query`` (by component), ``qps_per_W`` (queries per joule) and
    ``energy_slope_mJ_per_query`` (mJ per query per unit of each constant: energy per query
    at other constants is this plus sum((new - old) x slope)); ``energy_window_ns`` and
    ``energy_window_queries`` (the window: the same bounds and completions as ``qps_window``).
    The whole run's: the same names with ``_run`` (``energy_per_query_run_mJ``, ...).
    ``equal_capacity``: for a run on host DRAM, :func:`equal_capacity`'s ``ranks``,
    ``ranks_simulated`` and ``dram_background_factor``, and ``energy_per_query_mJ`` /
    ``energy_per_query_run_mJ`` with the background at that capacity; empty otherwise.

    ``window``: (lo, hi, mask) of cosmos.window.steady_window as the summary took it, and
    ``steady`` its ``steady_state``; by default the window of the default warm-up (0.1) and
    a steady state if it holds at least ``min(max_inflight, queries)`` completions."""
    act = activity(res)
    e = energy_J(res, ecfg, act)
    if not e:
        return {}
    Q = res.queries     # the queries simulated (a run stopped by ci_target: its first Q)
    seconds = max(int(res.cycles), 1) * TCK_PS * 1e-12
    if window is None:
        window = steady_window(res.state.q_done[:Q], 0.1, getattr(res, "ci_until_cycle", None))
    lo, hi, mask = window
    n_win = int(np.asarray(mask).sum())
    win_s = max(int(hi) - int(lo), 0) * TCK_PS * 1e-12
    if steady is None:
        steady = n_win >= min(int(res.max_inflight), Q)
    over_window = bool(steady and n_win > 0 and win_s > 0)

    def fields(energy, activity_, n, secs, tag):
        total = sum(energy.values())
        power = total / secs
        return {f"energy_per_query{tag}_mJ": total / n * 1e3,
                f"power_avg{tag}_W": power,
                f"energy_breakdown{tag}_mJ_per_query": {c: v / n * 1e3 for c, v in energy.items()},
                f"qps_per_W{tag}": n / total if total > 0 else float("nan"),
                f"energy_slope{tag}_mJ_per_query": {c: a / n * 1e3 for c, a in activity_.items()}}

    run = fields(e, act, Q, seconds, "_run")
    if over_window:
        act_w = window_activity(res, lo, hi, mask, act)
        head = fields(window_energy_J(res, lo, hi, mask, ecfg, e, act_w), act_w, n_win, win_s,
                      "")
    else:
        head = fields(e, act, Q, seconds, "")
    out = {**head, "energy_over": "steady window" if over_window else "whole run",
           "energy_window_ns": (int(hi) - int(lo)) * TCK_PS * 1e-3,
           "energy_window_queries": n_win, **run}
    # a run on host DRAM: its energy with the CXL systems' capacity (equal_capacity); the
    # key is always there (empty for CXL memory), so every summary has the same keys
    eq = equal_capacity(res, e)
    out["equal_capacity"] = {}
    if eq:
        f = eq["dram_background_factor"]

        def at_equal(tag):
            br = out[f"energy_breakdown{tag}_mJ_per_query"]
            return out[f"energy_per_query{tag}_mJ"] + (f - 1) * br["dram_background"]

        out["equal_capacity"] = {"ranks": eq["ranks"], "ranks_simulated": eq["ranks_simulated"],
                                 "dram_background_factor": f,
                                 "energy_per_query_mJ": at_equal(""),
                                 "energy_per_query_run_mJ": at_equal("_run")}
    return out
