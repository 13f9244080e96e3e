"""The experiments, one module per figure, and :data:`REGISTRY`, the one list of them.

An experiment is a module of this package with ``NAME``, ``TITLE``, ``run(ctx)``,
``plot(folder)`` and ``summary_md(folder)`` (the protocol of :mod:`experiments.harness.runner`),
optionally the hooks through which ``cosmos reproduce`` plans and pools its work
(:mod:`experiments.harness.plan`), and a ``__main__`` block, so that it runs on its own:
``python experiments/figures/NAME.py --scale tiny``.

The harness reaches an experiment only through :data:`REGISTRY` (by module name, imported
when it runs): adding an experiment is one module here and one line below.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Experiment", "REGISTRY"]


@dataclass(frozen=True)
class Experiment:
    """One line of the registry: an experiment's name (its module in this package, its
    results folder, ``cosmos run NAME``) and how ``cosmos reproduce`` treats it."""

    name: str
    #: run only when named (``cosmos run NAME``, ``cosmos reproduce --only NAME``)
    on_request: bool = False
    #: ``cosmos reproduce --full`` runs it only when named (``--only``)
    full_on_request: bool = False
    #: part of ``cosmos reproduce --scale paper`` (a billion vectors)
    paper_scale: bool = False
    #: runs ``--replications R`` (experiments.harness.replications); the others run
    #: replication 0 (``--seed`` itself) alone, and ``cosmos run`` refuses R > 1 for them
    replicated: bool = False
    #: prefix of the ``--set PREFIX.FIELD=VALUE`` settings it takes (None: takes none)
    settings: str | None = None

    @property
    def module(self) -> str:
        return f"{__name__}.{self.name}"


#: every experiment, in the order ``cosmos reproduce`` runs them
REGISTRY = (
    Experiment("fig4a_qps", paper_scale=True, replicated=True),
    Experiment("fig4b_breakdown", paper_scale=True),
    Experiment("fig5a_lir", paper_scale=True),
    Experiment("fig5b_heatmap", paper_scale=True),
    Experiment("validate_dram"),
    Experiment("scale_devices"),
    Experiment("scale_ranks"),
    Experiment("latency_load"),
    Experiment("rag_ttft", paper_scale=True, settings="rag"),
    Experiment("energy_per_query", paper_scale=True),
    # at 1M vectors its sweep simulates more than every other experiment together: about 150
    # points of up to 2,000 queries each; an exact scan of 4 to 16 of 64 lists streams
    # 0.1-1.5 M DRAM requests per query, so its runs alone are tens of billions of requests,
    # hours on 2 cores
    Experiment("recall_qps", full_on_request=True, replicated=True),
    # studies of the model itself, too long to be part of every reproduction
    Experiment("sensitivity", on_request=True),
    Experiment("scale_n", on_request=True),
    Experiment("lever_maps", on_request=True),
    Experiment("calibration", on_request=True),
)
