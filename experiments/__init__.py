"""The experiments of the Cosmos simulator, by concern.

- :mod:`experiments.figures`: one module per figure or experiment, and the registry that
  names them (``cosmos run NAME``, ``cosmos reproduce``, ``python
  experiments/figures/NAME.py``);
- :mod:`experiments.harness`: what runs them -- the run context and results folders
  (runner), ``cosmos reproduce``'s plan and shared pool (plan), the workloads, one
  simulation as a sweep task (sim), the simulation cache (resultcache), sweeps and atomic
  writes (common), replications, index capacity, and the command line (cli);
- :mod:`experiments.tools`: developer tools -- benchmarks and their report
  (docs/performance.md), validation checks, the JIT profiler, and the comparison of two
  reproductions.

Dependencies run one way: figures use the harness and the models (cosmos, dram, graphs,
placement, rag); the harness reaches a figure only through the registry; tools may import
anything; the models never import this package (tests/test_layering.py).

The ``experiments/NAME.py`` files beside these folders only forward the old script paths of
the experiments to ``experiments/figures/NAME.py`` (:mod:`experiments.moved`).
"""
