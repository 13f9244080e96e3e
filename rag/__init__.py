"""A model of a retrieval-augmented generation (RAG) service around the simulated retrieval.

A peer of the system model (``cosmos``): it consumes the per-query latencies of the retrieval
system's simulation and adds what a RAG request does besides (query encoding, prefill, decode,
iterative retrieval) with the queueing of its accelerators; docs/rag.md.

- :mod:`rag.pipeline`: the model -- model, accelerator and encoder presets with their sources,
  the roofline formulas of each stage, the discrete-event simulation of the prefill queue, TTFT
  and QPS per chip, retrieval profiles (from a simulation's rows or a saved ``cosmos simulate``
  folder);
- :mod:`rag.settings`: ``--set rag.FIELD=VALUE`` settings, checked;
- :mod:`rag.literature`: the RAG literature's figures (each with its source) and the same
  pipeline arithmetic against them.

It imports the system model's packages (cosmos, cosmos_common) and never the experiments.
"""

from rag.pipeline import *  # noqa: F401,F403
from rag.pipeline import __all__ as _pipeline_all
from rag.settings import *  # noqa: F401,F403
from rag.settings import __all__ as _settings_all

__all__ = [*_pipeline_all, *_settings_all]
