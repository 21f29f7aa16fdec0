"""Classifies raw landing lines inside Spark's Python workers (`mapInArrow`).

Each line comes out once, either as an event (type, id, time, variation hash, payload) or with
a quarantine reason and a short detail. Parsing, validation and hashing happen in one pass
over each Arrow batch because parsing is the expensive part and everything needs it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

import orjson
import pyarrow as pa

from pipeline.record_rules import (
    EVENT_ID_FIELD,
    EVENT_TIME_FIELD,
    EVENT_TYPE_FIELD,
    MAX_DEPTH,
    MAX_RECORD_BYTES,
)
from pipeline.schema_variation import VariationCache
from streamops.lake_layout import is_valid_event_type

CLASSIFIED_SCHEMA = (
    "event_type string, event_id string, event_time_text string, schema_hash string, "
    "payload binary, source_file string, source_mtime timestamp, quarantine_reason string, "
    "quarantine_detail string"
)
CLASSIFIED_FIELDS = [
    ("event_type", pa.string()),
    ("event_id", pa.string()),
    ("event_time_text", pa.string()),
    ("schema_hash", pa.string()),
    ("payload", pa.binary()),
    ("source_file", pa.string()),
    ("source_mtime", pa.timestamp("us", tz="UTC")),
    ("quarantine_reason", pa.string()),
    ("quarantine_detail", pa.string()),
]
_ARROW_SCHEMA = pa.schema(CLASSIFIED_FIELDS)
_WHITESPACE = b" \t\r\n"


@dataclass(frozen=True)
class RecordLimits:
    max_record_bytes: int = MAX_RECORD_BYTES
    max_depth: int = MAX_DEPTH


_cache = VariationCache()


class BatchClassifier:
    """Picklable callable for `DataFrame.mapInArrow`; one instance per query, any worker."""

    def __init__(self, limits: RecordLimits = RecordLimits()) -> None:
        self.limits = limits

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            yield self.classify(batch.column(0).to_pylist(), batch.column(1), batch.column(2))

    def classify(self, lines: list[bytes | None], source_files: pa.Array, source_mtimes: pa.Array) -> pa.RecordBatch:
        size = len(lines)
        event_types: list[str | None] = [None] * size
        event_ids: list[str | None] = [None] * size
        event_times: list[str | None] = [None] * size
        hashes: list[str | None] = [None] * size
        reasons: list[str | None] = [None] * size
        details: list[str | None] = [None] * size
        max_bytes = self.limits.max_record_bytes
        max_depth = self.limits.max_depth
        variation = _cache.variation
        for row, line in enumerate(lines):
            if not line or not line.strip(_WHITESPACE):
                reasons[row] = "empty_line"
                continue
            if len(line) > max_bytes:
                reasons[row] = "too_large"
                details[row] = f"{len(line)} bytes > limit {max_bytes}"
                continue
            try:
                event = orjson.loads(line)
            except orjson.JSONDecodeError as error:
                reasons[row], details[row] = _decode_failure(line, error)
                continue
            except RecursionError:
                reasons[row], details[row] = "too_deep", "nesting exceeds the parser's limit"
                continue
            if type(event) is not dict:
                reasons[row] = "not_an_object"
                details[row] = f"top-level JSON {_json_kind(event)}"
                continue
            event_type = event.get(EVENT_TYPE_FIELD)
            if event_type is None:
                reasons[row] = "missing_event_type"
                continue
            if not is_valid_event_type(event_type):
                reasons[row] = "invalid_event_type"
                details[row] = f"{EVENT_TYPE_FIELD}={str(event_type)[:80]!r}"
                continue
            try:
                found = variation(event)
            except RecursionError:
                reasons[row], details[row] = "too_deep", "nesting exceeds the parser's limit"
                continue
            if found.depth > max_depth:
                reasons[row] = "too_deep"
                details[row] = f"depth {found.depth} > limit {max_depth}"
                continue
            event_types[row] = event_type
            event_ids[row] = _text(event.get(EVENT_ID_FIELD))
            event_times[row] = _text(event.get(EVENT_TIME_FIELD))
            hashes[row] = found.hash
        return pa.RecordBatch.from_arrays(
            [
                pa.array(event_types, pa.string()),
                pa.array(event_ids, pa.string()),
                pa.array(event_times, pa.string()),
                pa.array(hashes, pa.string()),
                pa.array(lines, pa.binary()),
                source_files,
                source_mtimes.cast(_ARROW_SCHEMA.field("source_mtime").type),
                pa.array(reasons, pa.string()),
                pa.array(details, pa.string()),
            ],
            schema=_ARROW_SCHEMA,
        )


def _decode_failure(line: bytes, error: orjson.JSONDecodeError) -> tuple[str, str]:
    message = str(error)
    if "UTF-8" in message:
        return "invalid_utf8", message[:200]
    if "recursion" in message:
        return "too_deep", message[:200]
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as decode_error:
        return "invalid_utf8", str(decode_error)[:200]
    return "malformed_json", message[:200]


def _json_kind(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    return "number"


def _text(value: Any) -> str | None:
    """Ids and times are kept as text when they are strings or integers, else null."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None
