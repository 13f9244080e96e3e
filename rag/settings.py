"""Settings of the RAG pipeline from the command line: ``--set rag.FIELD=VALUE``.

:func:`parse_settings` turns ``--set`` items into :class:`RagSettings` (every
:class:`rag.pipeline.PipelineConfig` field, converted and checked as ``validate`` checks it,
plus the retrieval systems to simulate and a saved simulation's profile);
:func:`settings_applied` makes them the :func:`current_settings` of the code that runs within
it (how ``cosmos run rag_ttft --set rag.*`` reaches the experiment).
"""

from __future__ import annotations

import dataclasses
import math
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from cosmos_common import UserError
from rag.pipeline import PipelineConfig, saved_profile

__all__ = ["RagSettings", "parse_settings", "settings_applied", "current_settings",
           "SETTING_ALIASES", "EXPERIMENT_SETTINGS"]


#: short names ``--set rag.NAME`` accepts besides the :class:`PipelineConfig` field names
SETTING_ALIASES = {"batch": "decode_batch"}

#: settings of the rag_ttft experiment that are not pipeline fields: the retrieval systems
#: simulated (graph presets, comma-separated) and a saved simulation whose per-query
#: latencies are one more retrieval profile (a ``cosmos simulate --out`` folder)
EXPERIMENT_SETTINGS = ("systems", "profile")


@dataclass(frozen=True)
class RagSettings:
    """``--set rag.FIELD=VALUE`` settings, parsed and checked (:func:`parse_settings`).

    ``pipeline``: :class:`PipelineConfig` fields and their values; ``systems``: retrieval
    system presets (None: the experiment's own); ``profile``: a saved simulation folder;
    ``items``: the settings as given (for the record and the rerun command)."""

    pipeline: dict = dataclasses.field(default_factory=dict)
    systems: tuple | None = None
    profile: str | None = None
    items: tuple = ()

    def config(self, base: PipelineConfig | None = None) -> PipelineConfig:
        """``base`` (default: the default pipeline) with the pipeline settings applied."""
        return dataclasses.replace(base or PipelineConfig(), **self.pipeline).validate()


def _convert(field: dataclasses.Field, raw: str):
    """The text ``raw`` as the type of ``field`` (``int``, ``float``, ``str``, each maybe
    ``| None``); ValueError saying what was expected."""
    kind = str(field.type).replace(" ", "")
    optional = kind.endswith("|None")
    base = kind[:-len("|None")] if optional else kind
    if optional and raw.lower() in ("none", "null", ""):
        return None
    none = " or none" if optional else ""
    if base == "int":
        try:
            return int(raw)
        except ValueError:
            raise ValueError(f"expected an integer{none}, got {raw!r}") from None
    if base == "float":
        try:
            v = float(raw)
        except ValueError:
            raise ValueError(f"expected a number{none}, got {raw!r}") from None
        if not math.isfinite(v):
            raise ValueError(f"expected a finite number{none}, got {raw!r}")
        return v
    return raw


def parse_settings(items, experiment: str = "rag_ttft") -> RagSettings:
    """``["rag.model=llama-3.1-70b", "rag.batch=64", ...]`` (command-line ``--set``) ->
    :class:`RagSettings`. Every item is converted to its field's type and checked with the
    same rules as :meth:`PipelineConfig.validate`; a bad one raises one UserError line
    naming the setting and what was expected (unknown field, unknown preset, a value out of
    range, a field given twice)."""
    from cosmos.config import parse_overrides

    try:
        raw = parse_overrides(items)
    except ValueError as exc:
        raise UserError(str(exc)) from None
    fields = {f.name: f for f in dataclasses.fields(PipelineConfig)}
    known = [*fields, *EXPERIMENT_SETTINGS]
    aliases = ", ".join(f"{a} (= {f})" for a, f in SETTING_ALIASES.items())
    pipeline, systems, profile = {}, None, None
    for key, value in raw.items():
        where = f"--set {key}={value}"
        prefix, _, name = key.partition(".")
        if prefix != "rag" or not name:
            raise UserError(f"{where}: {experiment} takes rag.FIELD=VALUE settings only; "
                            f"FIELD one of {', '.join(known)}, or {aliases}")
        name = SETTING_ALIASES.get(name, name)
        if name == "systems":
            systems = _parse_systems(value, where)
            continue
        if name == "profile":
            saved_profile(value, where=where)       # readable, with latencies
            profile = value
            continue
        if name not in fields:
            raise UserError(f"{where}: unknown RAG setting {name!r}; expected one of "
                            f"{', '.join(known)}, or {aliases}")
        if name in pipeline:
            raise UserError(f"{where}: rag.{name} given twice")
        try:
            pipeline[name] = _convert(fields[name], value)
            dataclasses.replace(PipelineConfig(), **{name: pipeline[name]}).validate()
        except (ValueError, UserError) as exc:
            msg = str(exc).removeprefix("RAG pipeline: ")
            msg = f"rag.{msg}" if msg.startswith(f"{name} ") else f"rag.{name}: {msg}"
            raise UserError(f"{where}: {msg}") from None
    try:
        dataclasses.replace(PipelineConfig(), **pipeline).validate()
    except UserError as exc:          # a combination no single setting shows
        raise UserError(f"--set rag.*: {str(exc).removeprefix('RAG pipeline: ')}") from None
    return RagSettings(pipeline, systems, profile, tuple(items))


def _parse_systems(value: str, where: str) -> tuple:
    from cosmos.presets import PRESETS

    names = tuple(s.strip() for s in value.split(",") if s.strip())
    if not names:
        raise UserError(f"{where}: rag.systems: expected a comma-separated list of graph "
                        f"system presets from {', '.join(PRESETS)}")
    bad = [s for s in names if s not in PRESETS]
    if bad:
        raise UserError(f"{where}: rag.systems: unknown graph system preset(s) "
                        f"{', '.join(bad)}; expected some of {', '.join(PRESETS)} (the scan "
                        "systems need their own traces: give a saved simulation with "
                        "rag.profile=DIR)")
    if len(set(names)) < len(names):
        raise UserError(f"{where}: rag.systems: a system named twice")
    return names


_SETTINGS: ContextVar = ContextVar("rag_settings", default=None)


@contextmanager
def settings_applied(settings: RagSettings):
    """Within it, :func:`current_settings` is ``settings`` (how ``cosmos run rag_ttft
    --set rag.*`` reaches the experiment; the settings change only the pipeline arithmetic
    and, with ``rag.systems``, which retrieval systems are simulated)."""
    token = _SETTINGS.set(settings)
    try:
        yield settings
    finally:
        _SETTINGS.reset(token)


def current_settings() -> RagSettings:
    """The settings of :func:`settings_applied` (none: the defaults)."""
    return _SETTINGS.get() or RagSettings()
