"""cosmos.config / cosmos.presets / cosmos.layout / cosmos.program: no engine run needed."""

import dataclasses

import numpy as np
import pytest

from cosmos.config import (NOT_HARDWARE, SOURCE, SystemConfig, bytes_per_cycle,
                           core_cycles_to_dram, ns_to_cycles, with_overrides)
from cosmos.layout import (AddressFields, build_layout, graph_cache_nodes, lines_for,
                           with_graph_cache)
from cosmos.systems import model_for, validate_system
from cosmos.presets import PAPER_SYSTEMS, PRESETS, get_preset
from cosmos.program import (CAT_DISTANCE, CAT_TRANSFER, CAT_TRAVERSAL, OBJ_ADJACENCY,
                            OBJ_READS, OBJ_VECTOR, SEG_DEVICE_LINK, SEG_HOST_PORT, SEG_SWITCH,
                            STEP_MEM, STEP_XFER, build_program)
from cosmos.trace_input import POINTERS, REQUIRED, as_trace
from tests.cosmos_helpers import make_trace


def test_presets_are_the_papers_six_systems_then_six_more():
    assert list(PRESETS) == ["base", "dram-only", "cxl-anns", "cosmos-norank", "cosmos-noalgo",
                             "cosmos", "cxl-anns-cache", "cosmos-accel", "cxl-anns-rankpu",
                             "cxl-anns-switch", "cxl-anns-dimm", "cosmos-switch"]
    assert PAPER_SYSTEMS == tuple(PRESETS)[:6]
    assert PRESETS["cosmos"].rank_pu.enabled and PRESETS["cosmos"].placement == "adjacency"
    assert PRESETS["cosmos-noalgo"].placement == "round_robin"
    assert not PRESETS["cosmos-norank"].rank_pu.enabled
    assert PRESETS["base"].kind == "host-cxl" and PRESETS["dram-only"].kind == "host-dram"
    for cfg in PRESETS.values():
        cfg.validate()
    with pytest.raises(ValueError, match="unknown system 'nope'"):
        get_preset("nope")


def test_every_field_has_help_and_hardware_defaults_have_sources():
    cfg = SystemConfig()
    for f in dataclasses.fields(cfg):
        assert f.metadata.get("help"), f.name
        sub = getattr(cfg, f.name)
        if dataclasses.is_dataclass(sub):
            for g in dataclasses.fields(sub):
                assert g.metadata.get("help"), f"{f.name}.{g.name}"
    missing = []
    for f in dataclasses.fields(cfg):
        sub = getattr(cfg, f.name)
        if dataclasses.is_dataclass(sub):
            missing += [f"{f.name}.{g.name}" for g in dataclasses.fields(sub)
                        if len(SOURCE.get(f"{f.name}.{g.name}", "")) <= 20]
        elif f.name not in NOT_HARDWARE:
            missing.append(f.name)
    assert not missing, f"hardware defaults without a source in cosmos.config.SOURCE: {missing}"
    fields = {f"{f.name}.{g.name}" for f in dataclasses.fields(cfg)
              if dataclasses.is_dataclass(getattr(cfg, f.name))
              for g in dataclasses.fields(getattr(cfg, f.name))}
    stale = [k for k in SOURCE if k not in fields and k != "device.dram"]
    assert not stale, f"SOURCE entries naming no field: {stale}"


def test_unit_conversions():
    assert ns_to_cycles(0) == 0
    assert ns_to_cycles(0.416) == 1
    assert ns_to_cycles(0.417) == 2
    assert ns_to_cycles(40) == 97          # 40 ns / 0.416 ns = 96.15 -> 97
    assert core_cycles_to_dram(21, 2.1) == ns_to_cycles(10)
    assert bytes_per_cycle(63.0) == pytest.approx(63.0 * 0.416)


def test_a_candidate_insertion_costs_a_binary_search_and_half_a_list_shift():
    from cosmos.config import GPCConfig, HostConfig
    from cosmos.program import costs_for
    h, g = HostConfig(), GPCConfig()
    assert h.insert_cycles(64) == pytest.approx(6 + 32 * 8 / 32)      # 14 at our traces' L
    assert h.insert_cycles(100) == pytest.approx(19.14, abs=0.01)      # DiskANN's L
    assert g.insert_cycles(64) == pytest.approx(6 + 32 * 8 / 16)       # 128-bit NEON: 16 B/cycle
    assert h.insert_cycles(1) == pytest.approx(0.5 * 8 / 32)
    with pytest.raises(ValueError, match="candidate list length must be >= 1"):
        h.insert_cycles(0)
    cfg = get_preset("base")
    small, large = costs_for(cfg, 128, 16), costs_for(cfg, 128, 256)
    assert large.host_insert > small.host_insert and large.host_select == small.host_select


def test_a_replaced_field_is_named_with_what_replaced_it():
    from cosmos.config import with_overrides
    d = SystemConfig().to_dict()
    d["gpc"]["insert_cycles"] = 20.0
    with pytest.raises(ValueError, match="'insert_cycles' was replaced by insert_step_cycles"):
        SystemConfig.from_dict(d)
    with pytest.raises(ValueError, match="unknown field 'insert_cycles'.*was replaced by"):
        with_overrides(SystemConfig(), {"host.insert_cycles": "20"})


def test_overrides_and_validation_errors():
    cfg = with_overrides(get_preset("cosmos"), {"gpc.cores": "4", "link.latency_ns": "50"})
    assert cfg.gpc.cores == 4 and cfg.link.latency_ns == 50.0
    with pytest.raises(ValueError, match="unknown field 'corez'"):
        with_overrides(cfg, {"gpc.corez": 1})
    with pytest.raises(ValueError, match="gpc.cores: must be >= 1"):
        with_overrides(cfg, {"gpc.cores": 0})
    with pytest.raises(ValueError, match="kind"):
        validate_system(dataclasses.replace(cfg, kind="gpu"))
    assert SystemConfig.from_dict(cfg.to_dict()) == cfg


def test_trace_validation_names_the_array():
    tr = make_trace(num_queries=3)
    as_trace(tr)
    bad = dict(tr)
    bad["read_node"] = bad["read_node"].copy()
    bad["read_node"][5] = 10 ** 6
    with pytest.raises(ValueError, match=r"read_node\[5\] = 1000000 out of range"):
        as_trace(bad)
    bad = dict(tr)
    del bad["hop_degree"]
    with pytest.raises(ValueError, match="missing array 'hop_degree'"):
        as_trace(bad)
    bad = dict(tr)
    bad["query_ptr"] = bad["query_ptr"][:-1]
    with pytest.raises(ValueError, match="query_ptr"):
        as_trace(bad)


def test_trace_ids_are_int32_shared_not_copied_and_pointers_int64():
    raw = make_trace(num_queries=3)
    tr = as_trace(raw)
    for key in ("read_node", "hop_node", "search_cluster", "hop_degree"):
        assert getattr(tr, key).dtype == np.int32
        assert np.shares_memory(getattr(tr, key), raw[key])     # the contract's dtype: no copy
    wide = {k: (v.astype(np.int64) if k in REQUIRED else v) for k, v in raw.items()}
    tr64 = as_trace(wide)                                        # any integer dtype is taken
    for key in REQUIRED:
        want = np.int64 if key in POINTERS else np.int32
        assert getattr(tr64, key).dtype == want, key
        assert np.array_equal(getattr(tr64, key), raw[key]), key


# The DRAM model's mapping for a Cosmos device: RoBaRaCoCh, 8 channels x 2 ranks, 16Gb x4
FIELDS = AddressFields((("channel", 8), ("column", 128), ("rank", 2), ("bankgroup", 8),
                        ("bank", 4), ("row", 65536)))


def _cluster_layout(**kw):
    tr = as_trace(make_trace(num_queries=2, num_clusters=4, cluster_size=50))
    dev = np.array([0, 1, 0, 1])
    args = dict(vector_bytes=384, max_degree=32, capacity_bytes=256 << 30)
    args.update(kw)
    return tr, dev, build_layout(tr.cluster_ptr, tr.cluster_nodes, dev, 2, **args)


def test_layout_is_base_plus_index_times_stride():
    tr, dev, lay = _cluster_layout(spread=False)
    assert lay.node_lines == 2 and lay.vector_lines == 6 and lay.spread == 1
    # device 0 holds clusters 0 and 2, in that order: cluster 2's first node has index 50
    first_c2 = tr.cluster_nodes[tr.cluster_ptr[2]]
    assert lay.node_device[first_c2] == 0
    assert lay.node_addr[first_c2] == 50 * 128
    graph_bytes = 100 * 128
    assert lay.vector_addr[first_c2] == graph_bytes + 50 * 384
    last_c0 = tr.cluster_nodes[tr.cluster_ptr[1] - 1]
    assert lay.node_addr[last_c0] == 49 * 128
    for d in (0, 1):
        on = lay.node_device == d
        assert len(np.unique(lay.node_addr[on])) == on.sum() == 100


def test_spread_layout_covers_the_device_with_an_odd_factor():
    _, _, lay = _cluster_layout(spread=True)
    assert lay.spread % 2 == 1 and lay.spread > 1000
    top = lay.vector_addr.max() + lay.vector_stride
    assert 0.5 * (256 << 30) < top <= (256 << 30)
    assert lay.node_stride == 128 * lay.spread


def test_rank_partitioned_vectors_stay_in_one_channel_split_across_ranks():
    _, _, lay = _cluster_layout(spread=True, vector_ranks=2, fields=FIELDS)
    assert lay.rank_parts == 2 and lay.rank_step == 64 * 8 * 128 and lay.col_step == 64 * 8
    base = lay.vector_addr[:200]
    for l in range(lay.vector_lines):
        a = base + np.uint64((l % 2) * lay.rank_step + (l // 2) * lay.col_step)
        assert np.all(FIELDS.channel_of(a) == FIELDS.channel_of(base))
        assert np.all(FIELDS.rank_of(a) == l % 2)
        assert np.all(FIELDS.field_of("row", a) == FIELDS.field_of("row", base))
    # vectors do not overlap the graph region nor each other
    assert base.min() >= lay.node_addr.max() + 128
    on0 = lay.node_device == 0
    assert len(np.unique(lay.vector_addr[on0])) == on0.sum()


@pytest.mark.parametrize("kw", [dict(spread=True, vector_ranks=2, fields=FIELDS),
                                dict(spread=True), dict(spread=False, code_bytes=16),
                                dict(spread=True, vector_ranks=1, fields=FIELDS,
                                     templated=True)])
def test_layout_does_not_depend_on_its_block_size(monkeypatch, kw):
    """The per-node addresses are computed block by block (bounded memory at a billion
    vectors): any block size gives the same layout."""
    import cosmos.layout as layout_mod

    kw = dict(kw)
    if kw.pop("templated", False):       # every third logical position, as node_pos
        kw["node_pos"] = np.arange(0, 200, 3, dtype=np.int64)
    whole = _cluster_layout(**kw)[2]
    monkeypatch.setattr(layout_mod, "LAYOUT_BLOCK", 7)
    blocks = _cluster_layout(**kw)[2]
    for name in ("node_device", "node_addr", "vector_addr", "bytes_used"):
        a, b = getattr(whole, name), getattr(blocks, name)
        assert a.dtype == b.dtype and np.array_equal(a, b), name
    assert whole.spread == blocks.spread and whole.vector_stride == blocks.vector_stride


def test_address_fields_match_the_dram_models_mapping():
    from dram.config import DRAMConfig

    params = DRAMConfig(channels=8, ranks=2).resolve()
    f = AddressFields.from_dram_params(params)
    assert f == FIELDS
    assert f.capacity_bytes == 256 << 30


def _program(name, **trace_kw):
    tr = as_trace(make_trace(**trace_kw))
    cfg = get_preset(name)
    dev = np.arange(tr.num_clusters) % cfg.device.count
    lay = build_layout(tr.cluster_ptr, tr.cluster_nodes, dev, cfg.device.count,
                       vector_bytes=int(tr.meta["vector_bytes"]),
                       max_degree=int(tr.meta["max_degree"]), capacity_bytes=256 << 30,
                       vector_ranks=2 if cfg.rank_pu.enabled else 1, fields=FIELDS)
    if model_for(cfg).host_cache:
        # (make_trace's hops do not start at the entry, so its BFS cache holds little: cache
        # every other expanded node instead; graph_cache_nodes is tested on its own)
        lay = with_graph_cache(lay, np.unique(tr.hop_node)[::2])
    return tr, build_program(cfg, tr, lay, dev)


@pytest.mark.parametrize("name", list(PRESETS))
def test_programs_read_exactly_the_traces_bytes(name):
    tr, pg = _program(name, num_queries=5, hops=4, reads_per_hop=3, vector_bytes=384, dim=96)
    vl = lines_for(384)
    nl = lines_for(4 * 32)
    per_q = np.diff(tr.query_ptr) * vl  # entry vectors
    hops_q = np.add.reduceat(np.diff(tr.search_hop_ptr), tr.query_ptr[:-1])
    reads_q = np.add.reduceat(np.diff(tr.hop_read_ptr)[:], tr.search_hop_ptr[tr.query_ptr[:-1]])
    expect = per_q + hops_q * nl + reads_q * vl
    assert np.array_equal(pg.requests_per_query(), expect)
    mem = pg.step_kind == STEP_MEM
    assert set(np.unique(pg.step_cat[mem])) <= {CAT_TRAVERSAL, CAT_DISTANCE}
    xfer = pg.step_kind == STEP_XFER
    if name in ("base", "dram-only"):
        assert not xfer.any()
        assert np.all(pg.step_link[mem] == (1 if name == "base" else 0))
    if name == "cxl-anns-cache":
        # adjacency reads of cached nodes stay in host DRAM (instance D), the others cross
        adj = mem & (pg.step_cat == CAT_TRAVERSAL)
        cached = pg.step_dev[adj] == 4
        assert cached.any() and (~cached).any()
        assert np.all(pg.step_link[adj] == np.where(cached, 0, 1))
    if name == "cxl-anns-rankpu":
        assert np.all(pg.step_rank_local[mem & (pg.step_cat == CAT_DISTANCE)] == 1)
        assert np.all(pg.step_link[mem & (pg.step_cat == CAT_DISTANCE)] == 0)
    if name in ("cxl-anns", "cxl-anns-rankpu"):
        # adjacency reads cross the link, vector reads stay in the device
        assert np.all(pg.step_link[mem & (pg.step_cat == CAT_TRAVERSAL)] == 1)
        assert np.all(pg.step_link[mem & (pg.step_cat == CAT_DISTANCE)] == 0)
        assert np.all(pg.step_cat[xfer] == CAT_TRANSFER)
    if name == "cosmos-switch":
        # every read by a switch core: over the switch and the device link, not the host's
        # port; the query down and the top-k up over the host's port and the switch only
        D = get_preset(name).device.count
        assert np.all(pg.cls_route[pg.step_class[mem]] == SEG_SWITCH | SEG_DEVICE_LINK)
        assert np.all(pg.step_rank_local[mem] == 0)
        assert np.all(pg.cls_route[pg.step_class[xfer]] == SEG_HOST_PORT | SEG_SWITCH)
        assert np.array_equal(pg.step_link[xfer], np.tile([0, 1], tr.num_queries))
        # per query: the dispatch on the host's I/O agent, then one task on a switch core
        assert np.all(np.diff(pg.query_task_ptr) == 2)
        first, last = pg.query_task_ptr[:-1], pg.query_task_ptr[1:] - 1
        assert np.all(pg.task_pool[first] == D + 1) and np.all(pg.task_pool[last] == D + 2)
        assert np.all(pg.task_succ[first] == last) and np.all(pg.task_npred[last] == 1)
    elif name.startswith("cosmos"):
        assert np.all(pg.step_link[mem] == 0)
        rank = pg.step_rank_local[mem]
        no_rank = name in ("cosmos-norank", "cosmos-accel")
        assert np.all(rank[pg.step_cat[mem] == CAT_DISTANCE] == (0 if no_rank else 1))
        assert np.all(rank[pg.step_cat[mem] == CAT_TRAVERSAL] == 0)
        # per query: dispatch + search per device, then one merge task on the host agent
        ntasks = np.diff(pg.query_task_ptr)
        assert np.all(ntasks % 2 == 1)
        assert np.all(pg.task_npred[pg.query_task_ptr[1:] - 1] == (ntasks - 1) // 2)


@pytest.mark.parametrize("name", list(PRESETS))
def test_program_steps_read_the_traces_objects_at_the_layouts_addresses(name):
    """Each query's MEM steps, expanded object by object (OBJ_*), read the vectors of its
    entries and of its hops' reads and the adjacency lists of its hops, each once; objects are
    not copied: the program's node ids are the trace's and its addresses the layout's."""
    tr, pg = _program(name, num_queries=6, hops=5, reads_per_hop=4, vector_bytes=384, dim=96)
    assert pg.read_node is tr.read_node
    vl = lines_for(384)
    kind, src = pg.step_kind, pg.cls_obj_src[pg.step_class]
    for q in range(tr.num_queries):
        steps = np.arange(pg.task_step_ptr[pg.query_task_ptr[q]],
                          pg.task_step_ptr[pg.query_task_ptr[q + 1]])
        got_vec, got_adj = [], []
        for s in steps[kind[steps] == STEP_MEM]:
            o, n = int(pg.step_obj[s]), int(pg.step_nreq[s])
            if src[s] == OBJ_READS:
                assert pg.cls_obj_lines[pg.step_class[s]] == vl and n % vl == 0
                got_vec += list(pg.vector_addr[tr.read_node[o:o + n // vl]])
            elif src[s] == OBJ_VECTOR:
                assert n == vl
                got_vec.append(pg.vector_addr[o])
            else:
                assert src[s] == OBJ_ADJACENCY
                got_adj.append(pg.node_addr[o])
        s0, s1 = tr.query_ptr[q], tr.query_ptr[q + 1]
        h0, h1 = tr.search_hop_ptr[s0], tr.search_hop_ptr[s1]
        want_vec = np.concatenate([tr.search_entry[s0:s1],
                                   tr.read_node[tr.hop_read_ptr[h0]:tr.hop_read_ptr[h1]]])
        assert sorted(got_vec) == sorted(pg.vector_addr[want_vec])
        assert sorted(got_adj) == sorted(pg.node_addr[tr.hop_node[h0:h1]])


@pytest.mark.parametrize("value, expect", [("true", True), ("TRUE", True), ("1", True),
                                           ("yes", True), ("On", True), ("false", False),
                                           ("0", False), ("no", False), ("OFF", False),
                                           (True, True), (False, False)])
def test_boolean_overrides_accept_the_usual_spellings(value, expect):
    base = get_preset("cosmos-norank" if expect else "cosmos")
    assert with_overrides(base, {"rank_pu.enabled": value}).rank_pu.enabled is expect


@pytest.mark.parametrize("field, value, message", [
    ("rank_pu.enabled", "maybe", "rank_pu.enabled='maybe': expected a boolean"),
    ("rank_pu.enabled", "2", "rank_pu.enabled='2': expected a boolean"),
    ("gpc.cores", "4.5", "gpc.cores='4.5': expected an integer"),
    ("gpc.cores", "four", "gpc.cores='four': expected an integer"),
    ("gpc.cores", True, "gpc.cores=True: expected an integer"),
    ("link.latency_ns", "abc", "link.latency_ns='abc': expected a number"),
    ("link.latency_ns", "-40", "system.link.latency_ns: must be >= 0, got -40"),
    ("link.latency_ns", "nan", "system.link.latency_ns: must be a number, got nan"),
    ("link.latency_ns", "inf", "system.link.latency_ns: must be <= 1e+09, got inf"),
    ("link.slots_per_flit", "0", "system.link.slots_per_flit: must be >= 1, got 0"),
    ("link.flit_bytes", "0", "system.link.flit_bytes: must be >= 1, got 0"),
    ("link.flit_bytes", "60", "system.link.flit_bytes: must be >= link.slots_per_flit x "
                              "link.slot_bytes = 64"),
    ("link.data_slots", "-1", "system.link.data_slots: must be >= 1, got -1"),
    ("gpc.insert_step_cycles", "-50", "system.gpc.insert_step_cycles: must be >= 0, got -50"),
    ("host.clock_GHz", "0", "system.host.clock_GHz: must be >= 0.001, got 0"),
    ("device.capacity_bytes", "1e9.5", "device.capacity_bytes='1e9.5': expected an integer"),
    ("host", "3", "'host' is a section, not a field"),
    ("hots.threads", "3", "unknown section 'hots'"),
])
def test_bad_override_names_the_field_and_what_was_expected(field, value, message):
    with pytest.raises(ValueError) as err:
        with_overrides(get_preset("cosmos"), {field: value})
    assert message in str(err.value)


def test_whole_numbers_written_as_floats_are_accepted_for_integer_fields():
    cfg = with_overrides(get_preset("cosmos"), {"gpc.cores": "4.0",
                                                "device.capacity_bytes": "64e9"})
    assert cfg.gpc.cores == 4 and cfg.device.capacity_bytes == 64 * 10**9
    assert isinstance(cfg.gpc.cores, int)


def test_every_numeric_field_has_a_range_and_values_outside_it_are_refused():
    from cosmos.config import RANGES, SECTIONS, _kind

    cfg = get_preset("cosmos")
    numeric = {f"{sec}.{f.name}": _kind(f) for sec, cls in SECTIONS.items()
               for f in dataclasses.fields(cls) if _kind(f) in ("int", "float")}
    assert set(numeric) == set(RANGES)
    for path, kind in numeric.items():
        low, low_in, high = RANGES[path]
        below = low - 1 if kind == "int" else (low - abs(low) * 0.5 - 1)
        with pytest.raises(ValueError, match=rf"system\.{path}: must be >"):
            with_overrides(cfg, {path: below})
        with pytest.raises(ValueError, match=rf"system\.{path}: must be <="):
            with_overrides(cfg, {path: high * 2 if kind == "int" else float("inf")})
    # and the defaults are inside every range
    for name in PRESETS:
        get_preset(name).validate()


def test_wrong_types_in_a_config_dict_name_the_field():
    d = get_preset("cosmos").to_dict()
    d["gpc"]["cores"] = "8"
    with pytest.raises(ValueError, match=r"system\.gpc\.cores: expected an integer"):
        SystemConfig.from_dict(d)
    d = get_preset("cosmos").to_dict()
    d["rank_pu"]["enabled"] = "no"
    with pytest.raises(ValueError, match=r"system\.rank_pu\.enabled: expected true or false"):
        SystemConfig.from_dict(d)
    d = get_preset("cosmos").to_dict()
    d["link"] = 5
    with pytest.raises(ValueError, match="'link' must be a dict"):
        SystemConfig.from_dict(d)


def test_set_given_twice_is_refused():
    from cosmos.config import parse_overrides

    with pytest.raises(ValueError, match="--set gpc.cores: given twice"):
        parse_overrides(["gpc.cores=4", "gpc.cores=2"])


def _saved_trace(path, **kw):
    """A trace written by graphs.trace.save_trace (with its per-array checksums)."""
    import json

    from graphs.trace import LogicalTrace, save_trace

    d = make_trace(**kw)
    meta = json.loads(str(d.pop("meta")))
    return save_trace(path, LogicalTrace(meta=meta, **d))


def _rewrite(src, dst, *, meta=None, drop_checksums=False, **arrays):
    """Copy the .npz ``src`` to ``dst`` with some arrays or meta fields changed."""
    import json

    d = dict(np.load(src))
    m = json.loads(str(d["meta"]))
    m.update(meta or {})
    if drop_checksums:
        m.pop("checksums", None)
    d["meta"] = np.array(json.dumps(m))
    d.update(arrays)
    with open(dst, "wb") as f:
        np.savez(f, **d)
    return dst


def test_a_trace_saved_by_graphs_verifies_and_a_changed_array_does_not(tmp_path):
    good = _saved_trace(tmp_path / "good.npz", num_queries=3, hops=2, reads_per_hop=3)
    tr = as_trace(good)
    assert tr.num_queries == 3 and "checksums" not in tr.meta
    hd = np.load(good)["hop_degree"].copy()
    hd[1] = 10**9
    bad = _rewrite(good, tmp_path / "bad.npz", hop_degree=hd)
    with pytest.raises(ValueError, match=r"bad\.npz: checksum of 'hop_degree' does not match"):
        as_trace(bad)


@pytest.mark.parametrize("make, message", [
    (lambda good, p: p.write_bytes(good.read_bytes()[:len(good.read_bytes()) // 2]),
     "not a readable trace file (damaged or truncated .npz"),
    (lambda good, p: np.save(open(p, "wb"), np.arange(5)), "holds a single numpy array"),
    (lambda good, p: p.write_text("hello\n"), "not a .npz (zip) archive"),
    (lambda good, p: p.write_bytes(b""), "not a .npz (zip) archive"),
    (lambda good, p: _rewrite(good, p, meta={"dim": "abc"}), "meta 'dim' must be an integer, "
                                                             "got 'abc'"),
    (lambda good, p: _rewrite(good, p, meta={"max_degree": 0}), "meta 'max_degree' must be "
                                                                ">= 1, got 0"),
    (lambda good, p: _rewrite(good, p, meta={"dim": 10**6}), "meta 'dim' must be in [1, 128]"),
    (lambda good, p: _rewrite(good, p, meta={"k": True}), "meta 'k' must be an integer"),
    (lambda good, p: _rewrite(good, p, meta={"cand_list_len": 0}), "meta 'cand_list_len' must "
                                                                   "be in [1, 2147483647], got 0"),
    (lambda good, p: _rewrite(good, p, drop_checksums=True,
                              hop_degree=np.full(12, 10**9, np.int32)),
     "hop_degree[0] = 1000000000 out of range [0, 32] (at most meta max_degree"),
    (lambda good, p: _rewrite(good, p, drop_checksums=True,
                              hop_cand_inserts=np.full(12, 4, np.int32)),
     "hop_cand_inserts[0] = 4 out of range [0, 3] (at most the vectors read at that hop"),
])
def test_a_bad_trace_file_is_a_value_error_naming_the_file(tmp_path, make, message):
    good = _saved_trace(tmp_path / "good.npz", num_queries=3, probes=2, hops=2, reads_per_hop=3)
    p = tmp_path / "bad.npz"
    make(good, p)
    with pytest.raises(ValueError) as err:
        as_trace(p)
    assert str(err.value).startswith(f"{p}: ") and message in str(err.value), str(err.value)


def test_graph_cache_holds_the_nodes_nearest_the_entries_within_hops_and_capacity():
    # entry 0 expands to 1, 2; node 1 expands to 3; node 3 expands to 4: levels 0,1,1,2,3
    t = dict(make_trace(num_queries=1, num_clusters=1, cluster_size=8, probes=1, hops=1, k=4,
                        reads_per_hop=1))
    t.update(search_entry=np.array([0], np.int32), search_hop_ptr=np.array([0, 3]),
             hop_node=np.array([0, 1, 3], np.int32), hop_degree=np.array([32, 32, 32], np.int32),
             hop_read_ptr=np.array([0, 2, 3, 4]), read_node=np.array([2, 1, 3, 4], np.int32),
             hop_cand_inserts=np.array([1, 1, 1], np.int32), query_ptr=np.array([0, 1]),
             search_cluster=np.array([0], np.int32), cluster_nodes=np.arange(8, dtype=np.int32))
    tr = as_trace(t)
    entry = 3 * 64
    assert list(graph_cache_nodes(tr, 0, 10 * entry, 3)) == [0]
    assert list(graph_cache_nodes(tr, 1, 10 * entry, 3)) == [0, 1, 2]
    assert list(graph_cache_nodes(tr, 2, 10 * entry, 3)) == [0, 1, 2, 3]
    assert list(graph_cache_nodes(tr, 9, 10 * entry, 3)) == [0, 1, 2, 3, 4]
    assert list(graph_cache_nodes(tr, 9, 2 * entry + 1, 3)) == [0, 1]     # capacity: 2 lists
    assert list(graph_cache_nodes(tr, 9, entry - 1, 3)) == []
