"""Deletion vectors: the rows of a data file a Delta table deleted without rewriting the file.

An `add` action may carry a `deletionVector` descriptor (Delta PROTOCOL.md, "Deletion Vectors"):
`storageType` `u` (a file `deletion_vector_<uuid>.bin` beside the data, the uuid Z85-encoded
after an optional random prefix that names a subdirectory), `i` (the bitmap inline, Z85-encoded)
or `p` (an absolute path); `offset` and `sizeInBytes` locate one bitmap in a file that may hold
many, and `cardinality` counts the deleted rows. A file stores a version byte, then per bitmap its
size (4 bytes big-endian), the bitmap and its CRC-32 (big-endian). The bitmap is Delta's
RoaringBitmapArray: a 4-byte little-endian magic number, then either the portable 64-bit Roaring
format (magic 1681511377, what Delta writes) or Delta's older "native" array of 32-bit bitmaps
(magic 1681511376: a bitmap count, then each bitmap's size and its 32-bit Roaring bytes; the
protocol's own inline example frames these numbers big-endian, so both byte orders are read).
The Roaring containers themselves are decoded by pyroaring (CRoaring), never by hand.
"""

from __future__ import annotations

import struct
import uuid
import zlib
from dataclasses import dataclass
from typing import Any, Literal, Mapping

import numpy as np
import pyarrow as pa
from pyroaring import BitMap, BitMap64

from streamops.core.exceptions import StreamopsError
from streamops.core.storage.location import Location

StorageType = Literal["u", "i", "p"]
PORTABLE_MAGIC = 1681511377
NATIVE_MAGIC = 1681511376
FILE_FORMAT_VERSION = 1
_UUID_CHARS = 20

_Z85 = np.frombuffer(b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#", np.uint8)
_Z85_DIGITS = np.full(256, 255, np.uint8)
_Z85_DIGITS[_Z85] = np.arange(85, dtype=np.uint8)
_Z85_POWERS = 85 ** np.arange(4, -1, -1, dtype=np.uint64)


class DeletionVectorError(StreamopsError):
    """A deletion vector cannot be read: missing, damaged, or in a format Delta does not write."""


@dataclass(frozen=True)
class DeletionVector:
    """One `deletionVector` descriptor, as the log writes it (picklable: executors get it)."""

    storage_type: StorageType
    path_or_inline_dv: str
    size_in_bytes: int
    cardinality: int
    offset: int | None = None

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> DeletionVector:
        storage_type = value.get("storageType")
        if storage_type not in ("u", "i", "p"):
            raise DeletionVectorError(
                f"deletion vector storageType {storage_type!r} is not one Delta defines (u, i, p)"
            )
        offset = value.get("offset")
        return cls(
            storage_type=storage_type,
            path_or_inline_dv=str(value["pathOrInlineDv"]),
            size_in_bytes=int(value["sizeInBytes"]),
            cardinality=int(value["cardinality"]),
            offset=None if offset is None else int(offset),
        )

    @classmethod
    def inline(cls, deleted: BitMap64) -> DeletionVector:
        """An inline descriptor of `deleted`, for rows known decoded (delta-rs hands a snapshot's
        deletions over decoded, not as descriptors), so executors read every file one way."""
        data = struct.pack("<I", PORTABLE_MAGIC) + deleted.serialize()
        padded = data + b"\0" * (-len(data) % 4)
        return cls("i", _z85_encode(padded), len(data), len(deleted))

    def file(self, table: Location) -> Location | None:
        """Where the bitmap is stored (None: inline in the log)."""
        if self.storage_type == "i":
            return None
        if self.storage_type == "p":
            return Location.of(self.path_or_inline_dv)
        encoded = self.path_or_inline_dv
        if len(encoded) < _UUID_CHARS:
            raise DeletionVectorError(f"deletion vector path {encoded!r} is shorter than a Z85-encoded uuid")
        prefix, token = encoded[:-_UUID_CHARS], encoded[-_UUID_CHARS:]
        name = f"deletion_vector_{uuid.UUID(bytes=_z85_decode(token))}.bin"
        return table / prefix / name if prefix else table / name

    def deleted_rows(self, table: Location) -> BitMap64:
        """The row indexes (positions in the data file) this vector deletes."""
        location = self.file(table)
        if location is None:
            data = _z85_decode(self.path_or_inline_dv)[: self.size_in_bytes]
        else:
            try:
                stored = location.read_bytes()
            except FileNotFoundError as error:
                raise DeletionVectorError(
                    f"deletion vector file `{location}` is missing (VACUUM removed it, or the table "
                    "was copied without it): restore it, or restart from a later startingVersion"
                ) from error
            data = _stored_bitmap(stored, self, location)
        deleted = decode_bitmap(data)
        if len(deleted) != self.cardinality:
            raise DeletionVectorError(
                f"deletion vector {self.describe()} holds {len(deleted)} rows, its descriptor says "
                f"{self.cardinality}: the table's log and its deletion vector files disagree"
            )
        return deleted

    def describe(self) -> str:
        at = "" if self.offset is None else f"@{self.offset}"
        return f"`{self.storage_type}{self.path_or_inline_dv[:40]}{at}`"


def decode_bitmap(data: bytes) -> BitMap64:
    """A RoaringBitmapArray (magic number first) as the set of row indexes it holds."""
    if len(data) < 4:
        raise DeletionVectorError(f"deletion vector of {len(data)} bytes is too short to hold a bitmap")
    (magic,) = struct.unpack_from("<I", data)
    (magic_big_endian,) = struct.unpack_from(">I", data)
    try:
        if magic == PORTABLE_MAGIC:
            return BitMap64.deserialize(data[4:])
        if magic == NATIVE_MAGIC:
            return _native(data, "<")
        if magic_big_endian == NATIVE_MAGIC:
            return _native(data, ">")
    except (ValueError, struct.error) as error:
        raise DeletionVectorError(f"deletion vector bitmap is damaged: {error}") from error
    raise DeletionVectorError(
        f"deletion vector starts with magic number {magic}, not a RoaringBitmapArray "
        f"({PORTABLE_MAGIC} or {NATIVE_MAGIC})"
    )


def keep_mask(deleted: BitMap64, num_rows: int) -> pa.Array:
    """True for each row of a `num_rows`-row file that `deleted` does not name."""
    keep = np.ones(num_rows, dtype=bool)
    if len(deleted):
        if deleted.max() >= num_rows:
            raise DeletionVectorError(
                f"deletion vector deletes row {deleted.max()} of a file with {num_rows} rows: "
                "the vector belongs to another version of the file"
            )
        keep[np.frombuffer(deleted.to_array(), dtype=np.uint64).astype(np.int64)] = False
    return pa.array(keep)


def _stored_bitmap(stored: bytes, vector: DeletionVector, location: Location) -> bytes:
    """The bitmap bytes at the descriptor's offset, checked against the CRC-32 stored after them."""
    start = vector.offset if vector.offset is not None else 1
    if not stored or stored[0] != FILE_FORMAT_VERSION:
        found = stored[0] if stored else "nothing"
        raise DeletionVectorError(
            f"deletion vector file `{location}` has format version {found}, expected {FILE_FORMAT_VERSION}"
        )
    end = start + 4 + vector.size_in_bytes + 4
    if len(stored) < end:
        raise DeletionVectorError(
            f"deletion vector file `{location}` is truncated: {len(stored)} bytes, the descriptor needs {end}"
        )
    (size,) = struct.unpack_from(">I", stored, start)
    data = stored[start + 4 : start + 4 + vector.size_in_bytes]
    (checksum,) = struct.unpack_from(">I", stored, start + 4 + vector.size_in_bytes)
    if size != vector.size_in_bytes or zlib.crc32(data) != checksum:
        raise DeletionVectorError(
            f"deletion vector at offset {start} of `{location}` fails its size or CRC-32 check: "
            "the file is damaged; restore it from a backup"
        )
    return data


def _native(data: bytes, order: str) -> BitMap64:
    """Delta's native RoaringBitmapArray: bitmap i holds the rows whose upper 32 bits are i."""
    (count,) = struct.unpack_from(f"{order}i", data, 4)
    position = 8
    rows = BitMap64()
    for high in range(count):
        (size,) = struct.unpack_from(f"{order}i", data, position)
        low = BitMap.deserialize(data[position + 4 : position + 4 + size])
        rows.update(BitMap64(low) if high == 0 else (high << 32 | value for value in low))
        position += 4 + size
    return rows


def _z85_decode(text: str) -> bytes:
    """ZeroMQ's Z85 (the protocol's Base85): each 5 characters are one big-endian 32-bit word.
    Vectorized, because inline vectors of large files run to hundreds of kilobytes."""
    raw = np.frombuffer(text.encode("utf-8"), np.uint8)
    digits = _Z85_DIGITS[raw]
    if len(raw) % 5 or (digits == 255).any():
        raise DeletionVectorError(
            f"deletion vector text of {len(raw)} characters is not Z85 (groups of 5 of its alphabet)"
        )
    words = digits.reshape(-1, 5).astype(np.uint64) @ _Z85_POWERS
    if (words > 0xFFFFFFFF).any():
        raise DeletionVectorError("deletion vector text is not Z85: a group exceeds 32 bits")
    return words.astype(">u4").tobytes()


def _z85_encode(data: bytes) -> str:
    words = np.frombuffer(data, ">u4").astype(np.uint64)
    return _Z85[(words[:, None] // _Z85_POWERS) % 85].tobytes().decode("ascii")
