"""Cosmos system model: host, CXL links and devices, GPC offload, rank-level PUs.

The subpackages ``dram``, ``graphs`` and ``placement`` are independent top-level packages
of the same distribution; see docs/contracts.md for the interfaces between them.
"""

__version__ = "0.1.0"
