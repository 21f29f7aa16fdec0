"""Compatibility decisions between two Spark schemas, as pure functions over their JSON form.

Data in, data out (as dlt's schema evolution): `evolve(old, new)` returns the schema a table
should take and every change, classified; it never raises and never touches a table. The
registry uses it to name a change, silver uses it to decide what to evolve and what to
quarantine.

- added: a field (top level or nested) that the old schema lacks -> evolve
- widened: int -> long, int/long -> double, float -> double -> reported, but the column keeps
  its type: changing it would rewrite the table, which breaks every stream that reads it. The
  values go to `_rescued_data` (or quarantine, or stop the group, by policy) until an operator
  promotes the column offline (`promote`, below; `streamops lake promote`)
- incompatible: any other type change (number -> string, struct -> scalar, ...) -> keep the
  old type; handled like a widening
- incompatible too: a new field that would land in a column the table already has under
  another name (`userId` then `userid`; `a.b` then `a__b`: see pipeline/records/column_names.py)

`unfit(evolution)` is what a table with the old schema cannot hold of the new one; `prune` and
`without` cut a schema down to, or remove, those paths (silver reads each part with its own).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from streamops.pipeline.records.column_names import NESTED_SEPARATOR, column_name, folded

ChangeKind = Literal["new_event_type", "added_fields", "widened", "incompatible", "unchanged"]

WIDENINGS: dict[str, frozenset[str]] = {
    "byte": frozenset({"short", "integer", "long", "double"}),
    "short": frozenset({"integer", "long", "double"}),
    "integer": frozenset({"long", "double"}),
    "long": frozenset({"double"}),
    "float": frozenset({"double"}),
    "void": frozenset({"byte", "short", "integer", "long", "float", "double", "string", "boolean"}),
}


@dataclass(frozen=True)
class FieldChange:
    path: str
    old_type: str | None
    new_type: str

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "old_type": self.old_type, "new_type": self.new_type}


@dataclass(frozen=True)
class SchemaEvolution:
    """The schema to use and why. `schema` is Spark StructType JSON (a dict)."""

    schema: dict[str, Any]
    added: tuple[FieldChange, ...] = ()
    widened: tuple[FieldChange, ...] = ()
    incompatible: tuple[FieldChange, ...] = ()
    is_new: bool = False

    @property
    def kind(self) -> ChangeKind:
        if self.is_new:
            return "new_event_type"
        if self.incompatible:
            return "incompatible"
        if self.widened:
            return "widened"
        if self.added:
            return "added_fields"
        return "unchanged"

    @property
    def changes(self) -> tuple[FieldChange, ...]:
        return self.added + self.widened + self.incompatible


@dataclass
class _Changes:
    added: list[FieldChange] = field(default_factory=list)
    widened: list[FieldChange] = field(default_factory=list)
    incompatible: list[FieldChange] = field(default_factory=list)


def type_name(data_type: Any) -> str:
    """A short readable name: long, string, struct, array<long>."""
    if isinstance(data_type, str):
        return data_type
    if data_type.get("type") == "array":
        return f"array<{type_name(data_type['elementType'])}>"
    if data_type.get("type") == "map":
        return f"map<{type_name(data_type['keyType'])},{type_name(data_type['valueType'])}>"
    return str(data_type.get("type"))


def evolve(old: dict[str, Any] | str | None, new: dict[str, Any] | str) -> SchemaEvolution:
    """Merge `new` into `old` under the compatibility policy."""
    new_schema = _as_dict(new)
    if old is None:
        return SchemaEvolution(schema=new_schema, is_new=True)
    changes = _Changes()
    old_schema = _as_dict(old)
    columns = {folded(name): path for path, name in _columns(old_schema, "", "")}
    merged = _merge_struct(old_schema, new_schema, "", "", columns, changes)
    return SchemaEvolution(
        schema=merged,
        added=tuple(changes.added),
        widened=tuple(changes.widened),
        incompatible=tuple(changes.incompatible),
    )


def _as_dict(schema: dict[str, Any] | str) -> dict[str, Any]:
    return json.loads(schema) if isinstance(schema, str) else schema


def _columns(struct: dict[str, Any], path: str, prefix: str) -> list[tuple[str, str]]:
    """(path, flattened column name) of every column a struct makes (arrays stay one column)."""
    found = []
    for child in struct["fields"]:
        child_path, name = path + child["name"], prefix + column_name(child["name"])
        if isinstance(child["type"], dict) and child["type"].get("type") == "struct":
            found += _columns(child["type"], child_path + ".", name + NESTED_SEPARATOR)
        else:
            found.append((child_path, name))
    return found


def _merge_struct(
    old: dict[str, Any],
    new: dict[str, Any],
    prefix: str,
    column_prefix: str | None,
    columns: dict[str, str],
    changes: _Changes,
) -> dict[str, Any]:
    """`column_prefix` is None inside arrays, where fields are not flattened into columns."""
    fields = [dict(f) for f in old["fields"]]
    by_name = {f["name"]: i for i, f in enumerate(fields)}
    by_column = {folded(column_name(f["name"])): prefix + f["name"] for f in fields}
    for new_field in new["fields"]:
        name = new_field["name"]
        path = prefix + name
        position = by_name.get(name)
        if position is not None:
            child_prefix = None if column_prefix is None else column_prefix + column_name(name) + NESTED_SEPARATOR
            fields[position]["type"] = _merge_type(
                fields[position]["type"], new_field["type"], path, child_prefix, columns, changes
            )
            continue
        clash = by_column.get(folded(column_name(name)))
        if clash is None and column_prefix is not None:
            added = _columns({"fields": [new_field]}, prefix, column_prefix)
            clash = next((columns[folded(c)] for _, c in added if folded(c) in columns), None)
        if clash is not None:
            changes.incompatible.append(FieldChange(path, f"same column as {clash}", type_name(new_field["type"])))
            continue
        fields.append(dict(new_field, nullable=True))
        by_column[folded(column_name(name))] = path
        if column_prefix is not None:
            columns.update({folded(c): p for p, c in _columns({"fields": [new_field]}, prefix, column_prefix)})
        changes.added.append(FieldChange(path, None, type_name(new_field["type"])))
    return {"type": "struct", "fields": fields}


def _merge_type(
    old: Any, new: Any, path: str, column_prefix: str | None, columns: dict[str, str], changes: _Changes
) -> Any:
    if old == new:
        return old
    if isinstance(old, dict) and isinstance(new, dict) and old.get("type") == new.get("type"):
        if old["type"] == "struct":
            return _merge_struct(old, new, path + ".", column_prefix, columns, changes)
        if old["type"] == "array":
            element = _merge_type(old["elementType"], new["elementType"], path + "[]", None, columns, changes)
            return dict(old, elementType=element, containsNull=True)
    if old == "void":
        return new
    if isinstance(old, str) and isinstance(new, str) and new in WIDENINGS.get(old, frozenset()):
        changes.widened.append(FieldChange(path, old, new))
        return old
    if new == "void" or (isinstance(new, str) and isinstance(old, str) and old in WIDENINGS.get(new, frozenset())):
        return old
    changes.incompatible.append(FieldChange(path, type_name(old), type_name(new)))
    return old


def unfit(evolution: SchemaEvolution) -> tuple[FieldChange, ...]:
    """The changes a table with the old schema cannot hold: widened and incompatible fields."""
    return evolution.widened + evolution.incompatible


def promote(schema: dict[str, Any] | str, path: str, wider: str) -> dict[str, Any]:
    """`schema` with the field at `path` (dotted, `[]` for array elements) of type `wider`."""
    return _rewrite(_as_dict(schema), path, lambda field_type: wider)


def field_type(schema: dict[str, Any] | str, path: str) -> str | None:
    """The scalar type name of the field at dotted `path` (struct fields only), or None."""
    data_type: Any = _as_dict(schema)
    for name in path.split("."):
        if not isinstance(data_type, dict) or data_type.get("type") != "struct":
            return None
        data_type = next((f["type"] for f in data_type["fields"] if f["name"] == name), None)
    return data_type if isinstance(data_type, str) else None


def prune(schema: dict[str, Any] | str, paths: list[str]) -> dict[str, Any]:
    """Only the fields at `paths` (and the structs that lead to them)."""
    return _select(_as_dict(schema), paths, keep=True)


def without(schema: dict[str, Any] | str, paths: list[str]) -> dict[str, Any]:
    """Every field but those at `paths`."""
    return _select(_as_dict(schema), paths, keep=False)


def _split(name: str, paths: list[str]) -> tuple[bool, list[str]]:
    """Whether `name` itself is one of `paths`, and the paths below it (relative)."""
    exact = name in paths
    below = [p[len(name) :].removeprefix(".") for p in paths if p.startswith(name + ".") or p.startswith(name + "[]")]
    return exact, below


def _select(struct: dict[str, Any], paths: list[str], keep: bool) -> dict[str, Any]:
    fields = []
    for entry in struct["fields"]:
        exact, below = _split(entry["name"], paths)
        if exact:
            if keep:
                fields.append(entry)
            continue
        if not below:
            if not keep:
                fields.append(entry)
            continue
        child = _select_type(entry["type"], below, keep)
        if child is not None:
            fields.append(dict(entry, type=child))
    return {"type": "struct", "fields": fields}


def _select_type(data_type: Any, paths: list[str], keep: bool) -> Any:
    if isinstance(data_type, dict) and data_type.get("type") == "struct":
        selected = _select(data_type, paths, keep)
        return selected if selected["fields"] or not keep else None
    if isinstance(data_type, dict) and data_type.get("type") == "array":
        element_paths = [p.removeprefix("[]").removeprefix(".") for p in paths if p.startswith("[]")]
        if "" in element_paths:
            return data_type if keep else None
        element = _select_type(data_type["elementType"], element_paths, keep)
        return None if element is None else dict(data_type, elementType=element)
    return data_type if not keep else None


def _rewrite(struct: dict[str, Any], path: str, change: Any) -> dict[str, Any]:
    fields = []
    for entry in struct["fields"]:
        exact, below = _split(entry["name"], [path])
        if exact:
            entry = dict(entry, type=change(entry["type"]))
        elif below:
            entry = dict(entry, type=_rewrite_type(entry["type"], below[0], change))
        fields.append(entry)
    return {"type": "struct", "fields": fields}


def _rewrite_type(data_type: Any, path: str, change: Any) -> Any:
    if isinstance(data_type, dict) and data_type.get("type") == "struct":
        return _rewrite(data_type, path, change)
    if isinstance(data_type, dict) and data_type.get("type") == "array" and path.startswith("[]"):
        rest = path.removeprefix("[]").removeprefix(".")
        element = (
            change(data_type["elementType"]) if not rest else _rewrite_type(data_type["elementType"], rest, change)
        )
        return dict(data_type, elementType=element)
    return data_type
