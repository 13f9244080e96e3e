"""Developer tools, each a script run on its own: the benchmarks (``bench_*``) and the report
they make (``perf_report``: docs/performance.md), validation checks (``check_*``,
``placement_lir``), the JIT profiler (``profile_jit``) and ``compare_reproduce`` (are two
reproductions' results the same?)."""
