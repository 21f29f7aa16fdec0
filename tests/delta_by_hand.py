"""Delta tables written through the log by hand, byte for byte as PROTOCOL.md says.

Delta Spark cannot run here (no JARs) and delta-rs writes no deletion vectors, so tables that
hold them (or that name reader features nobody implements) are made the way any Delta writer
makes them: Parquet files, deletion vector files in the protocol's storage format, and JSON
commits. delta-rs, which reads such tables, is the independent judge of what they contain.
"""

from __future__ import annotations

import base64
import json
import struct
import time
import uuid
import zlib
from pathlib import Path
from typing import Any, Iterable
from urllib.parse import quote

import pyarrow as pa
import pyarrow.parquet as pq
from pyroaring import BitMap64

PORTABLE_MAGIC = 1681511377
_Z85 = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_B85 = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"


def z85(data: bytes) -> str:
    """ZeroMQ's Z85 (the protocol's Base85): Python's b85 with Z85's alphabet."""
    return base64.b85encode(data).translate(bytes.maketrans(_B85, _Z85)).decode()


def roaring_bitmap_array(rows: Iterable[int]) -> bytes:
    """Magic number (little-endian) then the portable 64-bit Roaring format."""
    return struct.pack("<I", PORTABLE_MAGIC) + BitMap64(rows).serialize()


class HandTable:
    """A table at `root` with a protocol naming `reader_features` (reader 3, writer 7)."""

    def __init__(
        self,
        root: Path,
        columns: dict[str, str],
        reader_features: tuple[str, ...] = ("deletionVectors",),
        partition_columns: tuple[str, ...] = (),
    ) -> None:
        self.root = root
        self.log = root / "_delta_log"
        self.log.mkdir(parents=True)
        self.version = -1
        schema = {
            "type": "struct",
            "fields": [{"name": n, "type": t, "nullable": True, "metadata": {}} for n, t in columns.items()],
        }
        self.commit(
            "CREATE TABLE",
            {
                "protocol": {
                    "minReaderVersion": 3,
                    "minWriterVersion": 7,
                    "readerFeatures": list(reader_features),
                    "writerFeatures": list(reader_features),
                }
            },
            {
                "metaData": {
                    "id": str(uuid.uuid4()),
                    "format": {"provider": "parquet", "options": {}},
                    "schemaString": json.dumps(schema),
                    "partitionColumns": list(partition_columns),
                    "configuration": {"delta.enableDeletionVectors": "true"},
                    "createdTime": _now(),
                }
            },
        )

    def commit(self, operation: str, *actions: dict[str, Any]) -> int:
        self.version += 1
        lines = [{"commitInfo": {"timestamp": _now(), "operation": operation}}, *actions]
        (self.log / f"{self.version:020d}.json").write_text("\n".join(json.dumps(a) for a in lines) + "\n")
        return self.version

    def data_file(self, name: str, rows: pa.Table, partition_values: dict[str, str] | None = None) -> dict[str, Any]:
        """Write a Parquet file; returns its add action (numRecords counts every physical row)."""
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(rows, path)
        return {
            "path": quote(name),
            "partitionValues": partition_values or {},
            "size": path.stat().st_size,
            "modificationTime": _now(),
            "dataChange": True,
            "stats": json.dumps({"numRecords": rows.num_rows}),
        }

    def deletion_vector_file(self, deletions: list[list[int]], prefix: str = "") -> list[dict[str, Any]]:
        """One file holding a deletion vector per list of row indexes; their descriptors (`u`)."""
        token = uuid.uuid4()
        blob = bytearray([1])
        descriptors = []
        for rows in deletions:
            data = roaring_bitmap_array(rows)
            descriptors.append(
                {
                    "storageType": "u",
                    "pathOrInlineDv": prefix + z85(token.bytes),
                    "offset": len(blob),
                    "sizeInBytes": len(data),
                    "cardinality": len(set(rows)),
                }
            )
            blob += struct.pack(">I", len(data)) + data + struct.pack(">I", zlib.crc32(data))
        directory = self.root / prefix if prefix else self.root
        directory.mkdir(parents=True, exist_ok=True)
        (directory / f"deletion_vector_{token}.bin").write_bytes(bytes(blob))
        return descriptors

    @staticmethod
    def inline_deletion_vector(rows: list[int]) -> dict[str, Any]:
        data = roaring_bitmap_array(rows)
        return {
            "storageType": "i",
            "pathOrInlineDv": z85(data + b"\0" * (-len(data) % 4)),
            "sizeInBytes": len(data),
            "cardinality": len(set(rows)),
        }

    def delete_rows(self, adds: list[dict[str, Any]], vectors: list[dict[str, Any]]) -> int:
        """A DELETE with deletion vectors: each file removed and added again with its vector."""
        actions: list[dict[str, Any]] = []
        for add, vector in zip(adds, vectors):
            actions.append(
                {
                    "remove": {
                        "path": add["path"],
                        "deletionTimestamp": _now(),
                        "dataChange": True,
                        "partitionValues": add["partitionValues"],
                        "size": add["size"],
                    }
                }
            )
            actions.append({"add": {**add, "deletionVector": vector}})
        return self.commit("DELETE", *actions)


def _now() -> int:
    return int(time.time() * 1000)
