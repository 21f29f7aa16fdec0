"""Bronze's classifier under `--cdc debezium`: each Kafka record or landing line is a Debezium
change, landed raw like any line, named after its source table.

A line goes through the line rules first (empty, size, UTF-8, depth, strict JSON, an object:
pipeline/bronze/bronze_classifier.py), then is read as a change (pipeline/cdc/debezium_envelope.py):
its `event_type` is the source table, its `event_id` the change's position and key digest, its
`event_time` the database's commit time (`source.ts_ms`), and its schema variation is the shape
of its row image (the rules judged per shape, 9-11, apply to the image: it is what becomes
columns). The registry learns each variation from its first image (`row_image`), not from the
envelope. A Kafka record without a value is a `tombstone`, quarantined as in every mode: Debezium
sends one after each delete for log compaction, and the delete before it carries the change.
There is no JVM version of this classifier: CDC lines are always read in Python.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa

from streamops.core.lake_layout import is_valid_event_type
from streamops.pipeline.bronze.bronze_classifier import (
    CLASSIFIED_FIELDS,
    CLASSIFIED_SCHEMA,
    KAFKA_FIELDS,
    LONE_SURROGATE_DETAIL,
    LineVerdict,
    RecordLimits,
    has_lone_surrogate,
    parse_object,
    sized,
    strip_bom,
    verdict_columns,
)
from streamops.pipeline.cdc.change_apply import (
    ACTION,
    KEY,
    MATCH_FROM,
    OP,
    ORDER,
    SEQUENCE,
    VALID_FROM,
    VALID_FROM_TIME,
    VALID_TO,
    VALID_TO_TIME,
)
from streamops.pipeline.cdc.debezium_envelope import Change, read_change, unwrap
from streamops.pipeline.records.record_rules import TOMBSTONE_DETAIL
from streamops.pipeline.records.strict_json import DUPLICATE_KEYS
from streamops.pipeline.registry.schema_variation import VariationCache
from streamops.pipeline.runtime.worker_gc import freeze_imported_objects

ROW_IMAGE_COLUMN = "row_image"
CDC_CLASSIFIED_SCHEMA = f"{CLASSIFIED_SCHEMA}, {ROW_IMAGE_COLUMN} string"
_ARROW_SCHEMA = pa.schema([*CLASSIFIED_FIELDS, (ROW_IMAGE_COLUMN, pa.string())])
CDC_RESERVED_COLUMNS = frozenset(
    name.lower()
    for name in (OP, SEQUENCE, KEY, ORDER, ACTION, MATCH_FROM, VALID_FROM, VALID_TO, VALID_FROM_TIME, VALID_TO_TIME)
)
"""Columns a CDC table or its history adds to the source's: a source column of one of these
names could not be stored (`unusable_key`, like the lineage columns every silver table has)."""
_cache = VariationCache()


def record_key(key: bytes | None) -> Any:
    """A Kafka record key as JSON (Debezium's key, with or without its wrapper), else None:
    a key that is not JSON says nothing about the table's key columns."""
    if not key:
        return None
    try:
        return unwrap(json.loads(key))
    except (ValueError, UnicodeDecodeError):
        return None


def judge_change(
    line: bytes | None,
    key: bytes | None,
    declared_keys: Mapping[str, tuple[str, ...]],
    limits: RecordLimits = RecordLimits(),
    cache: VariationCache | None = None,
    declared_sequences: Mapping[str, str] | None = None,
) -> LineVerdict:
    """The bronze verdict on one CDC record (see the module docstring for the order)."""
    if line is None:
        return LineVerdict(None, "tombstone", TOMBSTONE_DETAIL)
    payload = strip_bom(line)
    try:
        return _judge(payload, key, declared_keys, declared_sequences or {}, limits, cache or _cache)
    except Exception as error:  # noqa: BLE001 - a record no rule foresaw must not stop the stream
        return LineVerdict(payload, "unprocessable", f"stage classify: {type(error).__name__}: {str(error)[:200]}")


def _judge(
    payload: bytes,
    key: bytes | None,
    declared_keys: Mapping[str, tuple[str, ...]],
    declared_sequences: Mapping[str, str],
    limits: RecordLimits,
    cache: VariationCache,
) -> LineVerdict:
    value = parse_object(payload, limits)
    if type(value) is not dict:
        return value
    envelope = unwrap(value)
    if isinstance(envelope, dict) and (DUPLICATE_KEYS in envelope or DUPLICATE_KEYS in (envelope.get("source") or {})):
        return LineVerdict(payload, "duplicate_key", "a key appears twice in the change's envelope")
    change = read_change(value, record_key(key), declared_keys, declared_sequences)
    if not isinstance(change, Change):
        return LineVerdict(payload, change.reason, change.detail, event_type=change.table)
    if not is_valid_event_type(change.table):
        return LineVerdict(payload, "invalid_event_type", f"source table `{change.table[:80]}` cannot name a table")
    image = change.image or {}
    found = cache.variation(image)
    if found.reason is not None:
        return LineVerdict(payload, found.reason, f"row image: {found.detail}", event_type=change.table)
    reserved = next((k for k in image if k.lower() in CDC_RESERVED_COLUMNS), None)
    if reserved is not None:
        return LineVerdict(payload, "unusable_key", f"row image: key {reserved!r} is the reserved column `{reserved}`")
    if has_lone_surrogate(payload, value):
        return LineVerdict(payload, "invalid_utf8", LONE_SURROGATE_DETAIL, event_type=change.table)
    return LineVerdict(
        payload,
        event_type=change.table,
        event_id=change.event_id,
        event_time=change.event_time,
        schema_hash=found.hash,
        prototype=json.dumps(image, ensure_ascii=False, separators=(",", ":")),
    )


class CdcBatchClassifier:
    """Picklable callable for `DataFrame.mapInArrow` over the lines (value, source_file,
    source_mtime, KAFKA_FIELDS): CDC_CLASSIFIED_SCHEMA out."""

    def __init__(
        self,
        declared_keys: Mapping[str, tuple[str, ...]],
        limits: RecordLimits = RecordLimits(),
        declared_sequences: Mapping[str, str] | None = None,
    ) -> None:
        self.declared_keys = dict(declared_keys)
        self.declared_sequences = dict(declared_sequences or {})
        self.limits = limits

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        freeze_imported_objects()
        for batch in batches:
            yield self.classify(batch)

    def classify(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        lines = batch.column(0).to_pylist()
        keys = batch.column(3).to_pylist()
        verdicts = [
            judge_change(line, key, self.declared_keys, self.limits, declared_sequences=self.declared_sequences)
            for line, key in zip(lines, keys)
        ]
        kafka_end = 3 + len(KAFKA_FIELDS)
        verdicts = sized(verdicts, batch.columns[kafka_end : kafka_end + 2] or None, self.limits)
        kafka = batch.columns[3:kafka_end]
        return pa.RecordBatch.from_arrays(
            [
                *verdict_columns(verdicts, batch.column(1), batch.column(2), kafka),
                pa.array([v.prototype for v in verdicts], pa.string()),
            ],
            schema=_ARROW_SCHEMA,
        )
