"""One Delta data file read as a stream sees it: the table's logical columns, live rows only.

A reader of a data file must do what Delta's own scan does to it: drop the rows its deletion
vector deletes (`streamops.core.delta_format.deletion_vectors`; positions are counted in the file before anything
else happens), find each column under its physical name or field id (`streamops.core.delta_format.column_mapping`),
take partition columns from the log's partitionValues (they are not in the file), and give the
columns a file written under an older, narrower schema lacks as nulls. Files are read through
Arrow's native filesystem of the table's store (`streamops.core.storage.arrow_filesystem`), so the
same code reads local disks and object stores, with the storage layer's options.
"""

from __future__ import annotations

from typing import Any, Mapping

import pyarrow as pa
import pyarrow.parquet as pq

from streamops.core.delta_format.column_mapping import ColumnMapping, field_named
from streamops.core.delta_format.deletion_vectors import keep_mask
from streamops.core.delta_format.log import AddFile, data_file_path
from streamops.core.storage.arrow_filesystem import arrow_filesystem
from streamops.core.storage.location import Location


def read_data_file(table: Location, add: AddFile, columns: ColumnMapping, target: pa.Schema) -> pa.Table:
    """The live rows of `add`'s file in the `target` schema (FileNotFoundError when it is gone)."""
    location = Location.of(data_file_path(table, add.path))
    data = pq.read_table(location.name, filesystem=arrow_filesystem(location.parent))
    if add.deletion_vector is not None:
        data = data.filter(keep_mask(add.deletion_vector.deleted_rows(table), data.num_rows))
    return conform(data, columns, target, dict(add.partition_values))


def conform(
    data: pa.Table, columns: ColumnMapping, target: pa.Schema, partition_values: Mapping[str, str | None]
) -> pa.Table:
    """Shape rows read from one file to `target` (logical names, the stream's types)."""
    shaped = []
    for field in target:
        delta_field = field_named(columns.fields, field.name)
        key = columns.partition_key(field.name)
        if key in partition_values:
            value = pa.array([partition_values[key]] * data.num_rows, pa.string())
            shaped.append(value.cast(field.type))
            continue
        position = None if delta_field is None else columns.position_in(data.schema, delta_field)
        if position is None:
            shaped.append(pa.nulls(data.num_rows, field.type))
            continue
        chunks = [_shape(chunk, delta_field["type"], field.type, columns) for chunk in data.column(position).chunks]
        shaped.append(pa.chunked_array(chunks, type=field.type))
    return pa.Table.from_arrays(shaped, schema=target)


def _shape(array: pa.Array, delta_type: Any, target: pa.DataType, columns: ColumnMapping) -> pa.Array:
    """One column (or nested value) of a file as `target`: struct fields found as the mapping
    says, lists and maps shaped element by element, anything else cast where its type differs."""
    kind = delta_type.get("type") if isinstance(delta_type, dict) else None
    if kind == "struct" and pa.types.is_struct(target) and pa.types.is_struct(array.type):
        source = array.flatten()
        children = []
        for field in target:
            delta_field = field_named(delta_type["fields"], field.name)
            position = None if delta_field is None else columns.position_in(array.type, delta_field)
            children.append(
                pa.nulls(len(array), field.type)
                if position is None
                else _shape(source[position], delta_field["type"], field.type, columns)
            )
        return pa.StructArray.from_arrays(children, fields=list(target), mask=_nulls(array))
    if kind == "array" and _is_list(target) and _is_list(array.type):
        values = _shape(array.values, delta_type["elementType"], target.value_type, columns)
        large = pa.types.is_large_list(target)
        offsets = array.offsets.cast(pa.int64() if large else pa.int32())
        lists = pa.LargeListArray if large else pa.ListArray
        return lists.from_arrays(offsets, values, type=target, mask=_nulls(array))
    if kind == "map" and pa.types.is_map(target) and pa.types.is_map(array.type):
        keys, items = array.values.flatten()
        return pa.MapArray.from_arrays(
            array.offsets,
            _shape(keys, delta_type["keyType"], target.key_type, columns),
            _shape(items, delta_type["valueType"], target.item_type, columns),
            type=target,
            mask=_nulls(array),
        )
    return array if array.type == target else array.cast(target)


def _nulls(array: pa.Array) -> pa.Array | None:
    return array.is_null() if array.null_count else None


def _is_list(data_type: pa.DataType) -> bool:
    return pa.types.is_list(data_type) or pa.types.is_large_list(data_type)
