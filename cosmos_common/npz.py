"""Reading arrays from a user's ``.npz`` file with errors that name the file and the key.

``np.load(..., allow_pickle=False)`` refuses arrays of Python objects (dtype object) only
when the key is read, with a message that names neither the file nor the key. Every reader of
the project's ``.npz`` files (traces, clusters, indexes) reads its keys through
:func:`npz_array`, so such a file fails in one line naming both.

With ``mmap=True`` an array stored uncompressed (``np.savez``, as every trace is) is not read
but mapped: a read-only ``np.memmap`` view of the bytes in the file, so a trace of a gigabyte
opens in milliseconds, its pages are read when first used, and processes that map the same
file share one copy in the page cache instead of holding one each. A mapped array's bytes are
not checked against the zip's CRC; the project's traces carry their own checksums, which
their readers verify. A member that cannot be mapped (compressed, empty, an unknown header) is
read as without ``mmap``.
"""

from __future__ import annotations

import os
import struct
import zipfile

import numpy as np

from cosmos_common import UserError

__all__ = ["npz_array", "npz_arrays"]

_LOCAL_HEADER = struct.Struct("<4s22xHH")   # signature, ..., name length, extra length


def npz_array(z, key: str, path: str | os.PathLike, mmap: bool = False):
    """``z[key]`` of an open NpzFile; UserError naming ``path`` and ``key`` if the array holds
    Python objects (refused: loading them could run code) or cannot be decoded. ``mmap``: a
    read-only memory map of the array if it is stored uncompressed (module docstring)."""
    if mmap:
        mapped = _mapped(z, key, path)
        if mapped is not None:
            return mapped
    try:
        return z[key]
    except ValueError as exc:
        if "allow_pickle" in str(exc) or "Object arrays" in str(exc):
            raise UserError(f"{path}: key '{key}' holds Python objects (dtype object), which "
                            f"are never loaded; expected a numeric array") from None
        raise UserError(f"{path}: key '{key}' cannot be read ({exc})") from None
    except (OSError, EOFError, KeyError, zipfile.BadZipFile) as exc:
        raise UserError(f"{path}: key '{key}' cannot be read (damaged or truncated .npz: "
                        f"{type(exc).__name__}: {exc})") from None


def npz_arrays(z, keys, path: str | os.PathLike, mmap: bool = False) -> dict:
    """``{key: npz_array(z, key, path, mmap)}`` for every key in ``keys``."""
    return {k: npz_array(z, k, path, mmap) for k in keys}


def _mapped(z, key: str, path) -> np.ndarray | None:
    """A read-only ndarray view of a memory map of member ``key`` of the NpzFile ``z`` opened
    from ``path``, or None if it cannot be mapped (then it is read the usual way, which
    reports any damage)."""
    zf = getattr(z, "zip", None)
    if zf is None or not isinstance(path, (str, os.PathLike)) or not os.path.isfile(path):
        return None
    try:
        info = zf.getinfo(f"{key}.npy")
    except KeyError:
        return None
    if info.compress_type != zipfile.ZIP_STORED or info.flag_bits & 0x1:    # (encrypted)
        return None
    try:
        with open(path, "rb") as f:
            f.seek(info.header_offset)
            sig, name_len, extra_len = _LOCAL_HEADER.unpack(f.read(_LOCAL_HEADER.size))
            if sig != b"PK\x03\x04":
                return None
            start = info.header_offset + _LOCAL_HEADER.size + name_len + extra_len
            f.seek(start)
            version = np.lib.format.read_magic(f)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
            elif version == (2, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
            else:
                return None
            offset = f.tell()
    except (OSError, ValueError, struct.error):
        return None
    count = int(np.prod(shape, dtype=np.int64))
    if dtype.hasobject or count == 0 or \
            offset - start + count * dtype.itemsize != info.file_size:
        return None
    try:
        mm = np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=shape,
                       order="F" if fortran else "C")
    except (OSError, ValueError):       # e.g. a file shorter than its directory says
        return None
    return mm.view(np.ndarray)      # a plain array (numba, isinstance checks); keeps the map
