"""The schema registry: one row per (event type, schema variation), kept in a Delta table.

Each row holds the variation's hash and paths, its prototype (the first message seen with it),
the superset schema of the event type at that schema version, and what kind of change the
variation brought. The bronze stream registers new variations inside its micro-batch, before
the batch's bronze commit, so a silver stream never reads an event whose schema is unknown.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

import orjson
import pyarrow as pa
from deltalake import DeltaTable

from pipeline.delta_connector.batch_writer import create_table
from pipeline.schema_compat import evolve
from pipeline.schema_inference import infer_schemas
from pipeline.schema_variation import variation_paths

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from pipeline.delta_connector.connector import DeltaConnector
    from streamops.commit_metadata import BatchCommitInfo

REGISTRY_SCHEMA = pa.schema(
    [
        ("event_type", pa.string()),
        ("variation_hash", pa.string()),
        ("schema_version", pa.int64()),
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


@dataclass(frozen=True)
class NewVariation:
    """A variation a bronze batch saw that the registry does not know yet."""

    event_type: str
    variation_hash: str
    prototype: str


@dataclass(frozen=True)
class RegistryEntry:
    event_type: str
    variation_hash: str
    schema_version: int
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
class LatestSchema:
    event_type: str
    schema_version: int
    schema_json: str
    first_bronze_version: int


class SchemaRegistry:
    """In-memory view of the registry table, kept in step with what this process writes."""

    def __init__(self, table: Path, entries: Iterable[RegistryEntry] = ()) -> None:
        self.table = table
        self._entries: list[RegistryEntry] = []
        self._known: set[tuple[str, str]] = set()
        self._latest: dict[str, RegistryEntry] = {}
        self._first: dict[str, RegistryEntry] = {}
        self._add(entries)

    @classmethod
    def load(cls, table: Path) -> "SchemaRegistry":
        create_table(table, REGISTRY_SCHEMA)
        rows = DeltaTable(str(table)).to_pyarrow_table().to_pylist()
        return cls(table, (_entry(row) for row in rows))

    def _add(self, entries: Iterable[RegistryEntry]) -> None:
        for entry in entries:
            self._entries.append(entry)
            self._known.add((entry.event_type, entry.variation_hash))
            latest = self._latest.get(entry.event_type)
            if latest is None or entry.schema_version >= latest.schema_version:
                self._latest[entry.event_type] = entry
            first = self._first.get(entry.event_type)
            if first is None or entry.first_bronze_version < first.first_bronze_version:
                self._first[entry.event_type] = entry

    @property
    def entries(self) -> list[RegistryEntry]:
        return list(self._entries)

    def is_known(self, event_type: str, variation_hash: str) -> bool:
        return (event_type, variation_hash) in self._known

    def latest(self) -> dict[str, LatestSchema]:
        return {
            event_type: LatestSchema(
                event_type, entry.schema_version, entry.schema_json, self._first[event_type].first_bronze_version
            )
            for event_type, entry in self._latest.items()
        }

    def prototypes(self, event_type: str) -> list[str]:
        return [e.prototype for e in self._entries if e.event_type == event_type]

    def register(
        self,
        spark: "SparkSession",
        connector: "DeltaConnector",
        new: list[NewVariation],
        bronze_version: int,
        commit: "BatchCommitInfo",
    ) -> list[RegistryEntry]:
        """Add the batch's new variations with superset schemas; at most one version bump per type.

        The write is the registry table's idempotent batch commit, so a replay of the batch
        adds nothing.
        """
        fresh = [v for v in new if not self.is_known(v.event_type, v.variation_hash)]
        if not fresh:
            return []
        by_type: dict[str, list[NewVariation]] = {}
        for variation in fresh:
            by_type.setdefault(variation.event_type, []).append(variation)
        prototypes: dict[str, list[str]] = {}
        for event_type, variations in by_type.items():
            prototypes["S:" + event_type] = self.prototypes(event_type) + [v.prototype for v in variations]
            for v in variations:
                prototypes["V:" + v.variation_hash] = [v.prototype]
        inferred = infer_schemas(spark, prototypes)
        now = datetime.now(timezone.utc)
        entries: list[RegistryEntry] = []
        for event_type, variations in by_type.items():
            previous = self._latest.get(event_type)
            superset = inferred.get("S:" + event_type, {"type": "struct", "fields": []})
            evolution = evolve(json.loads(previous.schema_json) if previous else None, superset)
            version = (previous.schema_version if previous else 0) + (1 if evolution.kind != "unchanged" else 0)
            for v in variations:
                entries.append(
                    RegistryEntry(
                        event_type=event_type,
                        variation_hash=v.variation_hash,
                        schema_version=version,
                        prototype=v.prototype,
                        schema_json=json.dumps(superset, sort_keys=True),
                        variation_schema_json=json.dumps(
                            inferred.get("V:" + v.variation_hash, {"type": "struct", "fields": []}),
                            sort_keys=True,
                        ),
                        variation_paths=tuple(variation_paths(orjson.loads(v.prototype))),
                        change_kind=evolution.kind,
                        changed_fields=json.dumps([c.as_dict() for c in evolution.changes]),
                        first_seen=now,
                        first_bronze_version=bronze_version,
                        batch_id=commit.batch_id,
                    )
                )
        table = pa.Table.from_pylist([e.as_row() for e in entries], schema=REGISTRY_SCHEMA)
        connector.write_batch(self.table, table, commit)
        self._add(entries)
        return entries


def _entry(row: dict) -> RegistryEntry:
    row = dict(row)
    row["variation_paths"] = tuple(row.get("variation_paths") or ())
    return RegistryEntry(**row)
