"""Compute units as data: where each unit sits, what limits it, how it is charged and named.

A :class:`Unit` is one kind of compute unit that a declaration (cosmos.systems) names in a
``Read``: its *location* in the machine, the searches it can serve, the places of a query at
which it may read, the names of its in-flight limit and on-chip latency among the cost
names of the declarations (:class:`cosmos.systems.Costs`, each from a cosmos.config field
with its source), the configuration fields behind them (for messages), how the energy model
charges its work (cosmos.energy) and its label in results. A unit whose search contexts
come from the configuration (``contexts``: host cores, GPC contexts, switch cores) runs
searches: a declaration's ``traversal`` names it, and its contexts at each place are a task
pool of the engine (cosmos.program.pool_sizes; one such unit per location). The declaration
checks, the program builder, the metrics and the energy model ask this registry; none of
them branches on a unit's name.

Locations, from the host outwards: ``"host"`` (the host CPU; its reads of a device cross
the CXL path: upstream port, switch, device link), ``"switch"`` (in the CXL switch: its
cores and accelerators; their reads cross the switch and the device link),
``"device"`` (a CXL device's controller: its GPC cores, distance accelerator, scan units;
reads of its own DRAM cross no link), ``"dimm-buffer"`` (a DIMM's buffer chip), ``"rank"``
(next to each DRAM rank).

The rank-level PUs are the entry ``"rank-pu"``: a device unit drives them (``Read(...,
rank_pus=True)`` turns the unit's vector reads into rank-local segment reads), so a
declaration names the driving unit and sets ``rank_pus``; the entry says where they sit and
how they are charged, and the checks ask it where a unit that drives them must sit.
"""

from __future__ import annotations

from dataclasses import dataclass

#: where a unit can sit, from the host outwards
LOCATIONS = ("host", "switch", "device", "dimm-buffer", "rank")
#: how cosmos.energy charges a unit's work: ``"contexts"`` (the time its search contexts are
#: held: host cores x ``energy.host_core_active_W``, GPC cores x ``gpc_core_active_W``),
#: ``"per-line"`` (each 64-byte line it reads over the channel x
#: ``energy.accel_pJ_per_line``), ``"per-burst"`` (each rank-local burst x
#: ``energy.rank_pu_pJ_per_burst``)
ENERGY = ("contexts", "per-line", "per-burst")
#: where a search can run (cosmos.systems.SystemModel.traversal): the name of the unit whose
#: contexts run it: the host cores, per device its GPC contexts, or the cores in the CXL
#: switch
TRAVERSALS = ("host", "gpc", "switch-core")


@dataclass(frozen=True)
class Unit:
    """One kind of compute unit (module docstring).

    ``location``: one of :data:`LOCATIONS`. ``serves``: the traversals (:data:`TRAVERSALS`)
    whose searches it reads for. ``read_places``: the places of a query it may read at (None:
    every place that has reads). ``inflight`` / ``latency``: names of
    :class:`cosmos.systems.Costs` fields: its in-flight limit in 64-byte requests and its
    one-way on-chip latency in DRAM cycles (None for a unit another one drives).
    ``inflight_fields``: the configuration fields behind the limit. ``energy``: one of
    :data:`ENERGY`. ``label``: its name in results and messages; ``role``: what it does, for
    the message refusing a read at another place. ``driven_from``: for a unit that another
    drives (the rank PUs), the locations the driving unit may sit at. ``rank_local``: its
    reads are rank-local bursts (a DIMM buffer reads its ranks without the channel's data
    bus). ``contexts``: the configuration fields whose product is its search contexts per
    place (a unit a search runs on: host cores, GPC contexts)."""

    name: str
    location: str
    label: str
    serves: tuple = ()
    read_places: tuple | None = None
    inflight: str | None = None
    latency: str | None = None
    inflight_fields: str = ""
    energy: str = "contexts"
    role: str = ""
    driven_from: tuple = ()
    rank_local: bool = False
    contexts: tuple = ()

    def contexts_per_place(self, cfg) -> int:
        """Search contexts of this unit at each place it sits (a host, a device): the product
        of the configuration fields ``contexts`` names (``section.field``); 0 for a unit that
        runs no searches."""
        if not self.contexts:
            return 0
        n = 1
        for path in self.contexts:
            section, name = path.split(".")
            n *= int(getattr(getattr(cfg, section), name))
        return n

    def search_contexts(self, cfg) -> int:
        """Search contexts of this unit in the whole machine: per place, times
        ``device.count`` for a unit on the devices' side."""
        places = 1 if self.location in ("host", "switch") else int(cfg.device.count)
        return places * self.contexts_per_place(cfg)


#: name -> :class:`Unit`, in registration order
UNITS: dict[str, Unit] = {}


def search_unit_at(location: str) -> "Unit | None":
    """The unit at ``location`` whose contexts run searches (the host cores, the devices'
    GPC contexts, the switch's cores: the engine's task pools, cosmos.program.pool_sizes),
    or None."""
    for u in UNITS.values():
        if u.location == location and u.contexts:
            return u
    return None


def register_unit(unit: Unit) -> Unit:
    """Add ``unit`` to the registry; ValueError naming the field for an unknown location,
    energy charge or traversal, or a name already registered."""
    if not isinstance(unit, Unit) or not unit.name:
        raise ValueError(f"register_unit: expected a named Unit, got {unit!r}")
    if unit.name in UNITS:
        raise ValueError(f"register_unit: {unit.name!r} is already registered")
    if unit.location not in LOCATIONS:
        raise ValueError(f"unit {unit.name!r}: location: unknown {unit.location!r}; expected "
                         f"one of {LOCATIONS}")
    if unit.energy not in ENERGY:
        raise ValueError(f"unit {unit.name!r}: energy: unknown {unit.energy!r}; expected one "
                         f"of {ENERGY}")
    if unit.contexts and search_unit_at(unit.location) is not None:
        raise ValueError(f"unit {unit.name!r}: contexts: the {unit.location} already has a "
                         f"unit that runs searches ({search_unit_at(unit.location).name!r}); "
                         f"its task pool is that unit's")
    bad = [t for t in unit.serves if t not in TRAVERSALS]
    if bad:
        raise ValueError(f"unit {unit.name!r}: serves: unknown {bad}; expected some of "
                         f"{TRAVERSALS}")
    UNITS[unit.name] = unit
    return unit


def unit(name: str) -> Unit:
    """The registered unit ``name`` (KeyError if unknown: declarations are checked first)."""
    return UNITS[name]


# ------------------------------------------------------------------------------------------
# Routes: the segments between a place and a memory, computed from the two locations.
# ------------------------------------------------------------------------------------------

#: The segments a request or a message can cross, from the host outwards, and their bits in
#: a route mask (the engine's ``cls_route``): the host's port into the switch (queued at
#: ``switch.upstream_bandwidth_GBps``, shared by all devices), the switch itself
#: (``switch.latency_ns``) and the device's link (queued at ``link.bandwidth_GBps``, then
#: ``link.latency_ns``). A request crosses them outwards, its data inwards.
SEGMENTS = ("host-port", "switch", "device-link")
SEGMENT_BIT = {name: 1 << i for i, name in enumerate(SEGMENTS)}
#: where a memory can be: the index's devices (a device's DRAM) or the host's DRAM
MEMORY_LOCATIONS = ("device", "host")


def route(location: str, memory: str, switch: bool) -> tuple:
    """The segments between a unit at ``location`` (:data:`LOCATIONS`) and a memory at
    ``memory`` (:data:`MEMORY_LOCATIONS`), or between the two ends of a message (``location``
    the end nearer the host, ``"host"`` or ``"switch"``; ``memory`` the other, ``"switch"``
    or ``"device"``), in order from ``location`` outwards, with ``switch`` true when the
    devices sit behind a CXL switch. A device-side unit (device controller, DIMM buffer,
    rank) reads its own device's DRAM; ValueError naming both ends for a route the hardware
    does not have (a device-side unit reading host DRAM or another place, anything in a
    switch that is not configured)."""
    if location not in LOCATIONS:
        raise ValueError(f"unknown location {location!r}; expected one of {LOCATIONS}")
    if (location == "switch" or memory == "switch") and not switch:
        raise ValueError("no CXL switch is configured (switch.present = false): nothing "
                         "sits in it or is sent to it")
    if location == "host":
        if memory == "host":
            return ()
        if memory == "switch":
            return ("host-port", "switch")
        if memory == "device":
            return ("host-port", "switch", "device-link") if switch else ("device-link",)
    elif location == "switch":
        if memory == "device":
            return ("switch", "device-link")
    elif memory == "device":
        return ()       # a device-side unit reads the DRAM of its own device
    raise ValueError(f"a unit in the {location} cannot reach {memory} memory")


def route_mask(segments: tuple) -> int:
    """The bits of ``segments`` (:data:`SEGMENT_BIT`)."""
    return sum(SEGMENT_BIT[s] for s in segments)


def reading_units() -> tuple:
    """Names of the units a ``Read`` may name (those with an in-flight limit of their own)."""
    return tuple(n for n, u in UNITS.items() if u.inflight is not None)


# ------------------------------------------------------------------------------------------
# The units of the built-in systems. Their figures are cosmos.config fields (sources in
# cosmos.config.SOURCE); the Costs names below are derived from them by
# cosmos.program.costs_for.
# ------------------------------------------------------------------------------------------

register_unit(Unit(
    "host", "host", "host core", serves=("host",), inflight="host_mlp", latency="host_lat",
    inflight_fields="host.threads x host.outstanding_misses", contexts=("host.threads",)))
register_unit(Unit(
    "gpc", "device", "device GPC context", serves=("gpc",), inflight="gpc_mlp",
    latency="dev_lat",
    inflight_fields="device.count x gpc.cores x gpc.threads_per_core x "
                    "gpc.outstanding_requests", contexts=("gpc.cores", "gpc.threads_per_core")))
register_unit(Unit(
    "accelerator", "device", "device distance accelerator",
    serves=("host", "gpc", "switch-core"),
    inflight="accel_mlp", latency="dev_lat", inflight_fields="cxl_anns.accel_outstanding",
    energy="per-line"))
register_unit(Unit(
    "scan-unit", "device", "scan unit", serves=("gpc",), read_places=("scan", "rerank"),
    inflight="scan_mlp", latency="dev_lat", inflight_fields="scan_unit.outstanding_requests",
    energy="per-line", role="streams lists and re-rank vectors"))
register_unit(Unit(
    "rank-pu", "rank", "rank-level PU", energy="per-burst", driven_from=("device",)))
# A distance unit in the CXL switch (BEACON, Huangfu et al., MICRO 2022, puts near-data
# accelerators in the CXL switch of a memory pool). Its figures are estimates: it is the
# CXL-ANNS device accelerator's datapath (cxl_anns.accel_outstanding lines in flight,
# cxl_anns.accel_latency_ns after the last line) placed in the switch, with the device
# controller's on-chip latency (device.onchip_latency_ns) between it and the switch's ports;
# no figure of BEACON's is used. Its reads cross the switch and the device link, not the
# host's port (cosmos.units.route).
register_unit(Unit(
    "switch-accelerator", "switch", "switch distance accelerator", serves=("host",),
    inflight="accel_mlp", latency="dev_lat", inflight_fields="cxl_anns.accel_outstanding",
    energy="per-line"))
# General-purpose cores in the CXL switch that run whole searches (cosmos-switch): BEACON
# (Huangfu et al., MICRO 2022) puts near-data accelerators in the CXL switch; cores there are
# this simulator's estimate, with the device GPC's figures (switch_core.* in
# cosmos.config.SOURCE). Their reads of every device cross the switch and that device's
# link, never the host's port; a query's search runs on one context, like a host core's.
register_unit(Unit(
    "switch-core", "switch", "switch core context", serves=("switch-core",),
    inflight="sw_mlp", latency="sw_lat",
    inflight_fields="switch_core.cores x switch_core.threads_per_core x "
                    "switch_core.outstanding_requests",
    contexts=("switch_core.cores", "switch_core.threads_per_core")))
# A distance unit in each DIMM's buffer chip (AxDIMM: Ke et al., "Near-Memory Processing in
# Action: Accelerating Personalized Recommendation With AxDIMM", IEEE Micro 42(1), 2022,
# puts an accelerator on the DIMM's buffer, reading the DIMM's ranks in parallel). It reads
# whole vectors with rank-local bursts (the buffer's own path to each rank, not the
# channel's data bus). Its figures are estimates: the CXL-ANNS accelerator's in-flight limit
# and latency, the device controller's on-chip latency to reach it; its energy is charged
# per rank-local burst as the rank PU's (energy.rank_pu_pJ_per_burst: the same 16
# multiply-adds per 64-byte line, next to the DRAM); no figure of AxDIMM's is used.
register_unit(Unit(
    "dimm-accelerator", "dimm-buffer", "DIMM-buffer distance accelerator",
    serves=("host", "gpc"), inflight="accel_mlp", latency="dev_lat",
    inflight_fields="cxl_anns.accel_outstanding", energy="per-burst", rank_local=True))
