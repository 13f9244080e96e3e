"""What every package of the simulator shares: the version and the user-facing error type.

``dram``, ``graphs``, ``placement``, ``cosmos`` and ``experiments`` may all import this
module; it imports none of them, so a lower package never pulls in the system model
(docs/design.md: data flows one way).
"""

__version__ = "0.1.0"


class UserError(ValueError):
    """An error caused by the user's input, printed by the command line as one line.

    It derives from ``ValueError`` so that Python callers who catch ``ValueError`` for bad
    arguments catch it too; the message names the file, line or field and what was expected.
    """


__all__ = ["__version__", "UserError"]
