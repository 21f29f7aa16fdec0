"""Reads one entry of a checkpoint's offset log (`offsets/<batch>`), Spark-free.

The format, stable since Spark 2: a version line (`v1`), the batch metadata JSON (watermark,
batch timestamp, recorded conf), then one line per source: its offset JSON, or `-` when the
source had none yet.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streamops.exceptions import StreamopsError


class OffsetLogError(StreamopsError):
    """An offset file is missing, empty, truncated or not in the offset-log format."""


@dataclass(frozen=True)
class OffsetEntry:
    batch_id: int
    version: str
    metadata: dict[str, Any]
    sources: tuple[str | None, ...]
    """Each source's offset as the JSON text Spark wrote, None for `-`."""


def offsets_path(checkpoint: Path, batch_id: int) -> Path:
    return Path(checkpoint) / "offsets" / str(batch_id)


def parse_offset_entry(batch_id: int, text: str) -> OffsetEntry:
    lines = text.split("\n")
    if len(lines) < 2 or not lines[0].startswith("v"):
        raise OffsetLogError(f"offset file of batch {batch_id} is empty or has no version line")
    try:
        metadata = json.loads(lines[1]) if lines[1].strip() else {}
    except json.JSONDecodeError as error:
        raise OffsetLogError(f"offset file of batch {batch_id} has unreadable metadata: {error}") from error
    sources = tuple(None if line.strip() == "-" else line for line in lines[2:] if line.strip())
    return OffsetEntry(batch_id, lines[0].strip(), metadata, sources)


def read_offset_entry(checkpoint: Path, batch_id: int) -> OffsetEntry:
    path = offsets_path(checkpoint, batch_id)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as error:
        raise OffsetLogError(f"no offset file for batch {batch_id} under `{path.parent}`") from error
    return parse_offset_entry(batch_id, text)
