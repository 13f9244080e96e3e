"""Cosmos system model: host, CXL links and devices, GPC offload, rank-level PUs.

The subpackages ``dram``, ``graphs`` and ``placement`` are independent top-level packages
of the same distribution; see docs/contracts.md for the interfaces between them.
"""

from cosmos_common import __version__  # noqa: F401  (one version for every package)
