"""cosmos.systems: declarations are validated, named in errors, and the only place that
knows a system by name."""

import dataclasses
import inspect
import json

import numpy as np
import pytest

from cosmos_common import UserError
from cosmos.presets import DESCRIPTIONS, PRESETS, TWO_BY_TWO, get_preset
from cosmos.systems import (Compute, Cost, Read, Send, SystemModel, known_systems, model_for,
                            register_system, validate_system)


def _host_model(**change):
    m = SystemModel(
        name="t", description="test", traversal="host",
        entry=(Read("entry-vector", "host", "distance", per_vector="host_dist"),),
        adjacency=(Read("adjacency", "host", "traversal", after=(Cost("host_visit", "degree"),)),),
        vectors=(Read("hop-vectors", "host", "distance", per_vector="host_dist"),),
        candidates=(Compute("candidate", (Cost("host_select"),)),),
        merge=(Compute("candidate", (Cost("host_merge", "probes-x-k"),)),))
    return dataclasses.replace(m, **change)


def test_a_well_formed_declaration_validates():
    assert _host_model().validate().search_pool == "host"


@pytest.mark.parametrize("change, expect", [
    (dict(traversal="fpga"), r"'t': traversal: unknown 'fpga'"),
    (dict(index_memory="ssd"), r"index_memory: unknown 'ssd'"),
    (dict(adjacency=()), r"adjacency: a search reads"),
    (dict(entry=(Read("entry-vector", "gpc", "distance"),)),
     r"entry\[0\]\.unit: 'gpc' cannot serve a search that runs on the host"),
    (dict(entry=(Read("entry-vector", "host", "distance", rank_pus=True),)),
     r"entry\[0\]\.rank_pus: rank PUs sit in the devices' DRAM ranks"),
    (dict(entry=(Read("adjacency", "host", "traversal"),)),
     r"entry\[0\]\.objects: 'adjacency' at 'entry'"),
    (dict(candidates=(Compute("candidate", (Cost("host_magic"),)),)),
     r"candidates\[0\]\.cost 'host_magic': unknown"),
    (dict(candidates=(Compute("candidates", ()),)), r"candidates\[0\]\.category: unknown"),
    (dict(merge=(Compute("candidate", (Cost("host_merge", "degree"),)),)),
     r"merge\[0\]\.count 'degree': not a count at 'merge'"),
    (dict(candidates=(Compute("candidate", (Cost("host_select", "reads"),
                                            Cost("host_insert", "inserts"))),)),
     r"at most one count besides 'one'"),
    (dict(dispatch=(Send("down", vectors=1),)), r"dispatch: only a search off the host"),
    (dict(index_memory="host", entry=(Send("down", vectors=1),)),
     r"entry\[0\]: the index is in host DRAM: no link"),
    (dict(merge=(Send("up"),)), r"merge\[0\]: merge runs on the host"),
    (dict(vectors=(Read("hop-vectors", "host", "distance",
                        cached=Read("hop-vectors", "host", "distance", memory="host-cache")),)),
     r"vectors\[0\]\.cached: the graph cache holds single objects"),
    (dict(adjacency=(Read("adjacency", "accelerator", "traversal", memory="host-cache"),)),
     r"adjacency\[0\]\.memory: only the host reads the host DRAM cache"),
    (dict(entry=(Read("entry-vector", "host", "distance", per_vector="nope"),)),
     r"entry\[0\]\.per_vector: unknown 'nope'"),
])
def test_an_inconsistent_declaration_names_what_is_wrong(change, expect):
    with pytest.raises(UserError, match=expect):
        _host_model(**change).validate()


def test_unknown_kind_lists_the_known_ones():
    with pytest.raises(ValueError, match=r"system\.kind: unknown 'gpu'; expected one of .*cosmos"):
        validate_system(dataclasses.replace(get_preset("cosmos"), kind="gpu"))


def test_rank_pu_model_needs_rank_pus():
    cfg = get_preset("cxl-anns-rankpu")
    with pytest.raises(UserError, match=r"system\.rank_pu\.enabled"):
        validate_system(dataclasses.replace(
            cfg, rank_pu=dataclasses.replace(cfg.rank_pu, enabled=False)))


def test_registering_a_name_twice_needs_replace():
    with pytest.raises(UserError, match="already registered"):
        register_system(_host_model(name="cosmos"))


def test_every_preset_has_a_registered_model_and_a_description():
    for name, cfg in PRESETS.items():
        assert cfg.kind in known_systems() and DESCRIPTIONS[name]
        model_for(cfg)


def test_the_two_by_two_is_complete_and_each_cell_differs_in_one_factor():
    assert len(TWO_BY_TWO) == 4 and len(set(TWO_BY_TWO.values())) == 4
    for (where, distances), name in TWO_BY_TWO.items():
        m = model_for(get_preset(name))
        assert m.search_pool == ("gpc" if where == "device GPC" else "host")
        assert m.rank_pus == (distances == "rank PUs")
        units = {s.unit for _, _, s in m.steps() if isinstance(s, Read) and s.category ==
                 "distance"}
        assert units == ({"accelerator"} if (distances == "accelerator" or where == "host")
                         else {"gpc"})


def test_no_system_is_known_by_name_outside_the_declarations():
    import cosmos.layout
    import cosmos.metrics
    import cosmos.program
    import cosmos.simulate

    for mod in (cosmos.program, cosmos.simulate, cosmos.metrics, cosmos.layout):
        src = inspect.getsource(mod)
        assert "kind ==" not in src and "kind !=" not in src, mod.__name__
        assert ".kind in" not in src and "KIND_CODE" not in src, mod.__name__
        for name in known_systems():
            for op in ("==", "!="):
                assert f'{op} "{name}"' not in src, (mod.__name__, name)


def test_simulate_list_names_every_system_with_its_description(capsys):
    from cosmos.cli import main

    assert main(["simulate", "--list"]) == 0
    from cosmos.presets import SCAN_PRESETS

    lines = capsys.readouterr().out.splitlines()
    names = (*PRESETS, *SCAN_PRESETS)       # the graph systems, then the scan systems
    assert len(lines) == len(names)
    for line, name in zip(lines, names):
        got_name, desc = line.split(None, 1)
        assert got_name == name and desc == DESCRIPTIONS[name]


def test_the_host_graph_cache_is_one_more_memory_instance_outside_the_lir():
    from cosmos.metrics import per_device, summary
    from cosmos.simulate import simulate
    from tests.cosmos_helpers import make_trace

    tr = make_trace(num_queries=30, num_clusters=8, cluster_size=200, probes=2, hops=4, seed=5)
    # make_trace's searches do not expand their entries: expand the entry first, as real
    # searches do, so the cache (the entries and what they lead to) is read
    tr["hop_node"][tr["search_hop_ptr"][:-1]] = tr["search_entry"]
    res = simulate(get_preset("cxl-anns-cache"), tr, progress=False)
    dev = per_device(res)
    D = res.config.device.count
    assert len(dev) == D + 1 and list(dev.memory) == ["device"] * D + ["host-cache"]
    assert dev.dram_requests.iloc[D] > 0 and np.isnan(dev.link_down_util_fraction.iloc[D])
    loads = dev.dram_requests.iloc[:D].to_numpy(float)
    assert summary(res)["device_lir_requests"] == loads.max() / loads.mean()
    # the cached lists no longer cross the link: fewer wire bytes than CXL-ANNS
    ref = summary(simulate(get_preset("cxl-anns"), tr, progress=False))
    s = summary(res)
    assert s["link_wire_bytes_per_query"]["up"] < ref["link_wire_bytes_per_query"]["up"]
    assert s["dram_requests"] == ref["dram_requests"]     # the same reads, some elsewhere


def test_the_unit_registry_answers_what_the_checks_the_builder_and_energy_ask():
    """cosmos.units (issue 52): each unit declares its location, the searches it serves, its
    in-flight limit and latency (Costs fields), the config fields behind them and its energy
    charge; nothing else branches on a unit's name."""
    from cosmos.systems import Costs
    from cosmos.units import LOCATIONS, Unit, reading_units, register_unit, unit

    assert reading_units() == ("host", "gpc", "accelerator", "scan-unit", "switch-accelerator",
                               "switch-core", "dimm-accelerator")
    for name in reading_units():
        u = unit(name)
        assert u.location in LOCATIONS and u.inflight in Costs._fields
        assert u.latency in Costs._fields
    assert {n: unit(n).location for n in reading_units()} == {
        "host": "host", "gpc": "device", "accelerator": "device", "scan-unit": "device",
        "switch-accelerator": "switch", "switch-core": "switch",
        "dimm-accelerator": "dimm-buffer"}
    assert [n for n in reading_units() if unit(n).rank_local] == ["dimm-accelerator"]
    # search contexts come from the configuration through the unit that runs the searches
    cfg = dataclasses.replace(get_preset("cosmos"), gpc=dataclasses.replace(
        get_preset("cosmos").gpc, cores=3, threads_per_core=2))
    assert unit("gpc").search_contexts(cfg) == cfg.device.count * 3 * 2
    assert unit("host").search_contexts(cfg) == cfg.host.threads
    assert unit("accelerator").search_contexts(cfg) == 0
    # the switch's cores: one place, whatever the number of devices
    assert unit("switch-core").search_contexts(cfg) == \
        cfg.switch_core.cores * cfg.switch_core.threads_per_core
    assert unit("rank-pu").location == "rank" and unit("rank-pu").driven_from == ("device",)
    assert [n for n in reading_units() if unit(n).energy == "per-line"] == \
        ["accelerator", "scan-unit", "switch-accelerator"]
    # the messages built from the registry are those of the named branches they replaced
    gpc = "device.count x gpc.cores x gpc.threads_per_core x gpc.outstanding_requests"
    host = "host.threads x host.outstanding_misses"
    assert {name: model_for(get_preset(name)).contexts_fields() for name in
            ("cosmos", "cxl-anns", "cosmos-accel", "base", "ivfpq-pnm")} == {
        "cosmos": gpc, "cxl-anns": f"{host}, cxl_anns.accel_outstanding",
        "cosmos-accel": f"{gpc}, cxl_anns.accel_outstanding", "base": host,
        "ivfpq-pnm": f"{gpc}, scan_unit.outstanding_requests"}
    with pytest.raises(ValueError, match=r"unit 'x': location: unknown 'moon'; expected one of"):
        register_unit(Unit("x", "moon", "x"))
    with pytest.raises(ValueError, match=r"'host' is already registered"):
        register_unit(Unit("host", "host", "host core"))
    with pytest.raises(UserError, match=r"entry\[0\]\.unit: unknown 'fpga'; expected one of "
                                        r"\('host', 'gpc', 'accelerator', 'scan-unit', "
                                        r"'switch-accelerator', 'switch-core', "
                                        r"'dimm-accelerator'\)"):
        _host_model(entry=(Read("entry-vector", "fpga", "distance"),)).validate()


def test_routes_are_segments_computed_from_where_the_unit_and_the_memory_are():
    """cosmos.units.route (issue 52): the host reads a device over its port, the switch and
    the device link; a unit in the switch over the switch and the device link; a device unit
    its own DRAM over nothing. The engine walks the segments (cls_route), and a new place is a
    unit entry and a declaration: cxl-anns-switch needs no engine change."""
    from cosmos.units import route

    assert route("host", "device", True) == ("host-port", "switch", "device-link")
    assert route("host", "device", False) == ("device-link",)
    assert route("host", "switch", True) == ("host-port", "switch")
    assert route("switch", "device", True) == ("switch", "device-link")
    assert route("device", "device", True) == route("rank", "device", True) == ()
    with pytest.raises(ValueError, match="a unit in the device cannot reach host memory"):
        route("device", "host", True)
    m = model_for(get_preset("cxl-anns-switch"))
    assert [(place, m.route(st, True)) for place, _, st in m.steps()
            if place in ("entry", "adjacency")] == [
        ("entry", ("host-port", "switch")), ("entry", ("switch", "device-link")),
        ("entry", ("host-port", "switch")), ("adjacency", ("host-port", "switch", "device-link"))]


def test_a_route_the_hardware_cannot_take_is_one_clear_error():
    cfg = get_preset("cxl-anns-switch")
    no_switch = dataclasses.replace(cfg, switch=dataclasses.replace(cfg.switch, present=False))
    with pytest.raises(UserError, match=r"^system model 'cxl-anns-switch': entry\[0\]\.to: no "
                                        r"CXL switch is configured \(switch\.present = false\)"):
        validate_system(no_switch)
    # a unit in the switch cannot drive the rank PUs of a device's ranks
    with pytest.raises(UserError, match=r"entry\[0\]\.rank_pus: rank PUs sit in the devices' "
                                        r"DRAM ranks"):
        _host_model(entry=(Read("entry-vector", "switch-accelerator", "distance",
                                rank_pus=True),)).validate()
    with pytest.raises(UserError, match=r"entry\[0\]\.to: unknown 'pool'"):
        _host_model(entry=(Send("down", to="pool"),)).validate()


def _switch_model(**change):
    """cosmos-switch's declaration, with ``change`` applied."""
    return dataclasses.replace(model_for(get_preset("cosmos-switch")), name="t", **change)


@pytest.mark.parametrize("model, expect", [
    # a switch core cannot drive the rank PUs of a device's ranks (nor can the host)
    (lambda: _switch_model(entry=(Read("entry-vector", "switch-core", "distance",
                                       rank_pus=True),)),
     r"entry\[0\]\.rank_pus: rank PUs sit in the devices' DRAM ranks: a device unit must "
     r"drive them"),
    # a device's GPC context or a DIMM buffer does not serve a search running in the switch
    (lambda: _switch_model(adjacency=(Read("adjacency", "gpc", "traversal"),)),
     r"adjacency\[0\]\.unit: 'gpc' cannot serve a search that runs on the switch-core"),
    (lambda: _switch_model(vectors=(Read("hop-vectors", "dimm-accelerator", "distance"),)),
     r"vectors\[0\]\.unit: 'dimm-accelerator' cannot serve a search that runs on the "
     r"switch-core"),
    # ... nor a switch unit a search on the device GPCs
    (lambda: dataclasses.replace(model_for(get_preset("cosmos-norank")), name="t", vectors=(
        Read("hop-vectors", "switch-core", "distance"),)),
     r"vectors\[0\]\.unit: 'switch-core' cannot serve a search that runs on the gpc"),
    # a search in the switch reads the devices: not an index in host DRAM
    (lambda: _switch_model(index_memory="host"),
     r"index_memory: a search on the switch core contexts \(in the switch\) needs the index "
     r"on the devices"),
    # a message has one end where its step runs
    (lambda: _host_model(entry=(Send("down", near="switch", to="device"),)),
     r"entry\[0\]\.near: the step runs in the host, and this message is between the switch "
     r"and the device"),
    (lambda: _switch_model(entry=(Send("down", to="device"),)),
     r"entry\[0\]\.to: the step runs in the switch, and this message is between the host "
     r"and the device"),
    (lambda: _switch_model(entry=(Send("down", near="switch", to="switch"),)),
     r"entry\[0\]\.to: a message from the switch to itself"),
    (lambda: _switch_model(entry=(Send("down", near="device"),)),
     r"entry\[0\]\.near: unknown 'device'; expected one of \('host', 'switch'\)"),
    # the query goes to where the search runs, and the results come from there
    (lambda: _switch_model(dispatch=(Send("down", vectors=1),)),
     r"dispatch\[0\]\.to: at 'dispatch' a message goes between the host and the search task "
     r"\(in the switch\), not the device"),
    (lambda: dataclasses.replace(model_for(get_preset("cosmos-norank")), name="t",
                                 device_done=(Send("up", to="switch"),)),
     r"device_done\[0\]\.to: the step runs in the device, and this message is between the "
     r"host and the switch"),
])
def test_a_pairing_the_hardware_cannot_take_is_one_line_naming_the_model_and_field(model,
                                                                                    expect):
    with pytest.raises(UserError, match=r"^system model 't': " + expect) as exc:
        model().validate()
    assert "\n" not in str(exc.value)


def test_a_switch_unit_or_search_without_a_switch_is_one_clear_error():
    """With switch.present = false nothing sits in the switch or is sent to it: a search on
    the switch's cores is refused naming its traversal, a switch unit's read naming its unit."""
    for name, expect in (("cosmos-switch", r"traversal: 'switch-core' runs the searches in "
                                           r"the CXL switch, and no CXL switch is configured "
                                           r"\(switch\.present = false\)$"),
                         ("cxl-anns-switch", r"entry\[0\]\.to: no CXL switch is configured")):
        cfg = get_preset(name)
        cfg = dataclasses.replace(cfg, switch=dataclasses.replace(cfg.switch, present=False))
        with pytest.raises(UserError, match=rf"^system model '{name}': {expect}"):
            validate_system(cfg)
    m = dataclasses.replace(model_for(get_preset("cxl-anns-switch")), name="t",
                            entry=(Read("entry-vector", "switch-accelerator", "distance"),))
    with pytest.raises(UserError, match=r"^system model 't': entry\[0\]\.unit: no CXL switch "
                                        r"is configured"):
        m.check_routes(False)
    # and a machine without a switch has no switch cores to run anything on
    from cosmos.program import pool_sizes, switch_pool

    cfg = get_preset("cosmos")
    D = cfg.device.count
    assert pool_sizes(cfg, 1)[switch_pool(D)] == 64
    no_sw = dataclasses.replace(cfg, switch=dataclasses.replace(cfg.switch, present=False))
    assert pool_sizes(no_sw, 1)[switch_pool(D)] == 0


def test_cosmos_switch_reads_every_device_over_its_link_and_only_messages_cross_the_hosts_port():
    """cosmos-switch: every line the searches read crosses the switch and its device's link
    (the same DRAM requests as cosmos-norank, which reads them inside the devices); the
    host's port carries one query vector down and k results up per query; the switch's cores
    are the search unit, reported under their label."""
    from cosmos.simulate import simulate
    from tests.cosmos_helpers import make_trace

    tr = make_trace(num_queries=12, hops=3, reads_per_hop=6, seed=3)
    res = simulate(get_preset("cosmos-switch"), tr, progress=False)
    ref = simulate(get_preset("cosmos-norank"), tr, progress=False)
    D, L = res.config.device.count, res.config.link
    st = res.state
    assert int(st.inst_reqs.sum()) == int(ref.state.inst_reqs.sum())
    reqs = st.inst_reqs[:D].astype(float)
    assert np.allclose(st.link_bytes[:D, 0], reqs * L.wire_bytes(L.request_slots))
    assert np.allclose(st.link_bytes[:D, 1], reqs * L.wire_bytes(L.data_slots))
    slot, k = L.wire_bytes(1), int(json.loads(str(tr["meta"]))["k"])
    vec = int(json.loads(str(tr["meta"]))["vector_bytes"])
    assert st.link_bytes[D, 0] == pytest.approx(12 * (1 + -(-vec // 16)) * slot)
    assert st.link_bytes[D, 1] == pytest.approx(12 * (1 + -(-8 * k // 16)) * slot)
    s = res.summary()
    assert s["search_unit"] == "switch core context" and 0 < s["search_unit_busy_fraction"] <= 1
    assert len(s["search_unit_busy_fraction_by_place"]) == 1
    assert s["energy_breakdown_mJ_per_query"]["switch_core"] > 0
    assert s["energy_breakdown_mJ_per_query"]["gpc"] == 0
    r = ref.summary()
    assert r["search_unit"] == "device GPC context"
    assert r["search_unit_busy_fraction_by_place"] == r["gpc_busy_fraction"]


def test_the_switch_accelerator_keeps_vectors_off_the_hosts_port():
    """cxl-anns sends every byte over the host's port and a device link (vectors are read in
    the device); cxl-anns-switch the same bytes over the host's port (ids, distances,
    adjacency lists), and its vector lines over the device links only."""
    from cosmos.simulate import simulate
    from tests.cosmos_helpers import make_trace

    tr = make_trace(num_queries=12, hops=3, reads_per_hop=6, seed=3)
    out = {}
    for name in ("cxl-anns", "cxl-anns-switch"):
        res = simulate(get_preset(name), tr, progress=False)
        D = res.config.device.count
        out[name] = (float(res.state.link_bytes[:D].sum()), float(res.state.link_bytes[D].sum()))
    assert out["cxl-anns"][0] == out["cxl-anns"][1]
    assert out["cxl-anns-switch"][0] > out["cxl-anns"][0]     # vector lines on device links
    assert out["cxl-anns-switch"][1] == out["cxl-anns"][1]    # the host's port: the same


def test_the_dimm_buffer_accelerator_reads_rank_locally_over_the_same_link_traffic():
    """cxl-anns-dimm (AxDIMM's placement): the distance reads are rank-local bursts (off the
    channel's data bus), every other step and every byte on the links as cxl-anns."""
    from cosmos.simulate import simulate
    from tests.cosmos_helpers import make_trace

    tr = make_trace(num_queries=12, hops=3, reads_per_hop=6, seed=3)
    runs = {name: simulate(get_preset(name), tr, progress=False)
            for name in ("cxl-anns", "cxl-anns-dimm")}
    for name, res in runs.items():
        pg = res.program
        dist = (pg.step_kind == 0) & (pg.step_cat == 1)       # STEP_MEM, CAT_DISTANCE
        assert dist.any() and np.all(pg.step_rank_local[dist] == (name == "cxl-anns-dimm"))
        assert np.all(pg.step_rank_local[(pg.step_kind == 0) & ~dist] == 0)
    a, b = (runs[n].state for n in ("cxl-anns", "cxl-anns-dimm"))
    assert np.array_equal(a.link_bytes, b.link_bytes)
    assert int(b.inst_local.sum()) > 0 == int(a.inst_local.sum())
