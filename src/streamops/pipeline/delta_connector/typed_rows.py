"""Rows of a JSON column parsed with a known schema into flat table columns, in a Spark task.

The JSON is what Spark's `to_json(from_json(payload, schema))` wrote (silver builds it that way:
Spark's Jackson reader is the judge of what fits which type), so Arrow's JSON reader reads it
with the same schema. Nested structs become `parent__child` columns (dlt's convention, named by
pipeline/records/column_names.py; arrays stay arrays, their struct fields renamed the same way).
Should a row still fail to parse, the rows are retried one by one and each failure is returned
with its reason, for the caller to quarantine: nothing is nulled or dropped silently.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from streamops.pipeline.records.column_names import NESTED_SEPARATOR, column_name
from streamops.pipeline.records.record_rules import MAX_RECORD_BYTES

_READ_OPTIONS = pa_json.ReadOptions(block_size=4 * MAX_RECORD_BYTES, use_threads=False)
"""Blocks must hold whole lines; bronze admits lines up to MAX_RECORD_BYTES."""
NOTHING_READ = "Spark's from_json returned nothing for this payload"


@dataclass(frozen=True)
class ParsedRows:
    table: pa.Table
    """One row per accepted payload, typed by the schema, in input order."""
    accepted: pa.Array
    """Boolean mask over the input rows: True where the payload is in `table`."""
    errors: list[str]
    """Why each rejected row (in input order) did not parse."""


def arrow_schema(spark_schema: dict[str, Any]) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StructType

    return to_arrow_schema(StructType.fromJson(spark_schema), timezone="UTC")


def parse_json_rows(texts: pa.ChunkedArray | pa.Array, schema: pa.Schema) -> ParsedRows:
    if texts.null_count == 0:
        try:
            return ParsedRows(_read_lines(_joined(texts), len(texts), schema), pa.array([True] * len(texts)), [])
        except pa.ArrowInvalid:
            pass
    values = texts.to_pylist()
    errors: dict[int, str] = {}
    for row, text in enumerate(values):
        if text is None:
            errors[row] = NOTHING_READ
            continue
        try:
            _read([text], schema)
        except pa.ArrowInvalid as error:
            errors[row] = str(error).splitlines()[0][:300]
    kept = [t for i, t in enumerate(values) if i not in errors]
    table = _read(kept, schema) if kept else schema.empty_table()
    return ParsedRows(
        table, pa.array([i not in errors for i in range(len(values))]), [errors[i] for i in sorted(errors)]
    )


def _read(texts: list[str], schema: pa.Schema) -> pa.Table:
    return _read_lines("\n".join(texts).encode("utf-8"), len(texts), schema)


def _read_lines(data: bytes, rows: int, schema: pa.Schema) -> pa.Table:
    options = pa_json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
    table = pa_json.read_json(io.BytesIO(data), read_options=_READ_OPTIONS, parse_options=options)
    if table.num_rows != rows:
        raise pa.ArrowInvalid(f"parsed {table.num_rows} rows from {rows} payloads")
    return table


def _joined(texts: pa.ChunkedArray | pa.Array) -> bytes:
    """The texts as newline-separated lines, joined by Arrow (no Python string per row). JSON
    that Spark's `to_json` wrote holds no raw newline, so each text stays one line."""
    flat = texts.combine_chunks() if isinstance(texts, pa.ChunkedArray) else texts
    one_list = pa.ListArray.from_arrays(pa.array([0, len(flat)], pa.int32()), flat.cast(pa.string()))
    return pc.binary_join(one_list, "\n")[0].as_buffer().to_pybytes()


def flat_table(parsed: pa.Table) -> pa.Table:
    """Flat typed columns: struct fields become `parent__child` columns."""
    names: list[str] = []
    arrays: list[Any] = []
    for field, column in zip(parsed.schema, parsed.columns):
        _flatten(field, column, "", names, arrays)
    return pa.Table.from_arrays(arrays, names=names)


def _flatten(field: pa.Field, column: Any, prefix: str, names: list[str], arrays: list[Any]) -> None:
    name = prefix + column_name(field.name)
    if not pa.types.is_struct(field.type):
        names.append(name)
        arrays.append(_with_column_names(column))
        return
    for index, child in enumerate(field.type):
        _flatten(child, pc.struct_field(column, [index]), name + NESTED_SEPARATOR, names, arrays)


def _with_column_names(column: Any) -> Any:
    """Struct fields inside arrays take column names too (Delta checks nested names)."""
    data_type = column.type
    if _named(data_type) == data_type:
        return column
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    return pa.chunked_array([_renamed(chunk) for chunk in chunks], _named(data_type))


def _named(data_type: pa.DataType) -> pa.DataType:
    if pa.types.is_struct(data_type):
        return pa.struct([pa.field(column_name(f.name), _named(f.type), f.nullable) for f in data_type])
    if pa.types.is_list(data_type) or pa.types.is_large_list(data_type):
        element = data_type.value_field
        wrap = pa.list_ if pa.types.is_list(data_type) else pa.large_list
        return wrap(pa.field(element.name, _named(element.type), element.nullable))
    return data_type


def _renamed(array: pa.Array) -> pa.Array:
    if pa.types.is_struct(array.type):
        children = [_renamed(array.field(i)) for i in range(array.type.num_fields)]
        names = [column_name(f.name) for f in array.type]
        return pa.StructArray.from_arrays(children, names=names, mask=array.is_null() if array.null_count else None)
    if pa.types.is_list(array.type) or pa.types.is_large_list(array.type):
        kind = pa.ListArray if pa.types.is_list(array.type) else pa.LargeListArray
        return kind.from_arrays(
            array.offsets, _renamed(array.values), mask=array.is_null() if array.null_count else None
        )
    return array
