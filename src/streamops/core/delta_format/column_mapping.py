"""Column mapping: how a Delta table's logical columns are found in its data files.

With `delta.columnMapping.mode` = `name` or `id` (PROTOCOL.md, "Column Mapping"), Parquet files
hold each column, nested struct fields included, under the physical name in the field's
`delta.columnMapping.physicalName` metadata, and `id` mode resolves them by Parquet field id
(`delta.columnMapping.id`) instead. Partition values in the log are keyed by physical names in
both modes. A renamed column keeps its physical name, which is why the files never change; a
column a file does not hold reads as nulls. With no mode (or `none`) physical and logical names
are the same. The mode counts only where the protocol says so: reader version 2, or version 3
with `columnMapping` among its reader features (delta-rs writes tables that name a mode in their
properties, need reader version 3 for another feature, and hold logical names in their files).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Iterable, Literal, Mapping, get_args

import pyarrow as pa
from deltalake import DeltaTable

from streamops.core.delta_format.table_features import ReaderProtocol
from streamops.core.exceptions import StreamopsError

ColumnMappingMode = Literal["none", "name", "id"]
MODES: tuple[str, ...] = get_args(ColumnMappingMode)
MODE_PROPERTY = "delta.columnMapping.mode"
PHYSICAL_NAME = "delta.columnMapping.physicalName"
FIELD_ID = "delta.columnMapping.id"
PARQUET_FIELD_ID = b"PARQUET:field_id"


class ColumnMappingError(StreamopsError):
    """A table's column mapping cannot be followed (an unknown mode)."""


@dataclass(frozen=True)
class ColumnMapping:
    """A table's mapping at one schema (its Delta `schemaString`); picklable for executors."""

    mode: ColumnMappingMode
    schema_json: str

    @classmethod
    def of(cls, schema_json: str, configuration: Mapping[str, str | None], protocol: ReaderProtocol) -> ColumnMapping:
        mode = (configuration.get(MODE_PROPERTY) or "none").strip().lower()
        if not _mapping_applies(protocol):
            mode = "none"
        if mode not in MODES:
            raise ColumnMappingError(
                f"table property {MODE_PROPERTY}={mode!r} is not one Delta defines ({', '.join(MODES)})"
            )
        return cls(mode, schema_json)  # type: ignore[arg-type]

    @classmethod
    def of_table(cls, table: DeltaTable) -> ColumnMapping:
        """The mapping of the version a delta-rs handle has loaded."""
        return cls.of(table.schema().to_json(), table.metadata().configuration, table.protocol())

    @cached_property
    def fields(self) -> list[dict[str, Any]]:
        """The top-level fields of the schema, as Delta serializes them."""
        return json.loads(self.schema_json)["fields"]

    def physical_name(self, field: Mapping[str, Any]) -> str:
        if self.mode == "none":
            return field["name"]
        return field.get("metadata", {}).get(PHYSICAL_NAME, field["name"])

    def partition_key(self, logical_name: str) -> str:
        """The key of a partition column in an `add` action's partitionValues."""
        field = field_named(self.fields, logical_name)
        return logical_name if field is None else self.physical_name(field)

    def position_in(self, source: Iterable[pa.Field], field: Mapping[str, Any]) -> int | None:
        """Where the column (or struct field) `field` is among a data file's `source` fields."""
        if self.mode == "id":
            wanted = str(field.get("metadata", {}).get(FIELD_ID, "")).encode()
            matches = (f.metadata and f.metadata.get(PARQUET_FIELD_ID) == wanted for f in source)
        else:
            name = self.physical_name(field)
            matches = (f.name == name for f in source)
        return next((index for index, match in enumerate(matches) if match), None)


def _mapping_applies(protocol: ReaderProtocol) -> bool:
    if protocol.min_reader_version == 2:
        return True
    return protocol.min_reader_version >= 3 and "columnMapping" in (protocol.reader_features or ())


def field_named(fields: Iterable[Mapping[str, Any]], name: str) -> Mapping[str, Any] | None:
    return next((field for field in fields if field["name"] == name), None)
