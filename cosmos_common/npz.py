"""Reading arrays from a user's ``.npz`` file with errors that name the file and the key.

``np.load(..., allow_pickle=False)`` refuses arrays of Python objects (dtype object) only
when the key is read, with a message that names neither the file nor the key. Every reader of
the project's ``.npz`` files (traces, clusters, indexes) reads its keys through
:func:`npz_array`, so such a file fails in one line naming both.
"""

from __future__ import annotations

import os

from cosmos_common import UserError

__all__ = ["npz_array", "npz_arrays"]


def npz_array(z, key: str, path: str | os.PathLike):
    """``z[key]`` of an open NpzFile; UserError naming ``path`` and ``key`` if the array holds
    Python objects (refused: loading them could run code) or cannot be decoded."""
    try:
        return z[key]
    except ValueError as exc:
        if "allow_pickle" in str(exc) or "Object arrays" in str(exc):
            raise UserError(f"{path}: key '{key}' holds Python objects (dtype object), which "
                            f"are never loaded; expected a numeric array") from None
        raise UserError(f"{path}: key '{key}' cannot be read ({exc})") from None
    except (OSError, EOFError, KeyError) as exc:
        raise UserError(f"{path}: key '{key}' cannot be read (damaged or truncated .npz: "
                        f"{type(exc).__name__}: {exc})") from None


def npz_arrays(z, keys, path: str | os.PathLike) -> dict:
    """``{key: npz_array(z, key, path)}`` for every key in ``keys``."""
    return {k: npz_array(z, k, path) for k in keys}
