"""Parts of experiments, one concern per module: not experiments themselves.

An experiment that grows several concerns keeps itself (its run, plot and summary, the
protocol of experiments.harness.runner) in its module of experiments/figures/ and moves each
other concern into a module here, which it imports. These modules import no experiment (one
direction), and the registry (experiments/figures/__init__.py) names none of them: the
``*.py`` files of experiments/figures/ are the experiments, this folder their parts.

- :mod:`experiments.figures.parts.recall_winners`: the winners at a recall level of
  ``recall_qps`` (Pareto fronts, QPS at a recall target with its interval, ``winners.csv``,
  the replicated winners): pure functions over its tables;
- :mod:`experiments.figures.parts.batch_sweep`: the batch-size sweep of exact-pnm-batch that
  ``recall_qps`` runs on its exact traces (``batch_sweep.csv``, its plot and summary section);
- :mod:`experiments.figures.parts.sensitivity_regions`: the intervals, orderings and regions of
  ``sensitivity`` (the ratio of two runs' intervals, ``orderings.csv``, ``regions.csv``, the
  paper's figures and the tolerance): pure functions over its tables;
- :mod:`experiments.figures.parts.tornado`: the tornado plot of ``sensitivity`` (one headline
  ratio, a panel per dataset), drawn from the rows of ``sensitivity.csv``.
"""
