"""DRAM standards as data. Only DDR5 so far (:mod:`dram.standards.ddr5`)."""

from __future__ import annotations

from dram.standards import ddr5

#: Address mappings with a name. Any permutation of the five fields Ro, Ba, Ra, Co, Ch is
#: accepted (MSB first; Ba = bank above bank group); these are the ones we name and test.
MAPPINGS = ("RoBaRaCoCh", "RoCoBaRaCh", "ChRaBaRoCo", "RoRaBaCoCh", "RoBaCoRaCh")
SCHEDULERS = ("FRFCFS", "FRFCFS_RowHit", "FCFS")
ROW_POLICIES = ("open", "closed")
FORMATS_NOTE = "trace formats are listed by dram.traces"


def list_presets() -> dict:
    """Everything a configuration can name, for ``cosmos dram presets`` and for errors.

    Returns
    -------
    dict with keys ``standards`` (timing presets, e.g. ``DDR5_4800AN``), ``timing`` (the
    same, with ``tCK_ps`` and ``nCL`` per preset), ``orgs`` (organization presets, e.g.
    ``16Gb_x4``), ``mappings``, ``schedulers``, ``row_policies``, ``refresh``
    (``on``/``off``).
    """
    return {
        "standards": list(ddr5.TIMING_PRESETS),
        "timing": {k: {"tCK_ps": v["tCK_ps"], "rate_MTps": v["rate"], "nCL": v["nCL"],
                       "nRCD": v["nRCD"], "nRP": v["nRP"]}
                   for k, v in ddr5.TIMING_PRESETS.items()},
        "orgs": list(ddr5.ORG_PRESETS),
        "org_details": {k: dict(v) for k, v in ddr5.ORG_PRESETS.items()},
        "mappings": list(MAPPINGS),
        "schedulers": list(SCHEDULERS),
        "row_policies": list(ROW_POLICIES),
        "refresh": ["on", "off"],
    }
