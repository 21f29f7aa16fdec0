"""Classifies raw landing lines inside Spark's Python workers (`mapInArrow`): the reference.

Each line comes out once, either as an event (type, id, time, variation hash, payload) or with
a quarantine reason and a short detail, by the rules of pipeline/records/record_rules.py applied in
order: byte rules first (empty, size, UTF-8, structural depth), then strict parsing
(pipeline/records/strict_json.py), then the event rules, then the rules judged once per shape, then lone
surrogate escapes (`record_rules` names every rule). The JVM
classifier (pipeline/bronze/jvm_classifier.py) must agree line for line; a test holds them to it.
A line no rule expected to fail on is quarantined as `unprocessable`, never raised.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Iterator, Sequence

import pyarrow as pa

from streamops.core.lake_layout import is_valid_event_type
from streamops.pipeline.records.record_rules import (
    EVENT_ID_FIELD,
    EVENT_TIME_FIELD,
    EVENT_TYPE_FIELD,
    MAX_DEPTH,
    MAX_RECORD_BYTES,
    TOMBSTONE_DETAIL,
    UTF8_BOM,
    too_large_detail,
)
from streamops.pipeline.records.strict_json import OutOfRange, StrictJsonError, exceeds_depth, loads, lone_surrogate
from streamops.pipeline.registry.schema_variation import VariationCache
from streamops.pipeline.runtime.worker_gc import freeze_imported_objects

CLASSIFIED_SCHEMA = (
    "event_type string, event_id string, event_time_text string, schema_hash string, "
    "payload binary, source_file string, source_mtime timestamp, quarantine_reason string, "
    "quarantine_detail string, kafka_key binary, kafka_topic string, kafka_partition int, kafka_offset bigint"
)
KAFKA_FIELDS = [
    ("kafka_key", pa.binary()),
    ("kafka_topic", pa.string()),
    ("kafka_partition", pa.int32()),
    ("kafka_offset", pa.int64()),
]
"""Where a line read from Kafka came from, carried through classification unchanged (null for
a line of a landing file)."""
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
    *KAFKA_FIELDS,
]
_ARROW_SCHEMA = pa.schema(CLASSIFIED_FIELDS)
_WHITESPACE = b" \t\r\n"
LONE_SURROGATE_DETAIL = "a \\u escape makes a lone UTF-16 surrogate, which has no UTF-8 form"


@dataclass(frozen=True)
class RecordLimits:
    max_record_bytes: int = MAX_RECORD_BYTES
    max_depth: int = MAX_DEPTH


_cache = VariationCache()


@dataclass(frozen=True)
class LineVerdict:
    """One line judged: `reason` None means an event, with its type, id, time and hash."""

    payload: bytes | None
    reason: str | None = None
    detail: str | None = None
    event_type: str | None = None
    event_id: str | None = None
    event_time: str | None = None
    schema_hash: str | None = None
    prototype: str | None = None
    """What the registry learns the variation from when it is not the payload: a CDC change's
    row image (pipeline/cdc/cdc_classifier.py)."""


def strip_bom(line: bytes) -> bytes:
    return line[len(UTF8_BOM) :] if line.startswith(UTF8_BOM) else line


def judge_line(
    line: bytes | None, limits: RecordLimits = RecordLimits(), cache: VariationCache | None = None
) -> LineVerdict:
    """The bronze verdict for one landing line (see the module docstring for the order)."""
    if line is None:
        return LineVerdict(None, "tombstone", TOMBSTONE_DETAIL)
    payload = strip_bom(line)
    try:
        return _judge(payload, limits, cache or _cache)
    except Exception as error:  # noqa: BLE001 - a line no rule foresaw must not stop the stream
        return LineVerdict(payload, "unprocessable", f"stage classify: {type(error).__name__}: {str(error)[:200]}")


def parse_object(payload: bytes, limits: RecordLimits) -> dict[str, Any] | LineVerdict:
    """Rules 1-6: the line as a strict JSON object, or the verdict on a line that is not one."""
    if not payload.strip(_WHITESPACE):
        return LineVerdict(payload, "empty_line")
    if len(payload) > limits.max_record_bytes:
        return LineVerdict(payload, "too_large", too_large_detail(len(payload), limits.max_record_bytes))
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError as error:
        return LineVerdict(payload, "invalid_utf8", f"invalid UTF-8 at byte {error.start}")
    depth = exceeds_depth(payload, limits.max_depth)
    if depth is not None:
        return LineVerdict(payload, "too_deep", f"depth {depth} > limit {limits.max_depth}")
    try:
        event = loads(text)
    except StrictJsonError as error:
        return LineVerdict(payload, "malformed_json", error.detail[:200])
    if type(event) is not dict:
        return LineVerdict(payload, "not_an_object", f"top-level JSON {_json_kind(event)}")
    return event


def has_lone_surrogate(payload: bytes, parsed: Any) -> bool:
    """Rule 12 (checked last: only a line with a `\\u` escape can break it)."""
    return b"\\u" in payload and lone_surrogate(parsed) is not None


def _judge(payload: bytes, limits: RecordLimits, cache: VariationCache) -> LineVerdict:
    event = parse_object(payload, limits)
    if type(event) is not dict:
        return event
    event_type = event.get(EVENT_TYPE_FIELD)
    if event_type is None:
        return LineVerdict(payload, "missing_event_type")
    if not is_valid_event_type(event_type):
        return LineVerdict(payload, "invalid_event_type", f"{EVENT_TYPE_FIELD}={_shown(event_type)}")
    found = cache.variation(event)
    if found.reason is not None:
        return LineVerdict(payload, found.reason, found.detail)
    if has_lone_surrogate(payload, event):
        return LineVerdict(payload, "invalid_utf8", LONE_SURROGATE_DETAIL)
    return LineVerdict(
        payload,
        event_type=event_type,
        event_id=_text(event.get(EVENT_ID_FIELD)),
        event_time=_text(event.get(EVENT_TIME_FIELD)),
        schema_hash=found.hash,
    )


class BatchClassifier:
    """Picklable callable for `DataFrame.mapInArrow`; one instance per query, any worker."""

    def __init__(self, limits: RecordLimits = RecordLimits()) -> None:
        self.limits = limits

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        freeze_imported_objects()
        kafka_end = 3 + len(KAFKA_FIELDS)
        for batch in batches:
            yield self.classify(
                batch.column(0).to_pylist(),
                batch.column(1),
                batch.column(2),
                batch.columns[3:kafka_end],
                batch.columns[kafka_end : kafka_end + 2] or None,
            )

    def classify(
        self,
        lines: list[bytes | None],
        source_files: pa.Array,
        source_mtimes: pa.Array,
        kafka: list[pa.Array] | None = None,
        sizes: list[pa.Array] | None = None,
    ) -> pa.RecordBatch:
        """The verdict on each line, with its source columns (`kafka`: KAFKA_FIELDS, else nulls;
        `sizes`: each line's offset and whole length, bronze/line_sources.py)."""
        verdicts = sized([judge_line(line, self.limits) for line in lines], sizes, self.limits)
        kafka = kafka or [pa.nulls(len(lines), kind) for _, kind in KAFKA_FIELDS]
        return pa.RecordBatch.from_arrays(
            verdict_columns(verdicts, source_files, source_mtimes, kafka), schema=_ARROW_SCHEMA
        )


def sized(verdicts: list[LineVerdict], sizes: Sequence[pa.Array] | None, limits: RecordLimits) -> list[LineVerdict]:
    """`too_large` verdicts told by each line's whole length and offset (`sizes`: the
    `line_offset` and `line_bytes` columns), not by the bytes kept of it."""
    if not sizes:
        return verdicts
    offsets, lengths = sizes[0].to_pylist(), sizes[1].to_pylist()
    return [
        replace(v, detail=too_large_detail(lengths[i], limits.max_record_bytes, offsets[i]))
        if v.reason == "too_large" and lengths[i] is not None
        else v
        for i, v in enumerate(verdicts)
    ]


def verdict_columns(
    verdicts: Sequence[LineVerdict], source_files: pa.Array, source_mtimes: pa.Array, kafka: Sequence[pa.Array]
) -> list[pa.Array]:
    """The CLASSIFIED_FIELDS columns of judged lines: each verdict beside its line's source
    columns (`kafka`: the KAFKA_FIELDS, in their order), which pass through unchanged but for type."""
    return [
        pa.array([v.event_type for v in verdicts], pa.string()),
        pa.array([v.event_id for v in verdicts], pa.string()),
        pa.array([v.event_time for v in verdicts], pa.string()),
        pa.array([v.schema_hash for v in verdicts], pa.string()),
        pa.array([v.payload for v in verdicts], pa.binary()),
        source_files,
        source_mtimes.cast(_ARROW_SCHEMA.field("source_mtime").type),
        pa.array([v.reason for v in verdicts], pa.string()),
        pa.array([v.detail for v in verdicts], pa.string()),
        *(column.cast(kind) for column, (_, kind) in zip(kafka, KAFKA_FIELDS)),
    ]


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


def _shown(value: Any) -> str:
    if isinstance(value, OutOfRange):
        return value.text[:80]
    if isinstance(value, (dict, list)):
        return _json_kind(value) if isinstance(value, list) else "object"
    return str(value)[:80] if isinstance(value, str) else repr(value)[:80]


def _text(value: Any) -> str | None:
    """Ids and times are kept as text when they are strings or integers, else null."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None
