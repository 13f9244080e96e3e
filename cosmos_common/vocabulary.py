"""One spelling per concept across every ``cosmos`` command.

:data:`SPELLINGS` names each concept an option of several commands stands for, its one
spelling, and the other spellings users may bring from other tools (or from this project's
earlier releases). :func:`add_renamed` keeps an earlier spelling working for a release: hidden
from ``--help``, it sets the same value and prints one line on stderr naming the new spelling.
tests/test_vocabulary.py walks every subcommand's options and fails on a second spelling of a
concept that is not such a renamed alias.
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["SPELLINGS", "HOMONYMS", "add_renamed", "Renamed"]

#: concept -> (its spelling, other spellings of the same concept)
SPELLINGS = {
    # how many CPUs a command may use: worker threads (DRAM channels, graph builds) or worker
    # processes (sweeps); the results never depend on it
    "workers": ("--workers", ("--threads", "--jobs", "-j", "--num-threads", "--num-workers",
                              "--processes", "--nproc")),
    # the system presets a command simulates (a comma-separated list; simulate takes one)
    "systems": ("--systems", ("--system", "--sys", "--preset", "--presets")),
    # the vectors: a built-in family or real set, or the user's file
    "dataset": ("--dataset", ("--workload", "--data", "--dataset-name")),
    # the cache folder
    "cache": ("--cache-dir", ("--cache", "--cachedir", "--cache-path")),
    # no progress bars (they are drawn only on a terminal anyway)
    "progress": ("--no-progress", ("--quiet", "-q", "--no-bar", "--silent")),
    # how many queries to simulate or trace
    "num_queries": ("--num-queries", ("--nq", "--n-queries", "--queries-count")),
    # the seed of everything random a command draws
    "seed": ("--seed", ("--random-seed", "--rng-seed")),
    # where results go: a new folder (or a file for one-file outputs: graphs, place)
    "out": ("--out", ("--output", "-o", "--out-dir", "--output-dir", "--outdir")),
    # the Dask scheduler a sweep runs on
    "dask_scheduler": ("--dask-scheduler", ()),
}

#: spellings that mean one thing only, and the commands where they are that thing's spelling
#: (``--scheduler`` is the DRAM controller's request scheduler; the sweeps' Dask scheduler is
#: ``--dask-scheduler``)
HOMONYMS = {"--scheduler": ("dram replay",)}


class Renamed(argparse.Action):
    """An earlier spelling of an option: stores into the new option's destination and says
    once, on stderr, what the option is called now."""

    def __init__(self, option_strings, dest, new: str = "", **kwargs):
        self.new = new
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"{parser.prog}: note: {option_string} is now {self.new}; the old spelling "
              f"works until the next release", file=sys.stderr)
        setattr(namespace, self.dest, values)


def add_renamed(container, old: str, action: argparse.Action) -> argparse.Action:
    """Accept ``old`` as an earlier spelling of ``action`` (an option already added to
    ``container``, a parser or one of its groups): same destination, type and choices, hidden
    from ``--help``."""
    return container.add_argument(old, dest=action.dest, type=action.type,
                                  choices=action.choices, metavar=action.metavar,
                                  help=argparse.SUPPRESS, action=Renamed,
                                  new=action.option_strings[-1], default=argparse.SUPPRESS)
