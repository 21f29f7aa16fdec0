"""A parsed JSON struct as the flat, delta-spark-safe columns of a table, in Spark.

What the embedded sink's tasks make with Arrow (pipeline/delta_connector/typed_rows.py), for the
rows that stay in Spark: the native connector's appends and every CDC apply.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from streamops.pipeline.records.column_names import NESTED_SEPARATOR, column_name

if TYPE_CHECKING:
    from pyspark.sql import Column


def flat_columns(parent: Column, struct: dict, prefix: str = "") -> list[Column]:
    """The fields of `parent`, a struct of the (Spark JSON) type `struct`, as flat columns named
    `parent__child` (pipeline/records/column_names.py): the columns of a silver table."""
    from pyspark.sql.types import StructType

    found = []
    for field in struct["fields"]:
        child = parent.getField(field["name"])
        name = prefix + column_name(field["name"])
        kind = field["type"]
        if isinstance(kind, dict) and kind.get("type") == "struct":
            found += flat_columns(child, kind, name + NESTED_SEPARATOR)
            continue
        named = _column_named_type(kind)
        if named != kind:  # objects inside arrays or maps: their keys name nested fields
            holder = {"type": "struct", "fields": [{"name": "v", "type": named, "nullable": True, "metadata": {}}]}
            child = child.cast(StructType.fromJson(holder).fields[0].dataType)
        found.append(child.alias(name))
    return found


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
