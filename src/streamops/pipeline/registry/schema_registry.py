"""The schema registry: one row per (event type, schema variation), kept in a Delta table.

Each row holds the variation's hash and paths, its prototype (the first message seen with it),
the superset schema of the event type at that schema version (Spark's inference over every
prototype of the type, the seed's method), and what the variation changed. The bronze stream
registers new variations inside its micro-batch, before the batch's bronze commit, so no
stream downstream ever reads an event whose schema is unknown.

Two schemas per type, for two questions:
- the *superset* (`schema_json`) answers "what does all the data look like": number + string
  infers as string. `schema_version` increments once per batch that changes it.
- the *applied* schema answers "what type does the silver table keep": the fold of
  `schema_compat.evolve` over each variation's own schema in arrival order (`seen_order`), so
  the first type seen wins, added and widened fields evolve it, incompatible ones do not.
  A variation's `change_kind` is what it did to the applied schema. A row of change_kind
  `promoted` (written by `streamops lake promote`, pipeline/silver/column_promotion.py) is no
  variation: its schema *is* the applied schema from then on (a column made wider, offline).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

import pyarrow as pa

from streamops.core.delta_format.read import is_table, open_table, read_delta
from streamops.core.exceptions import error_line
from streamops.pipeline.delta_connector.typed_rows import arrow_schema
from streamops.pipeline.lake_tables import table_access
from streamops.pipeline.records.strict_json import loads
from streamops.pipeline.registry.schema_compat import evolve
from streamops.pipeline.registry.schema_inference import infer_isolated
from streamops.pipeline.registry.schema_variation import variation_paths

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from streamops.core.delta_format.commit_metadata import BatchCommitInfo
    from streamops.pipeline.delta_connector.connector import DeltaConnector

REGISTRY_SCHEMA = pa.schema(
    [
        ("event_type", pa.string()),
        ("variation_hash", pa.string()),
        ("schema_version", pa.int64()),
        ("seen_order", pa.int64()),
        ("prototype", pa.string()),
        ("schema_json", pa.string()),
        ("variation_schema_json", pa.string()),
        ("variation_paths", pa.list_(pa.string())),
        ("change_kind", pa.string()),
        ("changed_fields", pa.string()),
        ("first_seen", pa.timestamp("us", tz="UTC")),
        ("first_bronze_version", pa.int64()),
        ("batch_id", pa.int64()),
    ]
)
EMPTY_STRUCT: dict[str, Any] = {"type": "struct", "fields": []}
REGISTRY_STAGE = "registry"
PROMOTED = "promoted"


@dataclass(frozen=True)
class NewVariation:
    """A variation a bronze batch saw that the registry does not know yet (in arrival order)."""

    event_type: str
    variation_hash: str
    prototype: str


@dataclass(frozen=True)
class RegistryEntry:
    event_type: str
    variation_hash: str
    schema_version: int
    seen_order: int
    prototype: str
    schema_json: str
    variation_schema_json: str
    variation_paths: tuple[str, ...]
    change_kind: str
    changed_fields: str
    first_seen: datetime
    first_bronze_version: int
    batch_id: int

    def as_row(self) -> dict:
        row = self.__dict__.copy()
        row["variation_paths"] = list(self.variation_paths)
        return row


@dataclass(frozen=True)
class Registration:
    """What `register` did with a batch's new variations."""

    entries: list[RegistryEntry]
    rejected: dict[tuple[str, str], str]
    """(event type, variation hash) -> why the registry could not take it (its rows are quarantined)."""


class SchemaRegistry:
    """In-memory view of the registry table, kept in step with what this process writes."""

    def __init__(self, table: Path, entries: Iterable[RegistryEntry] = ()) -> None:
        self.table = table
        self._by_type: dict[str, list[RegistryEntry]] = {}
        self._known: set[tuple[str, str]] = set()
        self._applied: dict[str, dict[str, Any]] = {}
        self._count = 0
        self._add(sorted(entries, key=lambda e: e.seen_order))

    @classmethod
    def load(cls, table: Path) -> SchemaRegistry:
        """The registry as its table holds it (empty before the pipeline created the table)."""
        with table_access(table, "read"):
            rows = read_delta(open_table(table)).to_pylist() if is_table(table) else []
        return cls(table, (_entry(row) for row in rows))

    def _add(self, entries: Iterable[RegistryEntry]) -> None:
        for entry in entries:
            self._by_type.setdefault(entry.event_type, []).append(entry)
            self._known.add((entry.event_type, entry.variation_hash))
            previous = self._applied.get(entry.event_type)
            schema = json.loads(entry.variation_schema_json)
            self._applied[entry.event_type] = (
                schema if entry.change_kind == PROMOTED else evolve(previous, schema).schema
            )
            self._count += 1

    def known(self) -> set[tuple[str, str]]:
        """Every registered (event type, variation hash)."""
        return set(self._known)

    def is_known(self, event_type: str, variation_hash: str) -> bool:
        return (event_type, variation_hash) in self._known

    def type_order(self) -> list[str]:
        """Event types in the order the registry first saw them."""
        return sorted(self._by_type, key=lambda t: self._by_type[t][0].seen_order)

    def entries_of(self, event_type: str) -> list[RegistryEntry]:
        """The type's variations in arrival order."""
        return list(self._by_type.get(event_type, ()))

    def applied_schema(self, event_type: str) -> dict[str, Any]:
        return self._applied[event_type]

    def latest_version(self, event_type: str) -> int:
        return max(e.schema_version for e in self._by_type[event_type])

    def register(
        self,
        spark: SparkSession,
        connector: DeltaConnector,
        new: list[NewVariation],
        bronze_version: int,
        commit: BatchCommitInfo,
    ) -> Registration:
        """Add the batch's new variations; at most one schema-version bump per type.

        A variation the registry cannot process (its prototype, Spark's inference of its type,
        or the Arrow form of the schema it makes fails) is not registered and comes back in
        `rejected`: bronze quarantines its rows as `unprocessable`, and the rest commit. The
        decision depends only on the batch and the registry, so a replay makes the same one.
        The write is the registry table's idempotent batch commit: a replay adds nothing.
        """
        fresh = [v for v in new if not self.is_known(v.event_type, v.variation_hash)]
        rejected: dict[tuple[str, str], str] = {}
        paths: dict[str, tuple[str, ...]] = {}
        for variation in fresh:
            try:
                paths[variation.variation_hash] = tuple(variation_paths(loads(variation.prototype)))
            except Exception as error:  # noqa: BLE001 - isolate the record, keep the batch
                rejected[(variation.event_type, variation.variation_hash)] = error_line(error)
        fresh = [v for v in fresh if (v.event_type, v.variation_hash) not in rejected]
        by_type: dict[str, list[NewVariation]] = {}
        for variation in fresh:
            by_type.setdefault(variation.event_type, []).append(variation)
        inference = infer_isolated(spark, {t: self._prototypes(t, vs) for t, vs in by_type.items()})
        for event_type, error in inference.failed.items():
            for variation in by_type.pop(event_type):
                rejected[(event_type, variation.variation_hash)] = f"Spark's schema inference failed: {error}"
        inferred = inference.schemas
        now = datetime.now(timezone.utc)
        applied = dict(self._applied)
        entries: list[RegistryEntry] = []
        for variation in (v for vs in by_type.values() for v in vs):
            event_type = variation.event_type
            variation_schema = inferred.get("V:" + variation.variation_hash, EMPTY_STRUCT)
            try:
                evolution = evolve(applied.get(event_type), variation_schema)
                arrow_schema(evolution.schema)
            except Exception as error:  # noqa: BLE001 - silver could never read it: isolate
                rejected[(event_type, variation.variation_hash)] = error_line(error)
                continue
            applied[event_type] = evolution.schema
            history = self._by_type.get(event_type)
            superset = inferred.get("S:" + event_type, EMPTY_STRUCT)
            changed = int(_superset(history) != superset)
            entries.append(
                RegistryEntry(
                    event_type=event_type,
                    variation_hash=variation.variation_hash,
                    schema_version=(max(e.schema_version for e in history) if history else 0) + changed,
                    seen_order=self._count + len(entries),
                    prototype=variation.prototype,
                    schema_json=json.dumps(superset, sort_keys=True),
                    variation_schema_json=json.dumps(variation_schema, sort_keys=True),
                    variation_paths=paths[variation.variation_hash],
                    change_kind=evolution.kind,
                    changed_fields=json.dumps([c.as_dict() for c in evolution.changes]),
                    first_seen=now,
                    first_bronze_version=bronze_version,
                    batch_id=commit.batch_id,
                )
            )
        if entries:
            table = pa.Table.from_pylist([e.as_row() for e in entries], schema=REGISTRY_SCHEMA)
            connector.write_batch(self.table, table, commit)
            self._add(entries)
        return Registration(entries, rejected)

    def _prototypes(self, event_type: str, fresh: list[NewVariation]) -> dict[str, list[str]]:
        """Inference keys of one type: its superset over every prototype, and each new variation's own."""
        known = [e.prototype for e in self._by_type.get(event_type, ()) if e.change_kind != PROMOTED]
        keys = {"S:" + event_type: known + [v.prototype for v in fresh]}
        keys.update({"V:" + v.variation_hash: [v.prototype] for v in fresh})
        return keys


def _superset(history: list[RegistryEntry] | None) -> dict[str, Any] | None:
    if not history:
        return None
    return json.loads(max(history, key=lambda e: e.seen_order).schema_json)


def _entry(row: dict) -> RegistryEntry:
    row = dict(row)
    row["variation_paths"] = tuple(row.get("variation_paths") or ())
    return RegistryEntry(**row)


class RegistryReader:
    """Re-reads the registry table only when its version changes (silver reads it every batch)."""

    def __init__(self, table: Path) -> None:
        self.table = table
        self._version = -1
        self._registry = SchemaRegistry(table)

    def read(self) -> tuple[int, SchemaRegistry]:
        with table_access(self.table, "read"):
            version = open_table(self.table).version() if is_table(self.table) else -1
        if version != self._version:
            self._registry = SchemaRegistry.load(self.table) if version >= 0 else SchemaRegistry(self.table)
            self._version = version
        return self._version, self._registry
