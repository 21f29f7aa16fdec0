"""Commits a streaming Delta reader cannot treat as appends, and what each read mode does with them.

Delta's streaming source reads appends only. A commit that removes data (DELETE, UPDATE, MERGE,
OVERWRITE, REPLACE ...: `remove` actions with dataChange=true) stops the stream unless one of its
options says otherwise; these are Delta's documented rules ("Ignore updates and deletes" in the
Delta streaming docs, `DeltaSource.scala`):

- ignoreDeletes: skip commits that only delete data (no file added with dataChange=true);
- skipChangeCommits: skip every commit that deletes or rewrites data (its added files too);
- ignoreChanges: re-emit the files a rewrite added, so rows it did not change reach the stream
  again (duplicates downstream); commits that only delete are skipped.

A schema change (a `metaData` action whose schema differs from the one the stream reads) stops
the stream under every option: a restart reads the new schema. Compaction (OPTIMIZE) removes and
adds files with dataChange=false and is no change at all to a stream.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal, get_args

from streamops.core.delta_format.log import Commit

ChangeKind = Literal["delete", "rewrite", "schema_change"]
ReadMode = Literal["failOnChanges", "ignoreDeletes", "skipChangeCommits", "ignoreChanges"]
READ_MODES: tuple[str, ...] = get_args(ReadMode)
Outcome = Literal["fail", "skip", "duplicate"]

_OUTCOMES: dict[ChangeKind, dict[ReadMode, Outcome]] = {
    "delete": {"failOnChanges": "fail", "ignoreDeletes": "skip", "skipChangeCommits": "skip", "ignoreChanges": "skip"},
    "rewrite": {
        "failOnChanges": "fail",
        "ignoreDeletes": "fail",
        "skipChangeCommits": "skip",
        "ignoreChanges": "duplicate",
    },
    "schema_change": {m: "fail" for m in get_args(ReadMode)},  # type: ignore[misc]
}


@dataclass(frozen=True)
class ChangeCommit:
    """A commit that is not an append: its version, kind and the operation its writer named."""

    version: int
    kind: ChangeKind
    operation: str
    timestamp_ms: int | None

    def outcome(self, mode: ReadMode) -> Outcome:
        return _OUTCOMES[self.kind][mode]

    def outcomes(self) -> dict[str, Outcome]:
        """What a stream does with this commit under each read mode (for reports)."""
        return {mode: self.outcome(mode) for mode in READ_MODES}  # type: ignore[arg-type]

    def describe(self) -> str:
        """`version 12 (MERGE, rewrite)`: how reports name it."""
        return f"version {self.version} ({self.operation or 'unnamed operation'}, {self.kind.replace('_', ' ')})"

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "kind": self.kind,
            "operation": self.operation,
            "timestamp_ms": self.timestamp_ms,
            "outcomes": self.outcomes(),
        }


def read_mode(options: dict[str, str] | Any) -> ReadMode:
    """The read mode a Delta source's options select (Delta's option names, `true`/`false`).

    skipChangeCommits wins over ignoreChanges, which implies ignoreDeletes, as in Delta."""

    def on(name: str) -> bool:
        return str(options.get(name, "false")).strip().lower() == "true"

    for mode in ("skipChangeCommits", "ignoreChanges", "ignoreDeletes"):
        if on(mode):
            return mode  # type: ignore[return-value]
    return "failOnChanges"


def schema_of(commit: Commit) -> str | None:
    """The schema (Delta's schemaString) a commit sets, when it carries a metaData action."""
    if commit.metadata is None:
        return None
    return commit.metadata.get("schemaString")


def change_of(commit: Commit, schema_before: str | None) -> ChangeCommit | None:
    """What kind of change `commit` is to a stream reading with `schema_before`, or None for an
    append (or a commit that changes no data, such as OPTIMIZE or a property change)."""
    operation = str(commit.commit_info.get("operation") or "")
    new_schema = schema_of(commit)
    kind: ChangeKind | None = None
    if new_schema is not None and schema_before is not None and _fields(new_schema) != _fields(schema_before):
        kind = "schema_change"
    elif commit.data_removes:
        kind = "rewrite" if commit.data_adds else "delete"
    if kind is None:
        return None
    return ChangeCommit(commit.version, kind, operation, commit.timestamp_ms)


def _fields(schema_string: str) -> Any:
    """A schema without field metadata (column comments, stats settings): what reading depends on."""

    def strip(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k != "metadata"}
        if isinstance(node, list):
            return [strip(v) for v in node]
        return node

    return strip(json.loads(schema_string))
