"""cosmos engine: a worked single-query example, bandwidth bounds, rank-level PUs."""

import dataclasses
import json
import math

import numpy as np
import pytest

from cosmos.config import TCK_PS, bytes_per_cycle, ns_to_cycles
from cosmos.metrics import NS_PER_CYCLE, per_device, per_query, summary
from cosmos.presets import get_preset
from cosmos.simulate import dram_config_for, simulate
from tests.cosmos_helpers import make_trace


def worked_trace(expand=1):
    """One query, one search of cluster 0 (nodes 0..7): entry 0, one hop expanding node
    ``expand`` (16 neighbors = one 64-B line), reading the vector of node 2 (64 B), one
    insertion. (``expand=0``: the hop expands the entry, as real searches do, so a hop-count
    graph cache holds the expanded node's list.)"""
    meta = dict(dataset="worked", n=32, dim=16, dtype="float32", metric="l2", vector_bytes=64,
                max_degree=16, cand_list_len=8, num_clusters=4, num_probes=1, k=10,
                recall=1.0, seed=0, num_queries=1, format_version=1)
    return dict(
        meta=np.array(json.dumps(meta)), cluster_ptr=np.arange(5) * 8,
        cluster_nodes=np.arange(32), query_ptr=np.array([0, 1]), search_cluster=np.array([0]),
        search_entry=np.array([0]), search_hop_ptr=np.array([0, 1]), hop_node=np.array([expand]),
        hop_degree=np.array([16]), hop_read_ptr=np.array([0, 1]), read_node=np.array([2]),
        hop_cand_inserts=np.array([1]))


def dram_unloaded_read_cycles(cfg, rank_local=False):
    """The DRAM model's unloaded read to a precharged bank: offer at t, ACT at t + 1, RD after
    nRCD, data after nCL + nBL (the same for a rank PU's rank-local read). Checked against the
    model itself."""
    from dram import kernel as dk

    dcfg = dram_config_for(cfg)
    t = dcfg.timing
    expect = 1 + t["nRCD"] + t["nCL"] + t["nBL"]
    p = dcfg.resolve()
    s = dk.new_state(p, instances=1)
    assert dk.offer(p, s, 0, 7, 0, 0, int(rank_local), 0)
    ids, cyc = np.zeros(8, np.int64), np.zeros(8, np.int64)
    for clk in range(1, 200):
        dk.tick(p, s, clk)
        if dk.pop_completions(s, ids, cyc):
            assert (ids[0], cyc[0]) == (7, expect)
            return expect
    raise AssertionError("no completion")


def link_hops(cfg):
    """(down, up) by hand: the cycle a message of ``nbytes`` wire bytes sent at cycle ``t``
    reaches the device (host -> upstream port -> switch -> device link), or the host."""
    L = cfg.link
    up_bpc = bytes_per_cycle(cfg.switch.upstream_bandwidth_GBps)
    dev_bpc = bytes_per_cycle(L.bandwidth_GBps)
    sw, ln = ns_to_cycles(cfg.switch.latency_ns), ns_to_cycles(L.latency_ns)

    def down(t, nbytes):
        x = t + nbytes / up_bpc + sw
        return math.ceil(x + nbytes / dev_bpc + ln - 1e-9)

    def up(t, nbytes):
        x = t + nbytes / dev_bpc + ln
        return math.ceil(x + nbytes / up_bpc + sw - 1e-9)

    return down, up


def hand_latency(cfg):
    """The worked query's latency in DRAM cycles, step by step from the configured figures."""
    dram = dram_unloaded_read_cycles(cfg)
    ghz_h, ghz_g = cfg.host.clock_GHz, cfg.gpc.clock_GHz
    to_cyc = 1000.0 / TCK_PS                       # ns -> DRAM cycles

    def hc(n):
        return n / ghz_h * to_cyc

    def gc(n):
        return n / ghz_g * to_cyc

    L = cfg.link
    down, up = link_hops(cfg)

    k, dim, lsize = 10, 16, 8                        # the worked trace's k, dim, cand_list_len

    def insert(sec):  # one insertion into the sorted L-entry list: binary search + shift
        return (sec.insert_step_cycles * math.log2(lsize)
                + lsize / 2 * 8 / sec.insert_shift_bytes_per_cycle)

    if cfg.kind == "host-dram":
        h = cfg.host
        lat = ns_to_cycles(h.onchip_latency_ns)
        dist = hc(dim / h.distance_dims_per_cycle + h.distance_overhead_cycles)
        t = math.ceil(lat + dram + lat + dist)                            # entry vector
        t = t + lat + dram + lat + math.ceil(16 * hc(h.visit_check_cycles))  # adjacency list
        t = math.ceil(t + lat + dram + lat + dist)                        # node 2's vector
        t += math.ceil(hc(insert(h)) + hc(h.select_cycles))         # candidate update
        t += math.ceil(1 * k * hc(h.merge_cycles_per_result))             # merge top-k
        return t
    if cfg.kind in ("cxl-anns", "cxl-anns-cache", "cxl-anns-rankpu", "cxl-anns-nofgs",
                    "cxl-anns-dimm"):
        # host traversal, distances on the device: an accelerator reading whole vectors, or
        # (cxl-anns-rankpu) the rank PUs reading rank-locally, the partial distances added
        # on the device (one per rank holding a segment: the 64-B vector is one segment)
        h = cfg.host
        hl, dl = ns_to_cycles(h.onchip_latency_ns), ns_to_cycles(cfg.device.onchip_latency_ns)
        req, data, slot = (L.wire_bytes(L.request_slots), L.wire_bytes(L.data_slots),
                           L.wire_bytes(1))
        if cfg.kind == "cxl-anns-rankpu":
            dram_l = dram_unloaded_read_cycles(cfg, rank_local=True)
            pu = math.ceil(ns_to_cycles(cfg.rank_pu.pipeline_latency_ns)
                           + gc(cfg.gpc.partial_sum_cycles))

            def dist(t):
                return t + dl + dram_l + dl + pu
        elif cfg.kind == "cxl-anns-dimm":
            # the DIMM buffer's accelerator reads the whole vector rank-locally (its own path
            # to the rank, not the channel's data bus), then its pipeline latency
            dram_l = dram_unloaded_read_cycles(cfg, rank_local=True)
            acc = ns_to_cycles(cfg.cxl_anns.accel_latency_ns)

            def dist(t):
                return t + dl + dram_l + dl + acc
        else:
            acc = ns_to_cycles(cfg.cxl_anns.accel_latency_ns)

            def dist(t):
                return t + dl + dram + dl + acc
        t = down(0, (1 + math.ceil((64 + 4) / 16)) * slot)              # query + entry id down
        t = dist(t)                                                       # device: entry
        t = up(t, (1 + math.ceil(4 / 16)) * slot)                         # its distance up
        if cfg.kind == "cxl-anns-cache":
            # the worked trace expands the entry (expand=0): its list is in the host cache,
            # read from host DRAM without crossing the link
            t = t + hl + dram + hl
        else:
            t = up(down(t + hl, req) + dram, data) + hl                   # adjacency via link
        t += math.ceil(16 * hc(h.visit_check_cycles))
        t = down(t, (1 + math.ceil(4 / 16)) * slot)                       # 1 neighbor id down
        t = dist(t)                                                       # device: node 2
        t = up(t, (1 + math.ceil(4 / 16)) * slot)                         # its distance up
        if cfg.kind == "cxl-anns-nofgs":                                  # insert not deferred
            t += math.ceil(hc(insert(h)) + hc(h.select_cycles))
        else:
            t += math.ceil(hc(h.select_cycles))                           # select (insert deferred)
        t += math.ceil(1 * k * hc(h.merge_cycles_per_result))             # merge top-k
        return t
    if cfg.kind == "cxl-anns-switch":
        # CXL-ANNS's host traversal, the distances on an accelerator in the CXL switch: the
        # host's messages go to the switch (host port queued, then the switch's latency), the
        # accelerator's reads cross the switch and the device link, never the host's port
        h = cfg.host
        hl, dl = ns_to_cycles(h.onchip_latency_ns), ns_to_cycles(cfg.device.onchip_latency_ns)
        req, data, slot = (L.wire_bytes(L.request_slots), L.wire_bytes(L.data_slots),
                           L.wire_bytes(1))
        up_bpc = bytes_per_cycle(cfg.switch.upstream_bandwidth_GBps)
        dev_bpc = bytes_per_cycle(L.bandwidth_GBps)
        sw, ln = ns_to_cycles(cfg.switch.latency_ns), ns_to_cycles(L.latency_ns)
        acc = ns_to_cycles(cfg.cxl_anns.accel_latency_ns)

        def to_switch(t, nbytes):   # host -> switch, or back: the host port, the switch
            return math.ceil(t + nbytes / up_bpc + sw - 1e-9)

        def dist(t):                # one 64-B vector read by the switch's accelerator
            t = math.ceil(t + dl + sw + req / dev_bpc + ln - 1e-9)       # request to the device
            t = math.ceil(t + dram + data / dev_bpc + ln + sw - 1e-9)    # its data to the switch
            return t + dl + acc

        t = to_switch(0, (1 + math.ceil((64 + 4) / 16)) * slot)          # query + entry id
        t = to_switch(dist(t), (1 + math.ceil(4 / 16)) * slot)          # the entry's distance
        t = up(down(t + hl, req) + dram, data) + hl                       # adjacency via link
        t += math.ceil(16 * hc(h.visit_check_cycles))
        t = to_switch(t, (1 + math.ceil(4 / 16)) * slot)                  # 1 neighbor id
        t = to_switch(dist(t), (1 + math.ceil(4 / 16)) * slot)          # its distance back
        t += math.ceil(hc(h.select_cycles))                               # select
        t += math.ceil(1 * k * hc(h.merge_cycles_per_result))             # merge top-k
        return t
    if cfg.kind in ("cosmos-switch", "switch-cores-device-accel"):
        # the whole search on a core in the CXL switch: the host's I/O agent sends the query
        # to the switch (host port queued, then the switch's latency); the core's reads cross
        # the switch and the device link, never the host's port; it merges the probes' top-k
        # itself and sends the k results up to the host. (switch-cores-device-accel, declared
        # in this file: the same search with its distances on the device's accelerator, the
        # core sending the ids to the device and the device the distances back.)
        sc = cfg.switch_core
        swl, dl = ns_to_cycles(sc.onchip_latency_ns), ns_to_cycles(cfg.device.onchip_latency_ns)
        req, data, slot = (L.wire_bytes(L.request_slots), L.wire_bytes(L.data_slots),
                           L.wire_bytes(1))
        up_bpc = bytes_per_cycle(cfg.switch.upstream_bandwidth_GBps)
        dev_bpc = bytes_per_cycle(L.bandwidth_GBps)
        sw, ln = ns_to_cycles(cfg.switch.latency_ns), ns_to_cycles(L.latency_ns)

        def wc(n):                  # switch-core cycles -> DRAM cycles
            return n / sc.clock_GHz * to_cyc

        def host_switch(t, nbytes):  # host <-> switch: the host port, the switch
            return math.ceil(t + nbytes / up_bpc + sw - 1e-9)

        def switch_device(t, nbytes):  # switch <-> device: the switch, the device link
            return math.ceil(t + sw + nbytes / dev_bpc + ln - 1e-9)

        def read(t):                # one 64-B line read by the switch core
            t = switch_device(t + swl, req)                              # request to the device
            return math.ceil(t + dram + data / dev_bpc + ln + sw - 1e-9) + swl  # data back

        if cfg.kind == "cosmos-switch":
            dist = wc(dim / sc.distance_dims_per_cycle + sc.distance_overhead_cycles)

            def vec(t, first):
                return math.ceil(read(t) + dist)
        else:
            acc = ns_to_cycles(cfg.cxl_anns.accel_latency_ns)

            def vec(t, first):      # ids (or query + entry id) down, the distance back
                t = switch_device(t, (1 + math.ceil(((64 + 4) if first else 4) / 16)) * slot)
                t = t + dl + dram + dl + acc
                return switch_device(t, (1 + math.ceil(4 / 16)) * slot)

        t = host_switch(0, (1 + 64 // L.slot_bytes) * slot)              # query to the switch
        t = vec(t, True)                                                  # entry vector
        t = read(t) + math.ceil(16 * wc(sc.visit_check_cycles))           # adjacency list
        t = vec(t, False)                                                 # node 2's vector
        if cfg.kind == "cosmos-switch":
            t += math.ceil(wc(insert(sc)) + wc(sc.select_cycles))         # candidate update
        else:
            t += math.ceil(wc(sc.select_cycles))
        t += math.ceil(1 * k * wc(sc.merge_cycles_per_result))            # merge, on the core
        t = host_switch(t, (1 + math.ceil(8 * k / 16)) * slot)           # top-k to the host
        return t
    if cfg.kind == "host-cxl":
        h = cfg.host
        lat = ns_to_cycles(h.onchip_latency_ns)
        req, data = L.wire_bytes(L.request_slots), L.wire_bytes(L.data_slots)

        def read(t):  # one 64-B line from the CXL device, back at the core
            return up(down(t + lat, req) + dram, data) + lat

        dist = hc(dim / h.distance_dims_per_cycle + h.distance_overhead_cycles)
        t = math.ceil(read(0) + dist)                                   # entry vector
        t = read(t) + math.ceil(16 * hc(h.visit_check_cycles))          # adjacency list
        t = math.ceil(read(t) + dist)                                   # node 2's vector
        t += math.ceil(hc(insert(h)) + hc(h.select_cycles))       # candidate update
        t += math.ceil(1 * k * hc(h.merge_cycles_per_result))           # merge top-k
        return t
    assert cfg.kind in ("cosmos", "cosmos-accel")
    g = cfg.gpc
    lat = ns_to_cycles(cfg.device.onchip_latency_ns)
    if cfg.kind == "cosmos-accel":
        # the GPC hands each batch to the device's distance accelerator, which reads whole
        # vectors over the channel and returns after its pipeline latency
        acc = ns_to_cycles(cfg.cxl_anns.accel_latency_ns)

        def vec(t):
            return t + lat + dram + lat + acc
    elif cfg.rank_pu.enabled:
        # a 64-B vector is one segment: one rank-local read, then the PU pipeline and one
        # partial-sum add on the GPC
        dram_l = dram_unloaded_read_cycles(cfg, rank_local=True)
        pu = math.ceil(ns_to_cycles(cfg.rank_pu.pipeline_latency_ns) + gc(g.partial_sum_cycles))

        def vec(t):
            return t + lat + dram_l + lat + pu
    else:
        dist = gc(dim / g.distance_dims_per_cycle + g.distance_overhead_cycles)

        def vec(t):
            return math.ceil(t + lat + dram + lat + dist)
    t = down(0, L.wire_bytes(1 + 64 // L.slot_bytes))                 # query vector down
    t = vec(t)                                                          # entry vector
    t = t + lat + dram + lat + math.ceil(16 * gc(g.visit_check_cycles))  # adjacency list
    t = vec(t)                                                          # node 2's vector
    t += math.ceil(gc(insert(g)) + gc(g.select_cycles))           # candidate update
    t = up(t, L.wire_bytes(1 + 8 * k // L.slot_bytes))                  # local top-k up
    t += math.ceil(1 * k * hc(cfg.host.merge_cycles_per_result))       # merge on the host
    return t


@pytest.mark.parametrize("name", ["base", "dram-only", "cxl-anns", "cosmos-norank", "cosmos",
                                  "cxl-anns-cache", "cosmos-accel", "cxl-anns-rankpu",
                                  "cxl-anns-switch", "cxl-anns-dimm", "cosmos-switch"])
def test_single_query_latency_equals_hand_sum(name):
    cfg = dataclasses.replace(get_preset(name), layout_spread=False)
    res = simulate(cfg, worked_trace(0 if name == "cxl-anns-cache" else 1), progress=False,
                   cluster_device=np.zeros(4, np.int64))
    expect = hand_latency(cfg)
    assert res.state.q_done[0] == expect
    row = per_query(res).iloc[0]
    parts = sum(row[f"{c}_ns"] for c in ("traversal", "distance", "candidate", "transfer",
                                         "queue"))
    assert parts == pytest.approx(row["latency_ns"])
    assert row["latency_ns"] == pytest.approx(expect * TCK_PS / 1000)


@pytest.mark.parametrize("name,clock_GHz", [("base", 0.01), ("cxl-anns", 2.1),
                                             ("cosmos", 0.01), ("cxl-anns-rankpu", 2.1),
                                             ("cosmos-accel", 0.01), ("cosmos-switch", 0.01)])
def test_slow_cores_and_a_long_link_keep_the_hand_sum(name, clock_GHz):
    # Step ends and link arrivals thousands of cycles ahead, far beyond a window of the engine.
    # (CXL-ANNS keeps its host clock: a slow host puts the deferred candidate insertion on
    # the critical path, which the hand sum leaves out.)
    base = get_preset(name)
    cfg = dataclasses.replace(
        base, layout_spread=False,
        host=dataclasses.replace(base.host, clock_GHz=clock_GHz),
        gpc=dataclasses.replace(base.gpc, clock_GHz=clock_GHz),
        switch_core=dataclasses.replace(base.switch_core, clock_GHz=clock_GHz),
        link=dataclasses.replace(base.link, latency_ns=3000.0)).validate()
    assert ns_to_cycles(3000.0) > 100 * dram_config_for(cfg).resolve().read_latency
    res = simulate(cfg, worked_trace(), progress=False, cluster_device=np.zeros(4, np.int64))
    assert res.state.q_done[0] == hand_latency(cfg)


def _declare_cxl_anns_without_fine_grained_scheduling():
    """A system defined here, not under cosmos/: CXL-ANNS without its fine-grained scheduling
    (each hop's candidate insertions stay on the critical path). The whole declaration, as in
    docs/adding_a_system.md."""
    from cosmos.systems import Compute, Cost, Read, Send, SystemModel, register_system

    model = SystemModel(
        name="cxl-anns-nofgs",
        description="CXL-ANNS without fine-grained scheduling (inserts on the critical path)",
        traversal="host",                     # one task per query on a host core
        entry=(Send("down", vectors=1, bytes=4),               # query vector + entry id
               Read("entry-vector", "accelerator", "distance", after=(Cost("accel_latency"),)),
               Send("up", bytes=4)),                            # the entry's distance
        adjacency=(Read("adjacency", "host", "traversal",       # over the CXL link
                        after=(Cost("host_visit", "degree"),)),),
        vectors=(Send("down", per_item_bytes=4, count="reads"),  # the neighbors' ids
                 Read("hop-vectors", "accelerator", "distance", after=(Cost("accel_latency"),)),
                 Send("up", per_item_bytes=4, count="reads")),   # their distances
        candidates=(Compute("candidate", (Cost("host_select"), Cost("host_insert", "inserts"))),),
        merge=(Compute("candidate", (Cost("host_merge", "probes-x-k"),)),))
    register_system(model, replace=True)
    return dataclasses.replace(get_preset("cxl-anns"), name="cxl-anns-nofgs",
                               kind="cxl-anns-nofgs").validate()


def test_a_system_declared_in_a_test_file_simulates_and_keeps_its_hand_sum():
    cfg = dataclasses.replace(_declare_cxl_anns_without_fine_grained_scheduling(),
                              layout_spread=False)
    res = simulate(cfg, worked_trace(), progress=False, cluster_device=np.zeros(4, np.int64))
    assert res.state.q_done[0] == hand_latency(cfg)
    # the only difference from CXL-ANNS: the insertion back on the critical path
    ref = simulate(dataclasses.replace(get_preset("cxl-anns"), layout_spread=False),
                   worked_trace(), progress=False, cluster_device=np.zeros(4, np.int64))
    assert res.state.q_done[0] > ref.state.q_done[0]
    s = summary(simulate(cfg, make_trace(num_queries=40, seed=4), progress=False))
    assert s["system"] == "cxl-anns-nofgs" and s["qps"] > 0


def test_a_switch_search_sends_to_the_devices_and_keeps_its_hand_sum():
    """A model declared here: the search on the switch's cores (as cosmos-switch), its
    distances on each device's accelerator: ``Send(near="switch", to="device")`` carries the
    ids from the switch to the device and the distances back, over the switch and the device
    link (the one route function); the host's port carries only the query and the top-k."""
    from cosmos.systems import (RESULT_ENTRY_BYTES, Compute, Cost, Read, Send, SystemModel,
                                register_system)

    def to_dev(direction, **kw):
        return Send(direction, near="switch", to="device", **kw)

    register_system(SystemModel(
        name="switch-cores-device-accel", description="switch cores, device accelerators",
        traversal="switch-core",
        dispatch=(Send("down", vectors=1, to="switch"),),
        entry=(to_dev("down", vectors=1, bytes=4),
               Read("entry-vector", "accelerator", "distance", after=(Cost("accel_latency"),)),
               to_dev("up", bytes=4)),
        adjacency=(Read("adjacency", "switch-core", "traversal",
                        after=(Cost("sw_visit", "degree"),)),),
        vectors=(to_dev("down", per_item_bytes=4, count="reads"),
                 Read("hop-vectors", "accelerator", "distance", after=(Cost("accel_latency"),)),
                 to_dev("up", per_item_bytes=4, count="reads")),
        candidates=(Compute("candidate", (Cost("sw_select"),)),),
        merge=(Compute("candidate", (Cost("sw_merge", "probes-x-k"),)),),
        device_done=(Send("up", per_item_bytes=RESULT_ENTRY_BYTES, count="k", to="switch"),)),
        replace=True)
    cfg = dataclasses.replace(get_preset("cosmos-switch"), name="switch-cores-device-accel",
                              kind="switch-cores-device-accel", layout_spread=False).validate()
    res = simulate(cfg, worked_trace(), progress=False, cluster_device=np.zeros(4, np.int64))
    assert res.state.q_done[0] == hand_latency(cfg)
    D, L = cfg.device.count, cfg.link
    slot = L.wire_bytes(1)
    host_port = (1 + 64 // 16) * slot + (1 + 80 // 16) * slot       # query down, top-k up
    assert res.state.link_bytes[D].sum() == pytest.approx(host_port)
    # device 0's link: the messages and the adjacency list's request and data, no vector line
    link0 = ((1 + math.ceil(68 / 16)) + 2 * (1 + 1) + (1 + 1)) * slot \
        + L.wire_bytes(L.request_slots) + L.wire_bytes(L.data_slots)
    assert res.state.link_bytes[0].sum() == pytest.approx(link0)
    assert res.state.link_bytes[1:D].sum() == 0


def test_load_to_use_of_base_is_in_the_public_range():
    # one adjacency read: CXL load-to-use 170-250 ns direct (CXL Consortium) + ~90 ns switch
    cfg = get_preset("base")
    res = simulate(dataclasses.replace(cfg, layout_spread=False), worked_trace(), progress=False,
                   cluster_device=np.zeros(4, np.int64))
    trav_ns = per_query(res).iloc[0]["traversal_ns"]
    visit_ns = 16 * cfg.host.visit_check_cycles / cfg.host.clock_GHz
    assert 170 + 70 <= trav_ns - visit_ns <= 250 + 90


def _bandwidth_case():
    # many short queries, so the steady-state window is long against the 32 in flight
    return make_trace(num_queries=1000, num_clusters=8, cluster_size=300, probes=2, hops=2,
                      reads_per_hop=8, seed=3)


def test_throughput_never_exceeds_the_link_and_approaches_it_when_bound():
    tr = _bandwidth_case()
    for bw in (63.0, 4.0):
        cfg = get_preset("base")
        cfg = dataclasses.replace(cfg, switch=dataclasses.replace(
            cfg.switch, upstream_bandwidth_GBps=bw))
        s = summary(simulate(cfg, tr, progress=False))
        wire_up = s["link_wire_bytes_per_query"]["up"]
        carried_GBps = s["qps"] * wire_up / 1e9
        assert carried_GBps <= bw * 1.005
        dram_GBps = s["qps"] * s["dram_bytes_per_query"] / 1e9
        assert dram_GBps <= dram_config_for(cfg).peak_bandwidth_GBps * cfg.device.count
        if bw == 4.0:  # the shared upstream port is the bottleneck: within 5 % of its peak
            assert carried_GBps >= 0.95 * bw
            assert s["upstream_util_up_fraction"] >= 0.95


def test_device_dram_bandwidth_bound_holds_for_cosmos():
    tr = _bandwidth_case()
    cfg = get_preset("cosmos-norank")
    s = summary(simulate(cfg, tr, progress=False))
    peak = dram_config_for(cfg).peak_bandwidth_GBps * cfg.device.count
    assert 0 < s["qps"] * s["dram_bytes_per_query"] / 1e9 <= peak


def test_simulated_time_ends_with_the_last_query():
    # whole-run averages (bandwidth, utilization) divide by res.cycles: it must be the last
    # query's completion, not the engine clock (which has jumped to the next DRAM event)
    tr = make_trace(num_queries=30, num_clusters=8, cluster_size=200, probes=2, hops=4, seed=2)
    for name in ("base", "cosmos"):
        res = simulate(get_preset(name), tr, progress=False)
        assert res.cycles == int(res.state.q_done.max())
        assert int(res.state.scal[0]) >= res.cycles
        assert (res.state.link_busy <= res.cycles + 1e-9).all()
        s = summary(res)
        assert s["simulated_ns"] == res.cycles * NS_PER_CYCLE


def test_dram_busy_fractions_agree_with_the_bandwidth():
    # every burst holds its rank for nBL cycles; a normal one also holds the channel data bus,
    # a rank PU's does not: so rank busy = bandwidth / peak / ranks on every system, and the
    # bus busy fraction equals bandwidth / peak without rank PUs and falls far below it with them
    tr = make_trace(num_queries=40, num_clusters=8, cluster_size=200, probes=2, hops=6, seed=1)
    for name in ("base", "dram-only", "cosmos"):
        cfg = get_preset(name)
        res = simulate(cfg, tr, progress=False)
        dev = per_device(res)
        dcfg = dram_config_for(cfg)
        util = dev["dram_bandwidth_GBps"] / dcfg.peak_bandwidth_GBps
        assert np.allclose(dev["dram_rank_busy_fraction"], util / dcfg.ranks, rtol=1e-9)
        if name == "cosmos":
            assert (dev["dram_bus_busy_fraction"] < 0.5 * util).all()
        else:
            assert np.allclose(dev["dram_bus_busy_fraction"], util, rtol=1e-9)


def _deep_like(seed=5):
    # DEEP-like: 96-dim float32 = 384-byte vectors (6 lines), 64-entry adjacency lists, ~40
    # vectors read per expanded node (big-ann-benchmarks DiskANN: 2,268 distances / 56 node
    # reads per query at one billion points; docs/design.md, modeling notes)
    return make_trace(num_queries=128, num_clusters=8, cluster_size=400, probes=2, hops=6,
                      reads_per_hop=40, dim=96, vector_bytes=384, max_degree=64, seed=seed)


def _distance_stage_ns(cfg, tr):
    res = simulate(cfg, tr, progress=False)
    s = summary(res)
    return s["breakdown_ns"]["distance"]


def test_rank_pus_speed_up_the_distance_stage_with_two_ranks_only():
    tr = _deep_like()
    for ranks, lo, hi in ((2, 1.6, 2.6), (1, 0.97, 1.03)):
        base = get_preset("cosmos-norank")
        dev = dataclasses.replace(base.device, ranks=ranks)
        norank = dataclasses.replace(base, device=dev, placement="round_robin")
        rank = dataclasses.replace(get_preset("cosmos"), device=dev, placement="round_robin")
        ratio = _distance_stage_ns(norank, tr) / _distance_stage_ns(rank, tr)
        assert lo <= ratio <= hi, (ranks, ratio)


def test_open_loop_poisson_is_seeded_and_deterministic():
    tr = make_trace(num_queries=40, hops=4, reads_per_hop=6, seed=9)
    cfg = get_preset("cosmos")
    a = simulate(cfg, tr, progress=False, mode="open", rate_qps=2e5, seed=1)
    b = simulate(cfg, tr, progress=False, mode="open", rate_qps=2e5, seed=1)
    assert np.array_equal(a.state.q_done, b.state.q_done)
    assert np.array_equal(a.state.q_arrival, b.state.q_arrival)
    gaps = np.diff(a.state.q_arrival) * TCK_PS * 1e-12
    assert 0.5 / 2e5 < gaps.mean() < 2 / 2e5
    with pytest.raises(ValueError, match="rate_qps"):
        simulate(cfg, tr, progress=False, mode="open")


@pytest.mark.parametrize("name,mode", [("base", "closed"), ("cxl-anns", "open"),
                                       ("cosmos", "closed"), ("cosmos", "open")])
def test_windows_of_any_length_up_to_the_read_latency_give_identical_results(name, mode,
                                                                             monkeypatch):
    # The engine advances in windows (engine first, then each channel in turn); a window of
    # one cycle is the plain cycle-by-cycle order, so every window length the engine may
    # choose must reproduce it exactly: completion times, link use and every DRAM counter.
    import cosmos.engine
    from dram import kernel as dk

    tr = make_trace(num_queries=24, hops=4, reads_per_hop=8, seed=5)
    kw = dict(progress=False, mode=mode, rate_qps=3e5 if mode == "open" else None, seed=2)
    runs = []
    for win in (1, 7, cosmos.engine.WIN_MAX):
        monkeypatch.setattr(cosmos.engine, "WIN_MAX", win)
        r = simulate(get_preset(name), tr, **kw)
        runs.append((r.state.q_done.copy(), r.state.link_busy.copy(),
                     np.stack([dk.views(d)["stats"] for d in r.dram_state])))
    assert dram_config_for(get_preset(name)).resolve().read_latency > 7
    for q_done, link, stats in runs[1:]:
        assert np.array_equal(q_done, runs[0][0])
        assert np.array_equal(link, runs[0][1])
        assert np.array_equal(stats, runs[0][2])
    assert runs[0][2].sum() > 0


@pytest.mark.parametrize("name,switch", [("base", False), ("cxl-anns", False),
                                         ("cxl-anns", True)])
def test_response_ring_gives_the_results_of_the_event_heap(name, switch, monkeypatch):
    # Responses whose arrival cycles come in order go to a ring instead of the event heap;
    # the others still go to the heap and the two are merged by request id in each cycle.
    # Without the switch, the device links' return times interleave out of order (here
    # over a thousand responses take the heap), so both paths and their merge run; the
    # results must be those of the heap alone.
    import cosmos.engine
    from dram import kernel as dk

    tr = make_trace(num_queries=24, hops=4, reads_per_hop=8, seed=5)
    cfg = get_preset(name)
    cfg = dataclasses.replace(cfg, switch=dataclasses.replace(cfg.switch, present=switch))
    runs = []
    for ring in (True, False):
        monkeypatch.setattr(cosmos.engine, "RESPONSE_RING", ring)
        r = simulate(cfg, tr, progress=False)
        runs.append((r.state.q_done.copy(), r.state.link_busy.copy(), r.state.task_bd.copy(),
                     np.stack([dk.views(d)["stats"] for d in r.dram_state])))
    for a, b in zip(*runs):
        assert np.array_equal(a, b)
    assert runs[0][0].min() > 0


def test_writable_and_read_only_traces_run_one_compiled_engine():
    """numba types an array with its writability: simulate passes every trace read-only, so a
    trace loaded from a file and one shared read-only (experiments.harness.sim) do not compile the
    engine twice (about a minute each at full scale), and their results are the same."""
    from cosmos import engine, program
    from cosmos.trace_input import as_trace

    tr = as_trace(make_trace(num_queries=6, hops=3, reads_per_hop=4, seed=3))
    ro = tr.read_only()
    assert tr.read_node.flags.writeable and not ro.read_node.flags.writeable
    assert np.shares_memory(tr.read_node, ro.read_node)
    cfg = get_preset("cosmos")
    a = simulate(cfg, tr, progress=False, specialize=False)
    sigs = (len(engine._run_chunk.signatures), len(program._build.signatures))
    b = simulate(cfg, ro, progress=False, specialize=False)
    assert (len(engine._run_chunk.signatures), len(program._build.signatures)) == sigs
    assert np.array_equal(a.state.q_done, b.state.q_done)
    assert tr.read_node.flags.writeable          # the caller's arrays are left as they were
