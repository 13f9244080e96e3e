"""experiments/tools/perf_report.py: the benchmarks' JSON figures become docs/performance.md's table."""

from __future__ import annotations

import json

from experiments.tools import bench_placement
from experiments.tools import perf_report
from tests.test_docs import journal_offenses, link_offenses

FAKE = {
    "bench_dram": {"_args": [], "compile_or_cache_load_s": 0.7, "peak_rss_MB": 224.0, "patterns": {
        "TOTAL": {"runs": 124, "requests": 11_200_000, "requests_per_s": 2.5e6,
                  "ramulator_requests_per_s": 2.25e5, "speedup": 11.1},
        "anns": {"runs": 28, "requests": 2_800_000, "requests_per_s": 2.8e6,
                 "ramulator_requests_per_s": 2.3e5, "speedup": 12.2},
        "random_read": {"runs": 28, "requests": 2_800_000, "requests_per_s": 2.3e6,
                        "ramulator_requests_per_s": 2.2e5, "speedup": 10.5}}},
    "bench_cosmos": {"_args": ["--system", "cosmos", "--num-queries", "10000"], "system": "cosmos",
                     "num_queries": 10_000, "requests": 138_900_000, "simulate_total_s": 46.0,
                     "simulate_cpu_s": 45.5, "engine_s": 44.3, "requests_per_s": 3.0e6,
                     "peak_rss_MB": 1500.0},
}


def test_table_has_one_row_per_figure_and_the_commands():
    rows = perf_report.table_rows(FAKE)
    cmds = [r[0] for r in rows if r[0]]
    assert cmds == ["`python experiments/tools/bench_dram.py`",
                    "`python experiments/tools/bench_cosmos.py --system cosmos --num-queries 10000`"]
    text = "\n".join(" | ".join(r) for r in rows)
    assert "2,500,000 requests/s (11.1x" in text and "`anns` traces (28 runs)" in text
    assert "46.0 s (45.5 s CPU)" in text and "1.7 s; 1,500 MB" in text


def test_page_names_the_cpu_once_and_keeps_the_journal_out(tmp_path):
    text = perf_report.render(FAKE, False, "Some CPU, 2 CPUs")
    assert text.count("Some CPU") == 1
    page = tmp_path / "docs" / "performance.md"
    page.parent.mkdir()
    assert journal_offenses(page, text) == []
    assert perf_report.render(FAKE, True, "c").count("quick mode") == 1


def test_static_text_links_resolve():
    from pathlib import Path

    page = Path(perf_report.ROOT) / "docs" / "performance.md"
    assert link_offenses(page, perf_report.STATIC) == []


def test_bench_placement_json_feeds_the_report(tmp_path):
    out = tmp_path / "p.json"
    assert bench_placement.main(["--side", "40", "--devices", "8", "--neighbors", "8",
                                 "--policies", "adjacency", "round_robin", "--json", str(out)]) == 0
    fig = json.loads(out.read_text())
    assert fig["clusters"] == 1600 and set(fig["policies"]) == {"adjacency", "round_robin"}
    fig["_args"] = ["--side", "40", "--policies", "round_robin", "adjacency"]
    rows = perf_report.table_rows({"bench_placement": fig})
    assert [r[1].split("`")[-2] for r in rows] == ["placement.place(..., \"round_robin\")", "adjacency"]


def test_main_writes_the_page_atomically(tmp_path):
    out = tmp_path / "performance.md"
    out.write_text("old page\n")
    assert perf_report.main(["--quick", "--only", "bench_placement", "--out", str(out)]) == 0
    text = out.read_text()
    assert text.startswith("# Performance") and "bench_placement.py --side 300" in text
    assert [p.name for p in tmp_path.iterdir()] == ["performance.md"]   # no temporary left


def test_bench_replay_rows_give_wall_cpu_ratios_and_the_split():
    med = {"wall_s": 2.0, "cpu_s": 1.6, "parse_s": 0.4, "setup_s": 0.3, "simulate_s": 0.9,
           "write_s": 0.1, "other_s": 0.3, "peak_rss_MB": 450.0,
           "speedup_vs_ramulator": 4.4, "cpu_speedup_vs_ramulator": 5.5}
    figs = {"bench_replay": {
        "_args": ["--runs", "3", "--variants", "npz,none", "--out-root", "/somewhere/results"],
        "trace_MB": 50.1, "n_requests": 2_000_000, "pattern": "random_rw", "channels": 4,
        "runs": 3, "cpus": 2, "load_before": [1.0, 1.2, 1.3], "ramulator_s": 8.87,
        "medians": {"npz": med, "none": dict(med, wall_s=1.9, speedup_vs_ramulator=4.7)}}}
    rows = perf_report.table_rows(figs)
    assert rows[0][0] == "`python experiments/tools/bench_replay.py --runs 3 --variants npz,none`"
    assert "2,000,000-request" in rows[0][1] and "(8.87 s)" in rows[0][1]
    assert rows[0][2] == "2.00 s (1.60 s CPU): 4.4x Ramulator 2.1 by wall time, 5.5x by CPU time"
    assert "`--no-requests`" in rows[1][1] and rows[1][2].startswith("1.90 s")
    assert rows[2][2] == "0.40 s; 0.30 s; 0.90 s; 0.10 s; 0.30 s; peak memory 450 MB"


def test_the_vamana_build_row_names_its_command_and_goal():
    fig = {"_args": ["--graph", "vamana", "--num-queries", "2000"], "cpus": 2, "build_s": 300.0,
           "build_cpu_s": 580.0, "index_file_MB": 250.0, "trace_s": 5.0, "recall_at_k": 0.999,
           "config": {"n": 1_000_000, "num_clusters": 64, "R": 64, "L": 100, "alpha": 1.2, "num_queries": 2000,
                      "num_probes": 8, "cand_list_len": 64, "k": 10}}
    rows = perf_report.table_rows({"bench_graphs_vamana": fig})
    assert rows[0][0] == "`python experiments/tools/bench_graphs.py --graph vamana --num-queries 2000`"
    assert "64 Vamana graphs" in rows[0][1] and "goal 600 s" in rows[0][1]
    assert rows[0][2] == "300.0 s (580.0 s CPU); index file 250 MB"
    assert [b.name for b in perf_report.BENCHES].count("bench_graphs_vamana") == 1


OLD_PAGE = """# Performance

| benchmark command | what it measures | figure |
|---|---|---|
| `python experiments/tools/bench_placement.py --side 40` | placement, old figure | 1.00 s |
|  | the same, policy `random` | 0.10 s |
| `/usr/bin/time -v cosmos run fig4a_qps --scale paper` | a paper-scale run, default|full | 35 min |
|  | the same for DEEP-like | 21 min |
| `python experiments/tools/bench_dram.py` | DDR5 model | 3 M requests/s |
"""


def test_long_run_rows_are_carried_and_script_rows_remade(tmp_path):
    rows = perf_report.carried_rows(OLD_PAGE)
    assert rows == [("`/usr/bin/time -v cosmos run fig4a_qps --scale paper`",
                     "a paper-scale run, default|full", "35 min"),
                    ("", "the same for DEEP-like", "21 min")]
    out = tmp_path / "performance.md"
    out.write_text(OLD_PAGE)
    assert perf_report.main(["--quick", "--only", "bench_placement", "--out", str(out)]) == 0
    text = out.read_text()
    assert "old figure" not in text and "3 M requests/s" not in text   # script rows are remade
    table = [ln for ln in text.splitlines() if ln.startswith("| ")]
    assert table[-2:] == ["| `/usr/bin/time -v cosmos run fig4a_qps --scale paper` | "
                          "a paper-scale run, default|full | 35 min |",
                          "|  | the same for DEEP-like | 21 min |"]


def test_the_page_keeps_its_long_run_rows_and_the_static_text():
    from pathlib import Path

    page = (Path(perf_report.ROOT) / "docs" / "performance.md").read_text()
    assert page.rstrip("\n").endswith(perf_report.STATIC.rstrip("\n"))
    assert any("--scale paper" in r[0] for r in perf_report.carried_rows(page))
