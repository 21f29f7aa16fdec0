"""The schema each silver table is parsed with, and which variations it must refuse.

The applied schema comes from the registry (the fold of `evolve` over the type's variations in
arrival order), a pure function of the registry: every silver batch, and every replay,
computes the same schema without state of its own. A variation is incompatible when evolving
the applied schema by the variation's own schema reports an incompatible change; its rows are
quarantined (or stop the group).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from pipeline.payload_parser import arrow_schema
from pipeline.schema_compat import FieldChange, evolve
from pipeline.schema_registry import SchemaRegistry


@dataclass(frozen=True)
class SilverSchema:
    event_type: str
    schema_version: int
    applied: dict[str, Any]
    arrow: pa.Schema
    variation_first_bronze_version: dict[str, int] = field(default_factory=dict)
    incompatible: dict[str, tuple[FieldChange, ...]] = field(default_factory=dict)
    """Variation hash -> the changes that make it incompatible with `applied`."""


def silver_schemas(registry: SchemaRegistry, event_types: list[str]) -> dict[str, SilverSchema]:
    schemas = {}
    for event_type in event_types:
        entries = registry.entries_of(event_type)
        if not entries:
            continue
        applied = registry.applied_schema(event_type)
        incompatible = {}
        for entry in entries:
            changes = evolve(applied, json.loads(entry.variation_schema_json)).incompatible
            if changes:
                incompatible[entry.variation_hash] = changes
        schemas[event_type] = SilverSchema(
            event_type=event_type,
            schema_version=registry.latest_version(event_type),
            applied=applied,
            arrow=arrow_schema(applied),
            variation_first_bronze_version={e.variation_hash: e.first_bronze_version for e in entries},
            incompatible=incompatible,
        )
    return schemas
