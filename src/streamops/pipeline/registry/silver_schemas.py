"""The schema each silver table is parsed with, and which variations it must refuse.

The applied schema comes from the registry (the fold of `evolve` over the type's variations in
arrival order), a pure function of the registry: every silver batch, and every replay,
computes the same schema without state of its own. A variation is *unfit* when the applied
schema cannot hold some of its fields (a type change, a widening, or a name that lands on an
existing column: `schema_compat.unfit`); by policy those fields go to `_rescued_data`, or its
rows are quarantined, or the group stops.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from streamops.core.storage.location import Location
from streamops.pipeline.delta_connector.typed_rows import arrow_schema
from streamops.pipeline.registry.event_groups import EventGroupsReader, resolve_groups
from streamops.pipeline.registry.schema_compat import FieldChange, evolve, unfit
from streamops.pipeline.registry.schema_registry import PROMOTED, RegistryReader, SchemaRegistry


@dataclass(frozen=True)
class SilverSchema:
    event_type: str
    schema_version: int
    applied: dict[str, Any]
    arrow: pa.Schema
    variation_first_bronze_version: dict[str, int] = field(default_factory=dict)
    unfit: dict[str, tuple[FieldChange, ...]] = field(default_factory=dict)
    """Variation hash -> the changes of its fields that `applied` cannot hold."""
    variation_schemas: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Variation hash -> its own schema (Spark's inference of its prototype), for unfit ones."""


def silver_schemas(registry: SchemaRegistry, event_types: list[str]) -> dict[str, SilverSchema]:
    schemas = {}
    for event_type in event_types:
        entries = registry.entries_of(event_type)
        if not entries:
            continue
        applied = registry.applied_schema(event_type)
        changed, own = {}, {}
        for entry in (e for e in entries if e.change_kind != PROMOTED):
            variation = json.loads(entry.variation_schema_json)
            changes = unfit(evolve(applied, variation))
            if changes:
                changed[entry.variation_hash] = changes
                own[entry.variation_hash] = variation
        schemas[event_type] = SilverSchema(
            event_type=event_type,
            schema_version=registry.latest_version(event_type),
            applied=applied,
            arrow=arrow_schema(applied),
            variation_first_bronze_version={e.variation_hash: e.first_bronze_version for e in entries},
            unfit=changed,
            variation_schemas=own,
        )
    return schemas


class GroupSchemas:
    """The applied schema of every event type (or CDC table) one group serves, as of now: the
    registry and the event groups are re-read only when their tables changed."""

    def __init__(self, registry: Location, event_groups: Location, group: str, types_per_group: int) -> None:
        self.group = group
        self.types_per_group = types_per_group
        self.registry = RegistryReader(registry)
        self.groups = EventGroupsReader(event_groups)
        self._cached: tuple[tuple[int, int], dict[str, SilverSchema]] = ((-1, -1), {})

    def read(self) -> dict[str, SilverSchema]:
        registry_version, registry = self.registry.read()
        recorded = self.groups.read()
        key = (registry_version, recorded.version)
        if key != self._cached[0]:
            groups = resolve_groups(recorded.by_type, registry.type_order(), self.types_per_group)
            members = sorted(t for t, g in groups.items() if g == self.group)
            self._cached = (key, silver_schemas(registry, members))
        return self._cached[1]
