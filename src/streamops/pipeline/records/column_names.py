"""Silver column names from JSON keys, and the collisions that make an event unusable.

Delta stores column names case-insensitively and, without column mapping, refuses the
characters ` ,;{}()\\n\\t=`; Spark's JSON inference merges keys that differ only in case. So a
key becomes a column name by replacing those characters (and control characters) with `_`,
nested objects are flattened into `parent__child` (dlt's convention; arrays stay arrays), and two
names that are equal ignoring case are one column. An event whose keys would land in one column
twice, on a column the pipeline reserves, or from an empty key (which Spark's inference drops),
cannot be stored without losing a value: the classifiers quarantine it as `unusable_key`
(decided once per shape, so it costs nothing per line).
The JVM classifier (pipeline/bronze/jvm/BronzeLineClassifier.java) mirrors these rules exactly.
"""

from __future__ import annotations

from typing import Any, Iterator

NESTED_SEPARATOR = "__"
LINEAGE_COLUMNS = {
    "_event_time": "event_time",
    "_ingest_time": "ingest_time",
    "_source_file": "source_file",
    "_bronze_batch_id": "batch_id",
    "_schema_hash": "schema_hash",
}
"""Silver lineage column -> the bronze column it copies."""
RESCUED_DATA_COLUMN = "_rescued_data"
CORRUPT_RECORD_COLUMN = "_corrupt_record"
"""Spark's JSON reader keeps unparseable text in a top-level field of this name."""
RESERVED_COLUMNS = frozenset(name.lower() for name in (*LINEAGE_COLUMNS, RESCUED_DATA_COLUMN, CORRUPT_RECORD_COLUMN))
_FORBIDDEN = frozenset(" ,;{}()\n\t=")


def column_name(key: str) -> str:
    """The column a JSON key becomes (before flattening)."""
    if key.isprintable() and not any(ch in _FORBIDDEN for ch in key):
        return key
    return "".join("_" if ch in _FORBIDDEN or ord(ch) < 0x20 or ord(ch) == 0x7F else ch for ch in key)


def folded(name: str) -> str:
    """Equal folded names are one column (Spark and Delta compare names with lower case)."""
    return name.lower()


def unusable_key(event: dict[str, Any]) -> str | None:
    """Why `event`'s keys cannot all become distinct columns, or None when they can."""
    for keys in _objects_keys(event):
        seen: dict[str, str] = {}
        for key in keys:
            if not key:
                return "an empty key cannot name a column"
            name = folded(column_name(key))
            if name in seen:
                return f"keys {seen[name]!r} and {key!r} are the same column `{column_name(key)}`"
            seen[name] = key
    flattened: dict[str, str] = {}
    for path, name in _flattened(event, "", ""):
        key = folded(name)
        if key in RESERVED_COLUMNS:
            return f"key {path!r} is the reserved column `{name}`"
        if key in flattened:
            return f"keys {flattened[key]!r} and {path!r} are the same column `{name}`"
        flattened[key] = path
    return None


def _objects_keys(value: Any) -> Iterator[list[str]]:
    if type(value) is dict:
        yield [k for k in value if type(k) is str]
        for child in value.values():
            yield from _objects_keys(child)
    elif type(value) is list:
        for child in value:
            yield from _objects_keys(child)


def _flattened(obj: dict[str, Any], path: str, prefix: str) -> Iterator[tuple[str, str]]:
    """(dotted key path, flattened column name) of every column a top-level object makes."""
    for key, value in obj.items():
        if type(key) is not str:
            continue
        name = prefix + column_name(key)
        dotted = path + key
        if type(value) is dict:
            yield from _flattened(value, dotted + ".", name + NESTED_SEPARATOR)
        else:
            yield dotted, name
