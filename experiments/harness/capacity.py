"""Memory that holds the index at scales where a preset's does not.

Two of the experiments' runs put a whole index in one memory instance:

- **DRAM-only** keeps the index in host DRAM. The paper's DRAM-only is the ideal of a host
  that holds the whole index (Ko et al., CAL 2025, Sec. V: "all data in local DRAM"; the
  preset's docstring: capacity not limited). The preset's host DRAM, 16 subchannels x 1 rank
  of 16 Gb x4 chips = 256 GiB, holds every index up to the ``full`` scale but not a billion
  vectors (384 GB SIFT-like, 640 GB DEEP-like with adjacency lists). Where it does not, the
  run gets the fewest ranks per subchannel, a power of two, that hold it
  (``host.dram_ranks``: 2 for SIFT-like, 4 for DEEP-like at 1e9): a server with two or four
  ranks per channel (dual-rank DIMMs, or two DIMMs per channel) is how a host reaches 0.5-1 TB
  (e.g. 8 channels x 2 x 64 GB RDIMMs on one Sapphire Rapids socket). More ranks also give it
  more rank parallelism, which a host of that size has.
- **fig4b** times single queries on one CXL device. Where one device cannot hold the index,
  it runs on the preset's devices (the paper's four), still one query in flight, so nothing
  queues and the breakdown's stages are those of one query.

The rules apply only where the preset's capacity is too small, so every run at the
``tiny`` .. ``full`` scales is the preset's own. They are computed from the scale and the
family's vector format (:func:`index_bytes`), before any workload is built, so ``--dry-run``
shows them and the overrides are part of each simulation's identity in the result cache.
"""

from __future__ import annotations

import numpy as np

from cosmos.layout import LINE_BYTES, lines_for

#: host DRAM ranks per subchannel tried for DRAM-only, fewest first (a power of two, as
#: servers populate them; the DDR5 model resolves up to 8)
HOST_RANKS = (1, 2, 4, 8)


def index_bytes(family: str, scale) -> int | None:
    """Bytes of ``family``'s clustered graph index at ``scale``: per vector its adjacency
    list (``max_degree`` 4-byte ids) and the vector, each in whole 64-byte lines, as
    cosmos.layout lays them out. None for a family the synthetic generator does not know
    (a user's dataset: its size is that of the file, at most the ``full`` scale's)."""
    from graphs import synthetic
    from graphs.index import IndexParams

    spec = synthetic.SPECS.get(family)
    if spec is None:
        return None
    vector_bytes = spec.dim * np.dtype(spec.dtype).itemsize
    max_degree = IndexParams(num_clusters=scale.num_clusters).max_degree
    return graph_index_bytes(int(scale.n), vector_bytes, max_degree)


def graph_index_bytes(n: int, vector_bytes: int, max_degree: int) -> int:
    """Bytes of a graph index of ``n`` vectors as cosmos.layout lays it out: per vector its
    adjacency list (``max_degree`` 4-byte ids) and the vector, each in whole 64-byte lines."""
    return int(n) * (lines_for(4 * max_degree) + lines_for(vector_bytes)) * LINE_BYTES


def trace_index_bytes(trace) -> int:
    """Bytes the index of ``trace`` occupies in the simulated memory (cosmos.layout): a graph
    index as :func:`graph_index_bytes`; a scan index (IVF-PQ, exact) its lists of
    ``code_bytes`` codes, each list line-aligned, and the full vectors it re-ranks or reads,
    one per line-aligned slot."""
    meta = trace.meta
    n, vb = int(meta["n"]), int(meta["vector_bytes"])
    if not trace.is_scan:
        return graph_index_bytes(n, vb, int(meta["max_degree"]))
    sizes = np.diff(np.asarray(trace.cluster_ptr, np.int64))
    lists = int((-(-(sizes * int(meta["code_bytes"])) // LINE_BYTES)).sum()) * LINE_BYTES
    return lists + n * lines_for(vb) * LINE_BYTES


def _capacity(system: str, overrides: dict) -> int:
    """Bytes of one memory instance of preset ``system`` with ``overrides``
    (cosmos.simulate.instance_capacity_bytes, what the layout is given)."""
    from cosmos.simulate import instance_capacity_bytes
    from experiments.harness.sim import _system_config

    return instance_capacity_bytes(_system_config(system, overrides, None))


def fit_overrides(system: str, family: str, scale, overrides: dict | None = None) -> dict:
    """``overrides`` with what makes the index of ``family`` at ``scale`` fit ``system``'s
    memory (module docstring): a host-DRAM system gets the fewest host DRAM ranks that hold
    it; a device system told ``device.count = 1`` gets the preset's devices back if one
    cannot hold it. Unchanged where the index fits (every scale up to ``full``)."""
    from cosmos.systems import model_for
    from experiments.harness.sim import _system_config

    out = dict(overrides or {})
    need = index_bytes(family, scale)
    if need is None:
        return out
    if model_for(_system_config(system, out, None)).index_in_host:
        if need > _capacity(system, out):
            for r in HOST_RANKS:
                if need <= _capacity(system, dict(out, **{"host.dram_ranks": r})):
                    out["host.dram_ranks"] = r
                    break
        return out
    if out.get("device.count") == 1 and need > _capacity(system, out):
        del out["device.count"]
    return out


def fit_for(ctx, family: str, system: str, overrides: dict | None = None) -> dict:
    """:func:`fit_overrides` for an experiment's context (a user's dataset: unchanged)."""
    if ctx.dataset:
        return dict(overrides or {})
    return fit_overrides(system, family, ctx.scale, overrides)
