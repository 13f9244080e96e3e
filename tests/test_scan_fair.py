"""Scan systems a reviewer accepts (issue 54): the same lookup-table strategy on the host and
near memory, ChamVS's data flow, and the host's stream prefetcher on sequential list reads.

Hand cases: the cost of a list's lookup table under each strategy; the bytes sent down per
device for ChamVS's query broadcast against the query's table; a worked single query of
every new system against its hand sum (the style of tests/test_scan_systems.py); a host read
of n sequential lines with m in flight against the hand recurrence; the strategies compute
the same distances, so the systems share one trace's recall."""

import dataclasses
import json
import math

import numpy as np
import pytest

from cosmos.config import TCK_PS, ns_to_cycles
from cosmos.presets import get_preset, presets_for_index
from cosmos.program import PQ_KSUB, check_message, costs_for
from cosmos.simulate import simulate
from cosmos.systems import LUT_ENTRY_BYTES, Compute, Read, Send, SystemModel, model_for
from cosmos_common import UserError
from tests.test_cosmos_engine import dram_unloaded_read_cycles, link_hops
from cosmos.simulate import dram_config_for
from tests.test_scan_systems import scan_trace_dict, term_read, worked_scan_trace

NEW = ("ivfpq-host-precomputed", "ivfpq-host-precomputed-prefetch", "ivfpq-pnm-chamvs",
       "ivfpq-pnm-chamvs-perlist", "exact-host-prefetch")


def _to_cyc(ghz):
    """core cycles at ``ghz`` -> DRAM cycles (float)"""
    return lambda n: n / ghz * 1000.0 / TCK_PS


def _compute_terms(model, place, costs, counts):
    """Sum of the Compute steps of ``model`` at ``place`` in DRAM cycles (each step rounded
    up, as the engine charges it), ``counts`` giving each count's value."""
    cv = costs._asdict()
    total = 0
    for st in getattr(model, place):
        if isinstance(st, Compute):
            total += math.ceil(sum(cv[t.value] * counts[t.count] for t in st.cost))
    return total


@pytest.mark.parametrize("dim", [128, 96])
def test_a_lists_table_cost_under_each_strategy(dim):
    """Per probed list and per query, the table work each IVF-PQ system declares, against the
    hand formulas from the config fields (pq_m = 16: 4096 entries of dim / 16 dimensions)."""
    pq_m, lut = 16, 16 * PQ_KSUB
    counts = {"one": 1, "lut-entries": lut, "k": 10, "devices-x-k": 10, "lists": 1}
    cfg = get_preset("ivfpq-host")
    h, su = cfg.host, cfg.scan_unit
    hc, sc = _to_cyc(h.clock_GHz), _to_cyc(su.clock_GHz)
    c = costs_for(cfg, dim, 64, pq_m, 4 * dim)
    per_list = math.ceil(lut * hc(dim / pq_m / h.distance_dims_per_cycle))   # host table
    added = math.ceil(lut * hc(1 / h.lut_add_entries_per_cycle))           # term table added
    built = lut * sc(dim / pq_m / su.lut_build_macs_per_cycle)             # on the device
    load = sc(su.lut_load_cycles)
    merge_h = math.ceil(10 * hc(h.merge_cycles_per_result))

    def model(name):
        return model_for(get_preset(name))

    # ivfpq-host: a whole table per probed list, nothing per query
    assert _compute_terms(model("ivfpq-host"), "scan", c, counts) == per_list
    assert _compute_terms(model("ivfpq-host"), "merge", c, counts) == merge_h
    # ivfpq-host-precomputed: per list the term table added; one query table per query
    for name in ("ivfpq-host-precomputed", "ivfpq-host-precomputed-prefetch"):
        assert _compute_terms(model(name), "scan", c, counts) == added
        assert _compute_terms(model(name), "merge", c, counts) == per_list + merge_h
    # ivfpq-pnm: the query's table on the host's I/O agent, the unit's table load per list
    assert _compute_terms(model("ivfpq-pnm"), "dispatch", c, counts) == per_list
    assert _compute_terms(model("ivfpq-pnm"), "scan", c, counts) == math.ceil(load)
    # ChamVS flow, precomputed: one query table built on each device, the load per list
    m = model("ivfpq-pnm-chamvs")
    assert _compute_terms(m, "dispatch", c, counts) == 0
    assert _compute_terms(m, "device_done", c, counts) == math.ceil(built)
    assert _compute_terms(m, "scan", c, counts) == math.ceil(load)
    # ChamVS flow, per list: a whole table built on the device per probed list, then loaded
    m = model("ivfpq-pnm-chamvs-perlist")
    assert _compute_terms(m, "scan", c, counts) == math.ceil(built + load)
    assert _compute_terms(m, "device_done", c, counts) == 0
    # with the defaults: precomputed tables cost the host half (dim 128) or two thirds
    # (dim 96) of a per-list table per probed list
    assert added / per_list == pytest.approx(h.distance_dims_per_cycle
                                             / h.lut_add_entries_per_cycle / (dim / pq_m),
                                             rel=1e-3)


def test_bytes_sent_down_chamvs_broadcast_against_the_querys_table():
    """Per device and query: ivfpq-pnm sends the query's table (pq_m x 256 float32 = 16 KiB at
    pq_m 16) and the list ids; ChamVS's flow sends the query vector and the list ids. Checked
    on the declarations and on the worked query's device-link bytes."""
    pq_m, lists = 16, 3
    lut = pq_m * PQ_KSUB
    for dim, vb in ((128, 512), (96, 384)):                 # float32 vectors: dim x 4 bytes
        def payload(name, count_of):
            m = model_for(get_preset(name))
            return sum(check_message(m, "", st, vb, count_of[st.count])
                       for st in m.dispatch if isinstance(st, Send))
        counts = {"lut-entries": lut, "lists": lists, "one": 1}
        assert payload("ivfpq-pnm", counts) == LUT_ENTRY_BYTES * lut + 4 * lists == 16396
        assert payload("ivfpq-pnm-chamvs", counts) == 4 * dim + 4 * lists
        assert payload("ivfpq-pnm-chamvs-perlist", counts) == 4 * dim + 4 * lists
    # the worked query (dim 16, float32: a 64-byte vector; one list, one device)
    L = get_preset("ivfpq-pnm").link

    def msg(p):
        return L.wire_bytes(1 + math.ceil(p / L.slot_bytes))

    down = {}
    for name in ("ivfpq-pnm", "ivfpq-pnm-chamvs"):
        res = simulate(dataclasses.replace(get_preset(name), layout_spread=False),
                       worked_scan_trace("ivfpq"), progress=False,
                       cluster_device=np.zeros(4, np.int64))
        down[name] = float(res.state.link_bytes[:4, 0].sum())
    assert down["ivfpq-pnm"] == pytest.approx(msg(4 * 16 * PQ_KSUB) + msg(4))
    assert down["ivfpq-pnm-chamvs"] == pytest.approx(msg(64) + msg(4))
    assert down["ivfpq-pnm"] / down["ivfpq-pnm-chamvs"] > 100


def hand_latency(cfg):
    """The worked scan query (tests/test_scan_systems.worked_scan_trace: one list of 4 codes
    in one line, node 2 re-ranked, k = 10, dim = pq_m = 16) in DRAM cycles, for the systems
    of issue 54."""
    dram = dram_unloaded_read_cycles(cfg)
    h, su, L = cfg.host, cfg.scan_unit, cfg.link
    hc, sc = _to_cyc(h.clock_GHz), _to_cyc(su.clock_GHz)
    down, up = link_hops(cfg)

    def msg(payload):
        return L.wire_bytes(1 + math.ceil(payload / L.slot_bytes))

    k, dim, pq_m, lut = 10, 16, 16, 16 * PQ_KSUB
    dist = hc(dim / h.distance_dims_per_cycle + h.distance_overhead_cycles)
    merge = math.ceil(k * hc(h.merge_cycles_per_result))
    if cfg.kind.startswith("exact-host"):
        return None                     # tests/test_scan_systems.hand_latency's exact-host
    if "host" in cfg.kind:
        lat = ns_to_cycles(h.onchip_latency_ns)
        req, data = L.wire_bytes(L.request_slots), L.wire_bytes(L.data_slots)

        def read(t):
            return up(down(t + lat, req) + dram, data) + lat

        code = hc(pq_m / h.adc_lookups_per_cycle + h.scan_item_overhead_cycles)
        t = math.ceil(lut * hc(1 / h.lut_add_entries_per_cycle))     # the list's terms added
        t = math.ceil(read(t) + 4 * code)                             # 4 codes, one line
        t = math.ceil(read(t) + dist)                                 # re-rank node 2
        t += math.ceil(lut * hc(dim / pq_m / h.distance_dims_per_cycle))   # the query table
        return t + merge
    dl = ns_to_cycles(cfg.device.onchip_latency_ns)
    pipe = math.ceil(sc(su.pipeline_cycles))
    dot = sc(64 / su.dot_bytes_per_cycle)
    build = lut * sc(dim / pq_m / su.lut_build_macs_per_cycle)
    t = down(0, msg(64))                                              # the query vector
    t = down(t, msg(4))                                               # the list id
    codes_dram = dram
    if cfg.kind.endswith("perlist"):
        t += math.ceil(build + sc(su.lut_load_cycles))                # the list's table
    else:
        t = term_read(cfg, t, dl, dram, lut)                          # its term table added
        t += math.ceil(sc(su.lut_load_cycles))                        # the table load
        codes_dram = dram - dram_config_for(cfg).timing["nRCD"]       # row opened by it
    t = math.ceil(t + dl + codes_dram + dl + 4 * sc(1 / su.codes_per_cycle)) + pipe  # codes
    t = math.ceil(t + dl + dram + dl + dot) + pipe                    # re-rank node 2
    if not cfg.kind.endswith("perlist"):
        t += math.ceil(build)                                         # the query's table
    t = up(t, msg(8 * k))                                             # local top-k up
    return t + merge


@pytest.mark.parametrize("name", [n for n in NEW if n.startswith("ivfpq")])
def test_single_query_latency_equals_hand_sum(name):
    cfg = dataclasses.replace(get_preset(name), layout_spread=False)
    res = simulate(cfg, worked_scan_trace("ivfpq"), progress=False,
                   cluster_device=np.zeros(4, np.int64))
    assert res.state.q_done[0] == hand_latency(cfg)


def one_list_trace(n):
    """One query scanning one list of ``n`` 64-byte vectors (exact scan, dim 16, k = 1)."""
    d = worked_scan_trace("exact")
    meta = dict(json.loads(str(d["meta"])), n=4 * n, k=1)
    return dict(d, meta=np.array(json.dumps(meta)), cluster_ptr=np.arange(5) * n,
                cluster_nodes=np.arange(4 * n), scan_count=np.array([n]))


def stream_hand(cfg, n, m):
    """A host read of ``n`` sequential lines with ``m`` in flight, by hand: line i is issued
    at once for i < m, else when line i - m is back; each takes the unloaded round trip R
    (core -> port -> switch -> link -> a precharged bank -> back); the core spends c cycles
    on each returned line in turn (its distance); then the top-1 merge."""
    h, L = cfg.host, cfg.link
    hc = _to_cyc(h.clock_GHz)
    down, up = link_hops(cfg)
    lat = ns_to_cycles(h.onchip_latency_ns)
    R = up(down(lat, L.wire_bytes(L.request_slots)) + dram_unloaded_read_cycles(cfg),
           L.wire_bytes(L.data_slots)) + lat
    c = hc(16 / h.distance_dims_per_cycle + h.distance_overhead_cycles)
    back, p = [], 0.0
    for i in range(n):
        back.append((0 if i < m else back[i - m]) + R)
        p = max(p, back[i]) + c
    return math.ceil(p) + math.ceil(hc(h.merge_cycles_per_result))


#: The hand recurrence takes every line's round trip at the unloaded row-miss latency; a
#: sequential stream hits open rows after its first lines, so the simulated read is at most
#: the hand figure and at most this much faster (measured: 0 to 5 %)
STREAM_TOLERANCE = 0.08


@pytest.mark.parametrize("m", [8, 16, 20, 32])
def test_prefetch_mlp_on_a_short_sequential_read(m):
    """exact-host-prefetch keeps host.stream_prefetch_lines in flight on a list read: the
    same run as exact-host with that many demand misses, and the hand recurrence within
    STREAM_TOLERANCE."""
    base = dataclasses.replace(get_preset("exact-host"), layout_spread=False)
    pf = dataclasses.replace(get_preset("exact-host-prefetch"), layout_spread=False)
    pf = dataclasses.replace(pf, host=dataclasses.replace(
        pf.host, stream_prefetch_lines=m, outstanding_misses=min(m, 16)))
    as_misses = dataclasses.replace(base, host=dataclasses.replace(base.host,
                                                                   outstanding_misses=m))
    for n in (1, 8, 40, 100):
        kw = dict(progress=False, cluster_device=np.zeros(4, np.int64))
        t = simulate(pf, one_list_trace(n), **kw).state.q_done[0]
        assert t == simulate(as_misses, one_list_trace(n), **kw).state.q_done[0]
        hand = stream_hand(pf, n, m)
        assert (1 - STREAM_TOLERANCE) * hand <= t <= hand, (n, m, t, hand)


def test_prefetch_defaults_and_what_they_change():
    """The defaults: 20 lines ahead (Intel's L2 streamer) against 16 demand misses; a list of
    40 lines reads faster with prefetch, a lone line not at all; re-rank reads keep the
    core's limit."""
    cfg = get_preset("exact-host-prefetch")
    assert cfg.host.stream_prefetch_lines == 20 and cfg.host.outstanding_misses == 16
    c = costs_for(cfg, 16, 64, 0, 64)
    assert c.host_stream_mlp == 20 and c.host_mlp == 16
    kw = dict(progress=False, cluster_device=np.zeros(4, np.int64))
    t = {name: [simulate(dataclasses.replace(get_preset(name), layout_spread=False),
                         one_list_trace(n), **kw).state.q_done[0] for n in (1, 40)]
         for name in ("exact-host", "exact-host-prefetch")}
    assert t["exact-host"][0] == t["exact-host-prefetch"][0]
    assert t["exact-host-prefetch"][1] < t["exact-host"][1]
    for name in ("ivfpq-host-precomputed-prefetch", "exact-host-prefetch"):
        m = model_for(get_preset(name))
        for place, _, st in m.steps():
            if isinstance(st, Read):
                assert st.mlp == ("host_stream_mlp" if place == "scan" else None)
    # a stream limit on a random read, or a name that is no in-flight limit, is refused
    with pytest.raises(UserError, match=r"rerank\[0\]\.mlp: a read's own in-flight limit is "
                                        r"for a sequential stream"):
        SystemModel("x", "", "host", index="exact",
                    scan=(Read("list-vectors", "host", "distance"),),
                    rerank=(Read("rerank-vectors", "host", "distance",
                                 mlp="host_stream_mlp"),)).validate()
    with pytest.raises(UserError, match=r"scan\[0\]\.mlp: unknown 'host_dist'"):
        SystemModel("x", "", "host", index="exact",
                    scan=(Read("list-vectors", "host", "distance", mlp="host_dist"),)).validate()


def test_the_strategies_compute_the_same_distances_so_the_same_recall():
    """faiss's IVF-PQ by residual: ||q - c - y||^2 per list with a table per list equals the
    precomputed form ||q - c||^2 + (||y||^2 + 2 <c, y>) - 2 <q, y> summed over the sub-spaces
    (the list's term table plus the query's table), so the ranking and the recall are the
    same; every IVF-PQ system replays the same graphs.ivfpq traces."""
    rng = np.random.default_rng(0)
    dim, pq_m, ksub, lists = 32, 8, 256, 5
    ds = dim // pq_m
    q = rng.normal(size=dim)
    cents = rng.normal(size=(lists, dim))
    sub = rng.normal(size=(pq_m, ksub, ds))                 # sub-quantizer centroids
    codes = rng.integers(0, ksub, size=(lists, 50, pq_m))
    y_dot = np.einsum("mkd,mkd->mk", sub, sub)
    q_tab = np.einsum("md,mkd->mk", q.reshape(pq_m, ds), sub)            # the query's table
    per_list, pre = [], []
    for li in range(lists):
        r = (q - cents[li]).reshape(pq_m, ds)
        table = ((r[:, None, :] - sub) ** 2).sum(-1)                     # per-list table
        term = y_dot + 2 * np.einsum("md,mkd->mk", cents[li].reshape(pq_m, ds), sub)
        pre_table = term - 2 * q_tab                                     # term + query table
        idx = (np.arange(pq_m), codes[li])
        per_list.append(table[idx].sum(-1))
        pre.append(((q - cents[li]) ** 2).sum() + pre_table[idx].sum(-1))
    a, b = np.concatenate(per_list), np.concatenate(pre)
    assert np.allclose(a, b)
    assert np.array_equal(np.argsort(a, kind="stable")[:10], np.argsort(b, kind="stable")[:10])
    # the systems of each strategy and flow replay the same traces
    ivf = presets_for_index("ivfpq")
    assert set(NEW[:4]) <= set(ivf) and {"ivfpq-host", "ivfpq-pnm"} <= set(ivf)
    assert "exact-host-prefetch" in presets_for_index("exact")
    from experiments.figures import recall_qps as R
    from experiments.figures.parts.recall_winners import SYSTEMS
    assert set(SYSTEMS["ivfpq"]) == set(ivf) and set(SYSTEMS["exact"]) == set(
        presets_for_index("exact"))
    for _, host, pnm in R.SAME_STRATEGY:
        assert model_for(get_preset(host)).index == model_for(get_preset(pnm)).index == "ivfpq"


def test_same_strategy_pairs_in_the_summary():
    """summary.md's same-strategy table pairs host and near memory at the same trace."""
    import pandas as pd

    from experiments.figures import recall_qps as R
    rows = []
    for s, qps in (("ivfpq-host", 100.0), ("ivfpq-pnm-chamvs-perlist", 300.0),
                   ("ivfpq-host-precomputed", 200.0), ("ivfpq-pnm", 400.0),
                   ("ivfpq-pnm-chamvs", 800.0), ("ivfpq-host-precomputed-prefetch", 250.0),
                   ("exact-host", 10.0), ("exact-host-prefetch", 12.0)):
        rows.append(dict(dataset="sift", system=s, num_probes=4, rerank=0, recall=0.7,
                         qps=qps, latency_unloaded_mean_ns=1000.0))
    lines = "\n".join(R._same_strategy_md(pd.DataFrame(rows)))
    assert "| sift | table per probed list | ivfpq-host | ivfpq-pnm-chamvs-perlist | 3.00x to " \
           "3.00x |" in lines
    assert "| ivfpq-host-precomputed | ivfpq-pnm | 2.00x to 2.00x |" in lines
    assert "| ivfpq-host-precomputed | ivfpq-pnm-chamvs | 4.00x to 4.00x |" in lines
    assert "| sift | exact-host | exact-host-prefetch | 1.20x to 1.20x |" in lines


#: the IVF-PQ systems with precomputed tables on each side (faiss use_precomputed_table)
PRECOMPUTED_HOST = ("ivfpq-host-precomputed", "ivfpq-host-precomputed-prefetch")
PRECOMPUTED_PNM = ("ivfpq-pnm", "ivfpq-pnm-chamvs")


@pytest.mark.parametrize("pq_m", [16, 8])
def test_near_memory_precomputed_tables_read_the_term_table_from_the_device(pq_m):
    """Issue 54: with precomputed tables the near-memory unit reads each probed list's term
    table (pq_m x 256 float32) from its device's DRAM, at addresses of its own after the
    list region, and adds it as the host adds the same table: per probed list, exactly
    table bytes / 64 more requests than the same scan without it (ivfpq-pnm-chamvs-perlist
    reads the same codes and re-rank vectors, and builds its tables instead), the same table
    bytes as the host's add, and the same recall (the same trace)."""
    from cosmos.layout import LINE_BYTES
    from cosmos.program import OBJ_TERMS, STEP_MEM, term_table_bytes
    from cosmos.systems import TERM_OBJECT

    table = pq_m * PQ_KSUB * LUT_ENTRY_BYTES
    assert term_table_bytes(pq_m) == table == {16: 16384, 8: 8192}[pq_m]
    d = scan_trace_dict("ivfpq", num_queries=5, pq_m=pq_m, dim=32)
    probes = np.diff(d["query_ptr"])
    kw = dict(progress=False)
    base = simulate(get_preset("ivfpq-pnm-chamvs-perlist"), d, **kw)
    for name in PRECOMPUTED_PNM:
        res = simulate(get_preset(name), d, **kw)
        pg, lay = res.program, res.layout
        extra = pg.requests_per_query() - base.program.requests_per_query()
        assert np.array_equal(extra, probes * table // LINE_BYTES)       # 256 at pq_m 16
        assert res.extra["requests"] - base.extra["requests"] == int(extra.sum())
        # each term read: one list's whole table, from its own address on the list's device
        terms = np.flatnonzero((pg.step_kind == STEP_MEM)
                               & (pg.cls_obj_src[pg.step_class] == OBJ_TERMS))
        assert len(terms) == len(d["search_cluster"])
        assert np.all(pg.step_nreq[terms] == table // LINE_BYTES)
        n, S = len(d["cluster_nodes"]), len(d["search_cluster"])
        lists = pg.step_obj[terms] - n - S
        assert sorted(lists.tolist()) == sorted(d["search_cluster"].tolist())
        assert np.array_equal(pg.node_addr[pg.step_obj[terms]], lay.term_addr[lists])
        assert np.array_equal(pg.step_dev[terms], res.cluster_device[lists])
        assert np.all(pg.step_link[terms] == 0)              # near memory: nothing crosses
        # the term region: after every list of the device, one table per list, then the
        # embedding region (the re-rank vectors) after it
        dev = res.cluster_device
        ptr = d["cluster_ptr"]
        list_end = (lay.list_addr + np.diff(ptr) * pq_m).max()
        for dv in range(4):
            mine = np.flatnonzero(dev == dv)
            got = np.sort(lay.term_addr[mine].astype(np.int64))
            assert np.array_equal(np.diff(got), np.full(len(mine) - 1, table))
            assert got[0] >= list_end and got[0] % LINE_BYTES == 0
        assert lay.vector_addr.min() >= lay.term_addr.max() + table
        # the add: per returned line, its 16 entries at scan_unit.lut_add_entries_per_cycle
        su = get_preset(name).scan_unit
        c = costs_for(get_preset(name), 32, 10, pq_m, 128)
        assert c.scan_lut_add == pytest.approx(_to_cyc(su.clock_GHz)(
            1 / su.lut_add_entries_per_cycle))
        assert np.allclose(pg.step_compute_line[terms], 16 * c.scan_lut_add)
        assert su.lut_add_entries_per_cycle == 16.0
        # near memory and host add the same table per probed list: the host's add counts
        # lut-entries entries of LUT_ENTRY_BYTES, the unit reads that many bytes
        for host in PRECOMPUTED_HOST:
            m = model_for(get_preset(host))
            adds = [t for st in m.scan if isinstance(st, Compute) for t in st.cost
                    if t.value == "host_lut_add"]
            assert [t.count for t in adds] == ["lut-entries"]
            assert pq_m * PQ_KSUB * LUT_ENTRY_BYTES == table_bytes_read(pg, terms) // len(terms)
            assert not m.reads_term_tables              # its tables are in host DRAM
        assert model_for(get_preset(name)).reads_term_tables
    for name in ("ivfpq-host", "ivfpq-pnm-chamvs-perlist") + PRECOMPUTED_HOST:
        assert not any(isinstance(st, Read) and st.objects == TERM_OBJECT
                       for _, _, st in model_for(get_preset(name)).steps())
    assert base.layout.term_addr is None                # no term region where none is read
    # a term-table read belongs to an IVF-PQ index
    with pytest.raises(UserError, match=r"scan\[1\]\.objects: 'list-terms': only an IVF-PQ "
                                        r"index has precomputed term tables"):
        SystemModel("x", "", "host", index="exact",
                    scan=(Read("list-vectors", "host", "distance"),
                          Read("list-terms", "host", "distance"))).validate()


def table_bytes_read(pg, steps):
    """Bytes the MEM steps ``steps`` of program ``pg`` read (64-byte lines)."""
    return int(pg.step_nreq[steps].sum()) * 64
