"""Turns one event type's payloads into typed Arrow columns with its applied schema.

The judgement of what fits which type is Spark's: silver reads every payload with `from_json`
and the type's applied schema (the Jackson-based reader whose inference made that schema, so a
string column takes numbers as text, a long column nulls a string) and writes it back with
`to_json` (`typed_payload`). What reaches Arrow's JSON reader here is therefore JSON that Spark
wrote from the schema, which it reads with the same schema. Should a row still fail (or Spark
have returned nothing for it), the rows are retried per variation and then per row, and what
fails alone is returned with the reason: silver quarantines it as `unprocessable` and commits
the rest; nothing is nulled or dropped silently.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from pipeline.record_rules import MAX_RECORD_BYTES

if TYPE_CHECKING:
    from pyspark.sql import Column

PARSE_STAGE = "silver_parse"
_READ_OPTIONS = pa_json.ReadOptions(block_size=4 * MAX_RECORD_BYTES)
"""Blocks must hold whole lines; bronze admits lines up to MAX_RECORD_BYTES."""
_NOTHING_READ = "Spark's from_json returned nothing for this payload"


@dataclass(frozen=True)
class ParsedPayloads:
    table: pa.Table
    """One row per accepted payload, typed by the schema, in input order."""
    accepted: pa.Array
    """Boolean mask over the input rows: True where the payload is in `table`."""
    errors: dict[int, str]
    """Input row -> why it did not parse."""


def arrow_schema(spark_schema: dict[str, Any]) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StructType

    return to_arrow_schema(StructType.fromJson(spark_schema), timezone="UTC")


def typed_payload(schemas: Mapping[str, dict[str, Any]], event_type: "Column", payload: "Column") -> "Column":
    """Each row's payload as Spark reads it with its event type's schema, written back as JSON."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    typed = None
    for name, schema in sorted(schemas.items()):
        branch = F.to_json(F.from_json(payload, StructType.fromJson(schema)))
        typed = F.when(event_type == F.lit(name), branch) if typed is None else typed.when(event_type == F.lit(name), branch)
    return typed if typed is not None else F.lit(None).cast("string")


def parse_payloads(
    payloads: pa.ChunkedArray | pa.Array, variations: pa.ChunkedArray | pa.Array, schema: pa.Schema
) -> ParsedPayloads:
    texts = payloads.to_pylist()
    if None not in texts:
        try:
            table = _read(texts, schema)
            return ParsedPayloads(table, pa.array([True] * len(texts)), {})
        except pa.ArrowInvalid:
            pass
    errors: dict[int, str] = {row: _NOTHING_READ for row, text in enumerate(texts) if text is None}
    keys = variations.to_pylist()
    for variation in dict.fromkeys(keys):
        rows = [i for i, key in enumerate(keys) if key == variation and i not in errors]
        try:
            _read([texts[i] for i in rows], schema)
        except pa.ArrowInvalid:
            for row in rows:
                try:
                    _read([texts[row]], schema)
                except pa.ArrowInvalid as error:
                    errors[row] = str(error).splitlines()[0][:300]
    accepted = pa.array([i not in errors for i in range(len(texts))])
    kept = [t for i, t in enumerate(texts) if i not in errors]
    table = _read(kept, schema) if kept else schema.empty_table()
    return ParsedPayloads(table, accepted, errors)


def _read(texts: list[str], schema: pa.Schema) -> pa.Table:
    data = "\n".join(texts).encode("utf-8")
    options = pa_json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
    table = pa_json.read_json(io.BytesIO(data), read_options=_READ_OPTIONS, parse_options=options)
    if table.num_rows != len(texts):
        raise pa.ArrowInvalid(f"parsed {table.num_rows} rows from {len(texts)} payloads")
    return table


def select(table: pa.Table, mask: pa.Array) -> pa.Table:
    return table if pc.all(mask).as_py() else table.filter(mask)
