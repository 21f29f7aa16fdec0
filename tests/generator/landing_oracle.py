"""Oracles written independently of the generator: they recompute structure, depth and
bad-record kind from the bytes on disk, so the tests do not grade the generator by its own code."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streamops.core.lake_layout import is_valid_event_type
from streamops.pipeline.records.record_rules import MAX_DEPTH, MAX_RECORD_BYTES


@dataclass(frozen=True)
class Line:
    ordinal: int
    file: str
    raw: bytes


@dataclass(frozen=True)
class GeneratedRun:
    out: Path
    manifest: dict[str, Any]
    lines: list[Line]

    def events(self) -> list[tuple[Line, dict[str, Any]]]:
        """Every line the oracle classifies as a valid event, parsed."""
        return [(line, json.loads(line.raw)) for line in self.lines if classify(line.raw) is None]


def read_lines(out: Path, manifest: dict[str, Any]) -> list[Line]:
    lines: list[Line] = []
    for entry in manifest["files"]:
        content = (out / entry["name"]).read_bytes()
        assert content.endswith(b"\n"), entry["name"]
        for raw in content.split(b"\n")[:-1]:
            lines.append(Line(len(lines), entry["name"], raw))
    return lines


def path_kinds(value: Any) -> list[str]:
    """Sorted `path:kind` strings of a parsed JSON object (null counts as absent)."""
    found: set[str] = set()

    def walk(node: Any, path: str) -> None:
        if node is None:
            return
        if isinstance(node, dict):
            kind = "object"
        elif isinstance(node, list):
            kind = "array"
        elif isinstance(node, bool):
            kind = "bool"
        elif isinstance(node, int):
            kind = "integer"
        elif isinstance(node, float):
            kind = "float"
        else:
            kind = "string"
        if path:
            found.add(f"{path}:{kind}")
        if isinstance(node, dict):
            for key, child in node.items():
                walk(child, f"{path}.{key}" if path else key)
        elif isinstance(node, list):
            for child in node:
                walk(child, f"{path}[]")

    walk(value, "")
    return sorted(found)


def depth(value: Any) -> int:
    """Containers nested below the top-level object: {"a": {"b": 1}} has depth 1."""
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return max((1 + depth(child) for child in children if isinstance(child, (dict, list))), default=0)


def classify(raw: bytes) -> str | None:
    """The bad kind a line is, judged from its bytes alone; None for a valid event."""
    if raw.strip() == b"":
        return "empty_line"
    try:
        text = raw.decode("utf-8", errors="strict")
    except UnicodeDecodeError:
        return "invalid_utf8"
    duplicated: list[str] = []

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [key for key, _ in items]
        duplicated.extend(key for key in set(keys) if keys.count(key) > 1)
        return dict(items)

    try:
        value = json.loads(text, object_pairs_hook=pairs)
    except json.JSONDecodeError:
        return "malformed_json"
    if isinstance(value, list):
        return "json_array"
    if not isinstance(value, dict):
        return "json_scalar"
    if value.get("event_type") is None:
        return "missing_event_type"
    if not is_valid_event_type(value["event_type"]):
        return "invalid_event_type"
    if len(raw) > MAX_RECORD_BYTES:
        return "too_large"
    if depth(value) > MAX_DEPTH:
        return "too_deep"
    if duplicated:
        return "duplicate_key"
    if any(
        not -(2**63) <= n < 2**63 if isinstance(n, int) else n in (float("inf"), float("-inf")) for n in numbers(value)
    ):
        return "number_out_of_range"
    columns = [name.lower() for name in flat_names(value, "")]
    if "" in all_keys(value) or len(columns) != len(set(columns)) or any(c.startswith("_") for c in columns):
        return "unusable_key"
    return None


def numbers(value: Any) -> list[int | float]:
    if isinstance(value, dict):
        return [n for child in value.values() for n in numbers(child)]
    if isinstance(value, list):
        return [n for child in value for n in numbers(child)]
    return [value] if isinstance(value, (int, float)) and not isinstance(value, bool) else []


def all_keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for child in value.values() for k in all_keys(child)}
    if isinstance(value, list):
        return {k for child in value for k in all_keys(child)}
    return set()


def flat_names(event: dict[str, Any], prefix: str) -> list[str]:
    """Silver column names: nested objects joined with `__` (arrays stay one column)."""
    names = []
    for key, child in event.items():
        if isinstance(child, dict):
            names += flat_names(child, f"{prefix}{key}__")
        else:
            names.append(prefix + key)
    return names
