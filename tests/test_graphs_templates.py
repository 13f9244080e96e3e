"""Cluster-template workloads (graphs.templates): identity with the real index when every
cluster is its own template, the logical geometry, grown templates, the templated trace in
the system model, and one-line refusals of impossible requests."""

from __future__ import annotations

import numpy as np
import pytest

from cosmos.presets import PAPER_SYSTEMS, get_preset
from cosmos.simulate import simulate
from cosmos_common import UserError
from experiments.harness.workloads import Scale, probed_clusters, workload_queries
from graphs import load_trace, make_workload, save_trace
from graphs.index import IndexParams
from graphs.kmeans import assign
from graphs.templates import (TemplateParams, _scaled_sizes, build_templates, choose_templates,
                              estimate_bytes, make_template_workload, positional,
                              template_assignment)

SMALL = dict(n=3000, num_queries=40, num_clusters=16, num_probes=4)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def real(cache):
    return make_workload("sift", **SMALL, cache_dir=cache, progress=False)


@pytest.fixture(scope="module")
def identity(cache):
    return make_template_workload("sift", num_templates=SMALL["num_clusters"], **SMALL,
                                  cache_dir=cache, progress=False)


def test_every_cluster_its_own_template_is_the_real_trace(real, identity):
    """T = C at a size the sample holds: the same k-means, members, graphs and searches, so
    the trace equals the real one with its node ids as logical positions."""
    a, b = positional(real), positional(identity)
    assert a.keys() == b.keys()
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)
    assert identity.meta["exact_geometry"] is True
    assert identity.meta["templated"] is True
    assert len(identity.cluster_nodes) == 0 and identity.num_nodes == len(identity.node_pos)
    np.testing.assert_array_equal(identity.template_of, np.arange(SMALL["num_clusters"]))


def test_given_centroids_replace_kmeans(real, identity, cache):
    """``centroids=`` a real index's: within the sample the same trace as the k-means one
    (they are the same centroids); other centroids give their own geometry, under their own
    cache key, and a wrong shape is one line."""
    same = make_template_workload("sift", num_templates=SMALL["num_clusters"], **SMALL,
                                  cache_dir=cache, progress=False, centroids=real.centroids)
    a, b = positional(identity), positional(same)
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)
    other_c = real.centroids[::-1].copy()                 # the same centroids, renumbered
    other = make_template_workload("sift", num_templates=4, **SMALL, cache_dir=cache,
                                   progress=False, centroids=other_c)
    np.testing.assert_array_equal(other.centroids, other_c)
    sizes = np.diff(np.asarray(real.cluster_ptr))
    np.testing.assert_array_equal(np.diff(np.asarray(other.cluster_ptr)), sizes[::-1])
    with pytest.raises(UserError, match=r"centroids: expected shape \(16, 128\)"):
        make_template_workload("sift", num_templates=4, **SMALL, cache_dir=cache,
                               progress=False, centroids=real.centroids[:8])


@pytest.mark.parametrize("system", PAPER_SYSTEMS)
def test_every_cluster_its_own_template_simulates_identically(real, identity, system):
    cfg = get_preset(system)
    a = simulate(cfg, real, progress=False).summary()
    b = simulate(cfg, identity, progress=False).summary()
    assert a["qps"] == b["qps"]
    assert a["latency_mean_ns"] == b["latency_mean_ns"]


def test_templated_trace_round_trips_and_is_cached(cache, tmp_path):
    kw = dict(SMALL, num_templates=3, cache_dir=cache, progress=False)
    tr = make_template_workload("sift", **kw)
    again = make_template_workload("sift", **kw)
    for key in ("node_pos", "read_node", "hop_node", "result_ids", "template_of"):
        np.testing.assert_array_equal(getattr(tr, key), getattr(again, key))
    path = save_trace(tmp_path / "t.npz", tr)
    back = load_trace(path)
    np.testing.assert_array_equal(back.node_pos, tr.node_pos)
    assert back.meta["num_templates"] == 3
    # three templates serve every cluster; a template stands for itself
    assert len(set(tr.template_of.tolist())) == 3
    for t in set(tr.template_of.tolist()):
        assert tr.template_of[t] == t
    assert 0.9 <= tr.meta["recall"] <= 1.0
    assert all(0.8 <= r <= 1.0 for r in tr.meta["template_recall"])


def test_templated_routing_is_the_traces_search_clusters(cache):
    """The probes of a templated trace at any count are the queries routed over its logical
    centroids (what fig5a reads at the paper scale instead of tracing 4 and 16 probes)."""
    kw = dict(SMALL, num_templates=3, cache_dir=cache, progress=False)
    tr = make_template_workload("sift", **kw)
    q = workload_queries("sift", Scale("t", SMALL["n"], SMALL["num_queries"],
                                       SMALL["num_clusters"], 4, 10))
    for p in (2, 4, 8):
        other = tr if p == 4 else make_template_workload("sift", **{**kw, "num_probes": p})
        qp, sc = probed_clusters(tr, q, p)
        np.testing.assert_array_equal(qp, other.query_ptr)
        np.testing.assert_array_equal(sc, other.search_cluster)


def test_grown_templates_are_members_of_their_cluster(cache):
    """Beyond the sample, a template is grown from the conditioned distribution: every
    member's nearest logical centroid is its cluster, and the sizes are the logical ones."""
    p = TemplateParams("sift", n=120_000, num_clusters=8, num_templates=2, sample_rows=12_000)
    ti = build_templates(p, IndexParams(num_clusters=8), threads=1, progress=False)
    assert not ti.exact_geometry
    assert int(ti.sizes.sum()) == 120_000
    ptr = ti.index.cluster_ptr
    for j, t in enumerate(ti.templates):
        members = ti.vectors[ptr[j]:ptr[j + 1]]
        assert len(members) == ti.sizes[t]
        assert np.all(assign(members, ti.centroids, "l2") == t)
        assert ti.grown_rows[j] > 0


def test_large_templated_workload_simulates(cache):
    tr = make_template_workload("sift", n=100_000, num_queries=30, num_clusters=8,
                                num_templates=2, num_probes=2, sample_rows=8_000,
                                cache_dir=cache, progress=False)
    assert int(tr.cluster_ptr[-1]) == 100_000
    assert tr.num_nodes < 100_000            # only the touched nodes are numbered
    r = simulate(get_preset("cosmos"), tr, progress=False).summary()
    assert r["qps"] > 0


def test_scaled_sizes_sum_and_round():
    s = _scaled_sizes(np.array([3, 1, 1]), 10)
    assert s.sum() == 10 and list(s) == [6, 2, 2]
    s = _scaled_sizes(np.array([1, 1, 1]), 10)
    assert list(s) == [4, 3, 3]


def test_templates_at_size_quantiles_and_nearest_size():
    sizes = np.array([10, 100, 1000, 20, 200, 2000, 30, 300])
    t = choose_templates(sizes, 2)
    assert len(t) == 2
    of = template_assignment(sizes, t)
    assert all(of[x] == x for x in t)
    logs = np.log(sizes[t])
    for c in range(len(sizes)):
        assert abs(np.log(sizes[c]) - np.log(sizes[of[c]])) == pytest.approx(
            np.min(np.abs(np.log(sizes[c]) - logs)))
    np.testing.assert_array_equal(choose_templates(sizes, len(sizes)), np.arange(len(sizes)))


@pytest.mark.parametrize("change, words", [
    (dict(num_clusters=5000, n=3000), "num_clusters=5000 must be at most n=3000"),
    (dict(num_templates=17), "num_templates=17 must be at most num_clusters=16"),
    (dict(num_templates=0), "num_templates=0 must be an integer >= 1"),
    (dict(num_clusters=0), "num_clusters=0 must be an integer >= 1"),
    (dict(n=3 * 10**9), "must be below 2**31"),
    (dict(num_probes=17), "num_probes=17 must be in 1..num_clusters=16"),
])
def test_bad_requests_get_one_line(cache, change, words):
    kw = dict(SMALL, num_templates=4, cache_dir=cache, progress=False)
    kw.update(change)
    with pytest.raises(UserError, match=words.replace("*", r"\*")):
        make_template_workload("sift", **kw)


def test_templates_that_do_not_fit_memory_are_refused_before_building(cache, monkeypatch):
    import cosmos_common.sysinfo as sysinfo

    monkeypatch.setattr(sysinfo, "physical_memory_bytes", lambda: 10**8)
    with pytest.raises(UserError, match=r"needs about .* GB, more than 80 % of this machine"):
        make_template_workload("deep", n=10**9, num_queries=10, num_clusters=1024,
                               num_templates=64, cache_dir=cache, progress=False)


def test_memory_estimate_grows_with_templates():
    ip = IndexParams()
    small = estimate_bytes(TemplateParams("sift", 10**9, 1024, 2), ip)
    big = estimate_bytes(TemplateParams("sift", 10**9, 1024, 8), ip)
    assert big > 1.5 * small > 0


def test_surrogate_queries_probe_their_template_at_the_same_rank():
    """A surrogate of a probe at rank j for template t is a pool query whose rank-j probe is
    t, the one with the nearest gap."""
    from graphs import synthetic
    from graphs.templates import _route_gaps, _Surrogates

    pool = synthetic.generate("sift", 4000, 0, queries=True).astype(np.float32)
    cent = synthetic.generate("sift", 16, 1).astype(np.float32)
    sur = _Surrogates(cent, pool, 3, "l2", np.array([2, 5]))
    probes, gap = _route_gaps(cent, pool, 3, "l2")
    for t in (2, 5):
        for j in range(3):
            rows = np.flatnonzero(probes[:, j] == t)
            want = 1.05 if j else 1.0
            got = sur.pick(np.array([t]), np.array([j]), np.array([want]))[0]
            i = int(np.flatnonzero((pool == got).all(axis=1))[0])
            assert probes[i, j] == t
            assert abs(gap[i, j] - want) == pytest.approx(np.min(np.abs(gap[rows, j] - want)))


def test_check_templates_prints_its_table(cache, capsys):
    from experiments.tools import check_templates

    code = check_templates.main(["--scale", "tiny", "--systems", "base,cosmos",
                                 "--datasets", "sift", "--cache-dir", str(cache),
                                 "--tolerance", "0.5"])
    out = capsys.readouterr().out
    assert code == 0
    assert "| hops per query |" in out and "| cosmos: QPS |" in out
    assert "within the tolerance of 50 %" in out


def test_latents_are_the_ones_generate_drew():
    """Rebuilding rows from their latents (mode, z) and the stream's noise gives generate's
    rows: the latent box of a template is measured on the real draws."""
    from graphs import synthetic

    spec = synthetic.SPECS["deep"]
    x, modes = synthetic.generate_with_modes(spec, 20_000, 0)
    rows = np.array([0, 3, 8191, 8192, 19_999])
    z = synthetic.latents(spec, rows, 0)
    centers, basis, w, _ = synthetic._model(spec, 0)
    for r, zr in zip(rows, z):
        b = r // 8192
        rng = np.random.default_rng([0, 1, b])
        rng.choice(len(w), size=8192, p=w)
        rng.normal(size=(8192, spec.rank))
        eps = rng.normal(size=(8192, spec.dim))[r - b * 8192]
        v = centers[modes[r]] + spec.noise * eps + zr @ basis[modes[r]]
        np.testing.assert_allclose(v / np.linalg.norm(v), x[r], rtol=1e-5, atol=1e-6)


def test_truncated_normal_stays_in_its_box_with_the_right_mean():
    from graphs.synthetic import truncated_normal

    u = np.random.default_rng(0).random((100_000, 3))
    lo, hi = np.array([1.0, -0.5, -4.0]), np.array([3.0, 0.5, -2.0])
    t = truncated_normal(u, lo, hi)
    assert np.all(t >= lo) and np.all(t <= hi)
    # means of the truncated standard normal: (phi(a) - phi(b)) / (Phi(b) - Phi(a))
    from math import erf, exp, pi, sqrt

    def mean(a, b):
        phi = lambda v: exp(-v * v / 2) / sqrt(2 * pi)      # noqa: E731
        Phi = lambda v: 0.5 * (1 + erf(v / sqrt(2)))       # noqa: E731
        return (phi(a) - phi(b)) / (Phi(b) - Phi(a))
    for j in range(3):
        assert t[:, j].mean() == pytest.approx(mean(lo[j], hi[j]), abs=0.01)


def test_fused_sift_post_processing_matches_the_generator():
    from graphs import synthetic

    spec = synthetic.SPECS["sift"]
    x = np.random.default_rng(3).normal(size=(5000, 128)) + 0.4
    np.testing.assert_array_equal(synthetic._post(spec, x.copy()),
                                  synthetic._post_sift_rows(x.copy()))


def test_probe_coverage_is_exact_when_the_sample_is_the_whole_set(real, identity):
    """At a size the sample holds, the coverage is the share of each query's true top-10 in
    its probed clusters: at least the recall the search reaches."""
    from graphs.templates import probe_coverage

    cov = probe_coverage(identity, "sift", rows=10**6)
    assert cov["rows"] == SMALL["n"] and cov["stands_for_k"] == 10
    assert real.meta["recall"] <= cov["mean"] <= 1.0


def test_an_index_larger_than_the_host_dram_is_one_line_naming_the_fields():
    """At a billion vectors the DRAM-only system's host DRAM (16 x 1 ranks, 256 GiB) is too
    small for the index: one line naming the fields that set its capacity."""
    from tests.cosmos_helpers import make_trace

    t = make_trace(num_queries=2, num_clusters=2, cluster_size=8, probes=1, hops=2,
                   reads_per_hop=2, dim=128, vector_bytes=40 * 2**30)
    with pytest.raises(ValueError, match=r"does not fit the host DRAM \(host.dram_channels x "
                                         r"host.dram_ranks = 16 x 1\)"):
        simulate(get_preset("dram-only"), t, progress=False)


def test_recall_row_reports_what_is_known_of_recall(real, cache, tmp_path):
    """A real index's recall is end-to-end; a templated one's row gives its templates' own
    recall and the probes' coverage, exact here (n within the sample) and equal to the real
    trace's, whose routing over the same centroids it shares. fig4a's summary says both."""
    import pandas as pd

    from experiments.figures.fig4a_qps import workload_md
    from experiments.harness.workloads import recall_row
    from graphs.templates import probe_coverage

    two = make_template_workload("sift", num_templates=2, **SMALL, cache_dir=cache,
                                 progress=False)
    r_real, r_two = recall_row(real, "sift"), recall_row(two, "sift")
    assert r_real["recall_kind"] == "end-to-end" and "probe_coverage_mean" not in r_real
    assert r_real["recall_at_10"] == real.meta["recall"] and r_real["templates"] == 0
    assert r_two["recall_kind"] == "template-weighted" and r_two["templates"] == 2
    assert len(r_two["template_recall_at_10"].split()) == 2
    assert r_two["probe_coverage_stands_for_k"] == 10 and r_two["probe_coverage_rows"] == 3000
    assert r_two["probe_coverage_mean"] == probe_coverage(real, "sift")["mean"]
    assert 0.5 < r_two["probe_coverage_mean"] <= 1
    pd.DataFrame([r_real, r_two]).to_csv(tmp_path / "workload.csv", index=False)
    text = "\n".join(workload_md(tmp_path))
    assert "| sift | 3,000 | 16 | real index | 4 |" in text
    assert "the templates' own" in text and "lie in a probed cluster" in text
