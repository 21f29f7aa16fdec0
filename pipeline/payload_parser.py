"""Parses one event type's raw payloads into typed Arrow columns with its applied schema.

Arrow's C++ JSON reader does the work: one call per event type per batch, on the driver that
already holds the batch, instead of a Spark projection with a struct column per event type
(which, for 60 types in a group, materialises 60 mostly-null structs for every row).
Fields the schema lacks are ignored. A value that does not fit its column fails the call, so
the rows are retried per variation and then per row: whatever still fails is returned with
the parser's message (silver quarantines it); nothing is nulled or dropped silently.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from pipeline.record_rules import MAX_RECORD_BYTES


_READ_OPTIONS = pa_json.ReadOptions(block_size=4 * MAX_RECORD_BYTES)
"""Blocks must hold whole lines; bronze admits lines up to MAX_RECORD_BYTES."""


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


def parse_payloads(payloads: pa.ChunkedArray | pa.Array, variations: pa.ChunkedArray | pa.Array, schema: pa.Schema) -> ParsedPayloads:
    texts = payloads.to_pylist()
    try:
        table = _read(texts, schema)
        return ParsedPayloads(table, pa.array([True] * len(texts)), {})
    except pa.ArrowInvalid:
        pass
    errors: dict[int, str] = {}
    keys = variations.to_pylist()
    for variation in dict.fromkeys(keys):
        rows = [i for i, key in enumerate(keys) if key == variation]
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
