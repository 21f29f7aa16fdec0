"""What changed between two schemas of an event type, field by field.

The registry stores schemas as Spark StructType JSON (`schema_json`, the superset of a schema
version; `variation_schema_json`, one variation's own). Both are flattened into dotted paths
with a type each (`player.level: long`, `tags[]: string`, `player: struct`), the notation the
registry's `changed_fields` and the silver columns already use, so the console shows a diff the
on-call engineer can match against alerts and quarantine details.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

ChangeKind = Literal["added", "removed", "type_changed"]
ELEMENT_SUFFIX = "[]"


@dataclass(frozen=True)
class FieldChange:
    path: str
    change: ChangeKind
    old_type: str | None
    new_type: str | None

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "change": self.change, "old_type": self.old_type, "new_type": self.new_type}


def flatten_schema(schema: str | dict[str, Any] | None) -> dict[str, str]:
    """Every field path of a StructType (JSON text or parsed) with its type name."""
    if schema is None or schema == "":
        return {}
    parsed = json.loads(schema) if isinstance(schema, str) else schema
    paths: dict[str, str] = {}
    for field in parsed.get("fields", []):
        _flatten_field(field["name"], field["type"], paths)
    return paths


def _flatten_field(path: str, data_type: Any, paths: dict[str, str]) -> None:
    paths[path] = type_name(data_type)
    if not isinstance(data_type, dict):
        return
    kind = data_type.get("type")
    if kind == "struct":
        for field in data_type.get("fields", []):
            _flatten_field(f"{path}.{field['name']}", field["type"], paths)
    elif kind == "array":
        _flatten_field(path + ELEMENT_SUFFIX, data_type["elementType"], paths)
    elif kind == "map":
        _flatten_field(path + "{}", data_type["valueType"], paths)


def type_name(data_type: Any) -> str:
    """`long`, `struct`, `array<string>`, `map<string,long>`: short enough for a table cell."""
    if not isinstance(data_type, dict):
        return str(data_type)
    kind = data_type.get("type")
    if kind == "array":
        element = data_type["elementType"]
        return f"array<{'struct' if _is_struct(element) else type_name(element)}>"
    if kind == "map":
        return f"map<{type_name(data_type['keyType'])},{type_name(data_type['valueType'])}>"
    return str(kind)


def _is_struct(data_type: Any) -> bool:
    return isinstance(data_type, dict) and data_type.get("type") == "struct"


def diff_schemas(old: str | dict[str, Any] | None, new: str | dict[str, Any] | None) -> list[FieldChange]:
    """Fields added, removed or retyped from `old` to `new`, in path order."""
    before, after = flatten_schema(old), flatten_schema(new)
    changes = []
    for path in sorted(set(before) | set(after)):
        if path not in before:
            changes.append(FieldChange(path, "added", None, after[path]))
        elif path not in after:
            changes.append(FieldChange(path, "removed", before[path], None))
        elif before[path] != after[path]:
            changes.append(FieldChange(path, "type_changed", before[path], after[path]))
    return changes
