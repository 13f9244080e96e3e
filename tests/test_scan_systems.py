"""Scan systems (ivfpq-host, ivfpq-pnm, exact-host, exact-pnm) on scan traces: a worked
single query per system against its hand sum, bytes read per query, the list layout,
determinism and the refusal lines."""

import dataclasses
import json
import math

import numpy as np
import pytest

from cosmos.config import TCK_PS, ns_to_cycles
from cosmos.layout import LINE_BYTES, lines_for
from cosmos.metrics import per_query, query_instance_requests
from cosmos.presets import get_preset
from cosmos.program import OBJ_RANGE, OBJ_READS, STEP_MEM
from cosmos.simulate import dram_config_for, simulate
from cosmos.systems import (Compute, Cost, Read, Send, SystemModel, model_for,
                            systems_for_index)
from cosmos_common import UserError
from tests.cosmos_helpers import make_trace
from tests.test_cosmos_engine import dram_unloaded_read_cycles, link_hops, worked_trace

SCAN_SYSTEMS = ("ivfpq-host", "ivfpq-pnm", "exact-host", "exact-pnm")


def worked_scan_trace(kind):
    """One query probing list 0 (positions 0..7 of 4 lists of 8, dim 16, float32 vectors of
    64 B): it scans 4 PQ codes of 16 B (``kind="ivfpq"``, pq_m 16: one 64-B line) and
    re-ranks node 2 (one 64-B vector); or (``"exact"``) one full vector (one line)."""
    pq = kind == "ivfpq"
    meta = dict(dataset="worked", n=32, dim=16, dtype="float32", metric="l2", vector_bytes=64,
                max_degree=0, cand_list_len=10, num_clusters=4, num_probes=1, k=10,
                recall=1.0, seed=0, num_queries=1, format_version=1, index_kind=kind,
                code_bytes=16 if pq else 64, pq_m=16 if pq else 0, rerank=10 if pq else 0)
    return dict(
        meta=np.array(json.dumps(meta)), cluster_ptr=np.arange(5) * 8,
        cluster_nodes=np.arange(32), centroids=np.zeros((4, 16), np.float32),
        query_ptr=np.array([0, 1]), search_cluster=np.array([0]), search_entry=np.array([-1]),
        search_hop_ptr=np.array([0, 0]), hop_node=np.zeros(0, np.int32),
        hop_degree=np.zeros(0, np.int32), hop_read_ptr=np.array([0]),
        read_node=np.zeros(0, np.int32), hop_cand_inserts=np.zeros(0, np.int32),
        scan_first=np.array([0]), scan_count=np.array([4 if pq else 1]),
        rerank_ptr=np.array([0, 1 if pq else 0]),
        rerank_node=np.array([2] if pq else [], np.int32))


def scan_trace_dict(kind="ivfpq", num_queries=6, num_lists=8, probes=3, pq_m=16, dim=32,
                    rerank=5, seed=1):
    """A seeded scan trace: lists of random sizes, each query scanning ``probes`` whole
    lists and re-ranking ``rerank`` random nodes of them (float32 vectors)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(3, 40, num_lists)
    ptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    n = int(ptr[-1])
    nodes = rng.permutation(n).astype(np.int32)
    sc = np.concatenate([rng.choice(num_lists, probes, replace=False)
                         for _ in range(num_queries)])
    rr = [] if kind == "exact" else [
        rng.choice(np.concatenate([nodes[ptr[c]:ptr[c + 1]] for c in sc[q * probes:(q + 1) *
                                                                        probes]]), rerank,
                   replace=False) for q in range(num_queries)]
    vb = 4 * dim
    meta = dict(dataset="scan", n=n, dim=dim, dtype="float32", metric="l2", vector_bytes=vb,
                max_degree=0, cand_list_len=max(10, rerank), num_clusters=num_lists,
                num_probes=probes, k=10, recall=float("nan"), seed=seed,
                num_queries=num_queries, format_version=1, index_kind=kind,
                code_bytes=pq_m if kind == "ivfpq" else vb, pq_m=pq_m if kind == "ivfpq" else 0,
                rerank=rerank if kind == "ivfpq" else 0)
    S = num_queries * probes
    return dict(
        meta=np.array(json.dumps(meta)), cluster_ptr=ptr, cluster_nodes=nodes,
        centroids=rng.normal(size=(num_lists, dim)).astype(np.float32),
        query_ptr=np.arange(num_queries + 1, dtype=np.int64) * probes,
        search_cluster=sc.astype(np.int32), search_entry=np.full(S, -1, np.int32),
        search_hop_ptr=np.zeros(S + 1, np.int64), hop_node=np.zeros(0, np.int32),
        hop_degree=np.zeros(0, np.int32), hop_read_ptr=np.zeros(1, np.int64),
        read_node=np.zeros(0, np.int32), hop_cand_inserts=np.zeros(0, np.int32),
        scan_first=ptr[sc], scan_count=np.diff(ptr)[sc],
        rerank_ptr=np.arange(num_queries + 1, dtype=np.int64) * (len(rr[0]) if rr else 0),
        rerank_node=np.concatenate(rr).astype(np.int32) if rr else np.zeros(0, np.int32))


def term_read(cfg, t, dl, dram, lut):
    """The cycle a near-memory unit that starts reading a probed list's precomputed term table
    (``lut`` float32 entries, 16 per 64-byte line) at ``t`` has added its last line (issue 54):
    the first line back after the unloaded round trip (device on-chip latency, a precharged
    bank, back), then one line per ``16 / scan_unit.lut_add_entries_per_cycle`` unit cycles.
    Compute bound: every later line is back before the unit needs it (the round trip, 127
    cycles at the defaults, is shorter than the 64 lines in flight take to add, 308)."""
    su = cfg.scan_unit
    lines = lut * 4 // 64
    per_line = 16 / su.lut_add_entries_per_cycle / su.clock_GHz * 1000.0 / TCK_PS
    assert dl + dram + dl < su.outstanding_requests * per_line      # compute bound
    return math.ceil(t + dl + dram + dl + lines * per_line)


def hand_latency(cfg):
    """The worked scan query's latency in DRAM cycles, step by step from the configured
    figures (the style of tests/test_cosmos_engine.py)."""
    dram = dram_unloaded_read_cycles(cfg)
    to_cyc = 1000.0 / TCK_PS
    h, su, L = cfg.host, cfg.scan_unit, cfg.link

    def hc(n):
        return n / h.clock_GHz * to_cyc

    def sc(n):
        return n / su.clock_GHz * to_cyc

    down, up = link_hops(cfg)        # host -> switch -> device and back

    def msg(payload):  # wire bytes: a header slot + whole 16-B slots
        return L.wire_bytes(1 + math.ceil(payload / L.slot_bytes))

    k, dim, pq_m, lut = 10, 16, 16, 16 * 256
    pq = cfg.kind.startswith("ivfpq")
    dist = hc(dim / h.distance_dims_per_cycle + h.distance_overhead_cycles)   # one vector
    if cfg.kind.endswith("-host"):
        lat = ns_to_cycles(h.onchip_latency_ns)
        req, data = L.wire_bytes(L.request_slots), L.wire_bytes(L.data_slots)

        def read(t):  # one 64-B line from the CXL device, back at the core
            return up(down(t + lat, req) + dram, data) + lat

        t = 0
        if pq:
            t += math.ceil(lut * hc(dim / pq_m / h.distance_dims_per_cycle))  # the list's LUT
            code = hc(pq_m / h.adc_lookups_per_cycle + h.scan_item_overhead_cycles)
            t = math.ceil(read(t) + 4 * code)            # one line of 4 codes over the link
            t = math.ceil(read(t) + dist)                # re-rank: node 2's vector
        else:
            t = math.ceil(read(t) + dist)                # one full vector over the link
        return t + math.ceil(k * hc(h.merge_cycles_per_result))           # top-k
    # near memory: the I/O agent dispatches, a device context drives the scan unit
    dl = ns_to_cycles(cfg.device.onchip_latency_ns)
    pipe = math.ceil(sc(su.pipeline_cycles))
    dot = sc(64 / su.dot_bytes_per_cycle)                  # one 64-B vector through the pipe
    if pq:
        t = math.ceil(lut * hc(dim / pq_m / h.distance_dims_per_cycle))  # the query's LUT
        t = down(t, msg(4 * lut))                                          # LUT down
        t = down(t, msg(4))                                                # list id down
        t = term_read(cfg, t, dl, dram, lut)                 # the list's term table added
        t += math.ceil(sc(su.lut_load_cycles))                             # LUT into the PEs
        # the codes' line shares its bank's row with the term table's (opened by that read)
        hit = dram - dram_config_for(cfg).timing["nRCD"]
        t = math.ceil(t + dl + hit + dl + 4 * sc(1 / su.codes_per_cycle)) + pipe  # codes
        t = math.ceil(t + dl + dram + dl + dot) + pipe                     # re-rank node 2
    else:
        t = down(0, msg(64))                                               # query vector
        t = down(t, msg(4))                                                # list id
        t = math.ceil(t + dl + dram + dl + dot) + pipe                     # one vector
    t = up(t, msg(8 * k))                                                  # local top-k up
    return t + math.ceil(1 * k * hc(h.merge_cycles_per_result))           # merge (1 device)


def _kind(name):
    return name.split("-")[0]


@pytest.mark.parametrize("name", SCAN_SYSTEMS)
def test_single_query_latency_equals_hand_sum(name):
    cfg = dataclasses.replace(get_preset(name), layout_spread=False)
    res = simulate(cfg, worked_scan_trace(_kind(name)), progress=False,
                   cluster_device=np.zeros(4, np.int64))
    assert res.state.q_done[0] == hand_latency(cfg)
    row = per_query(res).iloc[0]
    parts = sum(row[f"{c}_ns"] for c in ("traversal", "distance", "candidate", "transfer",
                                         "queue"))
    assert parts == pytest.approx(row["latency_ns"])


@pytest.mark.parametrize("name", SCAN_SYSTEMS)
def test_requests_per_query_are_the_probed_lists_codes_and_the_rerank_reads(name):
    kind = _kind(name)
    d = scan_trace_dict(kind)
    meta = json.loads(str(d["meta"]))
    cb, vb = meta["code_bytes"], meta["vector_bytes"]
    res = simulate(get_preset(name), d, progress=False)
    pg = res.program
    Q = len(d["query_ptr"]) - 1
    codes = np.add.reduceat(d["scan_count"], d["query_ptr"][:-1])
    rr = np.diff(d["rerank_ptr"])
    # lists start on a line, so a whole-list scan reads ceil(codes x code size / 64) lines
    lines = np.add.reduceat(-(-(d["scan_count"] * cb) // LINE_BYTES), d["query_ptr"][:-1])
    expect = lines + rr * lines_for(vb)
    # ivfpq-pnm's precomputed tables: per probed list its term table from the device DRAM,
    # pq_m x 256 float32 (issue 54; tests/test_scan_fair.py)
    terms = (np.diff(d["query_ptr"]) * meta["pq_m"] * 256 * 4 // LINE_BYTES
             if model_for(get_preset(name)).reads_term_tables else 0)
    expect = expect + terms
    assert np.array_equal(pg.requests_per_query(), expect)
    # bytes: the codes x code size (+ re-rank vectors, + term tables), plus under a line of
    # padding per list
    data = codes * cb + rr * vb + terms * LINE_BYTES
    pad = expect * LINE_BYTES - data
    assert np.all(pad >= 0) and np.all(pad < LINE_BYTES * np.diff(d["query_ptr"]))
    assert res.extra["requests"] == int(expect.sum())        # the engine issued them all
    assert res.queries == Q
    # the control variate's per-instance loads are the requests each instance served
    load = query_instance_requests(pg, res.num_instances)
    assert np.array_equal(load.sum(axis=1), expect)
    assert np.array_equal(load.sum(axis=0), res.state.inst_reqs)


def test_scan_reads_follow_the_placement_and_the_list_layout():
    d = scan_trace_dict("ivfpq", num_queries=4)
    res = simulate(get_preset("ivfpq-pnm"), d, progress=False)
    pg, lay, dev = res.program, res.layout, res.cluster_device
    ptr = d["cluster_ptr"]
    # each device's lists in cluster-id order, packed from 0, each from a 64-B boundary
    for dv in range(4):
        mine = np.flatnonzero(dev == dv)
        sizes = -(-(np.diff(ptr)[mine] * 16) // LINE_BYTES) * LINE_BYTES
        assert np.array_equal(lay.list_addr[mine], np.concatenate([[0], np.cumsum(sizes)[:-1]]))
    mem = pg.step_kind == STEP_MEM
    src = pg.cls_obj_src[pg.step_class]
    scans = np.flatnonzero(mem & (src == OBJ_RANGE))
    n = len(d["cluster_nodes"])
    s = pg.step_obj[scans] - n                         # the scan element of each read
    assert np.array_equal(np.sort(s), np.arange(len(d["search_cluster"])))
    sc = d["search_cluster"][s]
    assert np.array_equal(pg.step_dev[scans], dev[sc])                # on the list's device
    assert np.array_equal(pg.node_addr[pg.step_obj[scans]], lay.list_addr[sc])
    assert np.all(pg.step_link[mem] == 0)                 # near memory: nothing crosses
    # re-rank reads on the device holding each candidate, every candidate once
    rr = np.flatnonzero(mem & (src == OBJ_READS))
    vl = lines_for(4 * 32)                            # 128-B vectors of dim 32: 2 lines each
    got = []
    for i in rr:
        nodes = pg.read_node[pg.step_obj[i]:pg.step_obj[i] + pg.step_nreq[i] // vl]
        assert np.all(lay.node_device[nodes] == pg.step_dev[i])
        got.extend(nodes.tolist())
    assert sorted(got) == sorted(d["rerank_node"].tolist())


@pytest.mark.parametrize("name", ["ivfpq-pnm", "exact-host"])
def test_same_run_twice_is_bit_identical(name):
    d = scan_trace_dict(_kind(name), num_queries=8)
    a = simulate(get_preset(name), d, progress=False)
    b = simulate(get_preset(name), d, progress=False)
    assert np.array_equal(a.state.q_done, b.state.q_done)
    def simulated(res):  # the summary without the wall-clock figures of the run itself
        return json.dumps({k: v for k, v in res.summary().items() if "wall" not in k},
                          default=str)

    assert simulated(a) == simulated(b)
    assert np.array_equal(a.program.step_obj, b.program.step_obj)
    # the first queries of a scan trace are a scan trace of their own (their re-rank reads)
    head = simulate(get_preset(name), d, progress=False, num_queries=3)
    assert head.queries == 3
    assert np.array_equal(head.program.requests_per_query(), a.program.requests_per_query()[:3])


def test_a_trace_of_the_wrong_family_is_refused_in_one_line(tmp_path):
    graph = make_trace(num_queries=2, num_clusters=4, cluster_size=20, hops=2, reads_per_hop=2)
    with pytest.raises(UserError, match=r"^trace: a 'graph' trace \(hops\) cannot be replayed "
                                        r"by system 'ivfpq-pnm', which replays 'ivfpq' traces; "
                                        r"systems for 'graph' traces: base, dram-only, "
                                        r"cxl-anns, "):
        simulate(get_preset("ivfpq-pnm"), graph, progress=False)
    # the preset names --systems accepts, and the name the user gave (issue 55)
    from cosmos.systems import model_for
    from cosmos.trace_input import as_trace, check_trace_for
    with pytest.raises(UserError, match=r"cannot be replayed by system 'base', which replays "
                                        r"'graph' traces; systems for 'ivfpq' traces: "
                                        r"ivfpq-host, ivfpq-pnm, ivfpq-host-precomputed, "):
        check_trace_for(model_for(get_preset("base")), as_trace(scan_trace_dict("ivfpq")),
                        system="base")
    path = tmp_path / "scan.npz"
    np.savez(path, **scan_trace_dict("ivfpq"))
    with pytest.raises(UserError, match=rf"^{path}: an 'ivfpq' trace \(IVF-PQ: scan elements "
                                        r"of PQ codes\) cannot be replayed by system 'cosmos', "
                                        r"which replays 'graph' traces; systems for 'ivfpq' "
                                        r"traces: ivfpq-host, ivfpq-pnm, "):
        simulate(get_preset("cosmos"), path, progress=False)
    with pytest.raises(UserError, match=r"an 'ivfpq' trace .* by system 'exact-pnm'"):
        simulate(get_preset("exact-pnm"), str(path), progress=False)
    with pytest.raises(UserError, match=r"an 'exact' trace .* by system 'ivfpq-host'"):
        simulate(get_preset("ivfpq-host"), scan_trace_dict("exact"), progress=False)


def test_bad_scan_traces_are_refused_naming_the_array():
    d = scan_trace_dict("ivfpq")
    bad = dict(d, scan_count=d["scan_count"] + 1)
    with pytest.raises(ValueError, match=r"scan element 0 .* leaves its list"):
        simulate(get_preset("ivfpq-pnm"), bad, progress=False)
    meta = json.loads(str(d["meta"]))
    bad = dict(d, meta=np.array(json.dumps(dict(meta, code_bytes=8))))
    with pytest.raises(ValueError, match=r"meta 'code_bytes' 8 must equal meta 'pq_m' 16"):
        simulate(get_preset("ivfpq-host"), bad, progress=False)
    rn = d["rerank_node"].copy()
    outside = np.setdiff1d(d["cluster_nodes"], np.concatenate(
        [d["cluster_nodes"][d["cluster_ptr"][c]:d["cluster_ptr"][c + 1]]
         for c in d["search_cluster"][:3]]))[0]
    rn[0] = outside                                  # not in a list query 0 probed
    with pytest.raises(ValueError, match=rf"rerank_node\[0\] = {outside} \(list \d+\) is not "
                                         r"in a list its query 0 probed"):
        simulate(get_preset("ivfpq-pnm"), dict(d, rerank_node=rn), progress=False)
    bad = {k: v for k, v in d.items() if k != "rerank_ptr"}
    with pytest.raises(ValueError, match=r"lacks its scan array 'rerank_ptr'"):
        simulate(get_preset("ivfpq-host"), bad, progress=False)


def test_scan_declarations_the_hardware_cannot_do_are_refused():
    codes = Read("list-codes", "scan-unit", "distance")
    merge = (Compute("candidate", (Cost("host_merge", "k"),)),)
    with pytest.raises(UserError, match=r"'x': adjacency: a scan \(index='ivfpq'\) has no hops"):
        SystemModel("x", "", "gpc", index="ivfpq", scan=(codes,), merge=merge,
                    adjacency=(Read("adjacency", "gpc", "traversal"),)).validate()
    with pytest.raises(UserError, match=r"'x': scan: a scan of an 'ivfpq' index reads its "
                                        r"lists: declare a Read of 'list-codes'"):
        SystemModel("x", "", "gpc", index="ivfpq", merge=merge).validate()
    with pytest.raises(UserError, match=r"scan\[1\]\.objects: 'list-vectors': a scan of an "
                                        r"'ivfpq' index reads 'list-codes'"):
        SystemModel("x", "", "gpc", index="ivfpq",
                    scan=(codes, Read("list-vectors", "scan-unit", "distance"))).validate()
    with pytest.raises(UserError, match=r"scan\[0\]\.unit: 'scan-unit' cannot serve a search "
                                        r"that runs on the host"):
        SystemModel("x", "", "host", index="ivfpq", scan=(codes,)).validate()
    with pytest.raises(UserError, match=r"rerank\[0\]\.count 'lut-entries': not a count at "
                                        r"'rerank'"):
        SystemModel("x", "", "gpc", index="ivfpq", scan=(codes,), rerank=(
            Read("rerank-vectors", "scan-unit", "distance",
                 after=(Cost("scan_pipeline", "lut-entries"),)),)).validate()
    with pytest.raises(UserError, match=r"scan\[0\]\.rank_pus: scan reads on the rank PUs"):
        SystemModel("x", "", "gpc", index="exact",
                    scan=(Read("list-vectors", "gpc", "distance", rank_pus=True),)).validate()
    with pytest.raises(UserError, match=r"'x': scan: a graph search \(index='graph'\) has no "
                                        r"'scan' steps"):
        SystemModel("x", "", "gpc", adjacency=(Read("adjacency", "gpc", "traversal"),),
                    scan=(codes,)).validate()
    with pytest.raises(UserError, match=r"adjacency\[0\]\.unit: the scan unit streams lists"):
        SystemModel("x", "", "gpc",
                    adjacency=(Read("adjacency", "scan-unit", "traversal"),)).validate()
    with pytest.raises(UserError, match=r"index: unknown 'ivf'"):
        SystemModel("x", "", "gpc", index="ivf").validate()
    # the registered scan models and what they replay
    assert systems_for_index("ivfpq") == ("ivfpq-host", "ivfpq-pnm", "ivfpq-host-precomputed",
                                          "ivfpq-host-precomputed-prefetch",
                                          "ivfpq-pnm-chamvs", "ivfpq-pnm-chamvs-perlist")
    assert systems_for_index("exact") == ("exact-host", "exact-pnm", "exact-host-prefetch",
                                          "exact-pnm-batch")
    for name in SCAN_SYSTEMS:
        m = model_for(get_preset(name))
        assert m.index == _kind(name) and m.search_pool == ("gpc" if "pnm" in name else "host")
    assert Send("down").direction == "down"


def test_cli_simulates_a_scan_trace_into_its_results_folder(tmp_path, capsys):
    from cosmos.cli import main

    trace = tmp_path / "ivfpq.npz"
    np.savez(trace, **scan_trace_dict("ivfpq", num_queries=10))
    assert main(["simulate", "--list"]) == 0
    listed = capsys.readouterr().out
    assert all(name in listed for name in SCAN_SYSTEMS)
    out = tmp_path / "res"
    assert main(["simulate", "--systems", "ivfpq-pnm", "--trace", str(trace), "--out", str(out),
                 "--no-progress"]) == 0
    summ = json.loads((out / "summary.json").read_text())
    assert summ["system"] == "ivfpq-pnm" and summ["qps"] > 0 and summ["num_queries"] == 10
    e = summ["energy_breakdown_mJ_per_query"]          # the scan units' lines are charged
    assert e["pu_accel"] > 0 and e["gpc"] > 0 and e["host"] == 0
    assert {p.name for p in out.iterdir()} == {"summary.json", "per_query.csv",
                                               "per_device.csv", "systems.csv", "config.json"}
    conf = json.loads((out / "config.json").read_text())
    assert conf["trace_meta"]["index_kind"] == "ivfpq"
    capsys.readouterr()
    # a scan trace given to a graph system: one line, exit 2, no results folder
    assert main(["simulate", "--systems", "cosmos", "--trace", str(trace), "--out",
                 str(tmp_path / "no"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot be replayed by system 'cosmos'" in err[0]
    assert not (tmp_path / "no").exists()


def test_replay_compares_scan_systems_and_refuses_a_family_mix(tmp_path, capsys):
    """`cosmos replay --systems` knows the scan systems; a system of another family than the
    trace's is refused in one line before the results folder is made."""
    from cosmos.cli import main

    d = scan_trace_dict("ivfpq", num_queries=10)
    lists = len(d["cluster_ptr"]) - 1              # the arrays graphs.load_trace also wants
    d["cluster_adjacency"] = np.array([[(c + 1) % lists, (c + 2) % lists]
                                       for c in range(lists)], np.int32)
    d["result_ids"] = np.zeros((10, 10), np.int64)
    trace = tmp_path / "ivfpq.npz"
    np.savez(trace, **d)
    out = tmp_path / "rep"
    assert main(["replay", str(trace), "--systems", "ivfpq-host,ivfpq-pnm", "--out", str(out),
                 "--workers", "1", "--no-progress"]) == 0
    import pandas as pd

    df = pd.read_csv(out / "systems.csv")
    assert list(df.system) == ["ivfpq-host", "ivfpq-pnm"] and (df.qps > 0).all()
    capsys.readouterr()
    root = tmp_path / "no"
    assert main(["replay", str(trace), "--systems", "ivfpq-pnm,cosmos", "--out-root", str(root),
                 "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot be replayed by system 'cosmos'" in err[0], err
    assert not root.exists() or not any(root.iterdir())
