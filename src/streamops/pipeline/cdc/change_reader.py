"""Bronze rows of CDC tables read back into changes, in Spark's Python workers (`mapInArrow`).

Bronze keeps each change raw; the silver apply reads it again with the same function bronze
judged it with (pipeline/cdc/debezium_envelope.py), so both agree on its table, op, sequence and
key, and on why it cannot be applied. A row bronze accepted can still be refused here when the
keys or sequence columns it was judged with differ (bronze and silver run with other `--cdc-keys`
or `--cdc-sequence`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping

import pyarrow as pa

from streamops.pipeline.cdc.cdc_classifier import record_key
from streamops.pipeline.cdc.change_apply import KEY, OP, SEQUENCE
from streamops.pipeline.cdc.debezium_envelope import Change, read_change
from streamops.pipeline.runtime.worker_gc import freeze_imported_objects

READ_COLUMNS = (
    "event_type",
    "schema_hash",
    "payload",
    "kafka_key",
    "event_time",
    "ingest_time",
    "source_file",
    "batch_id",
)
"""The bronze columns the apply reads."""
KEY_COLUMNS = "_cdc_key_columns"
IMAGE = "_cdc_image"
REASON = "_cdc_reason"
DETAIL = "_cdc_detail"
CHANGE_FIELDS = [
    (OP, pa.string()),
    (SEQUENCE, pa.string()),
    (KEY, pa.string()),
    (KEY_COLUMNS, pa.string()),
    (IMAGE, pa.string()),
    (REASON, pa.string()),
    (DETAIL, pa.string()),
]
CHANGE_SCHEMA = (
    "event_type string, schema_hash string, payload string, kafka_key binary, event_time timestamp, "
    "ingest_time timestamp, source_file string, batch_id bigint, "
    + ", ".join(f"{name} string" for name, _ in CHANGE_FIELDS)
)
KEY_SEPARATOR = ","


class ChangeReader:
    """Picklable callable for `mapInArrow` over READ_COLUMNS: the same columns, then CHANGE_FIELDS."""

    def __init__(
        self, declared_keys: Mapping[str, tuple[str, ...]], declared_sequences: Mapping[str, str] | None = None
    ) -> None:
        self.declared_keys = dict(declared_keys)
        self.declared_sequences = dict(declared_sequences or {})

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        freeze_imported_objects()
        for batch in batches:
            yield self.read(batch)

    def read(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        payloads = batch.column(READ_COLUMNS.index("payload")).to_pylist()
        keys = batch.column(READ_COLUMNS.index("kafka_key")).to_pylist()
        found = [self._change(payload, key) for payload, key in zip(payloads, keys)]
        columns: list[list[str | None]] = [[] for _ in CHANGE_FIELDS]
        for change in found:
            values = _values(change)
            for column, value in zip(columns, values):
                column.append(value)
        arrays = [pa.array(values, kind) for values, (_, kind) in zip(columns, CHANGE_FIELDS)]
        return pa.RecordBatch.from_arrays(
            [*batch.columns, *arrays], names=[*batch.schema.names, *(name for name, _ in CHANGE_FIELDS)]
        )

    def _change(self, payload: str | None, key: bytes | None) -> Change | tuple[str, str]:
        try:
            return _read(json.loads(payload or "null"), record_key(key), self.declared_keys, self.declared_sequences)
        except Exception as error:  # noqa: BLE001 - a record must not stop the stream
            return "unprocessable", f"stage silver_parse: {type(error).__name__}: {str(error)[:200]}"


def _read(value, key, declared_keys, declared_sequences) -> Change | tuple[str, str]:
    change = read_change(value, key, declared_keys, declared_sequences) if isinstance(value, dict) else None
    if change is None:
        return "unprocessable", "stage silver_parse: the bronze payload is not a JSON object"
    if isinstance(change, Change):
        return change
    return change.reason, change.detail


def _values(change: Change | tuple[str, str]) -> tuple[str | None, ...]:
    if not isinstance(change, Change):
        return (None, None, None, None, None, *change)
    image = None if change.image is None else json.dumps(change.image, ensure_ascii=False, separators=(",", ":"))
    return (change.op, change.sequence, change.key, KEY_SEPARATOR.join(change.key_columns), image, None, None)
