"""Promote a silver column to a wider type, offline: the one rewrite streamops ever makes, and
only when an operator asks for it.

While running, a silver table never changes a column's type (that rewrite would break every
stream reading the table): values the column cannot hold wait in `_rescued_data`. Promoting
`player.level` from long to double rewrites the table with the wider type, moves the rescued
values that now fit back into their column (values that still do not fit stay rescued), then
records the promotion in the schema registry (change_kind `promoted`), so the applied schema
keeps the wider type and later batches write it. The table is rewritten first, then recorded:
re-running a promotion that crashed midway finishes it. Stop the pipeline first; streams that
read the silver table restart from a new checkpoint (the rewrite is not an append).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import DeltaTable, write_deltalake
from deltalake.transaction import CommitProperties

from streamops.core.delta_format.commit_metadata import PREFIX, BatchCommitInfo
from streamops.core.delta_format.read import arrow_filesystem
from streamops.core.lake_layout import LakeLayout, LakeLike
from streamops.core.storage.location import Location
from streamops.pipeline.delta_connector.batch_writer import write_batch
from streamops.pipeline.exceptions import PipelineConfigError
from streamops.pipeline.lake_tables import table_access
from streamops.pipeline.records.column_names import NESTED_SEPARATOR, RESCUED_DATA_COLUMN, column_name
from streamops.pipeline.registry.schema_compat import WIDENINGS, field_type, promote
from streamops.pipeline.registry.schema_registry import PROMOTED, REGISTRY_SCHEMA, RegistryEntry, SchemaRegistry
from streamops.pipeline.silver.payload_parser import RESCUED_FILE_PATH

PROMOTE_STREAM = "lake_promote"
PROMOTE_OPERATION = "PROMOTE COLUMN"
ARROW_TYPES: dict[str, pa.DataType] = {
    "byte": pa.int8(),
    "short": pa.int16(),
    "integer": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "string": pa.string(),
    "boolean": pa.bool_(),
}
"""The Arrow type of each Spark type a column can be promoted to (`WIDENINGS`), as PySpark's
`to_arrow_type` maps it: a promotion runs on delta-rs alone and needs no PySpark."""


@dataclass(frozen=True)
class Promotion:
    event_type: str
    field: str
    old_type: str
    new_type: str
    column: str
    rows: int
    rescued_moved: int
    recorded: bool

    def as_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


@dataclass(frozen=True)
class _Checked:
    registry: SchemaRegistry
    applied: dict[str, Any]
    current: str
    column: str


def plan_promotion(lake: LakeLike, event_type: str, field: str, wider: str) -> Promotion:
    """What `promote_column` would do, checked, without changing anything."""
    checked = _check(LakeLayout.at(lake), event_type, field, wider)
    return Promotion(event_type, field, checked.current, wider, checked.column, 0, 0, False)


def promote_column(lake: LakeLike, event_type: str, field: str, wider: str) -> Promotion:
    """Rewrite `silver/<event_type>` with `field` (dotted path) as `wider`, rescued values moved back."""
    lake = LakeLayout.at(lake)
    checked = _check(lake, event_type, field, wider)
    promoted = promote(checked.applied, field, wider)
    rows, moved = _rewrite(lake.silver(event_type), checked.column, field.split("."), ARROW_TYPES[wider])
    recorded = checked.current != wider
    if recorded:
        _record(checked.registry, event_type, field, checked.current, wider, promoted)
    return Promotion(event_type, field, checked.current, wider, checked.column, rows, moved, recorded)


def _check(lake: LakeLayout, event_type: str, field: str, wider: str) -> _Checked:
    registry = SchemaRegistry.load(lake.schema_registry)
    if not registry.entries_of(event_type):
        raise PipelineConfigError(f"event type `{event_type}` is not in the schema registry of {lake.root}")
    applied = registry.applied_schema(event_type)
    current = field_type(applied, field)
    if current is None:
        raise PipelineConfigError(
            f"`{field}` is not a scalar field of `{event_type}` outside arrays: name it as a dotted path, e.g. player.level"
        )
    if current != wider and wider not in WIDENINGS.get(current, frozenset()):
        raise PipelineConfigError(
            f"`{field}` of `{event_type}` is {current}; it can be promoted to {sorted(WIDENINGS.get(current, ()))} only"
        )
    column = NESTED_SEPARATOR.join(column_name(part) for part in field.split("."))
    return _Checked(registry, applied, current, column)


def _rewrite(table: Path, column: str, path: list[str], target: pa.DataType) -> tuple[int, int]:
    """Cast `column` to `target` and move rescued values at `path` into it; one overwrite commit.
    The old files are read with Arrow's own filesystem while delta-rs writes: a delta-rs scan
    inside a delta-rs write cannot run (one async runtime inside another)."""
    with table_access(table, "promote a column of"):
        if not DeltaTable.is_deltatable(str(table)):
            raise PipelineConfigError(f"{table} is not a Delta table: run the pipeline first")
        delta = DeltaTable(str(table))
        schema = pa.schema(delta.schema().to_arrow())
        if column not in schema.names:
            raise PipelineConfigError(f"{table} has no column `{column}`")
        if schema.field(column).type.equals(target) and not _has_rescued(delta, path, target):
            return 0, 0
        promoted = schema.set(schema.get_field_index(column), schema.field(column).with_type(target))
        counts = [0, 0]

        def batches() -> Iterator[pa.RecordBatch]:
            for batch in delta.to_pyarrow_dataset(
                filesystem=arrow_filesystem(Location.of(delta.table_uri))
            ).to_batches():
                converted, moved = _promoted_batch(pa.Table.from_batches([batch], batch.schema), column, path, target)
                counts[0] += converted.num_rows
                counts[1] += moved
                yield from converted.cast(promoted).to_batches()

        write_deltalake(
            delta,
            pa.RecordBatchReader.from_batches(promoted, batches()),
            mode="overwrite",
            schema_mode="overwrite",
            commit_properties=CommitProperties(custom_metadata={PREFIX + "operation": PROMOTE_OPERATION}),
        )
        return counts[0], counts[1]


def _has_rescued(delta: DeltaTable, path: list[str], target: pa.DataType) -> bool:
    """Whether some row has a rescued value at `path` that the column's type now holds."""
    if RESCUED_DATA_COLUMN not in pa.schema(delta.schema().to_arrow()).names:
        return False
    for batch in delta.to_pyarrow_dataset(filesystem=arrow_filesystem(Location.of(delta.table_uri))).to_batches(
        columns=[RESCUED_DATA_COLUMN]
    ):
        for text in batch.column(0).to_pylist():
            found, value = _pop(json.loads(text), path) if text is not None else (False, None)
            if found and _fit(value, target) is not None:
                return True
    return False


def _promoted_batch(rows: pa.Table, column: str, path: list[str], target: pa.DataType) -> tuple[pa.Table, int]:
    values = pc.cast(rows.column(column), target).to_pylist()
    if RESCUED_DATA_COLUMN not in rows.column_names:
        return rows.set_column(rows.schema.get_field_index(column), column, pa.array(values, target)), 0
    rescued = rows.column(RESCUED_DATA_COLUMN).to_pylist()
    moved = 0
    for index, text in enumerate(rescued):
        if text is None:
            continue
        data = json.loads(text)
        found, value = _pop(data, path)
        if not found or values[index] is not None:
            continue
        fitted = _fit(value, target)
        if fitted is None and value is not None:
            continue
        values[index] = fitted
        rescued[index] = None if set(data) <= {RESCUED_FILE_PATH} else json.dumps(data, separators=(",", ":"))
        moved += 1
    rows = rows.set_column(rows.schema.get_field_index(column), column, pa.array(values, target))
    rows = rows.set_column(
        rows.schema.get_field_index(RESCUED_DATA_COLUMN), RESCUED_DATA_COLUMN, pa.array(rescued, pa.string())
    )
    return rows, moved


def _pop(data: dict[str, Any], path: list[str]) -> tuple[bool, Any]:
    """Remove the value at `path` from `data` (and structs it leaves empty); (found, value)."""
    head, *rest = path
    if not isinstance(data, dict) or head not in data:
        return False, None
    if not rest:
        return True, data.pop(head)
    found, value = _pop(data[head], rest)
    if found and data[head] == {}:
        del data[head]
    return found, value


def _fit(value: Any, target: pa.DataType) -> Any:
    """`value` as `target`, or None when it is not a number the type holds (it stays rescued):
    a promotion widens numbers, it never parses text."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    try:
        return pa.scalar(value).cast(target).as_py()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None


def _record(registry: SchemaRegistry, event_type: str, field: str, old: str, wider: str, schema: dict) -> None:
    """One registry row (change_kind `promoted`) whose schema is the applied schema from now on."""
    entries = registry.entries_of(event_type)
    latest = max(entries, key=lambda e: e.seen_order)
    promotions = sum(1 for e in entries if e.change_kind == PROMOTED)
    entry = RegistryEntry(
        event_type=event_type,
        variation_hash=f"{PROMOTED}:{field}:{wider}",
        schema_version=latest.schema_version + 1,
        seen_order=len(registry.known()),
        prototype="",
        schema_json=latest.schema_json,
        variation_schema_json=json.dumps(schema, sort_keys=True),
        variation_paths=(),
        change_kind=PROMOTED,
        changed_fields=json.dumps([{"path": field, "old_type": old, "new_type": wider}]),
        first_seen=datetime.now(timezone.utc),
        first_bronze_version=latest.first_bronze_version,
        batch_id=promotions,
    )
    table = pa.Table.from_pylist([entry.as_row()], schema=REGISTRY_SCHEMA)
    write_batch(registry.table, table, BatchCommitInfo(f"{PROMOTE_STREAM}:{event_type}:{field}:{wider}", 0))
