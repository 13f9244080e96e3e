"""What runs the experiments: run context and results folders, the plan and shared pool of
``cosmos reproduce``, workloads, simulations as sweep tasks, the simulation cache, and the
command line (``cosmos reproduce``, ``cosmos run``, ``cosmos replay``).

It names no experiment: it reaches them through :data:`experiments.figures.REGISTRY`."""
