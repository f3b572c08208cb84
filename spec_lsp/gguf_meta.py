"""A minimal GGUF metadata reader: the key/value header only, never the weights.

(The `gguf` package's reader parses every tensor descriptor and took 8 s on the 1.1 GB Qwen file;
listing models must be instant.) Format: magic, version, tensor count, kv count, then typed
key/value pairs (little-endian).
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any, BinaryIO

SCALARS = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}
STRING, ARRAY = 8, 9


MAGIC = b"GGUF"  # the first four bytes of every GGUF file


class GGUFFormatError(ValueError):
    pass


def check_header(path: Path) -> None:
    """Whether the file begins as a GGUF file (its first four bytes only: instant). Raises
    OSError when it cannot be read, GGUFFormatError when it is not a GGUF file."""
    with Path(path).open("rb") as handle:
        _check_magic(handle)


def _check_magic(handle: BinaryIO) -> None:
    magic = handle.read(4)
    if magic != MAGIC:
        raise GGUFFormatError(f"bad magic {magic!r}")


def _read(handle: BinaryIO, n: int) -> bytes:
    data = handle.read(n)
    if len(data) != n:
        raise GGUFFormatError("unexpected end of file (truncated?)")
    return data


def _unpack(handle: BinaryIO, fmt: str) -> Any:
    return struct.unpack(fmt, _read(handle, struct.calcsize(fmt)))[0]


def _string(handle: BinaryIO) -> bytes:
    n = _unpack(handle, "<Q")
    if n > 1 << 30:
        raise GGUFFormatError("implausible string length")
    return _read(handle, n)


def _value(handle: BinaryIO, kind: int, keep: bool) -> Any:
    if kind in SCALARS:
        return _unpack(handle, SCALARS[kind])
    if kind == STRING:
        return _string(handle)
    if kind == ARRAY:
        item_kind, count = _unpack(handle, "<I"), _unpack(handle, "<Q")
        if item_kind in SCALARS and not keep:
            handle.seek(struct.calcsize(SCALARS[item_kind]) * count, 1)
            return count
        items = [_value(handle, item_kind, keep) for _ in range(count)]
        return items if keep else count
    raise GGUFFormatError(f"unknown value type {kind}")


def read_metadata(
    path: Path, *, keep_arrays: tuple[str, ...] = ("tokenizer.ggml.tokens",)
) -> dict[str, Any]:
    """Header key/values; arrays are kept only for `keep_arrays` (others become their length)."""
    with path.open("rb") as handle:
        _check_magic(handle)
        version = _unpack(handle, "<I")
        if version < 2:
            raise GGUFFormatError(f"GGUF version {version} is too old")
        _unpack(handle, "<Q")  # tensor count
        n_kv = _unpack(handle, "<Q")
        meta: dict[str, Any] = {}
        for _ in range(n_kv):
            key = _string(handle).decode("utf-8", "replace")
            kind = _unpack(handle, "<I")
            value = _value(handle, kind, key in keep_arrays)
            meta[key] = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        return meta
