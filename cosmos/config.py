"""System configuration: host, CXL link and switch, CXL devices (DRAM, GPC, rank-level PUs).

Every field is a frozen-dataclass field with a ``help`` text; every default that models
hardware names its source (``SOURCE`` dict below and docs/system_model.md). A change is
``dataclasses.replace``; the named systems (the paper's six and the others) live in
:mod:`cosmos.presets`.

Time: the engine runs on one global clock, the DRAM clock (DDR5-4800, tCK = 416 ps, the
figure of the Cosmos paper's DDR5-4800 devices and of the DRAM reference runs). Latencies given here in ns and compute
costs given in cycles of the host or GPC clock are converted to DRAM cycles once, rounding
up, by :func:`ns_to_cycles` and :func:`core_cycles_to_dram`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import numbers
from dataclasses import dataclass, field

#: DRAM clock period used as the engine's global clock (DDR5-4800: 2400 MHz, 416 ps).
TCK_PS = 416

#: Where each hardware default comes from (field path -> source or stated reason).
SOURCE: dict[str, str] = {
    "link.latency_ns": "CXL adds 70-90 ns to a load over local DRAM (Pond, ASPLOS'23); 40 ns "
    "each way = 80 ns round trip for root port + device controller + flit packing",
    "link.bandwidth_GBps": "PCIe 5.0 x16: 32 GT/s x 16 lanes / 8 x 128/130 = 63 GB/s per "
    "direction (PCI-SIG); CXL 2.0 runs on the PCIe 5.0 PHY",
    "link.flit_bytes": "CXL 2.0 68-byte flit carries 64 bytes of slots (4 x 16-byte slots) plus "
    "CRC and protocol id: payload efficiency 64/68 (CXL 2.0 specification, 68B flit mode)",
    "link.slot_bytes": "CXL 2.0 68B flit: 16-byte slots (CXL 2.0 specification)",
    "link.request_slots": "an M2S read request (MemRd) fits one 16-byte slot (CXL 2.0 spec.)",
    "link.data_slots": "a 64-byte data response takes 4 data slots plus a header slot: 5 slots "
    "(CXL 2.0 spec., 68B flit: slot 0 of a flit holds the header)",
    "switch.latency_ns": "a CXL switch hop adds about 90 ns round trip (docs/design.md, modeling "
    "notes; CXL switch figures of about 90 ns per hop): 45 ns each way",
    "switch.upstream_bandwidth_GBps": "one x16 upstream port from the host root port to the "
    "switch: PCIe 5.0 x16 = 63 GB/s per direction",
    "host.threads": "Intel Xeon Gold 6430 (Sapphire Rapids, the first Xeon with CXL 1.1 memory "
    "support): 32 cores; one search per core",
    "host.clock_GHz": "Xeon Gold 6430 base clock 2.1 GHz (Intel ARK)",
    "host.outstanding_misses": "Golden Cove (Sapphire Rapids core) has 16 L1D fill buffers "
    "(Intel optimization manual / Chips and Cheese), the limit on a core's outstanding misses",
    "host.onchip_latency_ns": "local DDR5 load-to-use is 80-140 ns (CXL Consortium, Hot Chips "
    "34); with about 35-50 ns in the DRAM (nRCD + nCL + burst) this leaves about 60 ns of "
    "core-to-controller round trip: 30 ns each way",
    "host.distance_dims_per_cycle": "AVX-512: 16 fp32 lanes, one fused multiply-add per cycle "
    "sustained by load bandwidth (Intel optimization manual); uint8 data is widened first",
    "host.distance_overhead_cycles": "loop setup, horizontal reduction of the SIMD accumulator "
    "(log2(16) = 4 shuffle+add pairs) and the compare: about 20 cycles (stated estimate)",
    "host.visit_check_cycles": "one visited-set probe per neighbor (bit test in an L1/L2-"
    "resident bitmap, 4-cycle L1 hit plus branch): 5 cycles (stated estimate)",
    "host.insert_step_cycles": "a candidate-list insertion into the sorted list of L entries "
    "(graphs.search keeps it sorted, as DiskANN's NeighborPriorityQueue does) first binary-"
    "searches it: log2 L dependent compare-and-branch steps of about 1 cycle each (stated "
    "estimate); the cost per insertion is log2 L x this + the shift below, for the trace's L "
    "(meta cand_list_len): 14 cycles at our traces' L=64, 19.1 at DiskANN's L=100",
    "host.insert_shift_bytes_per_cycle": "then the list's tail moves one slot: on average L/2 "
    "8-byte entries (a float32 distance and an int32 id) copied at 32 bytes per cycle (one "
    "AVX2/AVX-512 load and store per cycle from L1, Intel optimization manual; stated "
    "estimate)",
    "host.select_cycles": "pop the next unexpanded candidate from the sorted list: about 10 "
    "cycles (stated estimate)",
    "host.merge_cycles_per_result": "merging the probes' top-k lists: one compare+copy per "
    "result, about 4 cycles (stated estimate)",
    "device.count": "Cosmos evaluates four CXL devices behind one switch (Cosmos paper; docs/design.md)",
    "device.dram": "(not a field: the DRAM standard and organization of a device are the "
    "dram.DRAMConfig defaults, DDR5-4800AN with 16Gb x4 chips; with device.channels and "
    "device.ranks) 4 DDR5-4800 DIMM channels = 8 32-bit subchannels x 2 ranks of 16Gb x4 "
    "chips = 256 GiB per device (Cosmos paper; docs/design.md, modeling notes)",
    "device.onchip_latency_ns": "device controller/GPC to its memory controller: 10 ns each way "
    "(an on-chip interconnect crossing at about 1-2 GHz, stated estimate)",
    "gpc.cores": "the paper gives no core count; 8 cores per device is a stated assumption "
    "sized so cores x threads x outstanding requests covers the device's bandwidth-latency "
    "product (153.6 GB/s x ~100 ns = 240 lines in flight)",
    "gpc.threads_per_core": "2 search contexts per core (stated assumption, as above)",
    "gpc.clock_GHz": "2.0 GHz, an Arm Neoverse-class embedded core (stated assumption)",
    "gpc.outstanding_requests": "32 outstanding 64-byte requests per context (stated assumption: "
    "a decoupled load queue as in near-memory cores; as above)",
    "gpc.distance_dims_per_cycle": "128-bit NEON: 4 fp32 lanes per cycle (Arm Neoverse, one "
    "FMA pipe assumed)",
    # Cores in the CXL switch (cosmos-switch). BEACON (Huangfu et al., MICRO 2022) puts
    # near-data accelerators in the CXL switch of a memory pool; no published CXL switch
    # offers general-purpose cores for a search, so every figure below is an estimate: the
    # device GPC's own (its sourced or reasoned per-step costs and clock, gpc.*), so that
    # cosmos-switch differs from cosmos-norank only in where its cores sit and how they
    # reach the memory.
    "switch_core.cores": "Estimate: 32 cores x 2 threads = 64 search contexts, as many as "
    "the four devices' GPCs together (device.count x gpc.cores x gpc.threads_per_core = 4 x 8 "
    "x 2), so that the comparison with cosmos-norank isolates where the contexts sit",
    "switch_core.threads_per_core": "Estimate: 2 search contexts per core, as "
    "gpc.threads_per_core",
    "switch_core.clock_GHz": "Estimate: 2.0 GHz, an Arm Neoverse-class embedded core, as "
    "gpc.clock_GHz",
    "switch_core.outstanding_requests": "Estimate: 32 outstanding 64-byte requests per "
    "context, as gpc.outstanding_requests (a decoupled load queue)",
    "switch_core.onchip_latency_ns": "Estimate: core to the switch's port logic, one on-chip "
    "interconnect crossing: 10 ns each way, as device.onchip_latency_ns; the switch's own "
    "port-to-port latency (switch.latency_ns) is added on each crossing",
    "switch_core.distance_dims_per_cycle": "Estimate: 128-bit NEON, 4 fp32 lanes per cycle, "
    "as gpc.distance_dims_per_cycle",
    "switch_core.distance_overhead_cycles": "Estimate: 20 cycles, as "
    "gpc.distance_overhead_cycles (the host's reduction-and-compare estimate)",
    "switch_core.visit_check_cycles": "Estimate: 5 cycles, as gpc.visit_check_cycles",
    "switch_core.insert_step_cycles": "Estimate: 1 cycle per binary-search step, as "
    "gpc.insert_step_cycles",
    "switch_core.insert_shift_bytes_per_cycle": "Estimate: 16 bytes per cycle (128-bit NEON "
    "load and store), as gpc.insert_shift_bytes_per_cycle",
    "switch_core.select_cycles": "Estimate: 10 cycles, as gpc.select_cycles",
    "switch_core.merge_cycles_per_result": "Estimate: 4 cycles per result (compare + copy), "
    "as host.merge_cycles_per_result: the switch core merges the probes' top-k lists itself",
    "rank_pu.segment_bytes": "rank-level PUs read their vector segments as 64-byte bursts "
    "(DDR5 BL16 on a 32-bit subchannel = 64 B; Cosmos paper)",
    "rank_pu.pipeline_latency_ns": "a multiply-accumulate pipeline next to the rank buffer: a "
    "few cycles; 5 ns (stated estimate)",
    "cxl_anns.accel_latency_ns": "CXL-ANNS device accelerator: pipelined distance unit; 10 ns "
    "per batch after the last vector arrives (stated estimate)",
    "cxl_anns.accel_outstanding": "CXL-ANNS accelerator vector fetches in flight per batch: 64 "
    "(stated assumption: enough to cover a hop's reads)",
    "host.dram_channels": "Sapphire Rapids: 8 DDR5 channels per socket (Intel ARK; DDR5-4800 on "
    "the top SKUs, 4400 on the Xeon Gold 6430 itself: we model DDR5-4800, the devices' DRAM, "
    "so DRAM-only differs from the CXL systems in where its memory is, not in its speed) = 16 "
    "32-bit subchannels",
    "host.dram_ranks": "1 rank per host DRAM subchannel (stated assumption: one DIMM per "
    "channel, single rank)",
    "link.slots_per_flit": "CXL 2.0 68B flit: 4 slots of 16 bytes plus 2 bytes of CRC and 2 of "
    "protocol id (CXL 2.0 specification, 68B flit mode)",
    "switch.present": "the paper's four devices sit behind one CXL switch (Cosmos paper; docs/design.md)",
    "device.channels": "4 DDR5 DIMM channels per device, each two independent 32-bit "
    "subchannels (JESD79-5): 8 (Cosmos paper; docs/design.md, modeling notes)",
    "device.ranks": "2 ranks per DIMM channel (Cosmos paper; docs/design.md, modeling notes)",
    "device.capacity_bytes": "8 subchannels x 2 ranks x 8 x4 chips of 16 Gb = 256 GiB per "
    "device (Cosmos paper; docs/design.md, modeling notes)",
    "gpc.distance_overhead_cycles": "loop setup, horizontal reduction of a 4-lane NEON "
    "accumulator and the compare: the host's 20-cycle estimate kept, so host and GPC differ "
    "only in clock and SIMD width (stated estimate)",
    "gpc.visit_check_cycles": "the host's per-operation estimate (host.visit_check_cycles), kept "
    "so host and GPC differ only in clock and SIMD width (stated assumption)",
    "gpc.insert_step_cycles": "the host's per-operation estimate (host.insert_step_cycles), "
    "kept so host and GPC differ only in clock and SIMD width (stated assumption)",
    "gpc.insert_shift_bytes_per_cycle": "128-bit NEON (as gpc.distance_dims_per_cycle): one "
    "16-byte load and store per cycle when moving the list's tail (stated estimate; the host "
    "moves 32)",
    "gpc.select_cycles": "the host's per-operation estimate (host.select_cycles), kept so host "
    "and GPC differ only in clock and SIMD width (stated assumption)",
    "gpc.partial_sum_cycles": "the GPC adds one rank PU's partial distance, a scalar add of a "
    "value the PU returns: 1 cycle (stated estimate)",
    "graph_cache.hops": "CXL-ANNS (Jang et al., USENIX ATC'23) caches in local DRAM the "
    "neighbors of the nodes near the entry point, which every search visits first; the paper "
    "sets the hop count from the local DRAM budget. 2 hops (stated estimate: the entry and "
    "its neighbors' lists, what every search of a cluster expands first)",
    "graph_cache.capacity_bytes": "CXL-ANNS keeps the cache within the host's local DRAM, "
    "far smaller than the index. 1 GiB (stated estimate: about 6 M adjacency lists of 3 "
    "lines, a small share of a 256+ GiB host's DRAM next to the query batch)",
    "rank_pu.enabled": "Cosmos puts a PU in each DRAM rank (Cosmos paper); the 'w/o rank PU' "
    "preset turns them off",
    "energy.link_pJ_per_bit": "Estimate: published 32 Gb/s NRZ SerDes transceivers (the "
    "PCIe 5.0 PHY CXL 2.0 runs on) report about 4-7 pJ/bit including both ends: 5",
    "energy.switch_pJ_per_bit": "Estimate: a 144-lane PCIe 5.0 switch of about 100 W switching "
    "about 9 Tb/s spends about 10 pJ/bit, about half of it in its PHYs (counted in "
    "link_pJ_per_bit): 5",
    "energy.host_core_active_W": "Estimate: Xeon Gold 6430 class, 270 W TDP and 32 cores; about "
    "60 % of the TDP shared by the cores at full load, 160 W / 32 = 5 W",
    "energy.host_static_W": "Estimate: about 40 % of the Xeon Gold 6430's 270 W TDP, typical of "
    "a server socket near idle (uncore, idle cores, I/O): 100 W",
    "energy.gpc_core_active_W": "Estimate: Arm quotes 1.0-1.8 W per Neoverse N1 core at "
    "2.6-3.1 GHz; about 1 W at the GPC's 2 GHz",
    "energy.switch_core_active_W": "Estimate: the switch's cores are the GPC's Neoverse-class "
    "cores at the same 2 GHz (switch_core.*), so the GPC's figure: about 1 W per busy core "
    "(energy.gpc_core_active_W)",
    "energy.rank_pu_pJ_per_burst": "Estimate: 16 fp32 multiply-adds and a reduction per 64-B "
    "segment, 16 x 4.6 pJ (fp32 multiply + add at 45 nm, Horowitz, ISSCC 2014) = 74 pJ, plus "
    "registers and control, in a DRAM-buffer-chip logic process: 100 pJ",
    "energy.accel_pJ_per_line": "Estimate: the rank PU's datapath in a logic process about 3x "
    "more efficient than the 45 nm figures: 30 pJ per 64-B line",
    "energy.device_static_W": "Estimate: CXL memory expanders are specified around 10-25 W in "
    "total, of which the DRAM (modeled separately) is the larger part: 5 W for the controller, "
    "CXL and DDR PHYs idling and the idle GPC",
    "host.adc_lookups_per_cycle": "an IVF-PQ scan on a core (faiss IndexIVFPQ's scalar scan) "
    "does, per code and sub-space, one lookup-table load indexed by the code byte and one add; "
    "Golden Cove has 3 load ports (Intel optimization manual), the dependent add chain and the "
    "code-byte loads share them: 2 lookups per cycle (stated estimate)",
    "host.scan_item_overhead_cycles": "per scanned code or vector: the compare with the "
    "bounded queue's worst entry (almost always rejected) and the loop: about 2 cycles (stated "
    "estimate)",
    "host.lut_add_entries_per_cycle": "faiss IndexIVFPQ with use_precomputed_table: per "
    "probed list, fvec_madd adds the list's precomputed term table (pq_m x 256 float32, "
    "nlist x 16 KiB at pq_m = 16, an array faiss keeps in the host process's memory: host "
    "DRAM, never the CXL devices) to the query's table; an AVX-512 madd does 16 entries, but "
    "the term table streams in from the memory hierarchy: at about 16 bytes per core cycle "
    "(about 34 GB/s at 2.1 GHz, a last-level-cache-resident stream on one core; a DRAM-"
    "resident one is slower) that is 4 float32 entries per cycle (stated estimate)",
    "host.stream_prefetch_lines": "Intel 64 and IA-32 Architectures Optimization Reference "
    "Manual, L2 streamer: it detects and keeps up to 32 streams (one forward and one backward "
    "per 4 KiB page), may issue two prefetches per L2 lookup and runs up to 20 lines ahead of "
    "the load request; a sequential read stream therefore keeps up to 20 lines in flight "
    "(the core's own demand misses hit those lines in flight), never fewer than "
    "host.outstanding_misses. Not modeled: a stream stops at a 4 KiB page boundary and is "
    "re-detected after two misses (an optimistic simplification for lists longer than a page)",
    "scan_unit.lut_build_macs_per_cycle": "the ChamVS flow builds the lookup tables on the "
    "device from the broadcast query: each entry is dim / pq_m multiply-adds against a sub-"
    "quantizer centroid held in the unit's SRAM; a datapath as wide as the unit's 64-byte "
    "stream does 16 float32 multiply-adds per cycle (stated estimate: the same width as "
    "scan_unit.dot_bytes_per_cycle; Chameleon gives no table-construction throughput we "
    "use)",
    "scan_unit.clock_GHz": "ChamVS's decoding pipelines run at 117-140 MHz on a Xilinx U250 "
    "(Chameleon's accelerator READMEs: 134 MHz ADC test, 117 MHz final build); the same "
    "pipeline as an ASIC block in a CXL device controller runs about 3.5x faster (Kuon and Rose, "
    "IEEE TCAD 2007: FPGA/ASIC critical-path ratio 3.0-4.8): 0.5 GHz (stated estimate)",
    "scan_unit.codes_per_cycle": "ChamVS instantiates 512 / (8 x M) ADC PEs per memory channel, "
    "each decoding one M-byte code per cycle (II=1), so a unit takes one 64-byte line per cycle "
    "(Chameleon, VLDB 2024; its ADC_PE sources): 4 codes per cycle for M = 16, the project's "
    "default pq_m (for other code sizes, 64 / pq_m keeps that design)",
    "scan_unit.lut_load_cycles": "ChamVS loads a probed list's lookup table into the PEs in "
    "256 cycles (one row of the 256-entry table per cycle) before it scans the list "
    "(Chameleon's ADC performance model: codes + 256 + pipeline depth cycles per list)",
    "scan_unit.pipeline_cycles": "ChamVS's ADC pipeline depth: 131 cycles from the last code "
    "in to the last distance in the queue (Chameleon's ADC performance model)",
    "scan_unit.outstanding_requests": "lines in flight per unit: one unit streams up to 64 "
    "bytes x 0.5 GHz = 32 GB/s, x about 100 ns of device DRAM latency = 3.2 kB = 50 lines; "
    "64 (stated estimate, as gpc.outstanding_requests)",
    "scan_unit.dot_bytes_per_cycle": "exact-pnm's dot-product unit takes the same 512-bit "
    "stream as ChamVS's decoders: one 64-byte line of vector data per cycle (stated estimate; "
    "a single-query exact scan is a GEMV, memory bound, as the VCK5000 dense-retrieval study "
    "finds for batch 1, so a unit that keeps up with its stream is what matters)",
    "scan_unit.gemm_macs_per_cycle": "exact-pnm-batch's unit is a small GEMM array: B queries "
    "x the streamed vectors, one multiply-add per element per query. 128 per cycle (stated "
    "estimate): 8 times the single-query pipeline's 16 float32 lanes (64 bytes per cycle), "
    "the size of 16 AI Engine tiles of the VCK5000's Versal VC1902 at 8 float32 MACs per "
    "cycle each (AMD AM009, AI Engine architecture manual); the VCK5000 dense-retrieval "
    "study's point is that such an array is fed by batching queries (GEMM reuse), not by "
    "the stream of one query (GEMV). A MAC is of the vectors' element type",
    "scan_unit.lut_add_entries_per_cycle": "ivfpq-pnm and ivfpq-pnm-chamvs (precomputed "
    "tables): per probed list the unit reads the list's precomputed term table (pq_m x 256 "
    "float32, kept with the lists in the device DRAM) and adds it to the query's table as "
    "its lines return; a float32 adder as wide as the unit's 64-byte stream adds one line, "
    "16 entries, per cycle (stated estimate: the width of scan_unit.dot_bytes_per_cycle and "
    "scan_unit.lut_build_macs_per_cycle; Chameleon gives no figure for it, its tables come "
    "from the host). The host's add, host.lut_add_entries_per_cycle, is 4 per cycle because "
    "its term table streams from the host's memory hierarchy at about 16 bytes per cycle",
    "scan_unit.batch_queries": "queries of exact-pnm-batch that share one read of a probed "
    "list's vectors (the B of the VCK5000 study's GEMM). 8 (stated choice, not tuned): the "
    "batch at which a float32 vector's B x dim multiply-adds at scan_unit.gemm_macs_per_cycle "
    "take as long as its bytes at the unit's stream rate scan_unit.dot_bytes_per_cycle "
    "(128 / (64 / 4) = 8): the largest batch that keeps the unit memory bound at its own "
    "stream rate (cosmos.systems.roofline_batch)",
}

#: Fields of earlier versions and what replaced them (named in the error a config or an
#: override that still uses one gets).
REPLACED = {
    "insert_cycles": "replaced by insert_step_cycles and insert_shift_bytes_per_cycle: an "
                     "insertion's cost now follows the trace's candidate-list size L "
                     "(log2 L x step + L/2 x 8 bytes / shift rate; 20 cycles was L = 100)",
}


def _replaced_hint(names) -> str:
    hints = [f"{n!r} was {REPLACED[n]}" for n in sorted(names) if n in REPLACED]
    return ("; " + "; ".join(hints)) if hints else ""


#: Fields that choose a system or a policy rather than model hardware (no source needed).
NOT_HARDWARE = ("name", "kind", "placement", "layout_spread")


def _f(default, help_text):
    return field(default=default, metadata={"help": help_text})


def ns_to_cycles(t_ns: float, tck_ps: int = TCK_PS) -> int:
    """A time in ns as a whole number of DRAM cycles, rounded up (0 stays 0)."""
    if t_ns < 0:
        raise ValueError(f"time must be >= 0 ns, got {t_ns}")
    return int(math.ceil(t_ns * 1000.0 / tck_ps - 1e-9))


def core_cycles_to_dram(n_cycles: float, clock_GHz: float, tck_ps: int = TCK_PS) -> int:
    """``n_cycles`` of a core at ``clock_GHz`` as DRAM cycles, rounded up."""
    if clock_GHz <= 0:
        raise ValueError(f"clock_GHz must be > 0, got {clock_GHz}")
    return ns_to_cycles(n_cycles / clock_GHz, tck_ps)


#: Bytes of one candidate-list entry: a float32 distance and an int32 node id.
CANDIDATE_ENTRY_BYTES = 8


def candidate_insert_cycles(list_len: int, step_cycles: float,
                            shift_bytes_per_cycle: float) -> float:
    """Core cycles of one insertion into a sorted candidate list of ``list_len`` entries:
    a binary search (log2 L steps of ``step_cycles``) and the move of, on average, half the
    list (L/2 entries of :data:`CANDIDATE_ENTRY_BYTES`) at ``shift_bytes_per_cycle``."""
    if list_len < 1:
        raise ValueError(f"candidate list length must be >= 1, got {list_len}")
    return (step_cycles * math.log2(list_len)
            + list_len / 2 * CANDIDATE_ENTRY_BYTES / shift_bytes_per_cycle)


class _CandidateList:
    """A core that searches with a sorted candidate list: ``insert_step_cycles`` and
    ``insert_shift_bytes_per_cycle`` fields (HostConfig, GPCConfig)."""

    def insert_cycles(self, list_len: int) -> float:
        """Core cycles of one insertion into a candidate list of ``list_len`` entries."""
        return candidate_insert_cycles(list_len, self.insert_step_cycles,
                                       self.insert_shift_bytes_per_cycle)


def bytes_per_cycle(bandwidth_GBps: float, tck_ps: int = TCK_PS) -> float:
    """A bandwidth in GB/s as bytes per DRAM cycle (1 GB/s x 1 ps = 1e-3 bytes)."""
    if bandwidth_GBps <= 0:
        raise ValueError(f"bandwidth_GBps must be > 0, got {bandwidth_GBps}")
    return bandwidth_GBps * tck_ps * 1e-3


@dataclass(frozen=True)
class LinkConfig:
    """A CXL link between the switch and one device (and the host's upstream port)."""

    latency_ns: float = _f(40.0, "one-way latency of the link incl. ports and controllers, ns")
    bandwidth_GBps: float = _f(63.0, "raw bandwidth per direction, GB/s")
    flit_bytes: int = _f(68, "bytes on the wire per flit")
    slots_per_flit: int = _f(4, "16-byte slots per flit")
    slot_bytes: int = _f(16, "bytes per slot")
    request_slots: int = _f(1, "slots taken by one read request")
    data_slots: int = _f(5, "slots taken by one 64-byte data response (4 data + header)")

    def wire_bytes(self, slots: int) -> float:
        """Bytes on the wire for ``slots`` slots (flit overhead included)."""
        return slots * self.flit_bytes / self.slots_per_flit

    def message_slots(self, payload_bytes: int) -> int:
        """Slots for a message of ``payload_bytes``: one header slot plus the payload."""
        return 1 + int(math.ceil(payload_bytes / self.slot_bytes))


@dataclass(frozen=True)
class SwitchConfig:
    """The CXL switch between the host and the devices."""

    latency_ns: float = _f(45.0, "one-way latency through the switch, ns")
    upstream_bandwidth_GBps: float = _f(63.0, "host-to-switch port bandwidth per direction, GB/s")
    present: bool = _f(True, "whether the devices sit behind a switch (else direct attach)")


@dataclass(frozen=True)
class HostConfig(_CandidateList):
    """The host CPU."""

    threads: int = _f(32, "search contexts (one query per core)")
    clock_GHz: float = _f(2.1, "core clock, GHz")
    outstanding_misses: int = _f(16, "outstanding cache-line misses per core")
    onchip_latency_ns: float = _f(30.0, "core to memory controller / root port, one way, ns")
    distance_dims_per_cycle: float = _f(16.0, "vector dimensions per cycle in a distance")
    distance_overhead_cycles: float = _f(20.0, "fixed cycles per distance computation")
    visit_check_cycles: float = _f(5.0, "cycles per neighbor visited-set check")
    insert_step_cycles: float = _f(1.0, "cycles per binary-search step of a candidate-list "
                                   "insertion (log2 L steps, L = the trace's list size)")
    insert_shift_bytes_per_cycle: float = _f(32.0, "bytes per cycle moving the list's tail on "
                                             "an insertion (L/2 8-byte entries on average)")
    select_cycles: float = _f(10.0, "cycles to select the next node to expand")
    merge_cycles_per_result: float = _f(4.0, "cycles per result when merging top-k lists")
    adc_lookups_per_cycle: float = _f(2.0, "IVF-PQ scan: lookup-table entries read and added "
                                             "per cycle")
    scan_item_overhead_cycles: float = _f(2.0, "scan: cycles per code or vector beyond its "
                                               "distance (queue compare, loop)")
    lut_add_entries_per_cycle: float = _f(4.0, "IVF-PQ with precomputed tables: entries of "
                                              "a probed list's precomputed term table added "
                                              "to the query's table per cycle")
    stream_prefetch_lines: int = _f(20, "lines the L2 streamer runs ahead of a sequential "
                                        "read stream (a scan's list reads with prefetch)")
    dram_channels: int = _f(16, "host DRAM subchannels (DRAM-only system)")
    dram_ranks: int = _f(1, "ranks per host DRAM subchannel (DRAM-only system)")


@dataclass(frozen=True)
class GPCConfig(_CandidateList):
    """The general-purpose cores inside each Cosmos device."""

    cores: int = _f(8, "cores per device")
    threads_per_core: int = _f(2, "search contexts per core")
    clock_GHz: float = _f(2.0, "core clock, GHz")
    outstanding_requests: int = _f(32, "outstanding 64-byte requests per context")
    distance_dims_per_cycle: float = _f(4.0, "vector dimensions per cycle in a distance")
    distance_overhead_cycles: float = _f(20.0, "fixed cycles per distance computation")
    visit_check_cycles: float = _f(5.0, "cycles per neighbor visited-set check")
    insert_step_cycles: float = _f(1.0, "cycles per binary-search step of a candidate-list "
                                   "insertion (log2 L steps, L = the trace's list size)")
    insert_shift_bytes_per_cycle: float = _f(16.0, "bytes per cycle moving the list's tail on "
                                             "an insertion (L/2 8-byte entries on average)")
    select_cycles: float = _f(10.0, "cycles to select the next node to expand")
    partial_sum_cycles: float = _f(1.0, "cycles to add one rank PU's partial distance")


@dataclass(frozen=True)
class SwitchCoreConfig(_CandidateList):
    """General-purpose cores in the CXL switch (the cosmos-switch system: the whole search
    on cores in the switch, reading every device over its link)."""

    cores: int = _f(32, "cores in the switch")
    threads_per_core: int = _f(2, "search contexts per core")
    clock_GHz: float = _f(2.0, "core clock, GHz")
    outstanding_requests: int = _f(32, "outstanding 64-byte requests per context")
    onchip_latency_ns: float = _f(10.0, "core to the switch's ports, one way, ns")
    distance_dims_per_cycle: float = _f(4.0, "vector dimensions per cycle in a distance")
    distance_overhead_cycles: float = _f(20.0, "fixed cycles per distance computation")
    visit_check_cycles: float = _f(5.0, "cycles per neighbor visited-set check")
    insert_step_cycles: float = _f(1.0, "cycles per binary-search step of a candidate-list "
                                   "insertion (log2 L steps, L = the trace's list size)")
    insert_shift_bytes_per_cycle: float = _f(16.0, "bytes per cycle moving the list's tail on "
                                             "an insertion (L/2 8-byte entries on average)")
    select_cycles: float = _f(10.0, "cycles to select the next node to expand")
    merge_cycles_per_result: float = _f(4.0, "cycles per result when merging the probes' "
                                             "top-k lists")


@dataclass(frozen=True)
class RankPUConfig:
    """Rank-level processing units (one per DRAM rank)."""

    enabled: bool = _f(True, "use rank-level PUs for distance computation")
    segment_bytes: int = _f(64, "bytes a PU reads per access (one burst)")
    pipeline_latency_ns: float = _f(5.0, "latency from the last segment to the partial distance, ns")


@dataclass(frozen=True)
class CXLANNSConfig:
    """The CXL-ANNS device-side distance accelerator (used by the cxl-anns preset)."""

    accel_latency_ns: float = _f(10.0, "accelerator latency after the last vector arrives, ns")
    accel_outstanding: int = _f(64, "vector line fetches in flight per batch")


@dataclass(frozen=True)
class ScanUnitConfig:
    """A near-memory scan unit of a CXL device (ivfpq-pnm, exact-pnm): a ChamVS-style PQ
    decoding pipeline, or a dot-product pipeline of the same stream width for full vectors;
    each device search context drives one."""

    clock_GHz: float = _f(0.5, "unit clock, GHz")
    codes_per_cycle: float = _f(4.0, "PQ codes decoded per cycle (lookups + sum + queue)")
    lut_load_cycles: float = _f(256.0, "cycles to load a probed list's lookup table")
    pipeline_cycles: float = _f(131.0, "pipeline depth: last code in to last distance out")
    outstanding_requests: int = _f(64, "64-byte requests in flight per unit")
    dot_bytes_per_cycle: float = _f(64.0, "bytes of full vectors per cycle in exact distances")
    lut_build_macs_per_cycle: float = _f(16.0, "multiply-adds per cycle building lookup-table "
                                               "entries on the device (ChamVS flow)")
    lut_add_entries_per_cycle: float = _f(16.0, "precomputed term-table entries added to "
                                                "the query's table per cycle (ivfpq-pnm, "
                                                "ivfpq-pnm-chamvs)")
    gemm_macs_per_cycle: float = _f(128.0, "multiply-adds per cycle of the batched exact "
                                           "scan's GEMM array (exact-pnm-batch)")
    batch_queries: int = _f(8, "queries that share one pass over a probed list's vectors "
                               "(exact-pnm-batch)")


@dataclass(frozen=True)
class GraphCacheConfig:
    """CXL-ANNS's hop-count graph cache in host DRAM (used by the cxl-anns-cache model)."""

    hops: int = _f(2, "cache the adjacency lists of the nodes within this many hops of an "
                      "entry point")
    capacity_bytes: int = _f(1 << 30, "host DRAM given to the cache, bytes (nearest nodes "
                                      "first)")


@dataclass(frozen=True)
class DeviceConfig:
    """One CXL memory device: DRAM behind a controller, optionally a GPC and rank PUs."""

    count: int = _f(4, "number of CXL devices behind the switch")
    channels: int = _f(8, "DRAM subchannels per device (4 DDR5 DIMM channels x 2)")
    ranks: int = _f(2, "ranks per subchannel")
    onchip_latency_ns: float = _f(10.0, "device controller/GPC to memory controller, one way, ns")
    capacity_bytes: int = _f(256 << 30, "DRAM capacity per device, bytes")


@dataclass(frozen=True)
class EnergyConfig:
    """Energy constants of the system model (stated estimates; sources in :data:`SOURCE`).
    They do not change the simulated timing: :mod:`cosmos.energy` applies them to what a run
    counted, after the run."""

    link_pJ_per_bit: float = _f(5.0, "CXL link PHY energy, TX + RX, per bit on the wire, pJ")
    switch_pJ_per_bit: float = _f(5.0, "CXL switch core energy per bit switched (PHYs "
                                       "excluded), pJ")
    host_core_active_W: float = _f(5.0, "power of one busy host core, W")
    host_static_W: float = _f(100.0, "host socket power independent of the search, W")
    gpc_core_active_W: float = _f(1.0, "power of one busy device GPC core, W")
    switch_core_active_W: float = _f(1.0, "power of one busy core in the CXL switch, W")
    rank_pu_pJ_per_burst: float = _f(100.0, "rank PU datapath energy per 64-B segment reduced "
                                            "to a partial distance, pJ")
    accel_pJ_per_line: float = _f(30.0, "CXL-ANNS device accelerator energy per 64-B line, pJ")
    device_static_W: float = _f(5.0, "power of each CXL device apart from its DRAM, W")

    def help(self) -> dict:
        return {f.name: f.metadata["help"] for f in dataclasses.fields(self)}


#: Upper bounds that keep simulated times and counts inside the engine's 64-bit integers.
MAX_TIME_NS = 1e9          # a latency of 1 s
MAX_CORE_CYCLES = 1e9      # one operation of 1e9 core cycles
MAX_COUNT = 2**31 - 1
#: The largest scan_unit.batch_queries: a batch's query vectors go down in one message and
#: its results up in another (4,096 float32 queries of dim 1,024 = 16 MiB); larger batches
#: than the VCK5000 study's are not asked for
MAX_BATCH = 4096

#: Valid range of every numeric config field: ``section.field`` -> (low, low included, high);
#: the type is the field's annotation (int or float). Counts and sizes are >= 1, latencies and
#: per-operation cycles >= 0, clocks, bandwidths and SIMD widths >= 0.001 (a smaller value
#: makes a step take longer than the engine's clock can count). bool and str fields are
#: checked for their type only; ``rank_pu.segment_bytes`` must also be 64.
_COUNT = (1, True, MAX_COUNT)
_TIME = (0.0, True, MAX_TIME_NS)
_CYCLES = (0.0, True, MAX_CORE_CYCLES)
_RATE = (1e-3, True, 1e6)
_ENERGY = (0.0, True, 1e9)      # pJ per bit/operation or W: finite and not negative
RANGES: dict[str, tuple] = {
    **{f"energy.{f.name}": _ENERGY for f in dataclasses.fields(EnergyConfig)},
    "link.latency_ns": _TIME, "link.bandwidth_GBps": _RATE, "link.flit_bytes": _COUNT,
    "link.slots_per_flit": _COUNT, "link.slot_bytes": _COUNT, "link.request_slots": _COUNT,
    "link.data_slots": _COUNT,
    "switch.latency_ns": _TIME, "switch.upstream_bandwidth_GBps": _RATE,
    "host.threads": _COUNT, "host.clock_GHz": _RATE, "host.outstanding_misses": _COUNT,
    "host.onchip_latency_ns": _TIME, "host.distance_dims_per_cycle": _RATE,
    "host.distance_overhead_cycles": _CYCLES, "host.visit_check_cycles": _CYCLES,
    "host.insert_step_cycles": _CYCLES, "host.insert_shift_bytes_per_cycle": _RATE,
    "host.select_cycles": _CYCLES,
    "host.merge_cycles_per_result": _CYCLES, "host.dram_channels": _COUNT,
    "host.dram_ranks": _COUNT,
    "gpc.cores": _COUNT, "gpc.threads_per_core": _COUNT, "gpc.clock_GHz": _RATE,
    "gpc.outstanding_requests": _COUNT, "gpc.distance_dims_per_cycle": _RATE,
    "gpc.distance_overhead_cycles": _CYCLES, "gpc.visit_check_cycles": _CYCLES,
    "gpc.insert_step_cycles": _CYCLES, "gpc.insert_shift_bytes_per_cycle": _RATE,
    "gpc.select_cycles": _CYCLES,
    "gpc.partial_sum_cycles": _CYCLES,
    "switch_core.cores": _COUNT, "switch_core.threads_per_core": _COUNT,
    "switch_core.clock_GHz": _RATE, "switch_core.outstanding_requests": _COUNT,
    "switch_core.onchip_latency_ns": _TIME, "switch_core.distance_dims_per_cycle": _RATE,
    "switch_core.distance_overhead_cycles": _CYCLES, "switch_core.visit_check_cycles": _CYCLES,
    "switch_core.insert_step_cycles": _CYCLES, "switch_core.insert_shift_bytes_per_cycle": _RATE,
    "switch_core.select_cycles": _CYCLES, "switch_core.merge_cycles_per_result": _CYCLES,
    "rank_pu.segment_bytes": _COUNT, "rank_pu.pipeline_latency_ns": _TIME,
    "cxl_anns.accel_latency_ns": _TIME, "cxl_anns.accel_outstanding": _COUNT,
    "device.count": _COUNT, "device.channels": _COUNT, "device.ranks": _COUNT,
    "device.onchip_latency_ns": _TIME, "device.capacity_bytes": (64, True, 2**62),
    "host.adc_lookups_per_cycle": _RATE, "host.scan_item_overhead_cycles": _CYCLES,
    "host.lut_add_entries_per_cycle": _RATE, "host.stream_prefetch_lines": _COUNT,
    "scan_unit.lut_build_macs_per_cycle": _RATE, "scan_unit.lut_add_entries_per_cycle": _RATE,
    "scan_unit.clock_GHz": _RATE, "scan_unit.codes_per_cycle": _RATE,
    "scan_unit.lut_load_cycles": _CYCLES, "scan_unit.pipeline_cycles": _CYCLES,
    "scan_unit.outstanding_requests": _COUNT, "scan_unit.dot_bytes_per_cycle": _RATE,
    "scan_unit.gemm_macs_per_cycle": _RATE, "scan_unit.batch_queries": (1, True, MAX_BATCH),
    "graph_cache.hops": (0, True, 1000), "graph_cache.capacity_bytes": (0, True, 2**62),
}


def _is_bool(value) -> bool:
    """A Python or numpy boolean (both also count as numbers; config numbers must not be)."""
    return isinstance(value, bool) or type(value).__name__ == "bool_"


def _kind(f: dataclasses.Field) -> str:
    """``"bool"``, ``"int"``, ``"float"`` or ``"str"``: the annotated type of a config field."""
    t = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", str(f.type))
    return t if t in ("bool", "int", "float") else "str"


def _check_field(path: str, value, f: dataclasses.Field) -> None:
    """Type and range of one section field (``path`` = ``section.field``); ValueError naming
    it, the value and what was expected."""
    kind = _kind(f)
    what = f" ({f.metadata['help']})" if f.metadata.get("help") else ""
    is_bool = _is_bool(value)
    if kind == "bool":
        if not is_bool:
            raise ValueError(f"system.{path}: expected true or false{what}, got {value!r}")
        return
    if kind == "str":
        if not isinstance(value, str):
            raise ValueError(f"system.{path}: expected a string{what}, got {value!r}")
        return
    if kind == "int" and (is_bool or not isinstance(value, numbers.Integral)):
        raise ValueError(f"system.{path}: expected an integer{what}, got {value!r}")
    if kind == "float" and (is_bool or not isinstance(value, numbers.Real)):
        raise ValueError(f"system.{path}: expected a number{what}, got {value!r}")
    low, low_in, high = RANGES[path]
    if kind == "float" and math.isnan(value):
        raise ValueError(f"system.{path}: must be a number, got {value}{what}")
    if value < low or (value == low and not low_in):
        raise ValueError(f"system.{path}: must be {'>=' if low_in else '>'} {low:g}, got "
                         f"{value}{what}")
    if value > high:
        raise ValueError(f"system.{path}: must be <= {high:g}, got {value}{what}")


@dataclass(frozen=True)
class SystemConfig:
    """A whole system. ``kind`` names its execution model (cosmos.systems registry), which
    says how queries become programs (cosmos.program interprets it)."""

    name: str = _f("custom", "preset name")
    kind: str = _f("cosmos", "execution model: a name registered in cosmos.systems "
                             "(host-cxl, host-dram, cxl-anns, cosmos, ...)")
    placement: str = _f("adjacency", "cluster placement policy name (placement registry)")
    layout_spread: bool = _f(True, "spread the layout over the full device capacity")
    host: HostConfig = field(default_factory=HostConfig, metadata={"help": "host CPU"})
    link: LinkConfig = field(default_factory=LinkConfig, metadata={"help": "device links"})
    switch: SwitchConfig = field(default_factory=SwitchConfig, metadata={"help": "CXL switch"})
    device: DeviceConfig = field(default_factory=DeviceConfig, metadata={"help": "CXL devices"})
    gpc: GPCConfig = field(default_factory=GPCConfig, metadata={"help": "device cores"})
    switch_core: SwitchCoreConfig = field(default_factory=SwitchCoreConfig,
                                          metadata={"help": "cores in the CXL switch"})
    rank_pu: RankPUConfig = field(default_factory=RankPUConfig, metadata={"help": "rank PUs"})
    cxl_anns: CXLANNSConfig = field(default_factory=CXLANNSConfig, metadata={"help": "CXL-ANNS"})
    graph_cache: GraphCacheConfig = field(default_factory=GraphCacheConfig,
                                          metadata={"help": "host graph cache (CXL-ANNS)"})
    energy: EnergyConfig = field(default_factory=EnergyConfig,
                                 metadata={"help": "energy constants (applied after the run)"})
    scan_unit: ScanUnitConfig = field(default_factory=ScanUnitConfig,
                                      metadata={"help": "near-memory scan units (IVF-PQ, exact)"})

    def validate(self) -> "SystemConfig":
        """Reject impossible values with a message naming the field (``system.section.field``),
        the value and what was expected: every field's type, and every numeric field's range
        from :data:`RANGES`. The execution model ``kind`` names is the systems layer's to
        check: :func:`cosmos.systems.validate_system` checks both."""
        for name in ("name", "kind", "placement"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value:
                raise ValueError(f"system.{name}: expected a non-empty string, got {value!r}")
        if not isinstance(self.layout_spread, bool):
            raise ValueError(f"system.layout_spread: expected true or false, got "
                             f"{self.layout_spread!r}")
        for section, sub_cls in SECTIONS.items():
            sub = getattr(self, section)
            if not isinstance(sub, sub_cls):
                raise ValueError(f"system.{section}: expected a {sub_cls.__name__}, got "
                                 f"{type(sub).__name__}")
            for f in dataclasses.fields(sub):
                _check_field(f"{section}.{f.name}", getattr(sub, f.name), f)
        link = self.link
        if link.flit_bytes < link.slots_per_flit * link.slot_bytes:
            raise ValueError(f"system.link.flit_bytes: must be >= link.slots_per_flit x "
                             f"link.slot_bytes = {link.slots_per_flit * link.slot_bytes} (the "
                             f"slots a flit carries), got {link.flit_bytes}")
        if self.rank_pu.segment_bytes != 64:
            raise ValueError("system.rank_pu.segment_bytes: only 64-byte segments (one burst) "
                             f"are modeled, got {self.rank_pu.segment_bytes}")
        return self

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, d: dict) -> "SystemConfig":
        """Rebuild from :meth:`to_dict` output; unknown keys raise ``ValueError``."""
        sub = SECTIONS
        if not isinstance(d, dict):
            raise ValueError(f"system config: expected a dict of fields, got {type(d).__name__}")
        kwargs = {}
        valid = {f.name for f in dataclasses.fields(cls)}
        for key, value in d.items():
            if key not in valid:
                raise ValueError(f"system config: unknown field {key!r}; valid: {sorted(valid)}")
            if key in sub:
                if not isinstance(value, dict):
                    raise ValueError(f"system config: {key!r} must be a dict of its fields, got "
                                     f"{value!r}")
                sub_valid = {f.name for f in dataclasses.fields(sub[key])}
                bad = set(value) - sub_valid
                if bad:
                    raise ValueError(f"system config: unknown field(s) {sorted(bad)} in "
                                     f"{key!r}; valid: {sorted(sub_valid)}"
                                     f"{_replaced_hint(bad)}")
                kwargs[key] = sub[key](**value)
            else:
                kwargs[key] = value
        return cls(**kwargs).validate()


#: The config's sections: field name of SystemConfig -> its dataclass.
SECTIONS: dict[str, type] = {"host": HostConfig, "link": LinkConfig, "switch": SwitchConfig,
                             "device": DeviceConfig, "gpc": GPCConfig,
                             "switch_core": SwitchCoreConfig, "rank_pu": RankPUConfig,
                             "cxl_anns": CXLANNSConfig, "graph_cache": GraphCacheConfig,
                             "energy": EnergyConfig,
                             "scan_unit": ScanUnitConfig}


#: Spellings ``--set section.flag=VALUE`` accepts for a boolean field (case-insensitive).
TRUE_WORDS = ("true", "1", "yes", "on")
FALSE_WORDS = ("false", "0", "no", "off")


def _convert(dotted: str, raw, f: dataclasses.Field):
    """``raw`` (a command-line string or a Python value) as the type of field ``f``; a
    ValueError names the field, the value and the type expected."""
    kind = _kind(f)
    text = raw.strip() if isinstance(raw, str) else raw
    what = f" ({f.metadata['help']})" if f.metadata.get("help") else ""
    if kind == "bool":
        if _is_bool(text):
            return bool(text)
        if isinstance(text, str) and text.lower() in TRUE_WORDS + FALSE_WORDS:
            return text.lower() in TRUE_WORDS
        if isinstance(text, numbers.Integral) and text in (0, 1):
            return bool(text)
        raise ValueError(f"override {dotted}={raw!r}: expected a boolean{what}: one of "
                         f"{'/'.join(TRUE_WORDS)} or {'/'.join(FALSE_WORDS)}")
    if kind == "int":
        if isinstance(text, numbers.Real) and not _is_bool(text) and math.isfinite(text) and \
                float(text).is_integer():
            return int(text)
        if isinstance(text, str):
            try:
                return int(text, 10)
            except ValueError:
                pass
            try:  # "256e9", "4.0": a whole number written as a float
                x = float(text)
                if math.isfinite(x) and x.is_integer():
                    return int(x)
            except ValueError:
                pass
        raise ValueError(f"override {dotted}={raw!r}: expected an integer{what}")
    if kind == "float":
        if isinstance(text, numbers.Real) and not _is_bool(text):
            return float(text)
        if isinstance(text, str):
            try:
                return float(text)
            except ValueError:
                pass
        raise ValueError(f"override {dotted}={raw!r}: expected a number{what}")
    if not isinstance(text, str):
        raise ValueError(f"override {dotted}={raw!r}: expected a string{what}")
    return text


def with_overrides(cfg: SystemConfig, overrides: dict[str, object]) -> SystemConfig:
    """Apply dotted overrides like ``{"gpc.cores": 4, "link.latency_ns": 50}``.

    Values may be strings (``--set`` on the command line) or Python values; each is converted
    to its field's type (booleans: true/false, 1/0, yes/no, on/off) and the result is
    validated (:meth:`SystemConfig.validate`). Any error is a ValueError naming the field.
    """
    d = cfg.to_dict()
    for dotted, value in overrides.items():
        parts = dotted.split(".")
        node = d
        cls = SystemConfig
        for p in parts[:-1]:
            if p not in node or not isinstance(node[p], dict):
                raise ValueError(f"override {dotted!r}: unknown section {p!r}; valid: "
                                 f"{sorted(SECTIONS)}")
            node = node[p]
            cls = SECTIONS[p]
        if parts[-1] not in node:
            raise ValueError(f"override {dotted!r}: unknown field {parts[-1]!r}; "
                             f"valid: {sorted(node)}{_replaced_hint([parts[-1]])}")
        if isinstance(node[parts[-1]], dict):
            raise ValueError(f"override {dotted!r}: {parts[-1]!r} is a section, not a field; "
                             f"give one of its fields, e.g. {dotted}.{sorted(node[parts[-1]])[0]}")
        f = {g.name: g for g in dataclasses.fields(cls)}[parts[-1]]
        node[parts[-1]] = _convert(dotted, value, f)
    return SystemConfig.from_dict(d)


def parse_overrides(items) -> dict[str, str]:
    """``["gpc.cores=4", "link.latency_ns=50"]`` (command-line ``--set``) -> a dotted-override
    dict for :func:`with_overrides`; an item without ``=``, or a field given twice, raises
    ``ValueError`` naming it."""
    out: dict[str, str] = {}
    for item in items:
        if "=" not in item:
            raise ValueError(f"--set {item!r}: expected FIELD=VALUE")
        key, value = item.split("=", 1)
        key = key.strip()
        if key in out:
            raise ValueError(f"--set {key}: given twice ({key}={out[key]} and {item.strip()})")
        out[key] = value.strip()
    return out
