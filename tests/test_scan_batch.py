"""exact-pnm-batch (issue 54): B queries share one pass over a probed list's vectors (the
VCK5000 dense-retrieval study's GEMM reuse). The batch transform, the roofline batch size,
a hand case of the per-list time max(memory, compute), recall identical to exact-pnm, and
the one-line refusals."""

import dataclasses
import json

import numpy as np
import pytest

from cosmos.config import TCK_PS, ScanUnitConfig
from cosmos.metrics import per_query
from cosmos.presets import get_preset
from cosmos.simulate import simulate
from cosmos.systems import batch_trace, roofline_batch
from cosmos.trace_input import as_trace
from cosmos_common import UserError
from tests.test_scan_systems import scan_trace_dict


def one_list_trace(scan, dim=16, n_vectors=512):
    """One query scanning the first ``scan`` vectors of one list of ``n_vectors`` float32
    vectors of ``dim`` dims."""
    vb = 4 * dim
    meta = dict(dataset="hand", n=n_vectors, dim=dim, dtype="float32", metric="l2",
                vector_bytes=vb, max_degree=0, cand_list_len=10, num_clusters=1, num_probes=1,
                k=10, recall=1.0, seed=0, num_queries=1, format_version=1, index_kind="exact",
                code_bytes=vb, pq_m=0, rerank=0)
    return as_trace(dict(
        meta=np.array(json.dumps(meta)), cluster_ptr=np.array([0, n_vectors]),
        cluster_nodes=np.arange(n_vectors), centroids=np.zeros((1, dim), np.float32),
        query_ptr=np.array([0, 1]), search_cluster=np.array([0]), search_entry=np.array([-1]),
        search_hop_ptr=np.array([0, 0]), hop_node=np.zeros(0, np.int32),
        hop_degree=np.zeros(0, np.int32), hop_read_ptr=np.array([0]),
        read_node=np.zeros(0, np.int32), hop_cand_inserts=np.zeros(0, np.int32),
        scan_first=np.array([0]), scan_count=np.array([scan]),
        rerank_ptr=np.array([0, 0]), rerank_node=np.zeros(0, np.int32)))


def batch_cfg(batch, **unit):
    cfg = get_preset("exact-pnm-batch")
    su = dataclasses.replace(cfg.scan_unit, batch_queries=batch, **unit)
    return dataclasses.replace(cfg, scan_unit=su, device=dataclasses.replace(cfg.device,
                                                                               count=1))


def latency_ns(cfg, tr):
    res = simulate(cfg, tr, progress=False)
    return float(per_query(res)["latency_ns"][0])


def test_batch_trace_unions_lists_per_batch():
    tr = as_trace(scan_trace_dict("exact", num_queries=10, probes=3))
    bt = batch_trace(tr, 4)
    assert bt.num_queries == 3 and bt.meta["batch_queries"] == 4
    assert bt.meta["batch_source_queries"] == 10
    qp, sc = tr.query_ptr, tr.search_cluster
    for b in range(3):
        want = []
        for s in range(qp[4 * b], qp[min(10, 4 * b + 4)]):
            if sc[s] not in want:
                want.append(int(sc[s]))
        got = bt.search_cluster[bt.query_ptr[b]:bt.query_ptr[b + 1]].tolist()
        assert got == want                      # each list once per batch, first-probe order
    ptr = tr.cluster_ptr
    assert np.array_equal(bt.scan_first, ptr[bt.search_cluster])          # whole lists
    assert np.array_equal(bt.scan_count, np.diff(ptr)[bt.search_cluster])
    as_trace(dataclasses.asdict(bt) | {"meta": np.array(json.dumps(bt.meta))})  # valid trace


def test_roofline_batch():
    # the default unit: 64 B/cycle against 128 float32 MACs/cycle -> B* = 8 (its default B)
    su = ScanUnitConfig()
    dim = 128
    assert roofline_batch(su.dot_bytes_per_cycle, su.gemm_macs_per_cycle, 4 * dim,
                          dim) == pytest.approx(8.0)
    assert su.batch_queries == 8
    # 25.6 GB/s of uint8 vectors (dim bytes) against 1 TMAC/s: B* = 1e12 / 25.6e9 = 39.06
    assert roofline_batch(25.6e9, 1e12, 96, 96) == pytest.approx(39.0625)
    with pytest.raises(ValueError, match="bandwidth_Bps must be > 0"):
        roofline_batch(0, 1e12, 96, 96)


def test_per_list_time_is_max_of_memory_and_compute():
    """Hand case: one list of n = 512 float32 vectors of 64 B (512 lines) on one device.
    Memory time M: the per-list time with an infinitely fast unit (the stream's lines alone);
    compute time C(B) = n x max(64 B / dot_bytes_per_cycle, B x dim / gemm_macs_per_cycle)
    unit cycles. The per-list time (latency with n vectors minus latency with one, which
    takes out the messages and the merge) follows max(M, C(B)) within 10 % (the last lines'
    compute and the DRAM's open-row hits are not in the hand figure)."""
    n, dim = 512, 16
    big, one = one_list_trace(n, dim), one_list_trace(1, dim)
    fast = dict(dot_bytes_per_cycle=1e6, gemm_macs_per_cycle=1e6)
    mem = (latency_ns(batch_cfg(1, **fast), batch_trace(big, 1)) -
           latency_ns(batch_cfg(1, **fast), batch_trace(one, 1)))
    assert mem > 0
    su = ScanUnitConfig()
    for B in (1, 8, 32):
        cfg = batch_cfg(B)
        per_list = (latency_ns(cfg, batch_trace(big, B)) - latency_ns(cfg, batch_trace(one, B)))
        cyc = max(4 * dim / su.dot_bytes_per_cycle, B * dim / su.gemm_macs_per_cycle)
        compute = n * cyc / su.clock_GHz
        want = max(mem, compute)
        assert per_list == pytest.approx(want, rel=0.10), (B, mem, compute, per_list)


def test_recall_identical_to_exact_pnm():
    """The batch scans the same vectors exactly: its trace carries the exact trace's recall,
    and every query's lists are in its batch's union."""
    tr = as_trace(scan_trace_dict("exact", num_queries=9, probes=2))
    tr = dataclasses.replace(tr, meta=dict(tr.meta, recall=0.875))
    bt = batch_trace(tr, 4)
    assert bt.meta["recall"] == tr.meta["recall"]
    for q in range(9):
        b = q // 4
        union = set(bt.search_cluster[bt.query_ptr[b]:bt.query_ptr[b + 1]].tolist())
        assert set(tr.search_cluster[tr.query_ptr[q]:tr.query_ptr[q + 1]].tolist()) <= union


@pytest.mark.parametrize("value", [0, -3, 4097, 2.5])
def test_bad_batch_value_is_one_line(value):
    from cosmos.systems import validate_system
    cfg = get_preset("exact-pnm-batch")
    bad = dataclasses.replace(cfg, scan_unit=dataclasses.replace(cfg.scan_unit,
                                                                  batch_queries=value))
    with pytest.raises((ValueError, UserError)) as exc:
        validate_system(bad)
    assert "scan_unit.batch_queries" in str(exc.value) and "\n" not in str(exc.value)


def test_batch_trace_refusals():
    ex = as_trace(scan_trace_dict("exact", num_queries=4, probes=2))
    with pytest.raises(UserError, match="batch must be an integer >= 1"):
        batch_trace(ex, 0)
    with pytest.raises(UserError, match="batches an 'exact' trace"):
        batch_trace(as_trace(scan_trace_dict("ivfpq", num_queries=4, probes=2)), 2)
    with pytest.raises(UserError, match="already batched"):
        batch_trace(batch_trace(ex, 2), 2)
    with pytest.raises(UserError, match="single queries cannot be replayed by system "
                                        "model 'exact-pnm-batch'"):
        simulate(get_preset("exact-pnm-batch"), ex, progress=False)
    with pytest.raises(UserError, match="batches of 2 queries cannot be replayed by system "
                                        "model 'exact-pnm'"):
        simulate(get_preset("exact-pnm"), batch_trace(ex, 2), progress=False)


def test_batch_of_one_is_exact_pnms_work():
    """B = 1: each batch is one query, and exact-pnm-batch does exact-pnm's work: the same
    requests, every query's latency and the same run (the B sweep's first point,
    recall_qps's batch_sweep.csv)."""
    d = scan_trace_dict("exact", num_queries=8, probes=3)
    a = simulate(get_preset("exact-pnm"), d, progress=False)
    cfg = get_preset("exact-pnm-batch")
    cfg = dataclasses.replace(cfg, scan_unit=dataclasses.replace(cfg.scan_unit,
                                                                  batch_queries=1))
    b = simulate(cfg, batch_trace(as_trace(d), 1), progress=False)
    assert np.array_equal(a.program.requests_per_query(), b.program.requests_per_query())
    assert np.array_equal(a.state.q_done, b.state.q_done)
    assert a.summary()["qps"] == b.summary()["qps"]


def test_roofline_batches_and_the_bend_on_hand_cases():
    """batch_sweep.roofline_batches: B* at the unit's stream (64 B x 0.5 GHz against 128 MACs
    x 0.5 GHz) and at its share of a device's peak DRAM bandwidth (8 DDR5-4800 subchannels,
    one 64-B burst per nBL = 8 cycles of 416 ps each, shared by the device's 16 contexts);
    bend_batch picks the B of the most queries per second."""
    import pandas as pd

    from experiments.figures.parts import batch_sweep as B

    share = 8 * 64 / (8 * 416e-12) / 16                   # bytes/s per context
    for vb, dim in ((512, 128), (128, 128), (384, 96)):
        unit, dram = B.roofline_batches(vb, dim)
        assert unit == pytest.approx(64e9 * vb / (dim * 32e9))
        assert dram == pytest.approx(64e9 * vb / (dim * share))
    assert B.roofline_batches(512, 128)[0] == pytest.approx(8.0)     # float32
    assert B.roofline_batches(128, 128)[0] == pytest.approx(2.0)     # uint8 (SIFT)
    sweep = pd.DataFrame({"dataset": ["a"] * 4 + ["b"] * 3, "batch_queries": [1, 2, 4, 8, 1, 2, 4],
                          "qps_one_batch": [1.0, 3.0, 2.0, 2.5, 5.0, 4.0, 1.0],
                          "qps": [9.0, 1.0, 1.0, 1.0, 1.0, 1.0, 2.0]})
    assert B.bend_batch(sweep) == {"a": 2, "b": 1}
    assert B.bend_batch(sweep, "qps") == {"a": 1, "b": 4}
