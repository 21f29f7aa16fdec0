"""A lake ready for a column promotion, written with delta-rs alone (no Spark, no pipeline run)."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
from deltalake import write_deltalake

from streamops.core.lake_layout import LakeLayout
from streamops.pipeline.registry.schema_registry import REGISTRY_SCHEMA

EVENT_TYPE = "match_end"


def lake_with_a_rescued_score(root: Path) -> LakeLayout:
    """The registry knows `match_end` with a long `score`; its silver table holds one score and
    one 2.5 the long column could not take (in `_rescued_data`)."""
    lake = LakeLayout.at(root)
    schema = json.dumps(
        {"type": "struct", "fields": [{"name": "score", "type": "long", "nullable": True, "metadata": {}}]}
    )
    entry = {
        "event_type": EVENT_TYPE, "variation_hash": "h1", "schema_version": 1, "seen_order": 0,
        "prototype": '{"score": 1}', "schema_json": schema, "variation_schema_json": schema,
        "variation_paths": ["score"], "change_kind": "new_event_type", "changed_fields": "[]",
        "first_seen": datetime.now(timezone.utc), "first_bronze_version": 0, "batch_id": 0,
    }  # fmt: skip
    write_deltalake(str(lake.schema_registry), pa.Table.from_pylist([entry], schema=REGISTRY_SCHEMA))
    rows = {"score": pa.array([1, None], pa.int64()), "_rescued_data": pa.array([None, '{"score": 2.5}'])}
    write_deltalake(str(lake.silver(EVENT_TYPE)), pa.table(rows))
    return lake
