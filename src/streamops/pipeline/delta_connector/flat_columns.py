"""A parsed JSON struct as the flat, delta-spark-safe columns of a table, in Spark.

What the embedded sink's tasks make with Arrow (pipeline/delta_connector/typed_rows.py), for the
rows that stay in Spark: the native connector's appends and every CDC apply.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from streamops.pipeline.records.column_names import NESTED_SEPARATOR, column_name

if TYPE_CHECKING:
    from pyspark.sql import Column


@dataclass(frozen=True)
class FlatField:
    """One column of a table made from a parsed struct: where it sits in the struct (`path`, the
    JSON names), its column name, and its Spark JSON type with nested fields named as columns."""

    path: tuple[str, ...]
    name: str
    kind: Any
    """The type the column has, which differs from the struct's (`parsed_kind`) where objects
    inside arrays or maps name nested fields."""
    parsed_kind: Any


def flat_fields(struct: dict, prefix: str = "", path: tuple[str, ...] = ()) -> list[FlatField]:
    """The leaves of a struct of the (Spark JSON) type `struct`, as a table's flat columns
    `parent__child` (pipeline/records/column_names.py), in field order."""
    found = []
    for field in struct["fields"]:
        name = prefix + column_name(field["name"])
        kind = field["type"]
        if isinstance(kind, dict) and kind.get("type") == "struct":
            found += flat_fields(kind, name + NESTED_SEPARATOR, (*path, field["name"]))
        else:
            found.append(FlatField((*path, field["name"]), name, _column_named_type(kind), kind))
    return found


def flat_column(parent: Column, leaf: FlatField) -> Column:
    """`leaf` of `parent` (a struct column) as its table's column."""
    child = parent
    for name in leaf.path:
        child = child.getField(name)
    return _as_column(child, leaf)


def flat_columns(parent: Column, struct: dict) -> list[Column]:
    """The fields of `parent`, a struct of the (Spark JSON) type `struct`, as the flat columns of
    a silver table; each nested struct's field is built once for all its leaves."""
    fields: dict[tuple[str, ...], Column] = {(): parent}

    def field(path: tuple[str, ...]) -> Column:
        if path not in fields:
            fields[path] = field(path[:-1]).getField(path[-1])
        return fields[path]

    return [_as_column(field(leaf.path), leaf) for leaf in flat_fields(struct)]


def _as_column(child: Column, leaf: FlatField) -> Column:
    from pyspark.sql.types import StructType

    if leaf.kind != leaf.parsed_kind:  # objects inside arrays or maps: their keys name nested fields
        holder = {"type": "struct", "fields": [{"name": "v", "type": leaf.kind, "nullable": True, "metadata": {}}]}
        child = child.cast(StructType.fromJson(holder).fields[0].dataType)
    return child.alias(leaf.name)


def _column_named_type(kind: Any) -> Any:
    """`kind` with every nested struct field named as a column is (`column_name`): delta-spark
    refuses ` ,;{}()\\n\\t=` in any field name of a table without column mapping, where delta-rs
    keeps them. The classifiers quarantine an object whose keys collide once named so, at every
    depth (`unusable_key`), so the rename is one to one; Spark casts structs by position."""
    if not isinstance(kind, dict):
        return kind
    if kind.get("type") == "struct":
        fields = [{**f, "name": column_name(f["name"]), "type": _column_named_type(f["type"])} for f in kind["fields"]]
        return {**kind, "fields": fields}
    if kind.get("type") == "array":
        return {**kind, "elementType": _column_named_type(kind["elementType"])}
    if kind.get("type") == "map":
        return {**kind, "valueType": _column_named_type(kind["valueType"])}
    return kind
