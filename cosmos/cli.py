"""The ``cosmos`` command line.

Each package owns its subcommands in its own ``cli`` module, which exposes
``register(subparsers)``: it adds its parser(s) and sets ``func`` (called with the parsed
namespace, returns an exit code). Heavy imports (numba, hnswlib) happen inside ``func``, so
``cosmos --help`` stays fast and ``placement`` stays importable without numba.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

# Modules that contribute subcommands, in the order they appear in ``cosmos --help``.
SUBCOMMAND_MODULES = (
    "dram.cli",
    "placement.cli",
    "graphs.cli",
    "cosmos.simulate_cli",
    "experiments.harness.cli",
    "cosmos.cache_cli",
)


#: The commands each of those modules adds. A command line naming one of them builds the
#: parser of that module alone: ``cosmos dram replay`` does not import the system model,
#: placement or the experiments (a tenth of a second of a short command).
COMMANDS = {
    "dram": "dram.cli",
    "place": "placement.cli",
    "graphs": "graphs.cli",
    "simulate": "cosmos.simulate_cli",
    "reproduce": "experiments.harness.cli",
    "run": "experiments.harness.cli",
    "replay": "experiments.harness.cli",
    "cache": "cosmos.cache_cli",
}


from cosmos_common import UserError  # noqa: F401  (re-exported: the one user-facing error type)
from cosmos_common.signals import Terminated, exit_status, stop_on_signals


def _is_temporary(path: str) -> bool:
    """A temporary file of an atomic write (``.NAME.XXXX.tmp``) or of the writability probe
    (``.cosmos-write-test.XXXX``): a user never made it, so errors name its folder."""
    base = os.path.basename(path)
    return base.startswith(".") and (base.endswith(".tmp") or
                                     base.startswith(".cosmos-write-test."))


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``cosmos`` parser: every subcommand, or only those of the module that adds
    ``command`` (one of :data:`COMMANDS`)."""
    parser = argparse.ArgumentParser(
        prog="cosmos",
        description="Cosmos simulator: graph ANNS on CXL memory with near-memory processing.",
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    modules = [COMMANDS[command]] if command in COMMANDS else SUBCOMMAND_MODULES
    for name in modules:
        importlib.import_module(name).register(sub)
    return parser


def run() -> None:
    """The ``cosmos`` command and ``python -m cosmos``: :func:`main`, then exit with its status.

    Before the interpreter exits, every object it tracks is moved out of the garbage
    collector's reach (``gc.freeze``): the collections of the interpreter's shutdown would
    otherwise walk numba's whole object graph, about 0.13 s of a 1.7 s ``cosmos dram replay``,
    to free memory the operating system takes back at once. Files are already closed and
    ``atexit`` handlers still run. (Not in :func:`main`, which tests call in-process.)
    """
    import gc

    status = main()
    gc.freeze()
    raise SystemExit(status)


def main(argv: list[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    parser = build_parser(words[0] if words else None)
    args = parser.parse_args(argv)
    if args.version:
        from cosmos import __version__

        print(__version__)
        return 0
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        with stop_on_signals():     # SIGTERM / SIGHUP stop a command as Ctrl-C does
            return int(args.func(args) or 0)
    except (UserError, ValueError, FileNotFoundError, FileExistsError) as exc:
        print(f"cosmos {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # stdout was closed early (e.g. `cosmos dram replay T | head`): not an error of ours;
        # point stdout at /dev/null so the interpreter's final flush does not fail again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except MemoryError as exc:
        print(f"cosmos {args.command}: error: out of memory ({exc or 'allocation failed'}); "
              f"try a smaller configuration", file=sys.stderr)
        return 2
    except OSError as exc:
        # permissions, a folder where a file is expected (or the reverse), a full disk, an
        # unreachable Dask scheduler: one line naming the path when there is one
        name = getattr(exc, "filename", None)
        if name and _is_temporary(str(name)):  # name the folder, not our temporary file
            name = f"cannot write into {os.path.dirname(str(name)) or '.'}"
        where = f"{name}: " if name else ""
        what = exc.strerror or str(exc) or type(exc).__name__
        print(f"cosmos {args.command}: error: {where}{what}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        # Ctrl-C, or SIGTERM / SIGHUP (cosmos_common.signals.Terminated)
        note = ""
        if args.command in ("reproduce", "run") and not getattr(args, "no_sim_cache", True):
            note = ("; the simulations that finished are kept in the simulation cache: the "
                    "same command resumes from them")
        what = f"stopped by {exc.name}" if isinstance(exc, Terminated) else "interrupted"
        print(f"cosmos {args.command}: {what}{note}", file=sys.stderr)
        return exit_status(exc)


if __name__ == "__main__":
    raise SystemExit(main())
